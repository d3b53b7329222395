#!/usr/bin/env bash
# Log compaction benchmark: one command, rerunnable.
#   benches/compaction.sh            # builds the broker and .venv if needed; ~6 minutes
#   BENCH_DIRTY_MB=64 BENCH_REPEAT=1 benches/compaction.sh   # a quick look
# What it measures and its knobs: the docstring of benches/compaction.py.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
cargo build --release -p strata-broker
if [ ! -x .venv/bin/moto_server ] || ! .venv/bin/python -c 'import confluent_kafka, moto' 2>/dev/null; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
fi
export PATH="$REPO/.venv/bin:$PATH"
exec .venv/bin/python benches/compaction.py "$@"
