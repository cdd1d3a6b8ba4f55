#!/usr/bin/env bash
# Round-trip latency and connection set-up on loopback: linkperf beside the floor (bench/floor.c, the least
# a round trip or a connection costs through this kernel: one socket, no framing, no statistics), sockperf
# and qperf, all measured in one run.
#
# For each proto (tcp, udp, unix) and wait mode (block, spin) it measures 64-byte request/response round
# trips with every tool that has that mode, then prints the median and 99th percentile RTT of each and the
# ratios of linkperf's median to the floor's and to the best peer's. All figures are full round trips in
# microseconds:
#   - floor: bench/floor.c built with cc -O2, `floor ping` against `floor serve` (its own p50 and p99);
#   - linkperf: p50_us and p99_us of `linkperf latency --json` against a separate `linkperf serve` process;
#   - sockperf: ping-pong with --full-rtt, its "percentile 50.000" and "99.000" lines; --nonblocked on both
#     ends makes it busy-poll (its spin mode); TCP and UDP only;
#   - qperf: tcp_lat / udp_lat report the mean one-way latency (RTT / 2); it is doubled here, and it is a
#     mean, not a median, which the table says. qperf has no busy-poll mode.
# Connection set-up: connections per second and p50 of connect + 12-byte request + 1-byte reply + close,
# linkperf `connect` beside `floor connect` (netperf's TCP_CRR is not in Debian's main archive).
# Targets (issue 17): every latency mode within 3 % of the floor and no slower than the best peer.
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
need cc gcc
build_linkperf
FLOOR=$(mktemp -d)/floor
cc -O2 -o "$FLOOR" bench/floor.c
UNIX_DIR=$(mktemp -d)

start "$LINKPERF" serve --bind "$HOST" --port 15250 --unix "$UNIX_DIR/linkperf" --quiet --allow-spin
start sockperf server -i "$HOST" -p 15251
start sockperf server --tcp -i "$HOST" -p 15252
start sockperf server --nonblocked -i "$HOST" -p 15253
start sockperf server --tcp --nonblocked -i "$HOST" -p 15254
start qperf --listen_port 15255
start "$FLOOR" serve tcp block 15256
start "$FLOOR" serve udp block 15257
start "$FLOOR" serve tcp spin 15258
start "$FLOOR" serve udp spin 15259
start "$FLOOR" serve unix block "$UNIX_DIR/floor-block"
start "$FLOOR" serve unix spin "$UNIX_DIR/floor-spin"
start "$FLOOR" accept 15260
sleep 1

linkperf_p50() { # proto wait: prints "p50 p99"
    local target=("$HOST" -p 15250)
    [ "$1" = unix ] && target=(--unix "$UNIX_DIR/linkperf")
    "$LINKPERF" latency "${target[@]}" --proto "$1" --wait "$2" --size "$SIZE" --duration "${SECONDS_EACH}s" \
        --warmup 1000 --json --no-progress --no-store |
        python3 -c 'import json,sys; s=json.load(sys.stdin)["series"][0]["summary"]; print("%.2f %.2f" % (s["p50_us"], s["p99_us"]))'
}

floor_p50() { # proto wait: prints "p50 p99"
    local where
    case "$1/$2" in
        tcp/block) where=15256 ;; udp/block) where=15257 ;; tcp/spin) where=15258 ;; udp/spin) where=15259 ;;
        unix/*) where="$UNIX_DIR/floor-$2" ;;
    esac
    "$FLOOR" ping "$1" "$2" "$HOST" "$where" "$SIZE" "$SECONDS_EACH" | awk '{print $1, $2}'
}

linkperf_connect() { # prints "per_s p50"
    "$LINKPERF" connect "$HOST" -p 15250 --duration "${SECONDS_EACH}s" --json --no-progress --no-store |
        python3 -c 'import json,sys; s=json.load(sys.stdin)["series"][0]; print("%.1f %.2f" % (s["transactions_per_s"], s["summary"]["p50_us"]))'
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
        awk '/percentile 50.000/ {p50=$NF} /percentile 99.000/ {p99=$NF} END {print p50, p99}'
}

qperf_rtt_mean() { # proto
    qperf "$HOST" --listen_port 15255 -m "$SIZE" -t "$SECONDS_EACH" "$1_lat" 2>&1 |
        python3 -c '
import re, sys
m = re.search(r"latency\s*=\s*([0-9.]+)\s*(ns|us|ms)", sys.stdin.read())
scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}
print("%.2f" % (2 * float(m.group(1)) * scale[m.group(2)]) if m else "n/a")'
}

# Tools alternate within each repetition, and each figure is the median over repetitions, so that a slow
# phase of a shared machine does not land on one tool only.
results=$(mktemp)
for rep in $(seq "$REPEATS"); do
    for proto in tcp udp unix; do
        for wait in block spin; do
            echo "$proto $wait floor $(floor_p50 "$proto" "$wait")" >>"$results"
            echo "$proto $wait linkperf $(linkperf_p50 "$proto" "$wait")" >>"$results"
            [ "$proto" != unix ] && echo "$proto $wait sockperf $(sockperf_p50 "$proto" "$wait")" >>"$results"
            [ "$proto" != unix ] && [ "$wait" = block ] && echo "$proto $wait qperf $(qperf_rtt_mean "$proto") -" >>"$results"
        done
    done
    echo "connect - floor $("$FLOOR" connect "$HOST" 15260 "$SECONDS_EACH" | awk '{print $2, $1}')" >>"$results"
    echo "connect - linkperf $(linkperf_connect | awk '{print $2, $1}')" >>"$results"
    echo "repetition $rep of $REPEATS done" >&2
done
python3 - "$results" "$REPEATS" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    proto, wait, tool, *values = line.split()
    for i, v in enumerate(values[:2]):
        if v not in ("n/a", "-", ""):
            rows.setdefault((proto, wait, tool, i), []).append(float(v))
med = lambda *k: statistics.median(rows[k]) if k in rows else None
fmt = lambda v: "n/a" if v is None else "%.2f" % v
ratio = lambda a, b: "%.2f" % (a / b) if a and b else "n/a"
print("%-5s %-6s %10s %10s %10s %10s %10s %10s %8s %12s %11s" % ("proto", "wait", "floor p50", "floor p99",
      "linkp p50", "linkp p99", "sockp p50", "sockp p99", "qperf*", "linkp/floor", "linkp/best"))
for proto in ("tcp", "udp", "unix"):
    for wait in ("block", "spin"):
        fl, lp, sp, qp = (med(proto, wait, t, 0) for t in ("floor", "linkperf", "sockperf", "qperf"))
        peers = [v for v in (sp, qp) if v is not None]
        print("%-5s %-6s %10s %10s %10s %10s %10s %10s %8s %12s %11s" % (proto, wait, fmt(fl),
              fmt(med(proto, wait, "floor", 1)), fmt(lp), fmt(med(proto, wait, "linkperf", 1)), fmt(sp),
              fmt(med(proto, wait, "sockperf", 1)), fmt(qp), ratio(lp, fl), ratio(lp, min(peers)) if peers else "n/a"))
print("64-byte round trips on loopback, microseconds, median of %s repetitions; ratio < 1: linkperf is faster;"
      " qperf*: twice its mean one-way latency" % sys.argv[2])
fc, lc = med("connect", "-", "floor", 1), med("connect", "-", "linkperf", 1)
print()
print("%-9s %12s %12s %14s %14s %16s" % ("connect", "floor /s", "linkperf /s", "floor p50 us", "linkperf p50", "linkperf/floor"))
print("%-9s %12s %12s %14s %14s %16s" % ("tcp", fmt(fc), fmt(lc), fmt(med("connect", "-", "floor", 0)),
      fmt(med("connect", "-", "linkperf", 0)), ratio(lc, fc)))
print("connect + 12-byte request + 1-byte reply + close; ratio of connections per second (> 1: linkperf is faster)")
PY
rm -f "$results"
