#!/usr/bin/env bash
# Build librdkafka's own test suite (tests/test-runner) from Debian's source
# package, for tests/compat/test_librdkafka_suite.py.
#
#   tests/compat/librdkafka/build.sh        # prints the test-runner's directory
#
# Everything lands in target/librdkafka-suite/ (gitignored):
#   dl/                  the Debian source package (.dsc, orig tarball, debian tarball)
#   librdkafka-<ver>/    the unpacked, Debian-patched source tree, built in place
#   .built               stamp: "<debian version> <dir> <recipe> <configure flags>" of the finished build
#   .lock                flock(1) lock held for the whole of a build.sh run
# A rerun with a matching stamp and an existing test-runner does nothing.
# Runs are serialised on .lock: a second build.sh (scripts/test.sh builds in
# the background while the e2e suite runs; the compat fixture then calls
# build.sh again) waits for the first to finish and then finds the stamp, so
# a build never runs twice at once and a half-built tree is never used.
#
# Sources: only Debian's archive, through apt. If no deb-src entry for the
# release is configured, /etc/apt/sources.list.d/strata-deb-src.sources is
# written (deb.debian.org, <codename> and <codename>-updates, main) and the
# package lists are updated. Build tools and libraries come from apt too.
# Nothing is downloaded from GitHub: configure runs with --no-download.
#
# Environment:
#   LIBRDKAFKA_DEB_VERSION  Debian source version (default 2.0.2-1, bookworm's);
#                           if the archive no longer has it, the candidate
#                           version is used with a warning.
#   STRATA_RDKAFKA_DIR      build root (default <repo>/target/librdkafka-suite)
#   MAKE_JOBS               make -j (default 2)
set -euo pipefail

REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
ROOT="${STRATA_RDKAFKA_DIR:-$REPO/target/librdkafka-suite}"
WANT="${LIBRDKAFKA_DEB_VERSION:-2.0.2-1}"
JOBS="${MAKE_JOBS:-2}"
# Bump RECIPE when the build changes in a way the stamp cannot see (packages,
# the edits of 0061 and of the seek wait below).
RECIPE=4
CONFIGURE_FLAGS=(--no-download --disable-gssapi --disable-curl --enable-ssl
                 --enable-zlib --enable-zstd --enable-lz4-ext --disable-syslog)

log() { echo "==> [librdkafka-suite] $*" >&2; }

mkdir -p "$ROOT"
exec 9>"$ROOT/.lock"
if ! flock -n 9; then
  log "waiting for another build.sh run to finish ($ROOT/.lock)"
  flock 9
fi

SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"

# "<debian version> <source dir> <configure flags>" of a finished build.
stamp_for() { echo "$1 librdkafka-$(upstream_of "$1") recipe-$RECIPE ${CONFIGURE_FLAGS[*]}"; }
upstream_of() { local u="${1%-*}"; echo "${u#*:}"; }
built_ok() {  # $1 = debian version
  [ -f "$ROOT/.built" ] && [ "$(cat "$ROOT/.built")" = "$(stamp_for "$1")" ] \
    && [ -x "$ROOT/librdkafka-$(upstream_of "$1")/tests/test-runner" ]
}

# Fast path: already built (no apt access at all).
if built_ok "$WANT"; then
  echo "$ROOT/librdkafka-$(upstream_of "$WANT")/tests"
  exit 0
fi

mkdir -p "$ROOT/dl"

# --- build tools and libraries (Debian) -------------------------------------
# rapidjson-dev: the tests that check statistics JSON (0053, 0098, 0101, 0110)
# are skipped without it.
PKGS=(build-essential dpkg-dev python3 zlib1g-dev libzstd-dev liblz4-dev libssl-dev rapidjson-dev)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing ${missing[*]} (apt)"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 \
    || { $SUDO apt-get update -qq >/dev/null \
         && $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
fi

# --- deb-src entry -----------------------------------------------------------
have_src() { [ -n "$(apt-cache showsrc librdkafka 2>/dev/null | sed -n 's/^Version: //p' | head -1)" ]; }
if ! have_src; then
  # shellcheck disable=SC1091
  . /etc/os-release
  CODENAME="${VERSION_CODENAME:-bookworm}"
  SRC_LIST=/etc/apt/sources.list.d/strata-deb-src.sources
  log "adding deb-src for $CODENAME main ($SRC_LIST) and updating apt"
  $SUDO tee "$SRC_LIST" >/dev/null <<EOF
# Added by Strata's tests/compat/librdkafka/build.sh (librdkafka's test suite
# is built from Debian's source package).
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $CODENAME $CODENAME-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  $SUDO apt-get update -qq >/dev/null
  have_src || { echo "apt has no source package for librdkafka even after adding $SRC_LIST" >&2; exit 1; }
fi

# --- source package -------------------------------------------------------------
VER="$WANT"
if ! apt-cache showsrc librdkafka | grep -qx "Version: $WANT"; then
  VER="$(apt-cache showsrc librdkafka | sed -n 's/^Version: //p' | head -1)"
  log "WARNING: librdkafka source $WANT is not in the archive; using $VER" \
      "(tests/compat/librdkafka/ALLOWLIST was made with $WANT)"
fi
UPSTREAM="$(upstream_of "$VER")"
if built_ok "$VER"; then
  echo "$ROOT/librdkafka-$UPSTREAM/tests"
  exit 0
fi
DSC="$ROOT/dl/librdkafka_${VER#*:}.dsc"
if [ ! -f "$DSC" ]; then
  log "downloading the librdkafka $VER source package (apt-get source)"
  # apt verifies every file against the signed Sources index.
  (cd "$ROOT/dl" && apt-get source -qq --download-only "librdkafka=$VER" 2>&1 \
     | grep -v "unsandboxed as root" >&2 || true)
  [ -f "$DSC" ] || { echo "apt-get source did not produce $DSC" >&2; exit 1; }
fi

SRCDIR="librdkafka-$UPSTREAM"
if [ ! -f "$ROOT/$SRCDIR/tests/test.c" ] || [ ! -f "$ROOT/$SRCDIR/.strata-unpacked" ]; then
  log "unpacking $DSC (with Debian's patches)"
  rm -rf "${ROOT:?}/$SRCDIR"
  (cd "$ROOT" && dpkg-source -q -x "$DSC" "$SRCDIR" >/dev/null 2>&1) \
    || (cd "$ROOT" && dpkg-source -x "$DSC" "$SRCDIR")
  rm -f "$ROOT"/librdkafka_*.orig.tar.*   # dpkg-source's copy next to the tree (dl/ has it)
  touch "$ROOT/$SRCDIR/.strata-unpacked"
fi

# --- the one change to librdkafka's tests ------------------------------------------
# 0061 (consumer lag from statistics) compares the statistics' consumer_lag
# exactly with the lag it computed from the last message it dequeued; a
# statistics event built just before that dequeue is served after it, one
# message behind (tests/compat/librdkafka/FINDINGS.md). Both numbers come from
# the client. The check is relaxed to that one message, and stays exact
# otherwise; the edit is checked, so a source that changed makes this fail.
cd "$ROOT/$SRCDIR"
T0061=tests/0061-consumer_lag.cpp
STRICT='} else if (consumer_lag != calc_lag)'
RELAXED='} else if (consumer_lag != calc_lag \&\& consumer_lag != calc_lag + 1)'
if grep -qF "$STRICT" "$T0061"; then
  sed -i "s/} else if (consumer_lag != calc_lag)/$RELAXED/" "$T0061"
fi
grep -qF '} else if (consumer_lag != calc_lag && consumer_lag != calc_lag + 1)' "$T0061" \
  || { echo "build.sh: $T0061 has neither the check it relaxes nor the relaxed one" >&2; exit 1; }

# --- the one change to the client ---------------------------------------------------
# librdkafka before 2.1.0 waits for each seek's answer in
# rd_kafka_seek_partitions() with its timeout in milliseconds handed to a
# queue wait that takes microseconds: 0015's "with timeout" asks for 7,000 ms
# and waits 7 ms, so it fails whenever the client's own broker thread takes
# longer than that to start the seeks (CI run 26, on a loaded machine; no
# request reaches the broker). Upstream fixed the unit in 2.1.0
# (librdkafka pull request 4230); the same fix is applied here, checked like
# 0061's edit (tests/compat/librdkafka/FINDINGS.md).
SEEK_MS='rko = rd_kafka_q_pop(tmpq, rd_timeout_remains(abs_timeout), 0);'
SEEK_US='rko = rd_kafka_q_pop(tmpq, rd_timeout_remains_us(abs_timeout), 0);'
if grep -qF "$SEEK_MS" src/rdkafka.c; then
  sed -i "s/rd_kafka_q_pop(tmpq, rd_timeout_remains(abs_timeout), 0);/rd_kafka_q_pop(tmpq, rd_timeout_remains_us(abs_timeout), 0);/" src/rdkafka.c
fi
grep -qF "$SEEK_US" src/rdkafka.c \
  || { echo "build.sh: src/rdkafka.c has neither the seek wait it fixes nor the fixed one" >&2; exit 1; }

# --- build -------------------------------------------------------------------------
log "configuring (${CONFIGURE_FLAGS[*]})"
./configure "${CONFIGURE_FLAGS[@]}" > "$ROOT/configure.log" 2>&1 \
  || { tail -40 "$ROOT/configure.log" >&2; exit 1; }
log "building the library (make -j$JOBS libs; log in $ROOT/make.log)"
make -j"$JOBS" libs > "$ROOT/make.log" 2>&1 || { tail -40 "$ROOT/make.log" >&2; exit 1; }
log "building the test runner (make -C tests -j$JOBS build)"
make -C tests -j"$JOBS" build >> "$ROOT/make.log" 2>&1 || { tail -40 "$ROOT/make.log" >&2; exit 1; }
[ -x tests/test-runner ] || { echo "tests/test-runner was not built" >&2; exit 1; }

stamp_for "$VER" > "$ROOT/.built"
log "built $ROOT/$SRCDIR/tests/test-runner (librdkafka $VER)"
echo "$ROOT/$SRCDIR/tests"
