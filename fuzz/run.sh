#!/usr/bin/env bash
# Builds the fuzz targets (optimised, with overflow checks and debug assertions on, as in a test build) and
# runs each for SECONDS (default 10), starting from the seeds in fuzz/seeds/, the past findings in
# fuzz/findings/ and the corpus kept in fuzz/corpus/ (not committed; new inputs go there). A crash, a panic,
# an input slower than 10 s or one that takes more than 2 GiB is a finding: its input is written to
# fuzz/artifacts/TARGET/, the run goes on with the next target, and the script exits 1 naming the targets
# with findings. fuzz/README.md says what to do with one.
#
# Each target's body is a function of fuzz/src/lib.rs; CI replays every committed input through them on
# stable Rust (crates/linkperf/tests/fuzz_inputs.rs), so this script is for finding new inputs.
#
#   fuzz/run.sh               10 s per target
#   fuzz/run.sh 600           10 minutes per target (by hand)
#   fuzz/run.sh 60 frame auth some targets only
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install --locked cargo-fuzz`).
set -euo pipefail
cd "$(dirname "$0")"
seconds=${1:-10}
shift || true
if [ $# -gt 0 ]; then targets=("$@"); else mapfile -t targets < <(cargo +nightly fuzz list); fi
json_targets=" message test_request report run_result frame "

cargo +nightly fuzz build -O -a
mkdir -p logs
findings=()
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target" "seeds/$target"
    known=("seeds/$target")
    if [ -d "findings/$target" ]; then known+=("findings/$target"); fi
    dict=()
    if [[ $json_targets == *" $target "* ]]; then dict=(-dict=json.dict); fi
    if cargo +nightly fuzz run -O -a "$target" "corpus/$target" "${known[@]}" -- \
        -max_total_time="$seconds" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        "${dict[@]}" >"logs/$target.log" 2>&1; then
        verdict=ok
    else
        verdict=FINDING
        findings+=("$target")
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "logs/$target.log" | tail -1)
    echo "$target: ${runs:-?} inputs in ${seconds} s, $verdict"
done
if [ ${#findings[@]} -gt 0 ]; then
    echo "findings in: ${findings[*]} (inputs in fuzz/artifacts/, logs in fuzz/logs/)" >&2
    exit 1
fi
