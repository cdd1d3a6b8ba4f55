#!/usr/bin/env bash
# Round-trip latency on loopback: linkperf beside sockperf and qperf, measured in one run.
#
# For each proto (tcp, udp) and wait mode (block, spin) it measures 64-byte request/response round trips
# with every tool that has that mode, then prints the median RTT of each and the ratio of linkperf's median
# to the best peer's. All figures are full round trips in microseconds:
#   - linkperf: p50_us of `linkperf latency --json` against a separate `linkperf serve` process;
#   - sockperf: ping-pong with --full-rtt, its "percentile 50.000" line; --nonblocked on both ends makes it
#     busy-poll (its spin mode);
#   - qperf: tcp_lat / udp_lat report the mean one-way latency (RTT / 2); it is doubled here, and it is a
#     mean, not a median, which the table says. qperf has no busy-poll mode.
# Target (issue: foundation): linkperf's median is no higher than the best peer's in the same mode.
#
# Usage: bench/latency.sh [SECONDS_PER_MEASUREMENT [REPETITIONS]]   (defaults 5 and 3). Installs its peers
# with apt-get if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-5}
REPEATS=${2:-3}
SIZE=64
source bench/common.sh
need sockperf sockperf
need qperf qperf
need python3 python3
build_linkperf

start "$LINKPERF" serve --bind "$HOST" --port 15250 --quiet
start sockperf server -i "$HOST" -p 15251
start sockperf server --tcp -i "$HOST" -p 15252
start sockperf server --nonblocked -i "$HOST" -p 15253
start sockperf server --tcp --nonblocked -i "$HOST" -p 15254
start qperf --listen_port 15255
sleep 1

linkperf_p50() { # proto wait
    "$LINKPERF" latency "$HOST" -p 15250 --proto "$1" --wait "$2" --size "$SIZE" --duration "${SECONDS_EACH}s" \
        --warmup 1000 --json --no-progress |
        python3 -c 'import json,sys; print("%.2f" % json.load(sys.stdin)["series"][0]["summary"]["p50_us"])'
}

sockperf_p50() { # proto wait
    local port flags=()
    case "$1/$2" in
        udp/block) port=15251 ;;
        tcp/block) port=15252; flags=(--tcp) ;;
        udp/spin) port=15253; flags=(--nonblocked) ;;
        tcp/spin) port=15254; flags=(--tcp --nonblocked) ;;
    esac
    sockperf ping-pong "${flags[@]}" -i "$HOST" -p "$port" -m "$SIZE" -t "$SECONDS_EACH" --full-rtt 2>&1 |
        sed -n 's/.*percentile 50.000 = *\([0-9.]*\).*/\1/p'
}

qperf_rtt_mean() { # proto
    qperf "$HOST" --listen_port 15255 -m "$SIZE" -t "$SECONDS_EACH" "$1_lat" 2>&1 |
        python3 -c '
import re, sys
m = re.search(r"latency\s*=\s*([0-9.]+)\s*(ns|us|ms)", sys.stdin.read())
scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}
print("%.2f" % (2 * float(m.group(1)) * scale[m.group(2)]) if m else "n/a")'
}

# Peers alternate within each repetition, and each figure is the median over repetitions, so that a slow
# phase of a shared machine does not land on one tool only.
results=$(mktemp)
for rep in $(seq "$REPEATS"); do
    for proto in tcp udp; do
        for wait in block spin; do
            echo "$proto $wait linkperf $(linkperf_p50 "$proto" "$wait")" >>"$results"
            echo "$proto $wait sockperf $(sockperf_p50 "$proto" "$wait")" >>"$results"
            [ "$wait" = block ] && echo "$proto $wait qperf $(qperf_rtt_mean "$proto")" >>"$results"
        done
    done
    echo "repetition $rep of $REPEATS done" >&2
done
python3 - "$results" "$REPEATS" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    proto, wait, tool, *value = line.split()
    if value and value[0] != "n/a":
        rows.setdefault((proto, wait, tool), []).append(float(value[0]))
med = lambda k: statistics.median(rows[k]) if k in rows else None
fmt = lambda v: "n/a" if v is None else "%.2f" % v
print("%-5s %-6s %14s %14s %20s %14s" % ("proto", "wait", "linkperf p50", "sockperf p50", "qperf 2*mean(1-way)", "linkperf/best"))
for proto in ("tcp", "udp"):
    for wait in ("block", "spin"):
        lp, sp, qp = (med((proto, wait, t)) for t in ("linkperf", "sockperf", "qperf"))
        peers = [v for v in (sp, qp) if v is not None]
        ratio = "%.2f" % (lp / min(peers)) if peers and lp else "n/a"
        print("%-5s %-6s %14s %14s %20s %14s" % (proto, wait, fmt(lp), fmt(sp), fmt(qp), ratio))
print("64-byte round trips on loopback, microseconds, median of %s repetitions; ratio < 1: linkperf is faster" % sys.argv[2])
PY
rm -f "$results"
