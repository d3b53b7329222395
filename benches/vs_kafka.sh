#!/usr/bin/env bash
# Apache Kafka and Strata side by side in one run (issue 34): alternating
# rounds, medians per system and the ratio Strata / Kafka per metric.
#   benches/vs_kafka.sh --quick     # CI-size, about 15-30 minutes on 2 cores
#   benches/vs_kafka.sh             # the full run (1 GiB phases, 4 GiB restart, 5 rounds), ~20 min
#   benches/vs_kafka.sh --tiny      # a few MB, one round: checks the harness
#   benches/vs_kafka.sh --durability fsync --quick   # Kafka also fsyncs before acknowledging
#   benches/vs_kafka.sh --help      # what is measured, every option
# Provides what benches/vs_kafka.py needs, then runs it:
#   - the broker: STRATA_BIN if set, else cargo build --release -p strata-broker;
#   - rdkafka_performance (benches/run.sh BENCH_TOOLS_ONLY=1; may apt-get librdkafka-dev);
#   - .venv with confluent-kafka (tests/requirements.txt; the failover client);
#   - Apache Kafka's jars (local-stack/kafka/kafka fetch: Maven Central, first use), Java 17+.
# Results: bench-results/vs-kafka-<time>.json and the brokers' logs beside it.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
log() { echo "[vs-kafka] $*" >&2; }

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
    sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
    echo
    exec python3 "$REPO/benches/vs_kafka.py" --help
fi

if [ -z "${STRATA_BIN:-}" ]; then
    log "cargo build --release -p strata-broker"
    cargo build --release -p strata-broker
    STRATA_BIN="$REPO/target/release/strata"
fi
export STRATA_BIN
BENCH_TOOLS_ONLY=1 "$REPO/benches/run.sh"
export RDKAFKA_PERFORMANCE="$REPO/target/bench-tools/rdkafka_performance"

if ! .venv/bin/python -c 'import confluent_kafka' 2>/dev/null; then
    log "setting up .venv from tests/requirements.txt"
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
fi
local-stack/kafka/kafka fetch >/dev/null

VS_KAFKA_COMMAND="benches/vs_kafka.sh${*:+ $*}" exec .venv/bin/python "$REPO/benches/vs_kafka.py" "$@"
