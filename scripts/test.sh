#!/usr/bin/env bash
# The whole test suite: the end-to-end suite that drives a real broker binary
# with real Kafka clients (librdkafka via confluent-kafka, and kafka-python),
# then the Rust tests (unit tests, and object-store tests against a real
# S3-protocol server, moto), then the client compatibility suite
# (tests/compat: the same scenario with confluent-kafka, kafka-python,
# aiokafka, kafkajs and kcat, librdkafka's own test suite, CI tier, the Java
# client, Kafka Streams, Kafka's command-line tools, franz-go, and a
# differential test against Apache Kafka itself). Creates .venv with the
# Python packages on first run, and installs kafkajs (npm), kcat, chromium and
# etcd-server (Debian) when missing; librdkafka's test runner is built from
# Debian's source package on first run (tests/compat/librdkafka/build.sh,
# about 2 minutes). It and the Rust tests are built in the background while
# the e2e suite runs, which mostly waits.
set -euo pipefail
cd "$(dirname "$0")/.."

# Each phase ends with a line `==> timing: <phase>: N s wall, M s CPU`
# (scripts/timed.py), so a run's log shows where its time went.
timed() { python3 scripts/timed.py "$@"; }
RDK_PID=""
RDK_LOG="$PWD/target/librdkafka-suite-build.log"
RUST_PID=""
RUST_LOG="$PWD/target/rust-tests-build.log"
# Each pytest suite writes a JUnit report here; on exit the failed tests
# are printed last (scripts/failures.py), so a run's tail names them.
REPORTS="$PWD/target/test-reports"
on_exit() {
  local rc=$?
  # The background builds (librdkafka's test runner, the Rust tests; below):
  # stopped if the command ends before they do, their timings printed, and
  # the librdkafka build's log printed if it failed (a failed Rust test
  # build is built again, in the foreground, by `cargo test`).
  for pid in "$RDK_PID" "$RUST_PID"; do
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill -- -"$pid" 2>/dev/null || true
    fi
  done
  for log in "$RDK_LOG" "$RUST_LOG"; do
    [ -f "$log" ] && grep -h '^==> timing:' "$log" || true
  done
  if [ -f "$RDK_LOG.rc" ] && [ "$(cat "$RDK_LOG.rc")" != 0 ]; then
    echo "==> the background build of librdkafka's test runner failed (exit $(cat "$RDK_LOG.rc")); its log, $RDK_LOG:"
    cat "$RDK_LOG"
  fi
  if [ "$rc" != 0 ] && compgen -G "$REPORTS/*.xml" >/dev/null; then
    python3 scripts/failures.py "$REPORTS"/*.xml || true
  fi
  echo "==> timing: whole test command: ${SECONDS} s wall (exit $rc)"
}
trap on_exit EXIT

rm -rf "$REPORTS"

echo "==> building the broker and strata-s3 (release)"
timed "release build" -- cargo build --release --locked -p strata-broker -p strata-local-stack

# Real clients and a real S3-protocol server (moto) come from PyPI.
if [ ! -x .venv/bin/pytest ] || [ ! -x .venv/bin/moto_server ] \
   || ! .venv/bin/python -c 'import confluent_kafka, kafka, pytest, xdist, moto, aiokafka, cramjam, snappy, lz4.frame, zstandard, kio, prometheus_client, openapi_core, requests, cryptography' 2>/dev/null; then
  echo "==> installing Python test clients and moto into .venv"
  python3 -m venv .venv
  .venv/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
fi

# Command-line Kafka clients from Debian (the README's kcat line is run).
if ! command -v kcat >/dev/null; then
  echo "==> installing kcat (Debian)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get install -y -qq kcat >/dev/null 2>&1 \
    || { $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq kcat >/dev/null; }
fi

# Chromium from Debian: the console page is loaded in it (tests/e2e/test_console.py).
if ! command -v chromium >/dev/null; then
  echo "==> installing chromium (Debian)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get install -y -qq chromium >/dev/null 2>&1 \
    || { $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq chromium >/dev/null; }
fi

# etcd from Debian for the cluster tests (Rust store tests and
# tests/e2e/test_cluster_*.py start their own members on free ports).
if ! command -v etcd >/dev/null; then
  echo "==> installing etcd-server (Debian)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get install -y -qq etcd-server >/dev/null 2>&1 \
    || { $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq etcd-server >/dev/null; }
fi

# kafkajs for tests/compat, pinned by its package-lock.json; reinstalled when
# the lock file changes (the stamp holds the hash of the lock installed).
KJS=tests/compat/kafkajs
if command -v npm >/dev/null; then
  LOCK_SUM="$(sha256sum "$KJS/package-lock.json" | cut -d' ' -f1)"
  if [ ! -d "$KJS/node_modules" ] || [ "$(cat "$KJS/node_modules/.strata-lock.sha256" 2>/dev/null)" != "$LOCK_SUM" ]; then
    echo "==> installing kafkajs (npm ci in $KJS)"
    npm ci --prefix "$KJS" --no-audit --no-fund --loglevel=error
    echo "$LOCK_SUM" > "$KJS/node_modules/.strata-lock.sha256"
  fi
else
  echo "==> npm not found: the kafkajs compatibility tests will fail (install Node.js 20 and npm)"
fi

# Java and Maven (Debian) for the Java client, Kafka Streams and Kafka's
# own tools (tests/compat/java, streams, kafka_tools, differential), whose
# jars come from Maven Central; Go for franz-go (tests/compat/franz-go).
if ! command -v mvn >/dev/null || ! command -v java >/dev/null; then
  echo "==> installing Java 17 and Maven (Debian)"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null 2>&1 \
    || { $SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq openjdk-17-jdk-headless maven >/dev/null; }
fi
command -v go >/dev/null || echo "==> go not found: the franz-go compatibility tests will fail (install Go 1.24+)"
echo "==> Apache Kafka's jars (Maven Central, first run only)"
local-stack/kafka/kafka fetch >/dev/null

echo "==> import graph: no file imports back into a file that imports it"
python3 scripts/import_graph.py

# The Python suites mostly wait (brokers, clusters, session timeouts), so
# each runs on PYTEST_WORKERS pytest-xdist workers (docs/test-suite.md).
# A compat file keeps its one broker, so compat is spread file by file.
WORKERS="${PYTEST_WORKERS:-3}"

# librdkafka's test runner (compat) is built in the background, at the
# lowest CPU priority, while the e2e suite runs: e2e keeps under one of the
# two cores busy. Its own session and process group (setsid), so the EXIT
# trap can stop it; log in $RDK_LOG, exit status in $RDK_LOG.rc. The compat
# fixture waits for the .rc file and fails (never skips) if it is not 0;
# build.sh holds a lock, so a second build.sh waits instead of building too.
echo "==> building librdkafka's test runner in the background (log: $RDK_LOG)"
mkdir -p target
rm -f "$RDK_LOG" "$RDK_LOG.rc"
setsid bash -c 'python3 scripts/timed.py "librdkafka runner build (background)" -- \
                  nice -n 19 tests/compat/librdkafka/build.sh > "$1" 2>&1; echo $? > "$1.rc"' \
  rdk-build "$RDK_LOG" &
RDK_PID=$!

# The Rust tests' build (the test profile: every dependency again, unoptimized)
# is done the same way, in the background at the lowest priority while the
# e2e suite waits on its brokers; the tests themselves run after e2e, in the
# foreground, whose `cargo test` waits on cargo's lock for this build and
# then only runs them (or, if this build failed, builds again and shows why).
echo "==> building the Rust tests in the background (log: $RUST_LOG)"
rm -f "$RUST_LOG"
setsid bash -c 'python3 scripts/timed.py "Rust test build (background)" -- \
                  nice -n 19 cargo test --workspace --locked --no-run > "$1" 2>&1' \
  rust-build "$RUST_LOG" &
RUST_PID=$!

echo "==> end-to-end tests with real Kafka clients ($WORKERS workers)"
STRATA_BIN="$PWD/target/release/strata" STRATA_S3_BIN="$PWD/target/release/strata-s3" \
  timed "e2e suite" -- .venv/bin/pytest tests/e2e -q -n "$WORKERS" --durations=20 \
    --junitxml="$REPORTS/e2e.xml" "$@"

echo "==> Rust tests (the object-store tests start moto from .venv)"
timed "Rust tests" -- cargo test --workspace --locked

echo "==> client compatibility suite (tests/compat, $WORKERS workers)"
STRATA_BIN="$PWD/target/release/strata" STRATA_RDKAFKA_BUILD_LOG="$RDK_LOG" \
  timed "compat suite" -- .venv/bin/pytest tests/compat -q -n "$WORKERS" --dist loadfile --durations=10 \
    --junitxml="$REPORTS/compat.xml"
