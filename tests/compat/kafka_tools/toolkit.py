"""Helpers for test_kafka_tools.py (issue 34): run Apache Kafka's own
command-line tools through local-stack/kafka (apache_kafka.tool), parse what
they print, and the brokers they run against.

Owns: the targets (one Strata broker; three Strata brokers on etcd; or the
same shapes on Apache Kafka when KAFKA_TOOLS_TARGET=kafka, to show that the
tests assert Kafka's own behaviour), the tool runner, and the parsers of the
tools' text output. Nothing here starts a tool by itself.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
LOCAL_STACK_KAFKA = REPO / "local-stack" / "kafka"
E2E = REPO / "tests" / "e2e"
for p in (LOCAL_STACK_KAFKA, E2E):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

import apache_kafka  # noqa: E402

TARGET = os.environ.get("KAFKA_TOOLS_TARGET", "strata")

# A short-lived tool JVM starts ~40 % faster with only the C1 compiler.
JVM_OPTS = "-XX:TieredStopAtLevel=1"


class ToolRun:
    """One finished tool run: argv, exit code, stdout, stderr."""

    def __init__(self, argv: list[str], p: subprocess.CompletedProcess, seconds: float):
        self.argv = argv
        self.rc = p.returncode
        self.out = p.stdout
        self.err = p.stderr
        self.seconds = seconds

    @property
    def command(self) -> str:
        return " ".join(self.argv)

    def __repr__(self) -> str:
        return (f"$ {self.command}\n(exit {self.rc}, {self.seconds:.1f}s)\n--- stdout ---\n{self.out}"
                f"--- stderr ---\n{self.err[-4000:]}")


_cds_archive: Path | None = None


def prepare_jvm(bootstrap: str) -> None:
    """Makes a class-data-sharing archive of the tools' classes (JDK 17
    dynamic AppCDS) once per Kafka version and JVM, from one admin-client
    run against `bootstrap`: later tool starts map it instead of loading
    and verifying the classes again (about a third less CPU per start).
    Only a speed-up: without it every tool works the same."""
    global _cds_archive
    if _cds_archive is not None:
        return
    libs = apache_kafka.fetch_jars()
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    import hashlib
    key = hashlib.sha256(f"{libs}|{sorted(os.listdir(libs))}|{java}".encode()).hexdigest()[:16]
    archive = Path(os.environ.get("TMPDIR", "/tmp")) / f"strata-kafka-tools-{key}.jsa"
    if not archive.exists():
        tmp = archive.with_suffix(f".{os.getpid()}.tmp")
        env = {"KAFKA_OPTS": f"{JVM_OPTS} -XX:ArchiveClassesAtExit={tmp} -Xlog:cds=off -Xlog:cds+dynamic=off"}
        apache_kafka.tool("kafka-consumer-groups.sh", "--bootstrap-server", bootstrap, "--list",
                          check=False, timeout=90, env=env)
        if tmp.exists():
            tmp.rename(archive)
    if archive.exists():
        _cds_archive = archive


def tool(name: str, *args: str, ok: bool = True, timeout: float = 90) -> ToolRun:
    """Runs Kafka's `name` (kafka-topics.sh, ...) with `args` as typed.
    ok=True: the run must exit 0 (else AssertionError with its output)."""
    argv = [name, *[str(a) for a in args]]
    opts = JVM_OPTS + (f" -XX:SharedArchiveFile={_cds_archive} -Xlog:cds=off" if _cds_archive else "")
    env = {"KAFKA_OPTS": (os.environ.get("KAFKA_OPTS", "") + " " + opts).strip()}
    t0 = time.monotonic()
    p = apache_kafka.tool(name, *argv[1:], check=False, timeout=timeout, env=env)
    r = ToolRun(argv, p, time.monotonic() - t0)
    if ok:
        assert r.rc == 0, f"tool failed:\n{r}"
    return r


def wait_for(what: str, f, timeout: float = 30.0, interval: float = 0.2):
    """Polls f() until it returns something truthy; AssertionError with the
    last value or exception at the deadline."""
    deadline = time.monotonic() + timeout
    last = None
    while True:
        try:
            last = f()
            if last:
                return last
        except Exception as e:  # noqa: BLE001 - not there yet
            last = e
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last}")
        time.sleep(interval)


# ----------------------------------------------------------------------------
# Parsers of the tools' output.

def kv_fields(line: str) -> dict[str, str]:
    """`Topic: t\tPartition: 0\tLeader: 1 ...` (kafka-topics --describe)."""
    out = {}
    for part in line.strip().split("\t"):
        if ":" in part:
            k, v = part.split(":", 1)
            out[k.strip()] = v.strip()
    return out


def describe_topics(text: str) -> dict[str, dict]:
    """kafka-topics --describe -> {topic: {header fields..., "partitions":
    {n: {Leader, Replicas (list), Isr (list), ...}}}}."""
    topics: dict[str, dict] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        f = kv_fields(line)
        if "Topic" not in f:
            continue
        if "Partition" in f and "PartitionCount" not in f:
            t = topics.setdefault(f["Topic"], {"partitions": {}})
            for k in ("Replicas", "Isr", "Elr", "LastKnownElr", "Offline"):
                if k in f and f[k] != "N/A":
                    f[k] = [int(x) for x in f[k].split(",") if x.strip()]
            f["Leader"] = int(f["Leader"]) if f.get("Leader", "none").lstrip("-").isdigit() else None
            t["partitions"][int(f["Partition"])] = f
        elif "PartitionCount" in f:
            t = topics.setdefault(f["Topic"], {"partitions": {}})
            t.update(f)
            cfg = f.get("Configs", "")
            t["configs"] = dict(c.split("=", 1) for c in cfg.split(",") if "=" in c)
    return topics


CONFIG_LINE = re.compile(r"^\s+(?P<name>[^=\s]+)=(?P<value>.*?) sensitive=(?P<sensitive>true|false) "
                         r"synonyms=\{(?P<synonyms>.*)\}\s*$")


def describe_configs(text: str) -> dict[str, dict]:
    """kafka-configs --describe -> {name: {value, sensitive, synonyms: [(source, name, value)]}}."""
    out = {}
    for line in text.splitlines():
        m = CONFIG_LINE.match(line)
        if not m:
            continue
        syns = []
        for s in re.findall(r"([A-Z_]+):([^=,]+)=([^,]*)", m["synonyms"]):
            syns.append(s)
        out[m["name"]] = {"value": m["value"], "sensitive": m["sensitive"] == "true", "synonyms": syns}
    return out


def table(text: str, first_column: str) -> list[dict[str, str]]:
    """A whitespace-aligned table (kafka-consumer-groups, kafka-transactions):
    every header line starting with `first_column` starts a table; rows
    until the next blank line. Returns the rows as dicts (all tables
    concatenated)."""
    rows: list[dict[str, str]] = []
    header = None
    for line in text.splitlines():
        cols = line.split()
        if not cols:
            header = None
            continue
        if cols[0] == first_column and len(cols) > 1:
            header = cols
            continue
        if header is not None:
            if len(cols) != len(header):
                # e.g. the ASSIGNMENT column is empty for a member without partitions
                cols = cols + ["-"] * (len(header) - len(cols))
            rows.append(dict(zip(header, cols)))
    return rows


def json_lines(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def json_after(text: str, marker: str) -> dict:
    """The JSON document on the first non-blank line after the line `marker`
    (kafka-reassign-partitions --generate / --execute)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(marker):
            for nxt in lines[i + 1:]:
                if nxt.strip():
                    return json.loads(nxt)
    raise AssertionError(f"no JSON after {marker!r} in:\n{text}")


# ----------------------------------------------------------------------------
# Targets.

class StrataSingle:
    """One Strata broker (tests/e2e/strata_broker.py)."""

    kind = "strata"

    def __init__(self, base: Path, settings: dict):
        from strata_broker import Broker
        self.broker = Broker(data_dir=base / "data", settings=settings, name="kafka-tools",
                             log_dir=base)
        self.broker.start()

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def logs(self) -> list:
        return [self.broker]

    def close(self) -> None:
        self.broker.close()


class StrataCluster:
    """Three Strata brokers (node ids 1, 2, 3) on one etcd member."""

    kind = "strata"

    def __init__(self, base: Path, settings: dict, nodes: int = 3):
        from etcdutil import EtcdCluster
        from strata_broker import Broker
        self.etcd = EtcdCluster(base / "etcd", members=1)
        self.brokers = {}
        try:
            for n in range(1, nodes + 1):
                s = dict(settings)
                s["broker.rack"] = f"zone-{'abc'[(n - 1) % 3]}"
                self.brokers[n] = Broker(data_dir=base / f"b{n}", settings=s, name=f"kafka-tools-b{n}",
                                         log_dir=base,
                                         extra_args=["--metadata", self.etcd.url("kafka-tools"),
                                                     "--node-id", str(n)])
            for b in self.brokers.values():
                b.start()
        except BaseException:
            self.close()
            raise

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values() if b.alive())

    def node_bootstrap(self, n: int) -> str:
        return self.brokers[n].bootstrap

    def stop(self, n: int) -> None:
        self.brokers[n].stop()

    def kill9(self, n: int) -> None:
        self.brokers[n].kill9()

    def start(self, n: int) -> None:
        self.brokers[n].start()

    def logs(self) -> list:
        return list(self.brokers.values())

    def close(self) -> None:
        from strata_broker import stop_all
        stop_all(list(self.brokers.values()))
        self.etcd.close()


class KafkaTarget:
    """The same shapes on Apache Kafka (KRaft), for KAFKA_TOOLS_TARGET=kafka."""

    kind = "kafka"

    def __init__(self, base: Path, settings: dict, nodes: int = 1):
        from strata_broker import free_port
        self.k = apache_kafka.KafkaCluster(nodes=nodes, base_dir=base, settings=settings,
                                           heap="-Xmx512M -Xms512M", port_source=free_port)
        self.k.start()

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.k.nodes if n.alive())

    def node_bootstrap(self, n: int) -> str:
        return self.k.node(n).bootstrap

    def stop(self, n: int) -> None:
        self.k.stop_node(n)

    def kill9(self, n: int) -> None:
        self.k.kill9(n)

    def start(self, n: int) -> None:
        self.k.start_node(n)

    def logs(self) -> list:
        return []

    def close(self) -> None:
        self.k.close()


class LogView:
    """What tests/compat/conftest.py attaches to a failed test: every Strata
    broker log of this module (the hook expects one broker-like object)."""

    def __init__(self):
        self.targets: list = []
        self.proc = None

    @property
    def log_path(self) -> str:
        return ", ".join(str(b.log_path) for t in self.targets for b in t.logs())

    def alive(self) -> bool:
        return all(b.alive() for t in self.targets for b in t.logs())

    def log_tail(self, max_chars: int = 20000) -> str:
        bs = [b for t in self.targets for b in t.logs()]
        if not bs:
            return "(no Strata broker)"
        each = max(2000, max_chars // len(bs))
        return "\n".join(f"===== {b.log_path} ({'running' if b.alive() else 'NOT RUNNING'})\n"
                         f"{b.log_tail(max_chars=each)}" for b in bs)
