#!/usr/bin/env python3
"""Run librdkafka's own test suite (its tests/test-runner) against a Strata
broker. Used by tests/compat/test_librdkafka_suite.py, and by hand:

    tests/compat/librdkafka/run.py                    # ALLOWLIST, CI tier
    tests/compat/librdkafka/run.py --tier all         # ALLOWLIST, CI + full tiers
    tests/compat/librdkafka/run.py 0001 0081:do_test_DeleteTopics
    tests/compat/librdkafka/run.py suite --each       # every broker test of the suite
    tests/compat/librdkafka/run.py suite --each --scenario noautocreate

Test entries are librdkafka test numbers (TESTS=...), or NUMBER:SUBSTRING to
run only the sub-tests whose name contains SUBSTRING (SUBTESTS=...). `suite`
= every test in librdkafka's tests/test.c that needs a broker (not
TEST_F_LOCAL, not manual) and runs in the scenario.

Without --each, the CI tier's whole-test entries share one test-runner
process that runs PARALLEL tests at once (-p2; STRATA_RDKAFKA_PARALLEL or
--parallel to change), the `full` tier's and `serial` ones share a
sequential one (-p1), and each NUMBER:SUBSTRING entry gets its own; with
--each every entry gets its own. Every runner gets a fresh broker and a
wall-clock limit, so a crash or a hang costs only that runner. Exit status
0 only if every entry ran and passed.

With STRATA_RDKAFKA_SECURITY=sasl_ssl every runner's clients connect over
SASL_SSL with SCRAM-SHA-512 (the broker's CLIENT listener, a test CA; the
settings go into librdkafka's test.conf) instead of PLAINTEXT (issue 36):

    STRATA_RDKAFKA_SECURITY=sasl_ssl tests/compat/librdkafka/run.py

The runner is built first with build.sh (a no-op once built). The broker is
tests/e2e/strata_broker.py's Broker with librdkafka's "default" scenario
settings (4 partitions, auto-create on; "noautocreate": auto-create off),
a single broker (the scenario's replication factor 3 is not available).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO / "tests" / "e2e"))

from strata_broker import Broker  # noqa: E402

ALLOWLIST = HERE / "ALLOWLIST"
# Python with confluent-kafka for kafka-shim/ (the one running this, normally .venv's)
PYTHON = os.environ.get("STRATA_RDKAFKA_PYTHON") or sys.executable
KAFKA_VERSION = os.environ.get("STRATA_RDKAFKA_KAFKA_VERSION", "3.9.0")
# Tests the CI tier's shared runner runs at once (-pN; FINDINGS.md: the CI
# tier passes under -p2; `serial` entries and the full tier run in a -p1 runner)
PARALLEL = int(os.environ.get("STRATA_RDKAFKA_PARALLEL", "2"))
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# "|  0001_multiobj   |     PASSED |   1.234s |  ..." in the runner's summary
SUMMARY_ROW = re.compile(r"^\|\s*(\d{4}_\w+)\s*\|\s*(PASSED|FAILED|SKIPPED|RUNNING|DNS)\s*\|\s*([\d.]+)s\s*(\|.*)?$")


@dataclass
class Entry:
    num: str                      # "0081"
    subtests: str | None = None   # SUBTESTS filter, or None for the whole test
    tier: str = "ci"              # "ci" or "full"
    note: str = ""
    scenario: str = "default"     # librdkafka test scenario (broker settings)
    serial: bool = False          # not run alongside other tests (a -p1 runner; FINDINGS.md)

    @property
    def key(self) -> str:
        return self.num + (f":{self.subtests}" if self.subtests else "")


def parse_entry(text: str, tier: str = "ci", note: str = "", scenario: str = "default") -> Entry:
    num, _, sub = text.partition(":")
    if not re.fullmatch(r"\d{1,4}", num):
        raise ValueError(f"not a librdkafka test number: {text!r}")
    return Entry(num.zfill(4), sub or None, tier, note, scenario)


def read_allowlist(path: Path = ALLOWLIST) -> list[Entry]:
    """ALLOWLIST lines: `NUMBER[:SUBTESTS] [full] [noautocreate] [serial]  # what it covers`."""
    out = []
    for line in path.read_text().splitlines():
        body, _, note = line.partition("#")
        words = body.split()
        if not words:
            continue
        unknown = set(words[1:]) - {"full", "noautocreate", "serial"}
        if unknown:
            raise ValueError(f"{path}: unknown word(s) {sorted(unknown)} in {line!r}")
        tier = "full" if "full" in words[1:] else "ci"
        scenario = "noautocreate" if "noautocreate" in words[1:] else "default"
        e = parse_entry(words[0], tier, note.strip(), scenario)
        e.serial = "serial" in words[1:]
        out.append(e)
    return out


def select(entries: list[Entry], tier: str) -> list[Entry]:
    return [e for e in entries if tier == "all" or e.tier == tier]


def build() -> Path:
    """Build (or reuse) the test runner; returns librdkafka's tests/ dir."""
    out = subprocess.run([str(HERE / "build.sh")], stdout=subprocess.PIPE, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"tests/compat/librdkafka/build.sh failed (exit {out.returncode})")
    tests_dir = Path(out.stdout.strip().splitlines()[-1])
    assert (tests_dir / "test-runner").is_file(), tests_dir
    return tests_dir


def suite_tests(tests_dir: Path) -> list[tuple[str, set[str], str]]:
    """(name, flags, scenario) of every test declared in librdkafka's test.c."""
    src = (tests_dir / "test.c").read_text()
    body = src[src.index("struct test tests[] = {"):]
    body = body[:body.index("{NULL}")]
    out = []
    for chunk in body.split("_TEST(")[1:]:
        m = re.match(r"\s*(\w+)\s*,\s*([^,)]*)", chunk)
        name, flags = m.group(1), m.group(2)
        sc = re.search(r'\.scenario\s*=\s*"([^"]*)"', chunk)
        out.append((name, {f.strip() for f in flags.split("|") if f.strip() not in ("", "0")},
                    sc.group(1) if sc else "default"))
    return out


def broker_tests(tests_dir: Path, scenario: str = "default") -> list[str]:
    """Numbers of the tests that need a broker and run in `scenario`."""
    nums = []
    for name, flags, sc in suite_tests(tests_dir):
        if "TEST_F_LOCAL" in flags or "TEST_F_MANUAL" in flags:
            continue
        if scenario not in sc.split(","):
            continue
        num = name[:4]
        if num != "0000" and num not in nums:
            nums.append(num)
    return nums


SECURITY = os.environ.get("STRATA_RDKAFKA_SECURITY", "plaintext").strip().lower()
SCRAM_USER = ("rdkafka", "rdkafka-secret")


_SECURITY_CONF: dict[Path, tuple[dict, list[str], str]] = {}


def security_conf(workdir: Path) -> tuple[dict, list[str], str]:
    """(broker settings, broker flags, test.conf lines) of SECURITY; one
    set of certificates per work directory."""
    if SECURITY == "plaintext":
        return {}, [], ""
    if workdir not in _SECURITY_CONF:
        _SECURITY_CONF[workdir] = _make_security_conf(workdir)
    return _SECURITY_CONF[workdir]


def _make_security_conf(workdir: Path) -> tuple[dict, list[str], str]:
    if SECURITY != "sasl_ssl":
        raise SystemExit(f"STRATA_RDKAFKA_SECURITY={SECURITY}: plaintext or sasl_ssl")
    import tlsutil
    tls = tlsutil.make_tls(workdir / "tls")
    settings = {"sasl.enabled.mechanisms": "SCRAM-SHA-512", "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(tls.broker)}
    flags = ["--add-scram", f"SCRAM-SHA-512=[name={SCRAM_USER[0]},password={SCRAM_USER[1]}]"]
    conf = ("security.protocol=SASL_SSL\nsasl.mechanisms=SCRAM-SHA-512\n"
            f"sasl.username={SCRAM_USER[0]}\nsasl.password={SCRAM_USER[1]}\n"
            f"ssl.ca.location={tls.ca}\n")
    return settings, flags, conf


def start_broker(scenario: str, workdir: Path) -> Broker:
    extra, flags, _ = security_conf(workdir)
    settings = {
        "num.partitions": 4,
        "auto.create.topics.enable": "false" if scenario == "noautocreate" else "true",
        # group.initial.rebalance.delay.ms: Kafka's (and Strata's) default,
        # 3 s. With 0, 0118 races (its first consumer's group completes
        # before the second joins, and the first is never polled again).
        "log.retention.check.interval.ms": 1000,
    }
    settings.update(extra)
    if SECURITY == "sasl_ssl":
        return Broker(data_dir=workdir / "data", settings=settings, name="strata", extra_args=flags,
                      listeners={"CLIENT": "SASL_SSL", "BROKER": "PLAINTEXT"}).start()
    return Broker(data_dir=workdir / "data", settings=settings, name="strata").start()


def run_runner(tests_dir: Path, bootstrap: str, tests: list[str], workdir: Path,
               scenario: str = "default", subtests: str | None = None,
               quick: bool = False, timeout: float = 900, parallel: int = 1,
               extra_args: list[str] | None = None,
               admin_bootstrap: str | None = None) -> tuple[object, str, dict[str, dict]]:
    """One test-runner process for `tests` (numbers). Returns (exit code or
    "timeout", output, {test name: {"state", "duration", "reason"}})."""
    conf = workdir / "test.conf"
    conf.write_text(
        f"bootstrap.servers={bootstrap}\n"
        # one broker on a shared 2-core machine: librdkafka's timeouts x2
        "test.timeout.multiplier=2\n" + security_conf(workdir)[2])
    env = dict(os.environ)
    env.update({
        "TESTS": ",".join(tests),
        "TEST_KAFKA_VERSION": KAFKA_VERSION,
        "TEST_SCENARIO": scenario,
        "RDKAFKA_TEST_CONF": str(conf),
        "RDKAFKA_GITVER": "debian-source",
        "LD_LIBRARY_PATH": f"{tests_dir.parent / 'src'}:{tests_dir.parent / 'src-cpp'}",
        "TEST_LEVEL": env.get("TEST_LEVEL", "2"),
        # kafka-topics.sh stand-in (kafka-shim/): tests that shell out to it
        "KAFKA_PATH": str(HERE / "kafka-shim"),
        # the kafka-topics.sh stand-in's admin connection (PLAINTEXT)
        "BROKERS": admin_bootstrap or bootstrap,
        "STRATA_RDKAFKA_PYTHON": PYTHON,
    })
    env.pop("SUBTESTS", None)
    if subtests:
        env["SUBTESTS"] = subtests
    env.pop("CI", None)  # CI=1 would change the runner's timeouts and parallelism
    # -L: no broker-less (local) tests; they test librdkafka alone.
    args = [str(tests_dir / "test-runner"), f"-p{parallel}", "-L"]
    if quick:
        args.append("-Q")
    args += extra_args or []
    log_path = workdir / "runner.log"
    t0 = time.time()
    timed_out = False
    # cwd must be librdkafka's tests/ (0053 reads ../src/statistics_schema.json)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(args, cwd=tests_dir, env=env, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            timed_out = True
    for f in tests_dir.glob("stats_*.json"):   # the runner's per-test stats dumps
        try:
            if f.stat().st_mtime >= t0 - 1:
                f.unlink()
        except OSError:
            pass
    output = log_path.read_text(errors="replace")
    if timed_out:
        output += f"\n[run.py] test-runner killed after {timeout:.0f}s wall clock\n"
        return "timeout", output, parse_results(output)
    return rc, output, parse_results(output)


def parse_results(output: str) -> dict[str, dict]:
    """{test name: {"state", "duration", "reason"}} from the runner's
    progress lines ("Running test", "Test X PASSED", "### Test X failed",
    "SKIPPING TEST"), overridden by its summary table when it printed one
    (it does not when a test failed: test.c asserts at exit). Lines of
    concurrent threads can interleave, so neither source alone is trusted."""
    text = ANSI.sub("", output)
    lines = text.splitlines()
    results: dict[str, dict] = {}
    for i, line in enumerate(lines):
        m = re.search(r"\] =+ Running test (\d{4}_\w+) =+", line)
        if m:
            results.setdefault(m.group(1), {"state": "RUNNING", "duration": 0.0, "reason": ""})
        m = re.search(r"^\[(\d{4}_\w+)\s*/\s*([\d.]+)s\] =+ Test \1 PASSED =+", line)
        if m and results.get(m.group(1), {}).get("state") != "FAILED":
            results[m.group(1)] = {"state": "PASSED", "duration": float(m.group(2)), "reason": ""}
        m = re.search(r"^\[(\d{4}_\w+)\s*/.*\] WARN: SKIPPING TEST: (.*)", line)
        if m:
            results[m.group(1)] = {"state": "SKIPPED", "duration": 0.0, "reason": m.group(2)}
        m = re.match(r'### Test "(\d{4}_\w+)[ "]', line)
        if m and results.get(m.group(1), {}).get("state") != "FAILED":
            why = lines[i + 1].strip() if i + 1 < len(lines) else ""
            results[m.group(1)] = {"state": "FAILED", "duration": 0.0,
                                   "reason": f"{line[4:].strip()} -- {why}"}
    for line in lines:
        m = SUMMARY_ROW.match(line.strip())
        if m:
            prev = results.get(m.group(1), {})
            state = m.group(2)
            if prev.get("state") == "FAILED":
                state = "FAILED"
            results[m.group(1)] = {"state": state, "duration": float(m.group(3)),
                                   "reason": (m.group(4) or "").strip().lstrip("|").strip()
                                   or prev.get("reason", "")}
    for r in results.values():
        if r["state"] in ("RUNNING", "DNS"):  # never finished: crash, hang or killed
            r["state"] = "UNFINISHED"
    return results


@dataclass
class Run:
    """One test-runner invocation (and its broker)."""
    entries: list[Entry]
    subtests: str | None = None
    scenario: str = "default"
    parallel: int = 1             # tests the runner runs at once (-pN)
    rc: object = None
    wall: float = 0.0
    output: str = ""
    results: dict = field(default_factory=dict)
    broker_ok: bool = True
    broker_log: str = ""
    log: str = ""

    @property
    def name(self) -> str:
        sc = "" if self.scenario == "default" else f"@{self.scenario}"
        if self.subtests:
            return self.entries[0].key + sc
        if len(self.entries) == 1:
            return self.entries[0].num + sc
        return f"{len(self.entries)}-tests{sc}" + (f"-p{self.parallel}" if self.parallel > 1 else "")

    def verdicts(self) -> dict[str, tuple[bool, str]]:
        """entry key -> (passed, why). An entry passes when the broker
        survived and at least one test of that number PASSED with none
        FAILED/UNFINISHED (its broker-less variants are skipped by -L); a
        runner that exits non-zero with no failing entry fails them all."""
        out = {}
        for e in self.entries:
            mine = {k: v for k, v in self.results.items() if k.startswith(e.num + "_")}
            states = [v["state"] for v in mine.values()]
            bad = [f"{k}: {v['state']} {v['reason']}" for k, v in mine.items()
                   if v["state"] not in ("PASSED", "SKIPPED")]
            if bad:
                out[e.key] = (False, "; ".join(bad))
            elif "PASSED" not in states:
                why = "; ".join(f"{k}: {v['state']} {v['reason']}" for k, v in mine.items())
                out[e.key] = (False, why or "did not run (no result line)")
            elif not self.broker_ok:
                out[e.key] = (False, "broker died")
            elif e.subtests and not self.subtest_passed(e.subtests):
                out[e.key] = (False, f"no sub-test matching {e.subtests!r} passed "
                                     "(none matched, or it was skipped)")
            else:
                out[e.key] = (True, "")
        if self.rc != 0 and all(ok for ok, _ in out.values()):
            # the runner failed (or was killed) with no test to blame
            out = {k: (False, f"runner exit {self.rc}") for k in out}
        return out


    def subtest_passed(self, sub: str) -> bool:
        """A sub-test whose name contains `sub` passed, none was skipped
        ("[ name: PASS (1.23s) ]" / "[ name: SKIP: why ]" lines)."""
        text = ANSI.sub("", self.output)
        passed = skipped = 0
        for m in re.finditer(r"\[ ([^\n]*?): (PASS \(|SKIP)", text):
            if sub in m.group(1):
                if m.group(2) == "SKIP":
                    skipped += 1
                else:
                    passed += 1
        return passed > 0 and skipped == 0


def plan(entries: list[Entry], each: bool = False, parallel: int | None = None) -> list[Run]:
    """Runner invocations for `entries`: with `each` one per entry, else per
    scenario one runner for the CI tier's whole tests running `parallel`
    (default PARALLEL) at once and a sequential one for the `full` and
    `serial` whole tests, plus one per NUMBER:SUBTESTS entry."""
    if each:
        return [Run([e], e.subtests, e.scenario) for e in entries]
    parallel = PARALLEL if parallel is None else parallel
    runs = []
    for sc in dict.fromkeys(e.scenario for e in entries):
        whole = [e for e in entries if not e.subtests and e.scenario == sc]
        together = [e for e in whole if e.tier == "ci" and not e.serial] if parallel > 1 else []
        alone = [e for e in whole if e not in together]
        if together:
            runs.append(Run(together, None, sc, parallel=parallel))
        if alone:
            runs.append(Run(alone, None, sc))
    # NUMBER:SUBTESTS entries run by themselves.
    runs += [Run([e], e.subtests, e.scenario) for e in entries if e.subtests]
    return runs


def execute(run: Run, tests_dir: Path, workdir: Path,
            timeout: float = 1800, parallel: int | None = None, quick: bool = False,
            extra_args: list[str] | None = None) -> Run:
    workdir.mkdir(parents=True, exist_ok=True)
    scenario = run.scenario
    broker = start_broker(scenario, workdir)
    t0 = time.monotonic()
    try:
        client_bootstrap = broker.bootstrap_for("CLIENT") if SECURITY == "sasl_ssl" else broker.bootstrap
        run.rc, run.output, run.results = run_runner(
            tests_dir, client_bootstrap, [e.num for e in run.entries], workdir,
            scenario, run.subtests, quick=quick, timeout=timeout,
            parallel=run.parallel if parallel is None else parallel,
            extra_args=extra_args, admin_bootstrap=broker.bootstrap)
    finally:
        run.broker_ok = broker.alive()
        broker.close()
        run.wall = time.monotonic() - t0
        run.broker_log = str(broker.log_path)
        run.log = str(workdir / "runner.log")
    if not run.broker_ok:
        run.output += (f"\n[run.py] THE BROKER DIED (exit {broker.last_returncode}); "
                       f"its log: {broker.log_path}\n{broker.log_tail(4000)}")
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tests", nargs="*",
                    help="entries (NUMBER or NUMBER:SUBTESTS), or 'suite' (default: the ALLOWLIST)")
    ap.add_argument("--tier", default="ci", choices=["ci", "full", "all"],
                    help="ALLOWLIST tier when no tests are given (default ci)")
    ap.add_argument("--each", action="store_true", help="one broker and one runner per entry")
    ap.add_argument("--scenario", default="default", choices=["default", "noautocreate"],
                    help="scenario of the tests given on the command line (ALLOWLIST entries carry their own)")
    ap.add_argument("--quick", action="store_true",
                    help="-Q: librdkafka's quick mode (skips every sub-test not marked QUICK)")
    ap.add_argument("--timeout", type=float, default=None, help="wall-clock limit per runner (s)")
    ap.add_argument("--parallel", type=int, default=None,
                    help=f"tests the CI tier's shared runner runs at once (-pN; default {PARALLEL}; "
                         "1: every whole test in one sequential runner)")
    ap.add_argument("--json", help="write the per-test results here")
    ap.add_argument("--keep", help="keep broker data and logs under this directory")
    ap.add_argument("--runner-arg", action="append", default=[],
                    help="extra test-runner flag, e.g. --runner-arg=-k (repeatable)")
    a = ap.parse_args()

    tests_dir = build()
    if not a.tests:
        entries = select(read_allowlist(), a.tier)
    elif a.tests == ["suite"]:
        entries = [Entry(n, scenario=a.scenario) for n in broker_tests(tests_dir, a.scenario)]
    else:
        entries = [parse_entry(t, scenario=a.scenario) for t in a.tests]
    root = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="strata-rdkafka-"))
    root.mkdir(parents=True, exist_ok=True)
    all_results: dict[str, dict] = {}
    failed = []
    t_start = time.monotonic()
    for run in plan(entries, a.each, a.parallel):
        wd = root / re.sub(r"[^\w.-]", "_", run.name)
        limit = a.timeout or (600 if len(run.entries) == 1 else 1800)
        execute(run, tests_dir, wd, timeout=limit, quick=a.quick, extra_args=a.runner_arg)
        for name, r in sorted(run.results.items()):
            all_results[name] = {**r, "log": run.log}
            print(f"{name:50s} {r['state']:10s} {r['duration']:8.1f}s  {r['reason'][:110]}", flush=True)
        for key, (ok, why) in run.verdicts().items():
            if not ok:
                failed.append(key)
                print(f"!! {key}: FAILED: {why[:300]} (log {run.log})", flush=True)
        print(f"-- runner [{run.name}{' SUBTESTS=' + run.subtests if run.subtests else ''}]: "
              f"exit {run.rc}, {run.wall:.0f}s, broker {'ok' if run.broker_ok else 'DIED'}", flush=True)
    print(f"total wall clock {time.monotonic() - t_start:.0f}s; "
          f"{len(entries) - len(failed)} of {len(entries)} entries passed"
          + (f"; failed: {' '.join(failed)}" if failed else ""))
    if a.json:
        Path(a.json).write_text(json.dumps(all_results, indent=1))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
