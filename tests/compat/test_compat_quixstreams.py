"""A stream-processing library's exactly-once mode against Strata (issue
17): quixstreams (PyPI; its Application with
processing_guarantee="exactly-once" runs a transactional producer that
sends the consumer's offsets to each transaction) runs a small stateless
pipeline unmodified (quixstreams/pipeline.py). It is killed with SIGKILL
mid-run and started again; a read_committed consumer of the output then
finds the result of every input record exactly once.

quixstreams pins its own confluent-kafka, so it lives in a venv of its own,
target/quixstreams-venv, made on first use from quixstreams/requirements.txt
(a failure to make it fails the test, never skips it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import kutil

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VENV = Path(os.environ.get("STRATA_QUIX_VENV", REPO / "target" / "quixstreams-venv"))
REQS = HERE / "quixstreams" / "requirements.txt"
RECORDS = 600
PARTITIONS = 3


@pytest.fixture(scope="module")
def quix_python() -> Path:
    py = VENV / "bin" / "python"
    stamp = VENV / ".requirements"
    if not (py.exists() and stamp.exists() and stamp.read_text() == REQS.read_text()):
        try:
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
            subprocess.run([str(VENV / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check",
                            "-r", str(REQS)], check=True, timeout=900)
        except (subprocess.SubprocessError, OSError) as e:
            pytest.fail(f"cannot install quixstreams into {VENV}: {e}", pytrace=False)
        stamp.write_text(REQS.read_text())
    return py


def _results(bootstrap: str, topic: str, isolation: str) -> list[dict]:
    return [json.loads(v) for v in kutil.read_to_end(bootstrap, topic, PARTITIONS, isolation)]


def _committed_end(bootstrap: str, topic: str) -> int:
    """How far the committed output reached (records and markers)."""
    return sum(kutil.ends(bootstrap, topic, PARTITIONS, "read_committed"))


def _stable(bootstrap: str, topic: str) -> bool:
    """The last stable offset is the high watermark on every partition."""
    return (kutil.ends(bootstrap, topic, PARTITIONS, "read_committed")
            == kutil.ends(bootstrap, topic, PARTITIONS, "read_uncommitted"))


@pytest.mark.timeout(1200)
def test_quixstreams_exactly_once_pipeline_survives_kill_9(compat_broker, quix_python, tmp_path):
    bs = compat_broker.direct_bootstrap
    inp, out, group = kutil.unique("quix-in"), kutil.unique("quix-out"), kutil.unique("quix")
    adm = AdminClient({"bootstrap.servers": bs, "broker.address.family": "v4"})
    for t in (inp, out):
        adm.create_topics([NewTopic(t, PARTITIONS, 1)])[t].result(timeout=30)
    p = Producer({"bootstrap.servers": bs, "broker.address.family": "v4"})
    for i in range(RECORDS):
        p.produce(inp, value=json.dumps({"n": i}).encode(), partition=i % PARTITIONS)
    assert p.flush(30) == 0
    log = open(tmp_path / "pipeline.log", "ab")

    def run(delay: float, idle: float) -> subprocess.Popen:
        return subprocess.Popen([str(quix_python), str(HERE / "quixstreams" / "pipeline.py"), bs, inp, out,
                                 group, str(tmp_path / "state"), str(delay), str(idle)],
                                stdout=log, stderr=subprocess.STDOUT)

    try:
        first = run(delay=0.1, idle=30)
        deadline = time.monotonic() + 120
        while _committed_end(bs, out) < RECORDS // 10:
            assert first.poll() is None, f"the pipeline exited early (log: {tmp_path / 'pipeline.log'})"
            assert time.monotonic() < deadline, "the pipeline made no progress"
            time.sleep(0.5)
        first.kill()
        first.wait()
        before = len(_results(bs, out, "read_committed"))
        assert before < RECORDS, "killed after finishing: nothing left to prove"
        second = run(delay=0.0, idle=8)
        assert second.wait(timeout=300) == 0, f"the pipeline failed (log: {tmp_path / 'pipeline.log'})"
    finally:
        log.close()
    # EndTxn is answered once the commit is decided; its markers follow.
    kutil.wait_until(lambda: _stable(bs, out), timeout=30, what="no transaction left open on the output")
    committed = _results(bs, out, "read_committed")
    counts = Counter(r["n"] for r in committed)
    assert not [n for n, c in counts.items() if c > 1], "a record's result was committed twice"
    assert set(counts) == set(range(RECORDS)), f"{RECORDS - len(counts)} records have no result"
    assert all(r["double"] == 2 * r["n"] for r in committed)
    everything = _results(bs, out, "read_uncommitted")
    assert len(everything) >= len(committed)
    print(f"quixstreams exactly-once: {RECORDS} records, killed after {before}; "
          f"{len(committed)} committed results, {len(everything) - len(committed)} in aborted attempts")
