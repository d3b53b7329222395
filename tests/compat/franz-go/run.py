#!/usr/bin/env python3
"""franz-go's own integration tests (pkg/kgo) and our kadm smoke test
against a Strata broker. See README.md in this directory.

    python3 tests/compat/franz-go/run.py                 # both suites, CI size, fresh brokers
    python3 tests/compat/franz-go/run.py --full          # franz-go's default size (500000 records)
    python3 tests/compat/franz-go/run.py --suite kgo --run 'TestGroupETL|TestTxnEtl'
    python3 tests/compat/franz-go/run.py --seeds 127.0.0.1:9092   # a broker you started

franz-go is not vendored: go.mod/go.sum here pin it, and the Go toolchain
fetches it from the module proxy (GOPROXY) into the module cache on first
use. The kgo test binary is built with `go test -c` of the dependency
package github.com/twmb/franz-go/pkg/kgo from this module, so its version is
the one go.sum pins. Output goes through `go tool test2json`, parsed into one
result per test (subtests included).

Used as a library by tests/compat/test_compat_franz_go.py.
"""

from __future__ import annotations

import argparse
import json
import re
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
E2E = REPO / "tests" / "e2e"
if str(E2E) not in sys.path:
    sys.path.insert(0, str(E2E))

from sizes import size  # noqa: E402

KGO_PKG = "github.com/twmb/franz-go/pkg/kgo"

# CI size: records produced by TestGroupETL / TestTxnEtl (and the share-group
# tests, skipped on Strata). franz-go's default is 500000 (--full).
FULL_RECORDS = 500000
# STRATA_FRANZ_RECORDS, else FULL_RECORDS under STRATA_FULL=1 (tests/e2e/sizes.py), else 100,000
CI_RECORDS = size(100000, FULL_RECORDS, "STRATA_FRANZ_RECORDS")

# Broker settings: Kafka's names (tests/compat/conftest.py has the same first one).
BROKER_SETTINGS = {
    "group.initial.rebalance.delay.ms": 0,   # Kafka's docker images use 0 too; 3 s per join otherwise
}


def go_bin() -> str:
    go = shutil.which("go") or "/usr/local/go/bin/go"
    if not Path(go).exists():
        raise RuntimeError("Go toolchain not found (PATH or /usr/local/go/bin/go); franz-go needs Go >= 1.26")
    return go


def go_env() -> dict:
    env = dict(os.environ)
    env.setdefault("GOTOOLCHAIN", "local")   # never download another toolchain
    env["GOFLAGS"] = (env.get("GOFLAGS", "") + " -mod=readonly").strip()  # go.sum is the pin
    env.setdefault("GOPROXY", "https://proxy.golang.org")
    return env


def package_dir(suite: str) -> Path:
    """The source directory of the suite's package; the test binary runs
    there, as under `go test` (some kgo unit tests read their own sources)."""
    if suite != "kgo":
        return HERE
    p = subprocess.run([go_bin(), "list", "-f", "{{.Dir}}", KGO_PKG], cwd=HERE, env=go_env(),
                       capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise RuntimeError(f"go list {KGO_PKG} failed: {p.stderr}")
    return Path(p.stdout.strip())


def build(suite: str, out_dir: Path, timeout: float = 900) -> Path:
    """Builds the test binary of `suite` ('kgo' or 'kadm') into out_dir."""
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / f"{suite}.test"
    pkg = KGO_PKG if suite == "kgo" else "."
    cmd = [go_bin(), "test", "-c", "-o", str(out), pkg]
    t0 = time.monotonic()
    p = subprocess.run(cmd, cwd=HERE, env=go_env(), capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"`{' '.join(cmd)}` (in {HERE}) failed with exit {p.returncode}:\n{p.stdout}\n{p.stderr}")
    print(f"built {suite} test binary in {time.monotonic() - t0:.0f}s", file=sys.stderr)
    return out


@dataclass
class Result:
    name: str
    action: str = "run"          # pass / fail / skip / run (never finished)
    elapsed: float = 0.0
    output: list[str] = field(default_factory=list)

    def text(self, max_chars: int = 30000) -> str:
        t = "".join(self.output)
        return t if len(t) <= max_chars else "...[truncated]...\n" + t[-max_chars:]

    def skip_reason(self) -> str:
        """The test's own t.Skip message (`file_test.go:N: why`); other
        lines may be client logs of parallel tests interleaved."""
        for line in self.output:
            s = line.strip()
            if re.match(r"^\w+_test\.go:\d+: ", s):
                return s
        return ""


@dataclass
class Run:
    suite: str
    results: dict[str, Result]
    rc: int | None
    wall: float
    log: Path
    timed_out: bool = False

    def top(self) -> dict[str, Result]:
        return {k: v for k, v in self.results.items() if "/" not in k}

    def sub(self, parent: str) -> dict[str, Result]:
        return {k: v for k, v in self.results.items() if k.startswith(parent + "/")}

    def tail(self, lines: int = 150) -> str:
        """The last lines of the go output (from the event log)."""
        out = []
        try:
            with open(self.log, errors="replace") as f:
                for line in f:
                    try:
                        out.append(json.loads(line).get("Output", ""))
                    except ValueError:
                        out.append(line)
        except OSError:
            return ""
        return "\n".join("".join(out).splitlines()[-lines:])


def run_tests(binary: Path, suite: str, seeds: str, log: Path, records: int, run: str | None = None,
              timeout: float = 900, extra_env: dict | None = None) -> Run:
    """Runs a test binary through test2json; returns per-test results.
    The raw event stream goes to `log` (JSON lines)."""
    env = dict(os.environ)
    env.update({
        "KGO_SEEDS": seeds,
        "KGO_TEST_RF": "1",                 # one broker
        "KGO_TEST_RECORDS": str(records),
        "KGO_LOG_LEVEL": env.get("KGO_LOG_LEVEL", "info"),
    })
    env.update(extra_env or {})
    # go test's own -timeout makes the binary panic with every goroutine's
    # stack when exceeded; keep it a little under our wall-clock limit.
    args = [str(binary), "-test.v=test2json", f"-test.timeout={int(timeout - 30)}s", "-test.count=1"]
    if run:
        args.append(f"-test.run={run}")
    results: dict[str, Result] = {}
    t0 = time.monotonic()
    timed_out = False
    with open(log, "w") as logf:
        test_proc = subprocess.Popen(args, cwd=package_dir(suite), env=env, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        conv = subprocess.Popen([go_bin(), "tool", "test2json", "-t", "-p", suite], stdin=test_proc.stdout,
                                stdout=subprocess.PIPE, env=go_env(), text=True, errors="replace")
        test_proc.stdout.close()
        deadline = t0 + timeout

        def watchdog():   # a binary hung without output: -test.timeout should have ended it
            nonlocal timed_out
            if test_proc.poll() is None:
                timed_out = True
                test_proc.kill()
        timer = threading.Timer(timeout + 30, watchdog)
        timer.daemon = True
        timer.start()
        for line in conv.stdout:
            logf.write(line)
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            name = ev.get("Test")
            if not name:
                continue
            r = results.setdefault(name, Result(name))
            act = ev.get("Action")
            if act == "output":
                r.output.append(ev.get("Output", ""))
            elif act in ("pass", "fail", "skip"):
                r.action = act
                r.elapsed = float(ev.get("Elapsed") or 0)
            if time.monotonic() > deadline and not timed_out:
                timed_out = True
                test_proc.kill()
        try:
            rc = test_proc.wait(max(1, deadline - time.monotonic() + 30))
        except subprocess.TimeoutExpired:
            timed_out = True
            test_proc.kill()
            rc = test_proc.wait()
        conv.wait()
        timer.cancel()
    return Run(suite, results, rc, time.monotonic() - t0, log, timed_out)


def start_broker(base: Path, name: str):
    from strata_broker import Broker
    b = Broker(data_dir=base / f"{name}-data", settings=BROKER_SETTINGS, name=f"strata-{name}", log_dir=base)
    b.start()
    return b


def summarize(run: Run) -> str:
    top = run.top()
    counts = {a: sum(1 for r in top.values() if r.action == a) for a in ("pass", "fail", "skip", "run")}
    lines = [f"{run.suite}: {counts['pass']} passed, {counts['fail']} failed, {counts['skip']} skipped, "
             f"{counts['run']} unfinished of {len(top)} tests, exit {run.rc}, {run.wall:.0f}s"
             + (" (TIMED OUT)" if run.timed_out else "")]
    for name, r in sorted(top.items()):
        if r.action != "pass":
            why = r.skip_reason() if r.action == "skip" else ""
            lines.append(f"  {r.action.upper():5} {name} ({r.elapsed:.1f}s) {why}")
            for sname, s in sorted(run.sub(name).items()):
                if s.action != "pass":
                    lines.append(f"      {s.action.upper():5} {sname} {s.skip_reason() if s.action == 'skip' else ''}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", choices=["kgo", "kadm", "all"], default="all")
    ap.add_argument("--run", help="go test -run regexp")
    ap.add_argument("--records", type=int, default=CI_RECORDS, help=f"KGO_TEST_RECORDS (default {CI_RECORDS})")
    ap.add_argument("--full", action="store_true", help=f"franz-go's own size: {FULL_RECORDS} records")
    ap.add_argument("--seeds", help="use this running broker instead of starting one per suite")
    ap.add_argument("--timeout", type=float, default=1200, help="wall-clock limit per suite, seconds")
    ap.add_argument("--work", help="directory for binaries, logs and broker data (default: a new tmp dir)")
    a = ap.parse_args()
    records = FULL_RECORDS if a.full else a.records
    work = Path(a.work or tempfile.mkdtemp(prefix="strata-franz-"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"work dir: {work}", file=sys.stderr)
    suites = ["kadm", "kgo"] if a.suite == "all" else [a.suite]
    bad = 0
    for suite in suites:
        binary = build(suite, work / "bin")
        broker = None
        seeds = a.seeds
        if not seeds:
            broker = start_broker(work, suite)
            seeds = broker.bootstrap
            print(f"{suite}: strata broker on {seeds}, log {broker.log_path}", file=sys.stderr)
        try:
            run = run_tests(binary, suite, seeds, work / f"{suite}.jsonl", records, a.run, a.timeout)
        finally:
            if broker is not None:
                alive = broker.alive()
                broker.close()
                if not alive:
                    print(f"{suite}: BROKER DIED (exit {broker.last_returncode}); log {broker.log_path}", file=sys.stderr)
                    bad += 1
        print(summarize(run))
        print(f"  events: {run.log}")
        bad += sum(1 for r in run.top().values() if r.action in ("fail", "run")) + (run.rc not in (0,))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
