"""librdkafka's own broker test suite (the C/C++ tests of its tests/
directory, driven by its test-runner) against a Strata broker.

librdkafka is built from Debian's source package by
tests/compat/librdkafka/build.sh (once; cached in target/librdkafka-suite/);
scripts/test.sh starts that build in the background before the e2e suite
and names its log in STRATA_RDKAFKA_BUILD_LOG, and the fixture then waits
for it (a failed build fails the tests, with its log).
The tests run are the entries of tests/compat/librdkafka/ALLOWLIST; why
every other test of the suite is left out is in
tests/compat/librdkafka/FINDINGS.md.

    .venv/bin/pytest tests/compat/test_librdkafka_suite.py -q          # CI tier (~6 min)
    STRATA_RDKAFKA_TESTS=all  .venv/bin/pytest tests/compat/test_librdkafka_suite.py -q   # + full tier (~15 min)
    STRATA_RDKAFKA_TESTS=0001,0081:do_test_DeleteTopics .venv/bin/pytest ... -q           # chosen entries

One test-runner running two tests at a time (-p2, run.py's PARALLEL) runs
the CI tier's whole-test entries against one fresh broker, a sequential
one (-p1) the `full` tier's and `serial` ones; each NUMBER:SUBTESTS entry
gets a runner and broker of its own. A failure prints the failing tests,
the runner's output tail and the broker's log tail.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
E2E = HERE.parent / "e2e"
if str(E2E) not in sys.path:
    sys.path.insert(0, str(E2E))

from strata_broker import BrokerError, check_binary  # noqa: E402

_spec = importlib.util.spec_from_file_location("strata_rdkafka_run", HERE / "librdkafka" / "run.py")
rdk = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = rdk
_spec.loader.exec_module(rdk)

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _entries() -> list:
    sel = os.environ.get("STRATA_RDKAFKA_TESTS", "").strip()
    if sel in ("", "ci", "all", "full"):
        return rdk.select(rdk.read_allowlist(), sel or "ci")
    return [rdk.parse_entry(t.strip()) for t in sel.split(",") if t.strip()]


RUNS = rdk.plan(_entries())
# Wall-clock limit of one runner: generous against the CI tier's ~5 min,
# so that a hung test fails with the runner's output instead of a bare
# pytest timeout.
RUNNER_LIMIT = float(os.environ.get("STRATA_RDKAFKA_RUNNER_TIMEOUT",
                                    "2400" if os.environ.get("STRATA_RDKAFKA_TESTS") else "900"))


# scripts/test.sh starts build.sh in the background before the e2e suite
# and names its log here; the build's exit status lands in <log>.rc.
BUILD_LOG = os.environ.get("STRATA_RDKAFKA_BUILD_LOG", "")
BUILD_WAIT_S = 1800


def _background_build_failure() -> str | None:
    """None once scripts/test.sh's background build succeeded (waiting for
    it to end, with a deadline); else why it failed, with its log."""
    log = Path(BUILD_LOG)
    rc_file = log.with_name(log.name + ".rc")
    deadline = time.monotonic() + BUILD_WAIT_S
    while not rc_file.is_file() or not rc_file.read_text().strip():
        if time.monotonic() > deadline:
            return f"the background build did not end within {BUILD_WAIT_S} s (log {log})"
        time.sleep(1)
    rc = rc_file.read_text().strip()
    if rc == "0":
        return None
    text = log.read_text(errors="replace") if log.is_file() else "(no log)"
    return f"the background build (scripts/test.sh) exited {rc}; its log, {log}:\n{_tail(text, 80)}"


@pytest.fixture(scope="session")
def rdkafka_tests_dir() -> Path:
    """librdkafka's tests/ directory with a built test-runner (build.sh;
    after scripts/test.sh's background build, when it started one)."""
    if BUILD_LOG:
        why = _background_build_failure()
        if why:  # a build failure is a failure, never a skip (nor a second try)
            pytest.fail(f"building librdkafka's test suite failed: {why}", pytrace=False)
    try:
        return rdk.build()
    except Exception as e:  # a build failure is a failure, never a skip
        pytest.fail(f"building librdkafka's test suite failed: {e}\n"
                    f"(run tests/compat/librdkafka/build.sh to see why)", pytrace=False)


def _tail(text: str, lines: int = 120) -> str:
    out = ANSI.sub("", text).splitlines()
    return "\n".join(out[-lines:])


@pytest.mark.timeout(RUNNER_LIMIT + 300)
@pytest.mark.parametrize("run", RUNS, ids=[r.name for r in RUNS])
def test_librdkafka_suite(run, rdkafka_tests_dir, tmp_path):
    try:
        check_binary()
    except BrokerError as e:
        pytest.fail(str(e), pytrace=False)
    rdk.execute(run, rdkafka_tests_dir, tmp_path, timeout=RUNNER_LIMIT)
    verdicts = run.verdicts()
    failed = {k: why for k, (ok, why) in verdicts.items() if not ok}
    print(f"librdkafka runner [{run.name}]: exit {run.rc}, {run.wall:.0f}s, "
          f"{len(verdicts) - len(failed)}/{len(verdicts)} entries passed")
    if failed:
        lines = "\n".join(f"  {k}: {why[:400]}" for k, why in failed.items())
        with open(run.broker_log, errors="replace") as f:
            broker_tail = f.read()[-6000:]
        pytest.fail(
            f"{len(failed)} of {len(verdicts)} allow-listed librdkafka test(s) failed "
            f"(runner exit {run.rc}, {run.wall:.0f}s, broker "
            f"{'running' if run.broker_ok else 'DIED'}):\n{lines}\n"
            f"--- test-runner output tail ({run.log}) ---\n{_tail(run.output)}\n"
            f"--- broker log tail ({run.broker_log}) ---\n{broker_tail}",
            pytrace=False)
