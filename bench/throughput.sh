#!/usr/bin/env bash
# Throughput on loopback: linkperf beside iperf3 and nuttcp, measured in one run.
#
# Measurements (each tool against its own server process on 127.0.0.1, peers alternating within each
# repetition, figures the median over repetitions):
#   1. TCP, one stream, SECONDS long with the first second omitted: goodput in Gbit/s as each tool reports it
#      (payload bits per second), and host CPU-seconds per 10^9 bytes moved, from /proc/stat (every core's
#      non-idle time over the run, both ends included, since both run here);
#   2. TCP, four parallel streams: summed goodput;
#   3. UDP, 1472-byte datagrams: the highest offered rate at which the receiver reports under 0.1 % loss,
#      found by doubling from 0.5 Gbit/s, then bisection (9 runs of 2 s), in Gbit/s.
# The targets (issue: throughput): TCP one stream at least 1.4x iperf3's goodput at no more CPU per GB;
# UDP lossless rate at least 5x iperf3's. A tool must never be the bottleneck of a link it measures.
#
# Usage: bench/throughput.sh [SECONDS [REPETITIONS]]   (defaults 6 and 3). Installs iperf3 and nuttcp with
# apt-get if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_EACH=${1:-6}
REPEATS=${2:-3}
source bench/common.sh
need iperf3 iperf3
need nuttcp nuttcp
need python3 python3
build_linkperf

start "$LINKPERF" serve --bind "$HOST" --port 15250 --quiet
start iperf3 -s -B "$HOST" -p 15301
start nuttcp -S -P 15401 -p 15402 --nofork
sleep 1

# Host CPU time in seconds (all cores, non-idle), from /proc/stat.
busy_seconds() { awk '/^cpu /{print ($2+$3+$4+$7+$8+$9)/100}' /proc/stat; }

# Each tcp_* prints "GBITS" for a run of SECONDS_EACH with STREAMS streams.
tcp_linkperf() {
    "$LINKPERF" throughput "$HOST" -p 15250 -P "$1" --duration "${SECONDS_EACH}s" --omit 1 --json --no-progress |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["throughput"][0]["receiver_bps"] / 1e9)'
}
tcp_iperf3() {
    iperf3 -c "$HOST" -p 15301 -P "$1" -t "$SECONDS_EACH" -O 1 -J |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9)'
}
tcp_nuttcp() {
    nuttcp -T "$SECONDS_EACH" -N "$1" -P 15401 -p 15402 "$HOST" | sed -n 's/.*= *\([0-9.]*\) Mbps.*/\1/p' |
        python3 -c 'import sys; print(float(sys.stdin.read()) / 1e3)'
}

# Each udp_* prints the loss in percent at rate $1 (Gbit/s) of 1472-byte datagrams, over 2 s.
udp_linkperf() {
    "$LINKPERF" throughput "$HOST" -p 15250 --proto udp --rate "${1}G" --duration 2s --json --no-progress |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["throughput"][0]["udp"]["loss_percent"])'
}
udp_iperf3() {
    iperf3 -c "$HOST" -p 15301 -u -l 1472 -b "${1}G" -t 2 -J |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum"]["lost_percent"])'
}
udp_nuttcp() {
    nuttcp -u -l 1472 -R "${1}g" -T 2 -P 15401 -p 15402 "$HOST" | sed -n 's/.* \([0-9.]*\) %loss.*/\1/p'
}

# Bisection on the rate for loss under 0.1 %.
udp_lossless() {
    python3 - "$1" <<'PY'
import subprocess, sys
tool = sys.argv[1]
low, high = 0.0, 40.0
rate = 0.5
for _ in range(9):
    out = subprocess.run(["bash", "-c", f"udp_{tool} {rate}"], capture_output=True, text=True).stdout.strip()
    try:
        loss = float(out)
    except ValueError:
        loss = 100.0
    if loss < 0.1:
        low = rate
    else:
        high = rate
    rate = (low + high) / 2 if high < 40.0 else rate * 2
print(f"{low:.2f}")
PY
}
export -f udp_linkperf udp_iperf3 udp_nuttcp
export LINKPERF HOST

results=$(mktemp)
for rep in $(seq "$REPEATS"); do
    for tool in linkperf iperf3 nuttcp; do
        before=$(busy_seconds)
        gbits=$("tcp_$tool" 1)
        after=$(busy_seconds)
        echo "tcp1 $tool $gbits $(python3 -c "print(($after - $before) / ($gbits / 8 * $SECONDS_EACH))")" >>"$results"
        echo "tcp4 $tool $("tcp_$tool" 4) 0" >>"$results"
        echo "udp $tool $(udp_lossless "$tool") 0" >>"$results"
    done
    echo "repetition $rep of $REPEATS done" >&2
done

python3 - "$results" "$REPEATS" "$SECONDS_EACH" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    test, tool, value, cpu = line.split()
    rows.setdefault((test, tool), []).append((float(value), float(cpu)))
med = lambda test, tool, i=0: statistics.median(v[i] for v in rows[(test, tool)])
print(f"{'measurement':<38} {'linkperf':>10} {'iperf3':>10} {'nuttcp':>10} {'vs iperf3':>10} {'vs nuttcp':>10}")
def row(label, test, i=0, fmt="{:.2f}", lower_is_better=False):
    lp, ip, nt = (med(test, t, i) for t in ("linkperf", "iperf3", "nuttcp"))
    ratio = lambda peer: f"{(peer / lp if lower_is_better else lp / peer):.2f}x" if peer and lp else "n/a"
    print(f"{label:<38} {fmt.format(lp):>10} {fmt.format(ip):>10} {fmt.format(nt):>10} {ratio(ip):>10} {ratio(nt):>10}")
row("TCP 1 stream, Gbit/s", "tcp1")
row("TCP 1 stream, host CPU-s per GB", "tcp1", 1, "{:.3f}", lower_is_better=True)
row("TCP 4 streams, Gbit/s", "tcp4")
row("UDP 1472 B, highest rate < 0.1 % loss, Gbit/s", "udp")
print(f"loopback, median of {sys.argv[2]} repetitions of {sys.argv[3]} s; ratios > 1 favour linkperf (for CPU, peer/linkperf)")
PY
rm -f "$results"
