#!/usr/bin/env bash
# The whole test suite: Rust unit tests, then the end-to-end suite that drives
# a real broker binary with real Kafka clients (librdkafka via confluent-kafka,
# and kafka-python). Creates .venv with the Python clients on first run.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> building the broker (release)"
cargo build --release --locked -p strata-broker

echo "==> Rust tests"
cargo test --workspace --locked

if [ ! -x .venv/bin/pytest ] || ! .venv/bin/python -c 'import confluent_kafka, kafka, pytest' 2>/dev/null; then
  echo "==> installing Python test clients into .venv"
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
fi

echo "==> end-to-end tests with real Kafka clients"
STRATA_BIN="$PWD/target/release/strata" .venv/bin/pytest tests/e2e -q "$@"
