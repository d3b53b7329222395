#!/usr/bin/env bash
# Strata produce/consume benchmark: one command, rerunnable.
#   benches/run.sh            # build broker (cargo build --release -p strata-broker) and
#                             # rdkafka_performance if needed, then measure; ~1-2 minutes
#   benches/run.sh --help     # what is measured, all knobs (environment variables)
#   BENCH_CLIENT=python benches/run.sh   # secondary mode: the older confluent-kafka (Python)
#                             # load generator, benches/produce_consume.py (client-bound)
# Load generator: librdkafka's own rdkafka_performance, compiled from the example
# source Debian's librdkafka-dev ships, against small stand-ins for two internal
# headers (benches/rdkafka-shim/). Strata alone; Apache Kafka beside it, in the
# same run: benches/vs_kafka.sh.
# Installs librdkafka-dev (apt-get) if the header or the example source is missing.
# Results: bench-results/bench-<time>.json (+ the broker log).
#   STRATA_BIN=path   use this broker binary and skip the cargo build
#   BENCH_REBUILD_TOOLS=1   rebuild rdkafka_performance even if present
#   RDKAFKA_EXAMPLES_DIR=dir   where rdkafka_performance.c[.gz] is (default: librdkafka-dev's docs)
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
log() { echo "[bench] $*" >&2; }

if [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    echo
    exec "$PYTHON" "$REPO/benches/bench.py" --help
fi

# --- broker ---------------------------------------------------------------
if [ -n "${STRATA_BIN:-}" ]; then
    log "using STRATA_BIN=$STRATA_BIN (no cargo build)"
else
    log "cargo build --release -p strata-broker"
    (cd "$REPO" && cargo build --release -p strata-broker)
    STRATA_BIN="$REPO/target/release/strata"
fi
if [ ! -x "$STRATA_BIN" ]; then
    echo "error: Strata binary not found at $STRATA_BIN" >&2
    exit 2
fi
export STRATA_BIN

# --- secondary mode: Python clients -----------------------------------------
if [ "${BENCH_CLIENT:-rdkafka}" = "python" ]; then
    VENV="${VENV:-$REPO/.venv}"
    if ! "$VENV/bin/python" -c 'import confluent_kafka' 2>/dev/null; then
        log "setting up $VENV from tests/requirements.txt"
        "$PYTHON" -m venv "$VENV"
        "$VENV/bin/pip" install -q -r "$REPO/tests/requirements.txt"
    fi
    exec "$VENV/bin/python" "$REPO/benches/produce_consume.py" "$@"
fi

# --- rdkafka_performance ---------------------------------------------------
TOOLS="$REPO/target/bench-tools"
RKP="$TOOLS/rdkafka_performance"
SHIM="$REPO/benches/rdkafka-shim"
DOC="${RDKAFKA_EXAMPLES_DIR:-/usr/share/doc/librdkafka-dev/examples}"

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

find_example() {
    local f
    for f in "$DOC/rdkafka_performance.c" "$DOC/rdkafka_performance.c.gz"; do
        if [ -f "$f" ]; then echo "$f"; return 0; fi
    done
    return 1
}

BUILD_TMP=""
trap '[ -z "$BUILD_TMP" ] || rm -rf "$BUILD_TMP"' EXIT

APT_UPDATED=0
apt_install() {
    if [ "$APT_UPDATED" = 0 ]; then
        log "apt-get update"
        as_root apt-get update -qq
        APT_UPDATED=1
    fi
    log "apt-get install -y $*"
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
}

build_rdkafka_performance() {
    local missing=() pkg
    for pkg in librdkafka-dev zlib1g-dev gcc libc6-dev; do
        dpkg-query -W -f '${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' || missing+=("$pkg")
    done
    [ "${#missing[@]}" = 0 ] || apt_install "${missing[@]}"

    local build src
    build="$(mktemp -d "${TMPDIR:-/tmp}/rdkafka-perf-build.XXXXXX")"
    BUILD_TMP="$build"
    mkdir -p "$build/examples" "$build/src"
    src="$(find_example || true)"
    if [ -z "$src" ]; then
        # Images that exclude /usr/share/doc from dpkg installs (path-exclude)
        # never get the file: take it straight from the package archive.
        log "example source not installed (dpkg path-exclude?); extracting it from the .deb"
        (cd "$build" && apt-get download librdkafka-dev >&2 && dpkg-deb -x librdkafka-dev_*.deb pkg)
        src="$(find "$build/pkg" -name 'rdkafka_performance.c*' | head -n1)"
        [ -n "$src" ] || { echo "error: rdkafka_performance.c not found in librdkafka-dev" >&2; exit 2; }
    fi
    case "$src" in
        *.gz) gzip -dc "$src" >"$build/examples/rdkafka_performance.c" ;;
        *) cp "$src" "$build/examples/rdkafka_performance.c" ;;
    esac
    cp "$SHIM"/*.h "$build/src/"
    mkdir -p "$TOOLS"
    log "building $RKP from $src"
    gcc -O2 -I "$build/src" -I/usr/include/librdkafka -o "$RKP.tmp" \
        "$build/examples/rdkafka_performance.c" -lrdkafka -lpthread -lz -lm
    mv "$RKP.tmp" "$RKP"
    rm -rf "$build"
    BUILD_TMP=""
}

if [ "${BENCH_REBUILD_TOOLS:-0}" = 1 ] || [ ! -x "$RKP" ] \
    || [ "$SHIM/rd.h" -nt "$RKP" ] || [ "$SHIM/rdtime.h" -nt "$RKP" ] \
    || { src="$(find_example || true)"; [ -n "$src" ] && [ "$src" -nt "$RKP" ]; }; then
    build_rdkafka_performance
fi
export RDKAFKA_PERFORMANCE="$RKP"

if [ "${BENCH_TOOLS_ONLY:-0}" = "1" ]; then
    exit 0
fi
exec "$PYTHON" "$REPO/benches/bench.py" "$@"
