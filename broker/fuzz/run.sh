#!/usr/bin/env bash
# Runs every fuzz target for a fixed budget, seeded from seeds/<target>
# (requests and batches captured from real clients: capture_seeds.py), and
# prints executions and findings per target. A crash is saved by libFuzzer
# under artifacts/<target>/; copy it to regressions/<target>/ so the test
# command replays it (strata_broker::fuzz_targets tests).
#
#   broker/fuzz/run.sh [SECONDS_PER_TARGET]     (default 60)
#
# Needs the nightly toolchain and cargo-fuzz (cargo install cargo-fuzz).
# -malloc_limit_mb makes any single allocation over 64 MiB a finding: no
# input up to -max_len may cost that much (decode bounds: 16 x its size).
set -euo pipefail
cd "$(dirname "$0")"
secs="${1:-60}"
mkdir -p corpus artifacts
summary=()
for t in request record_batch consumer_protocol stored_files; do
  mkdir -p "corpus/$t" "artifacts/$t"
  log="artifacts/$t.log"
  status=0
  cargo +nightly fuzz run "$t" "corpus/$t" "seeds/$t" -- \
    -max_total_time="$secs" -max_len=65536 -malloc_limit_mb=64 -rss_limit_mb=2048 \
    -artifact_prefix="artifacts/$t/" -print_final_stats=1 >"$log" 2>&1 || status=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  crashes=$(find "artifacts/$t" -type f | wc -l)
  summary+=("$t: ${execs} executions in ${secs}s, exit ${status}, ${crashes} artifacts")
done
printf '%s\n' "${summary[@]}"
