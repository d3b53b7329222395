#!/usr/bin/env bash
# Historical read path benchmark (issue 5): one command, rerunnable.
#   benches/catchup.sh         # builds what it needs, then ~5-10 minutes
# Builds the release broker, benches/tools (delay proxy, sequential reader)
# and strata-s3 (local-stack/, the S3-protocol server on loopback; with
# BENCH_S3=s3s-fs it installs and uses s3s-fs from crates.io instead), builds rdkafka_performance through
# benches/run.sh's steps, and runs benches/catchup.py (see its docstring for
# what is measured and the BENCH_* knobs). Results: bench-results/catchup-*.json
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { echo "[catchup] $*" >&2; }
cd "$REPO"
log "cargo build --release -p strata-broker -p strata-bench-tools -p strata-local-stack"
cargo build --release -p strata-broker -p strata-bench-tools -p strata-local-stack
TOOLS="$REPO/target/bench-tools"
if [ "${BENCH_S3:-strata-s3}" = s3s-fs ] && [ ! -x "$TOOLS/bin/s3s-fs" ]; then
    log "installing s3s-fs 0.14.1 (once, ~3 minutes on 2 cores)"
    cargo install s3s-fs --version 0.14.1 --features binary --root "$TOOLS"
fi
if [ ! -x "$TOOLS/rdkafka_performance" ]; then
    log "building rdkafka_performance (benches/run.sh --tools-only)"
    BENCH_TOOLS_ONLY=1 benches/run.sh
fi
VENV="${VENV:-$REPO/.venv}"
if ! "$VENV/bin/python" -c 'import confluent_kafka' 2>/dev/null; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q -r tests/requirements.txt
fi
export STRATA_BIN="$REPO/target/release/strata" S3S_FS="$TOOLS/bin/s3s-fs" \
       RDKAFKA_PERFORMANCE="$TOOLS/rdkafka_performance" BENCH_TOOLS_DIR="$REPO/target/release"
exec "$VENV/bin/python" benches/catchup.py "$@"
