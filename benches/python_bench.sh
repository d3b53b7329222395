#!/usr/bin/env bash
# Runs one Python benchmark of benches/ (the argument: its file name) after
# building the release broker and, when missing, the test venv (.venv, with
# moto and the Kafka clients from tests/requirements.txt). Used by
# benches/store_faults.sh, benches/compaction.sh and benches/transactions.sh.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
script="$1"; shift
cargo build --release -p strata-broker
if [ ! -x .venv/bin/moto_server ] || ! .venv/bin/python -c 'import confluent_kafka, moto' 2>/dev/null; then
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
fi
export PATH="$REPO/.venv/bin:$PATH"
exec .venv/bin/python "benches/$script" "$@"
