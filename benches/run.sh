#!/usr/bin/env bash
# Strata produce/consume benchmark. Builds nothing: expects target/release/strata.
#   benches/run.sh                       # defaults: 1 GiB produce, 1 KiB records, acks=all, 6 partitions
#   BENCH_PRODUCE_BYTES=268435456 benches/run.sh
#   benches/run.sh --help                # all knobs (environment variables)
# Results: bench-results/bench-<time>.json (+ the broker log).
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="${STRATA_BIN:-$REPO/target/release/strata}"
if [ ! -x "$BIN" ]; then
    echo "error: Strata binary not found at $BIN" >&2
    echo "       build it first:  cargo build --release   (or set STRATA_BIN)" >&2
    exit 2
fi
export STRATA_BIN="$BIN"
VENV="${VENV:-$REPO/.venv}"
if ! "$VENV/bin/python" -c 'import confluent_kafka' 2>/dev/null; then
    echo "[bench] setting up $VENV from tests/requirements.txt" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q -r "$REPO/tests/requirements.txt"
fi
exec "$VENV/bin/python" "$REPO/benches/produce_consume.py" "$@"
