# Shared by the bench scripts (sourced, not run): installing peers, building linkperf, and servers that
# stop when the script ends.

HOST=127.0.0.1
LINKPERF=target/release/linkperf

# need COMMAND PACKAGE: installs Debian's PACKAGE unless COMMAND exists.
need() { command -v "$1" >/dev/null || { apt-get update -qq && apt-get install -y -qq "$2" >/dev/null; }; }

# Builds the release binary that every bench measures.
build_linkperf() { cargo build --release --quiet; }

# start COMMAND...: runs a server in the background, killed when the script exits.
server_pids=()
start() { "$@" >/dev/null 2>&1 & server_pids+=($!); }
stop_servers() { for p in "${server_pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_servers EXIT
