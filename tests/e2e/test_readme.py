"""The README's commands, run as a newcomer would type them: the broker
started with `cargo run --release -- broker`, the quick start's venv and
Python snippet, the kcat line, `--set` at start, and the CLI's block. Only the address
changes: each run gets its own port instead of 9092 (and its own data
directory), so the suite can run beside a broker on the default port.

Not run here, with the reason: `kafka-configs.sh` needs Apache Kafka's Java
tools, which no registry this machine reaches ships (the same
IncrementalAlterConfigs it sends is tested in test_tiering.py and
test_admin.py); the S3 and Docker lines need credentials or Docker
(strata-s3 and moto are tested in test_local_stack.py and the tiering
suites)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

import pytest

import kutil
from strata_broker import REPO_ROOT, free_port, port_accepts

README = (REPO_ROOT / "README.md").read_text()
DEFAULT = "127.0.0.1:9092"


def _blocks() -> list[str]:
    return re.findall(r"```(?:sh)?\n(.*?)```", README, flags=re.S)


def _block_with(text: str) -> str:
    found = [b for b in _blocks() if text in b]
    assert found, f"README has no code block with {text!r}"
    return found[0]


def _start(cmd: str, tmp_path, name: str):
    """Runs a README `cargo run` line from the repository root, with the
    data dir and listeners moved by environment (the flags read STRATA_*)."""
    port, http = free_port(), free_port()
    env = {**os.environ, "STRATA_DATA_DIR": str(tmp_path / name), "STRATA_LISTEN": f"127.0.0.1:{port}",
           "STRATA_HTTP_LISTEN": f"127.0.0.1:{http}"}
    env = {k: v for k, v in env.items() if k not in ("STRATA_SET", "STRATA_OBJECT_STORE", "STRATA_CONFIG")}
    log = open(tmp_path / f"{name}.log", "wb")
    proc = subprocess.Popen(cmd, shell=True, cwd=REPO_ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.monotonic() + 600  # cargo may build first on a fresh checkout
    while not port_accepts("127.0.0.1", port):
        assert proc.poll() is None, (tmp_path / f"{name}.log").read_text()[-3000:]
        assert time.monotonic() < deadline, f"{cmd!r} did not listen within 600 s"
        time.sleep(0.2)
    proc.log_path = tmp_path / f"{name}.log"
    return proc, f"127.0.0.1:{port}"


def _stop(proc):
    """SIGTERM to the whole group, as Ctrl-C in a terminal would send (cargo
    dies of it; the broker must stop cleanly)."""
    os.killpg(proc.pid, 15)
    proc.wait(60)
    # cargo is gone at once; the broker finishes its shutdown on its own.
    deadline = time.monotonic() + 60
    while "strata: stopped" not in (log := proc.log_path.read_text()):
        assert time.monotonic() < deadline, log[-3000:]
        time.sleep(0.1)
    assert "clean shutdown marker written" in log, log[-3000:]


@pytest.fixture(scope="module")
def readme_broker(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("readme")
    start = _block_with("cargo run --release -- broker\n").strip()
    assert start == "cargo run --release -- broker", start
    proc, bootstrap = _start(start, tmp, "broker")
    yield tmp, bootstrap
    _stop(proc)


def test_quick_start_snippet_as_written(readme_broker):
    tmp, bootstrap = readme_broker
    block = _block_with("<<'PY'")
    setup, rest = block.split("\n", 1)
    assert setup.startswith("python3 -m venv .venv && .venv/bin/pip install confluent-kafka"), setup
    snippet = rest.split("<<'PY'\n", 1)[1].rsplit("PY\n", 1)[0]
    work = tmp / "newcomer"
    work.mkdir()
    # The venv line as written, in a directory of its own (PyPI is reachable).
    r = subprocess.run(setup, shell=True, cwd=work, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    r = subprocess.run([str(work / ".venv" / "bin" / "python"), "-"], input=snippet.replace(DEFAULT, bootstrap),
                       cwd=work, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    lines = [ln for ln in r.stdout.splitlines() if ln.strip()]
    assert len(lines) == 10, r.stdout
    values = sorted(ln.split(" ", 3)[3] for ln in lines)
    assert values == sorted(f"b'order {i}'" for i in range(10)), values
    for ln in lines:
        part, offset, key, _ = ln.split(" ", 3)
        assert 0 <= int(part) < 6 and int(offset) >= 0 and key.startswith("b'customer-")


def test_kcat_line_as_written(readme_broker):
    tmp, bootstrap = readme_broker
    kcat = shutil.which("kcat")
    assert kcat, "kcat is not installed: scripts/test.sh installs it (apt-get install kcat)"
    line = _block_with("kcat -b").strip()
    assert line == f"kcat -b {DEFAULT} -t orders -C -e", line
    # The quick start created and filled `orders`; in a run of this test
    # alone, fill it here.
    adm = kutil.admin(bootstrap)
    if "orders" not in kutil.topic_names(adm):
        kutil.create_topic(adm, "orders", 6)
        kutil.produce(bootstrap, "orders", [{"key": b"customer-%d" % (i % 3), "value": b"order %d" % i}
                                            for i in range(10)])
    r = subprocess.run(line.replace(DEFAULT, bootstrap), shell=True, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr[-2000:]
    assert sorted(r.stdout.splitlines()) == sorted(f"order {i}" for i in range(10)), r.stdout


def test_set_flags_at_start(tmp_path):
    cmd = _block_with("--set num.partitions=6").strip()
    assert cmd == "cargo run --release -- broker --set num.partitions=6 --set log.retention.hours=24", cmd
    proc, bootstrap = _start(cmd, tmp_path, "set")
    try:
        from confluent_kafka.admin import ConfigResource, ResourceType
        adm = kutil.admin(bootstrap)
        res = ConfigResource(ResourceType.BROKER, "0")
        configs = adm.describe_configs([res], request_timeout=30)[res].result(timeout=60)
        assert configs["num.partitions"].value == "6"
        assert configs["log.retention.hours"].value == "24"
    finally:
        _stop(proc)


def test_cli_block_as_written(broker_factory, tmp_path):
    """The README's CLI lines, one by one through the shell, with `strata`
    on PATH and the broker's addresses in STRATA_BOOTSTRAP_SERVER and
    STRATA_ADMIN_URL. The group the block describes gets committed offsets
    first (a consumer would have made them)."""
    from strata_broker import strata_bin
    b = broker_factory()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "strata").symlink_to(strata_bin())
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("STRATA_")},
           "PATH": f"{bindir}:{os.environ['PATH']}", "STRATA_BOOTSTRAP_SERVER": b.bootstrap,
           "STRATA_ADMIN_URL": f"http://127.0.0.1:{b.http_port}"}
    block = _block_with("strata topic create")
    lines = [ln for ln in block.splitlines() if ln.strip()]
    assert len(lines) >= 10
    outputs = {}
    for line in lines:
        if line.startswith("strata group describe billing"):
            c = kutil.group_consumer(b.bootstrap, "billing")
            from confluent_kafka import TopicPartition
            c.commit(offsets=[TopicPartition("payments", p, 2) for p in range(6)], asynchronous=False)
            c.close()
        r = subprocess.run(["bash", "-o", "pipefail", "-c", line], env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, (line, r.stdout[-2000:], r.stderr[-2000:])
        outputs[line] = r.stdout
    assert "Produced 100 records to payments" in "".join(outputs.values())
    describe = next(v for k, v in outputs.items() if k.startswith("strata group describe billing"))
    assert "Group: billing" in describe and "LAG-AGE" in describe and "CATCH-UP" in describe
