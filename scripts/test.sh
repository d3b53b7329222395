#!/usr/bin/env bash
# The whole test suite: Rust tests (unit tests, and object-store tests against
# a real S3-protocol server, moto), then the end-to-end suite that drives a
# real broker binary with real Kafka clients (librdkafka via confluent-kafka,
# and kafka-python). Creates .venv with the Python packages on first run.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "==> building the broker and strata-s3 (release)"
cargo build --release --locked -p strata-broker -p strata-local-stack

# Real clients and a real S3-protocol server (moto) come from PyPI.
if [ ! -x .venv/bin/pytest ] || [ ! -x .venv/bin/moto_server ] \
   || ! .venv/bin/python -c 'import confluent_kafka, kafka, pytest, moto' 2>/dev/null; then
  echo "==> installing Python test clients and moto into .venv"
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
fi

echo "==> Rust tests (the object-store tests start moto from .venv)"
cargo test --workspace --locked


echo "==> end-to-end tests with real Kafka clients"
STRATA_BIN="$PWD/target/release/strata" STRATA_S3_BIN="$PWD/target/release/strata-s3" \
  .venv/bin/pytest tests/e2e -q "$@"
