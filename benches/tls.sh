#!/usr/bin/env bash
# Produce and consume over SASL_SSL (PLAIN) against PLAINTEXT,
# Strata and Apache Kafka in the same run (issue 36).
#   benches/tls.sh                  # 3 rounds of 256 MB per listener (--preset quick), ~10 min on 2 cores
#   benches/tls.sh --preset full    # 5 rounds of 1 GB
#   benches/tls.sh --preset tiny    # checks the harness
#   benches/tls.sh --help           # what is measured, every option
# Provides what benches/tls.py needs, then runs it: the broker (STRATA_BIN,
# else cargo build --release), rdkafka_performance (benches/run.sh
# BENCH_TOOLS_ONLY=1), .venv (tests/requirements.txt) and Apache Kafka's jars.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$REPO"
if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'
    echo
    exec python3 "$REPO/benches/tls.py" --help
fi
if [ -z "${STRATA_BIN:-}" ]; then
    cargo build --release -p strata-broker
    STRATA_BIN="$REPO/target/release/strata"
fi
export STRATA_BIN
BENCH_TOOLS_ONLY=1 "$REPO/benches/run.sh"
export RDKAFKA_PERFORMANCE="$REPO/target/bench-tools/rdkafka_performance"
if ! .venv/bin/python -c 'import confluent_kafka, cryptography' 2>/dev/null; then
    python3 -m venv .venv
    .venv/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
fi
local-stack/kafka/kafka fetch >/dev/null
TLS_BENCH_COMMAND="benches/tls.sh${*:+ $*}" exec .venv/bin/python "$REPO/benches/tls.py" "$@"
