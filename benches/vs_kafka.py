#!/usr/bin/env python3
"""Apache Kafka and Strata side by side, in one run (issue 34).

Started by benches/vs_kafka.sh, which provides the broker binary
(STRATA_BIN), librdkafka's rdkafka_performance (RDKAFKA_PERFORMANCE), the
test venv (confluent-kafka, for the failover client) and Apache Kafka's
jars (local-stack/kafka). Every figure is measured in this run, on this
machine, for both systems: nothing is compared with a constant.

Rounds alternate the two systems (Kafka, Strata, Kafka, Strata, ...), each
round on a freshly started broker (or cluster) with an empty data
directory. The summary gives, per metric, the median of each system's
rounds and the ratio of the medians, Strata / Kafka.

Single node (--rounds rounds per system):
  start       process start (fork/exec of the broker; for Kafka the JVM
              through local-stack/kafka/kafka, after `kafka-storage format`,
              which is not timed) until a Metadata request is answered with
              the broker listed.
  idle RSS    VmRSS of the broker process --idle-wait seconds after ready.
  warm-up     --warmup-mb produced and consumed with rdkafka_performance, then
              --warmup-lat-seconds of the latency phase's load (small requests
              take another path than batches); not measured. Kafka's JIT
              compiles its hot paths meanwhile (a cold Kafka answered the
              first seconds of the latency phase >100x slower); the same for both.
  rdkafka     rdkafka_performance -P: --produce-mb of --record-size records
              (no key, uncompressed), acks, --partitions partitions,
              linger.ms=--linger-ms; then -C: the same records from offset 0
              of every partition.
  java        Kafka's own kafka-producer-perf-test (--java-mb, the same record
              size, acks and linger.ms; the Java client's other defaults,
              idempotence on) and kafka-consumer-perf-test (a consumer group,
              from the earliest offset; its fetch.MB.sec, which leaves out the
              group join).
  latency     per-record produce latency (send to acknowledgement) at a fixed
              rate, --lat-rate records/s for --lat-seconds, linger.ms=0 so it
              is the broker's round trip: rdkafka_performance -l (p50/p99 of
              every record, and the records/s it reached) and
              kafka-producer-perf-test --throughput (its p50/p99).
  loaded RSS  the broker's largest VmRSS polled every 0.2 s over all the load
              phases above; broker CPU seconds per GB produced (rdkafka).
  restart     a topic is filled until the segment files (*.log) of the data
              directory hold --restart-mb, the broker is killed with SIGKILL
              right after the last acknowledgement, and started again on the
              same directory:
              seconds from process start until the listener answers Metadata,
              and until ListOffsets returns, for every partition of the filled
              topic, the end offset it had before the kill (the log is
              recovered and served).

Three nodes (--rf3-rounds rounds per system): Strata as benches/replication.sh
runs it (one etcd member, three brokers, release binary); Kafka as
KafkaCluster(nodes=3) (three combined KRaft broker+controller nodes). Topics
auto-created with replication factor 3, min.insync.replicas=2.
  rf3 produce rdkafka_performance -P, --rf3-mb, acks=all, --partitions partitions,
              after --warmup-mb to another RF=3 topic (not measured).
  failover    (--failovers per round) the leader of partition 0 of a fresh
              RF=3 topic is killed with SIGKILL; seconds from the kill until
              an acks=all record sent after it is acknowledged (confluent-kafka,
              linger.ms=0, retries until then). broker.session.timeout.ms and
              broker.heartbeat.interval.ms are set to the same values on both
              (Kafka's defaults, 9000 and 2000, unless --session-ms).

Settings both brokers get (Kafka's names): num.partitions, log.segment.bytes
(1 GiB, both defaults), group.initial.rebalance.delay.ms=0,
default.replication.factor and min.insync.replicas (three nodes). Strata also
gets remote.log.storage.system.enable=false (tiering is on by default in
Strata and off in Kafka). Both data directories live under --work-dir (disk;
--tmpfs puts them in /dev/shm).

Durability (--durability):
  default     acks=all on both. Kafka acknowledges once the in-sync replicas
              have the records in memory (page cache) and leaves fsync to the
              OS; Strata acknowledges after fsync (docs/durability.md). So the
              default compares Strata's stronger guarantee with Kafka's.
  fsync       both acknowledge after fsync: Kafka runs with
              log.flush.interval.messages=1 (each append is flushed before it
              is acknowledged, on the leader and on each follower before its
              next fetch); Strata as always.
  page-cache  both acknowledge from the page cache of the one node: Strata's
              producers use acks=1 (answered after the append, before fsync;
              consumers still read only fsynced records), Kafka's acks=all.
              Single node only: Strata has no setting that acknowledges
              replicated writes before fsync, so the three-node phases are
              skipped.

Sizes: --quick and --tiny set smaller defaults (explicit options win).
Writes bench-results/vs-kafka-<time>.json and prints the table (the command
line first). Loopback only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "e2e"))
sys.path.insert(0, str(REPO / "local-stack" / "kafka"))
sys.path.insert(0, str(REPO / "benches"))

from bench import pct, proc_status  # noqa: E402  (Strata's own bench: percentiles, /proc figures)

import apache_kafka  # noqa: E402  (stdlib only)
from apache_kafka import KafkaCluster  # noqa: E402
from strata_broker import Broker, check_binary  # noqa: E402

MiB = 1 << 20
KAFKA_LAUNCHER = REPO / "local-stack" / "kafka" / "kafka"

PRESETS = {
    # debugging the harness: a minute or two per system
    "tiny": dict(warmup_mb=4, warmup_lat_seconds=2, rounds=1, produce_mb=16, java_mb=8, lat_rate=500,
                 lat_seconds=2, restart_mb=64, rf3_rounds=1, rf3_mb=16, failovers=1, idle_wait=2),
    # CI-size: about 15-30 minutes on 2 cores
    "quick": dict(warmup_mb=32, warmup_lat_seconds=5, rounds=3, produce_mb=256, java_mb=128, lat_rate=1000,
                  lat_seconds=5, restart_mb=1024, rf3_rounds=3, rf3_mb=128, failovers=1, idle_wait=5),
    # the full run
    "full": dict(warmup_mb=128, warmup_lat_seconds=5, rounds=5, produce_mb=1024, java_mb=512, lat_rate=2000,
                 lat_seconds=10, restart_mb=4096, rf3_rounds=3, rf3_mb=512, failovers=2, idle_wait=5),
}

SYSTEMS = ("kafka", "strata")


def log(msg: str) -> None:
    print(f"[vs-kafka {time.strftime('%H:%M:%S')}] {msg}", flush=True)


# ---------------------------------------------------------------------------
# a few Kafka protocol requests (standard library only), the same for both
# ---------------------------------------------------------------------------


def _kstr(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class _Reader:
    def __init__(self, buf: bytes, p: int = 0):
        self.buf, self.p = buf, p

    def i8(self):
        self.p += 1
        return struct.unpack_from(">b", self.buf, self.p - 1)[0]

    def i16(self):
        self.p += 2
        return struct.unpack_from(">h", self.buf, self.p - 2)[0]

    def i32(self):
        self.p += 4
        return struct.unpack_from(">i", self.buf, self.p - 4)[0]

    def i64(self):
        self.p += 8
        return struct.unpack_from(">q", self.buf, self.p - 8)[0]

    def string(self):
        n = self.i16()
        if n < 0:
            return None
        self.p += n
        return self.buf[self.p - n:self.p].decode()

    def i32s(self):
        return [self.i32() for _ in range(self.i32())]


def kafka_request(addr: str, api: int, ver: int, body: bytes, timeout: float = 5.0) -> _Reader:
    host, port = addr.rsplit(":", 1)
    msg = struct.pack(">hhi", api, ver, 7) + _kstr("vs-kafka-bench") + body
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.settimeout(timeout)
        s.sendall(struct.pack(">i", len(msg)) + msg)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            chunk = s.recv(1 << 16)
            if not chunk:
                raise ConnectionError("connection closed")
            buf += chunk
    return _Reader(buf, 8)  # size, correlation id


def metadata(addr: str, topics: list[str], timeout: float = 5.0) -> dict:
    """Metadata v1 (both systems answer it; a named topic that does not
    exist is auto-created with num.partitions / default.replication.factor)."""
    body = struct.pack(">i", len(topics)) + b"".join(_kstr(t) for t in topics)
    r = kafka_request(addr, 3, 1, body, timeout)
    brokers = {}
    for _ in range(r.i32()):
        node, host, port, _rack = r.i32(), r.string(), r.i32(), r.string()
        brokers[node] = f"{host}:{port}"
    controller = r.i32()
    out = {}
    for _ in range(r.i32()):
        err, name, _internal = r.i16(), r.string(), r.i8()
        parts = {}
        for _ in range(r.i32()):
            perr, pid, leader = r.i16(), r.i32(), r.i32()
            replicas, isr = r.i32s(), r.i32s()
            parts[pid] = {"error": perr, "leader": leader, "replicas": replicas, "isr": isr}
        out[name] = {"error": err, "partitions": parts}
    return {"brokers": brokers, "controller": controller, "topics": out}


def list_offsets(addr: str, topic: str, partitions: list[int], timeout: float = 5.0) -> dict:
    """ListOffsets v1, latest offset of each partition: {p: (error, offset)}."""
    body = struct.pack(">i", -1) + struct.pack(">i", 1) + _kstr(topic) + struct.pack(">i", len(partitions))
    body += b"".join(struct.pack(">iq", p, -1) for p in partitions)
    r = kafka_request(addr, 2, 1, body, timeout)
    out = {}
    for _ in range(r.i32()):
        r.string()
        for _ in range(r.i32()):
            p, err, _ts, off = r.i32(), r.i16(), r.i64(), r.i64()
            out[p] = (err, off)
    return out


def any_metadata(addrs: list[str], topics: list[str]) -> dict | None:
    for a in addrs:
        try:
            return metadata(a, topics)
        except (OSError, struct.error, ConnectionError):
            continue
    return None


def wait_for(pred, timeout: float, what: str, interval: float = 0.05):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = pred()
        except (OSError, struct.error, ConnectionError) as e:
            last = e
        if last and not isinstance(last, Exception):
            return last
        time.sleep(interval)
    raise TimeoutError(f"{what}: not within {timeout:.0f} s (last: {last!r})")


def ensure_topics(addrs: list[str], topics: list[str], partitions: int, rf: int, timeout: float = 120) -> dict:
    """Auto-creates the topics (Metadata) and waits until every partition has
    a leader and a full ISR."""
    def ready():
        md = any_metadata(addrs, topics)
        if not md:
            return None
        for t in topics:
            info = md["topics"].get(t)
            if not info or info["error"] or len(info["partitions"]) != partitions:
                return None
            for p in info["partitions"].values():
                if p["leader"] < 0 or len(p["replicas"]) != rf or len(p["isr"]) != rf:
                    return None
        return md
    return wait_for(ready, timeout, f"topics {topics} ready (partitions={partitions}, rf={rf})", 0.2)


# ---------------------------------------------------------------------------
# process figures
# ---------------------------------------------------------------------------


def proc_cpu_s(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def tree_pids(pid: int) -> list[int]:
    """pid and its descendants (the Kafka launcher execs java, so this is
    normally one process; counted anyway)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                todo += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out


def rss_kib(pid: int) -> int:
    return sum(proc_status(p, "VmRSS") or 0 for p in tree_pids(pid))


def cpu_s(pid: int) -> float:
    return sum(proc_cpu_s(p) or 0.0 for p in tree_pids(pid))


def log_bytes(path: Path) -> int:
    """Bytes of the segment files (*.log) under a data directory: the log,
    without the indexes (Kafka's are preallocated sparse files)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for f in files:
            if not f.endswith(".log"):
                continue
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def machine_busy_s() -> float:
    """CPU seconds the whole machine spent busy (/proc/stat, all CPUs)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal
    return (v[0] + v[1] + v[2] + v[5] + v[6] + (v[7] if len(v) > 7 else 0)) / os.sysconf("SC_CLK_TCK")


class Sampler:
    """Polls the broker's RSS every 0.2 s; its CPU seconds over the phase,
    and the machine's (what neither the broker nor the load generator used
    is other processes': a busy machine)."""

    def __init__(self, pid: int):
        self.pid = pid
        self.max_rss = 0
        self.evt = threading.Event()
        self.t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.evt.is_set():
            self.max_rss = max(self.max_rss, rss_kib(self.pid))
            self.evt.wait(0.2)

    def __enter__(self):
        self.cpu0 = cpu_s(self.pid)
        self.busy0 = machine_busy_s()
        self.children0 = _children_cpu_s()
        self.t0 = time.monotonic()
        self.t.start()
        return self

    def __exit__(self, *exc):
        self.evt.set()
        self.t.join()
        self.max_rss = max(self.max_rss, rss_kib(self.pid))
        self.cpu = cpu_s(self.pid) - self.cpu0
        self.wall = time.monotonic() - self.t0
        self.client = _children_cpu_s() - self.children0
        self.other = machine_busy_s() - self.busy0 - self.cpu - self.client

    def figures(self) -> dict:
        return {"broker_cpu_s": round(self.cpu, 3), "broker_rss_max_kib": self.max_rss,
                "client_cpu_s": round(self.client, 3), "other_cpu_s": round(self.other, 3),
                "sampled_wall_s": round(self.wall, 3)}


def _children_cpu_s() -> float:
    """CPU of waited-for children (the load generators; Kafka's brokers are
    not waited for while they run)."""
    import resource
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


# ---------------------------------------------------------------------------
# the two systems behind one interface
# ---------------------------------------------------------------------------


class StrataSystem:
    name = "strata"

    def __init__(self, base: Path, nodes: int, settings: dict, ready_timeout: float):
        self.base = base
        self.etcd = None
        self.ready_timeout = ready_timeout
        Broker.READY_TIMEOUT = ready_timeout
        extra: dict[int, list[str]] = {}
        if nodes > 1:
            from etcdutil import EtcdCluster
            self.etcd = EtcdCluster(base / "etcd", members=1)
            url = self.etcd.url(f"vs-kafka-{os.getpid()}-{time.monotonic_ns()}")
            extra = {n: ["--metadata", url, "--node-id", str(n)] for n in range(1, nodes + 1)}
        self.brokers = {n: Broker(data_dir=base / f"strata-{n}" / "data", settings=settings,
                                  log_dir=base / f"strata-{n}", name="strata", extra_args=extra.get(n))
                        for n in range(1, nodes + 1)}

    def command(self, node: int = 1) -> str:
        return shlex.join(self.brokers[node].command())

    def prepare(self):
        pass

    def spawn(self, node: int = 1):
        self.brokers[node].spawn()

    def pid(self, node: int = 1) -> int:
        return self.brokers[node].pid

    def alive(self, node: int) -> bool:
        return self.brokers[node].alive()

    def addr(self, node: int = 1) -> str:
        return self.brokers[node].bootstrap

    def addrs(self) -> list[str]:
        return [b.bootstrap for b in self.brokers.values()]

    def data_dir(self, node: int = 1) -> Path:
        return self.brokers[node].data_dir

    def kill9(self, node: int = 1):
        self.brokers[node].kill9()

    def log_paths(self) -> list[Path]:
        return [b.log_path for b in self.brokers.values()]

    def stop(self, node: int = 1, timeout: float = 60) -> int | None:
        b = self.brokers[node]
        try:
            return b.stop(timeout)
        except Exception:  # noqa: BLE001
            return None

    def close(self):
        for b in self.brokers.values():
            b.kill9()
        if self.etcd:
            self.etcd.close()


class KafkaSystem:
    name = "kafka"

    def __init__(self, base: Path, nodes: int, settings: dict, ready_timeout: float):
        KafkaCluster.READY_TIMEOUT = ready_timeout
        self.cluster = KafkaCluster(nodes=nodes, base_dir=base / "kafka", settings=settings)
        self.nodes = nodes

    def command(self, node: int = 1) -> str:
        n = self.cluster.node(node)
        return f"{KAFKA_LAUNCHER} kafka-server-start.sh {n.config}  # {n.config}: " + ", ".join(
            f"{k}={v}" for k, v in self.cluster._properties(n).items())

    def prepare(self):
        """kafka-storage format (once per data directory; not timed)."""
        apache_kafka.fetch_jars(self.cluster.version)
        for n in self.cluster.nodes:
            self.cluster._format(n)

    def spawn(self, node: int = 1):
        self.cluster.spawn_node(node)

    def pid(self, node: int = 1) -> int:
        return self.cluster.node(node).proc.pid

    def alive(self, node: int) -> bool:
        return self.cluster.node(node).alive()

    def addr(self, node: int = 1) -> str:
        return self.cluster.node(node).bootstrap

    def addrs(self) -> list[str]:
        return [n.bootstrap for n in self.cluster.nodes]

    def data_dir(self, node: int = 1) -> Path:
        return self.cluster.node(node).data_dir

    def kill9(self, node: int = 1):
        self.cluster.kill9(node)

    def log_paths(self) -> list[Path]:
        return [n.log_path for n in self.cluster.nodes]

    def stop(self, node: int = 1, timeout: float = 60) -> int | None:
        n = self.cluster.node(node)
        self.cluster.stop_node(node, timeout)
        return n.proc.returncode if n.proc else None

    def close(self):
        for n in self.cluster.nodes:
            self.cluster.kill9(n.node_id)


def make_system(name: str, base: Path, nodes: int, settings: dict, args):
    cls = KafkaSystem if name == "kafka" else StrataSystem
    return cls(base, nodes, settings, args.ready_timeout)


def broker_settings(name: str, args, nodes: int) -> dict:
    s = {"num.partitions": args.partitions, "log.segment.bytes": args.segment_bytes,
         "group.initial.rebalance.delay.ms": 0}
    if nodes > 1:
        s.update({"default.replication.factor": 3, "min.insync.replicas": 2,
                  "broker.session.timeout.ms": args.session_ms,
                  "broker.heartbeat.interval.ms": args.heartbeat_ms})
    if name == "strata":
        s["remote.log.storage.system.enable"] = "false"
    elif args.durability == "fsync":
        s["log.flush.interval.messages"] = 1
    for kv in (args.kafka_set if name == "kafka" else args.strata_set):
        k, v = kv.split("=", 1)
        s[k] = v
    return s


def acks_for(name: str, args) -> str:
    if args.durability == "page-cache" and name == "strata":
        return "1"
    return "all"


def wait_ready(system, node: int, timeout: float) -> float:
    """Polls Metadata until the broker lists itself; returns the time of the
    first such answer (monotonic)."""
    addr = system.addr(node)

    def ok():
        if not system.alive(node):
            raise RuntimeError(f"{system.name} node {node} exited during start")
        md = metadata(addr, [], timeout=2)
        return time.monotonic() if md["brokers"] else None
    return wait_for(ok, timeout, f"{system.name} node {node} answering Metadata", 0.02)


# ---------------------------------------------------------------------------
# load generators
# ---------------------------------------------------------------------------

RKP_PROD_RE = re.compile(
    r"(\d+) messages produced \((\d+) bytes\), (\d+) delivered \(offset (-?\d+), (\d+) failed\) "
    r"in (\d+)ms: (\d+) msgs/s and ([0-9.]+) MB/s")
RKP_CONS_RE = re.compile(r"(\d+) messages \((\d+) bytes\) consumed in (\d+)ms: (\d+) msgs/s \(([0-9.]+) MB/s\)")
JAVA_PROD_RE = re.compile(
    r"(\d+) records sent, ([0-9.]+) records/sec \(([0-9.]+) MB/sec\), ([0-9.]+) ms avg latency, "
    r"([0-9.]+) ms max latency, ([0-9.]+) ms 50th, ([0-9.]+) ms 95th, ([0-9.]+) ms 99th, ([0-9.]+) ms 99.9th")


class Tools:
    def __init__(self, args, work: Path):
        self.rkp = args.rdkafka_performance
        self.args = args
        self.work = work

    def run(self, cmd: list[str], name: str, timeout: float) -> dict:
        t0 = time.monotonic()
        timed_out = False
        env = dict(os.environ)
        env.pop("KAFKA_HEAP_OPTS", None)
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env,
                               stdin=subprocess.DEVNULL)
            rc, out, err = r.returncode, r.stdout, r.stderr
        except subprocess.TimeoutExpired as e:
            timed_out, rc = True, None
            out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        wall = time.monotonic() - t0
        (self.work / f"{name}.out").write_text(f"$ {shlex.join(cmd)}\n{out}\n--- stderr ---\n{err}")
        noise = [ln for ln in err.splitlines() if ln.strip() and "CONFWARN" not in ln]
        return {"command": shlex.join(cmd), "exit_code": rc, "timed_out": timed_out, "wall_s": round(wall, 3),
                "stdout": out, "stderr_lines": noise[:10]}

    # -- rdkafka_performance ------------------------------------------------
    def rk_produce(self, bootstrap, topic, n, acks, name, linger=None, extra=()) -> dict:
        a = self.args
        cmd = [self.rkp, "-P", "-t", topic, "-b", bootstrap, "-s", str(a.record_size), "-c", str(n),
               "-X", f"acks={acks}", "-X", f"linger.ms={a.linger_ms if linger is None else linger}",
               "-X", "compression.codec=none", "-q", *extra]
        r = self.run(cmd, name, a.phase_timeout)
        m = RKP_PROD_RE.search(r.pop("stdout"))
        if m:
            _p, nbytes, delivered, _off, failed, ms, rps, mbps = m.groups()
            r.update({"bytes": int(nbytes), "records_delivered": int(delivered), "records_failed": int(failed),
                      "ms": int(ms), "records_per_s": int(rps), "MBps": float(mbps)})
        r["ok"] = bool(m) and r["exit_code"] == 0 and r.get("records_delivered") == n and not r.get("records_failed")
        return r

    def rk_consume(self, bootstrap, topic, n, name, extra=()) -> dict:
        parts = [x for p in range(self.args.partitions) for x in ("-p", str(p))]
        cmd = [self.rkp, "-C", "-t", topic, *parts, "-b", bootstrap, "-o", "beginning", "-c", str(n), "-e", "-q",
               *extra]
        r = self.run(cmd, name, self.args.phase_timeout)
        m = RKP_CONS_RE.search(r.pop("stdout"))
        if m:
            recs, nbytes, ms, rps, mbps = m.groups()
            r.update({"records": int(recs), "bytes": int(nbytes), "ms": int(ms), "records_per_s": int(rps),
                      "MBps": float(mbps)})
        r["ok"] = bool(m) and r["exit_code"] == 0 and r.get("records") == n
        return r

    def rk_latency(self, bootstrap, topic, acks, name, seconds=None) -> dict:
        a = self.args
        n = int(a.lat_rate * (seconds or a.lat_seconds))
        lat_file = self.work / f"{name}-latency-us.txt"
        r = self.rk_produce(bootstrap, topic, n, acks, name, linger=0,
                            extra=["-l", "-A", str(lat_file), "-r", str(a.lat_rate)])
        try:
            vals = sorted(int(x) / 1000 for x in lat_file.read_text().split())
        except OSError:
            vals = []
        r["latency_ms"] = {"samples": len(vals), "p50": pct(vals, 50), "p99": pct(vals, 99),
                           "max": vals[-1] if vals else None}
        r["ok"] = r["ok"] and len(vals) >= 0.9 * n
        return r

    # -- Kafka's Java tools ---------------------------------------------------
    def java_produce(self, bootstrap, topic, n, acks, name, rate=-1, linger=None) -> dict:
        a = self.args
        cmd = [str(KAFKA_LAUNCHER), "kafka-producer-perf-test.sh", "--bootstrap-server", bootstrap,
               "--topic", topic, "--num-records", str(n), "--record-size", str(a.record_size),
               "--throughput", str(rate), "--command-property", f"acks={acks}",
               f"linger.ms={a.linger_ms if linger is None else linger}", "compression.type=none"]
        r = self.run(cmd, name, a.phase_timeout + 60)
        out = r.pop("stdout")
        m = None
        for m in JAVA_PROD_RE.finditer(out):
            pass  # the last line is the summary
        if m:
            sent, rps, _mibps, avg, mx, p50, p95, p99, p999 = m.groups()
            r.update({"records": int(sent), "records_per_s": float(rps),
                      "MBps": float(rps) * a.record_size / 1e6,
                      "latency_ms": {"avg": float(avg), "max": float(mx), "p50": float(p50), "p95": float(p95),
                                     "p99": float(p99), "p999": float(p999)}})
        r["ok"] = bool(m) and r["exit_code"] == 0 and r.get("records") == n
        return r

    def java_consume(self, bootstrap, topic, n, name) -> dict:
        a = self.args
        cmd = [str(KAFKA_LAUNCHER), "kafka-consumer-perf-test.sh", "--bootstrap-server", bootstrap,
               "--topic", topic, "--num-records", str(n), "--timeout", "60000"]
        r = self.run(cmd, name, a.phase_timeout + 60)
        lines = [ln for ln in r.pop("stdout").splitlines() if ln.strip()]
        hdr = next((i for i, ln in enumerate(lines) if ln.startswith("start.time")), None)
        if hdr is not None and hdr + 1 < len(lines):
            keys = [k.strip() for k in lines[hdr].split(",")]
            vals = [v.strip() for v in lines[hdr + 1].split(",")]
            row = dict(zip(keys, vals))
            try:
                fetch_ms = float(row["fetch.time.ms"])
                nmsg = int(float(row["data.consumed.in.nMsg"]))
                r.update({"records": nmsg, "fetch_ms": fetch_ms,
                          "rebalance_ms": float(row.get("rebalance.time.ms", "nan")),
                          # recomputed in 10^6 B/s from the tool's counts (it prints MiB/s)
                          "MBps": nmsg * a.record_size / 1e6 / (fetch_ms / 1000) if fetch_ms > 0 else None,
                          "MBps_incl_join": float(row["MB.sec"]) * MiB / 1e6})
            except (KeyError, ValueError):
                pass
        r["ok"] = r["exit_code"] == 0 and r.get("records") == n
        return r


# ---------------------------------------------------------------------------
# phases
# ---------------------------------------------------------------------------

T_WARM, T_BENCH, T_JAVA, T_LAT, T_JLAT, T_RESTART = "warmup", "bench", "jbench", "lat", "jlat", "restart"


def single_round(name: str, rnd: int, args, base: Path, tools: Tools) -> dict:
    work = base / f"single-{name}-{rnd}"
    work.mkdir(parents=True)
    tools.work = work
    settings = broker_settings(name, args, 1)
    sysm = make_system(name, work, 1, settings, args)
    acks = acks_for(name, args)
    res = {"system": name, "round": rnd, "settings": settings, "acks": acks,
           "loadavg_start": os.getloadavg()}
    try:
        sysm.prepare()
        res["command"] = sysm.command()
        t0 = time.monotonic()
        sysm.spawn()
        res["start_s"] = wait_ready(sysm, 1, args.ready_timeout) - t0
        pid = sysm.pid()
        log(f"{name} round {rnd}: ready in {res['start_s']:.2f} s (pid {pid})")
        time.sleep(args.idle_wait)
        res["idle_rss_kib"] = rss_kib(pid)
        addr = sysm.addr()
        ensure_topics([addr], [T_WARM, T_BENCH, T_JAVA, T_LAT, T_JLAT, T_RESTART], args.partitions, 1)
        res["warmup"] = {}
        if args.warmup_mb:
            nw = args.warmup_mb * MiB // args.record_size
            res["warmup"] = {"produce": tools.rk_produce(addr, T_WARM, nw, acks, "warmup-produce"),
                             "consume": tools.rk_consume(addr, T_WARM, nw, "warmup-consume")}
        if args.warmup_lat_seconds:
            # many small requests take another path than batches: warm it too
            res["warmup"]["latency"] = tools.rk_latency(addr, T_WARM, acks, "warmup-latency",
                                                        seconds=args.warmup_lat_seconds)
        n = args.produce_mb * MiB // args.record_size
        peak = 0
        with Sampler(pid) as s:
            res["produce"] = tools.rk_produce(addr, T_BENCH, n, acks, "produce")
        res["produce"].update(s.figures())
        peak = max(peak, s.max_rss)
        log(f"{name} round {rnd}: rdkafka produce {res['produce'].get('MBps')} MB/s")
        with Sampler(pid) as s:
            res["consume"] = tools.rk_consume(addr, T_BENCH, n, "consume")
        res["consume"].update(s.figures())
        peak = max(peak, s.max_rss)
        log(f"{name} round {rnd}: rdkafka consume {res['consume'].get('MBps')} MB/s")
        if not args.skip_java:
            nj = args.java_mb * MiB // args.record_size
            with Sampler(pid) as s:
                res["java_produce"] = tools.java_produce(addr, T_JAVA, nj, acks, "java-produce")
            res["java_produce"].update(s.figures())
            peak = max(peak, s.max_rss)
            with Sampler(pid) as s:
                res["java_consume"] = tools.java_consume(addr, T_JAVA, nj, "java-consume")
            res["java_consume"].update(s.figures())
            peak = max(peak, s.max_rss)
            log(f"{name} round {rnd}: java produce {res['java_produce'].get('MBps')} MB/s, "
                f"consume {res['java_consume'].get('MBps')} MB/s")
        with Sampler(pid) as s:
            res["latency"] = tools.rk_latency(addr, T_LAT, acks, "latency")
        peak = max(peak, s.max_rss)
        if not args.skip_java:
            with Sampler(pid) as s:
                res["java_latency"] = tools.java_produce(addr, T_JLAT, args.lat_rate * args.lat_seconds, acks,
                                                         "java-latency", rate=args.lat_rate, linger=0)
            peak = max(peak, s.max_rss)
        log(f"{name} round {rnd}: latency p50/p99 rdkafka {res['latency']['latency_ms']['p50']}/"
            f"{res['latency']['latency_ms']['p99']} ms")
        res["loaded_rss_kib"] = peak
        res["vmhwm_kib"] = sum(proc_status(p, "VmHWM") or 0 for p in tree_pids(pid))

        if not args.skip_restart:
            res["restart"] = restart_phase(sysm, args, tools, acks)
            log(f"{name} round {rnd}: restart after kill -9 with {res['restart']['log_bytes'] / 1e9:.2f} GB of log: "
                f"listening {res['restart']['to_metadata_s']:.2f} s, offsets served "
                f"{res['restart']['to_offsets_s']:.2f} s")
        t0 = time.monotonic()
        res["shutdown_exit_code"] = sysm.stop()
        res["shutdown_s"] = time.monotonic() - t0
    except Exception as e:  # noqa: BLE001  (record it, go on with the other rounds)
        res["failure"] = f"{type(e).__name__}: {e}"
        log(f"{name} round {rnd} FAILED: {res['failure']}")
    finally:
        sysm.close()
        res["loadavg_end"] = os.getloadavg()
        keep_logs(sysm, work, base)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return res


def restart_phase(sysm, args, tools: Tools, acks: str) -> dict:
    addr = sysm.addr()
    ddir = sysm.data_dir()
    have = log_bytes(ddir)
    want = args.restart_mb * MiB
    out = {"target_bytes": want, "before_fill_bytes": have}
    if want > have:
        n = (want - have) // args.record_size
        out["fill"] = tools.rk_produce(addr, T_RESTART, n, acks, "restart-fill")
        if not out["fill"]["ok"]:
            raise RuntimeError(f"filling the restart topic failed: {out['fill']}")
    parts = list(range(args.partitions))
    expected = list_offsets(addr, T_RESTART, parts)
    if any(e for e, _ in expected.values()):
        raise RuntimeError(f"ListOffsets before the kill: {expected}")
    out["log_bytes"] = log_bytes(ddir)
    out["expected_offsets"] = {p: o for p, (_e, o) in expected.items()}
    sysm.kill9()
    t0 = time.monotonic()
    sysm.spawn()
    out["to_metadata_s"] = wait_ready(sysm, 1, args.restart_timeout) - t0

    def served():
        got = list_offsets(addr, T_RESTART, parts, timeout=5)
        return all(got.get(p) == (0, o) for p, o in out["expected_offsets"].items())
    wait_for(served, args.restart_timeout, "the filled topic's end offsets served after the restart", 0.02)
    out["to_offsets_s"] = time.monotonic() - t0
    return out


def keep_logs(sysm, work: Path, base: Path):
    dest = base / "logs"
    dest.mkdir(exist_ok=True)
    for i, p in enumerate(sysm.log_paths(), 1):
        try:
            shutil.copy(p, dest / f"{work.name}-{sysm.name}-{i}.log")
        except OSError:
            pass


def rf3_round(name: str, rnd: int, args, base: Path, tools: Tools) -> dict:
    work = base / f"rf3-{name}-{rnd}"
    work.mkdir(parents=True)
    tools.work = work
    settings = broker_settings(name, args, 3)
    res = {"system": name, "round": rnd, "settings": settings, "acks": "all", "loadavg_start": os.getloadavg()}
    sysm = None
    try:
        sysm = make_system(name, work, 3, settings, args)
        sysm.prepare()
        res["command"] = sysm.command(1)
        t0 = time.monotonic()
        for node in (1, 2, 3):
            sysm.spawn(node)
        for node in (1, 2, 3):
            wait_ready(sysm, node, args.ready_timeout)
        wait_for(lambda: (lambda md: md and len(md["brokers"]) == 3)(any_metadata(sysm.addrs(), [])),
                 args.ready_timeout, "three brokers in Metadata", 0.1)
        res["cluster_start_s"] = time.monotonic() - t0
        log(f"{name} rf3 round {rnd}: three nodes ready in {res['cluster_start_s']:.1f} s")
        bootstrap = ",".join(sysm.addrs())
        ensure_topics(sysm.addrs(), ["rf3-warmup", "rf3"], args.partitions, 3)
        if args.warmup_mb:
            res["warmup"] = tools.rk_produce(bootstrap, "rf3-warmup", args.warmup_mb * MiB // args.record_size,
                                             "all", "rf3-warmup")
        n = args.rf3_mb * MiB // args.record_size
        res["produce"] = tools.rk_produce(bootstrap, "rf3", n, "all", "rf3-produce")
        log(f"{name} rf3 round {rnd}: produce {res['produce'].get('MBps')} MB/s")
        if not args.skip_failover:
            res["failovers"] = []
            for i in range(args.failovers):
                fo = failover(sysm, args, f"failover-{i}", last=i == args.failovers - 1)
                res["failovers"].append(fo)
                log(f"{name} rf3 round {rnd}: failover {fo['seconds']:.2f} s (killed node {fo['killed']}, "
                    f"Metadata's controller id {fo['metadata_controller_id']})")
    except Exception as e:  # noqa: BLE001
        res["failure"] = f"{type(e).__name__}: {e}"
        log(f"{name} rf3 round {rnd} FAILED: {res['failure']}")
    finally:
        if sysm:
            sysm.close()
            keep_logs(sysm, work, base)
        res["loadavg_end"] = os.getloadavg()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return res


def failover(sysm, args, topic: str, last: bool) -> dict:
    from confluent_kafka import Producer  # the test venv (benches/vs_kafka.sh)
    md = ensure_topics(sysm.addrs(), [topic], args.partitions, 3)
    leader = md["topics"][topic]["partitions"][0]["leader"]
    live = [a for node, a in zip((1, 2, 3), sysm.addrs()) if sysm.alive(node)]
    p = Producer({"bootstrap.servers": ",".join(live), "acks": "all", "linger.ms": 0,
                  "message.timeout.ms": int(args.failover_timeout * 1000), "enable.idempotence": False,
                  "log_level": 2})  # not the expected disconnect / connection-refused lines
    p.produce(topic, value=b"before", partition=0)
    if p.flush(30) != 0:
        raise RuntimeError("the record before the kill was not acknowledged")
    acked = []
    sysm.kill9(leader)
    t0 = time.monotonic()
    p.produce(topic, value=b"after", partition=0,
              on_delivery=lambda err, _m: acked.append((err, time.monotonic())))
    while not acked and time.monotonic() - t0 < args.failover_timeout:
        p.poll(0.005)
    if not acked or acked[0][0] is not None:
        raise RuntimeError(f"no acknowledgement after the kill: {acked}")
    # (Metadata's controller id: Strata's controller; with KRaft, Kafka names
    # a random broker there, not its active controller)
    out = {"killed": leader, "metadata_controller_id": md["controller"], "seconds": acked[0][1] - t0}
    p.flush(5)
    if not last:
        sysm.spawn(leader)
        wait_ready(sysm, leader, args.ready_timeout)
        ensure_topics(sysm.addrs(), [topic], args.partitions, 3, timeout=args.failover_timeout)
    return out


# ---------------------------------------------------------------------------
# summary
# ---------------------------------------------------------------------------

# (key, label, unit, better, getter)
def _g(*path):
    def get(r):
        for k in path:
            if r is None:
                return None
            r = r.get(k) if isinstance(r, dict) else None
        return r
    return get


def metrics_table(args):
    lat = f"@{args.lat_rate}/s"
    single = [
        ("start_s", "start: process start to Metadata answered", "s", "lower", _g("start_s")),
        ("idle_rss_MiB", f"idle RSS ({args.idle_wait:g} s after ready)", "MiB", "lower",
         lambda r: r.get("idle_rss_kib") and r["idle_rss_kib"] / 1024),
        ("rdkafka_produce_MBps", "produce, rdkafka_performance", "MB/s", "higher", _g("produce", "MBps")),
        ("rdkafka_consume_MBps", "consume from offset 0, rdkafka_performance", "MB/s", "higher",
         _g("consume", "MBps")),
        ("java_produce_MBps", "produce, kafka-producer-perf-test", "MB/s", "higher", _g("java_produce", "MBps")),
        ("java_consume_MBps", "consume, kafka-consumer-perf-test (fetch)", "MB/s", "higher",
         _g("java_consume", "MBps")),
        ("produce_cpu_s_per_GB", "broker CPU per GB produced (rdkafka)", "s", "lower",
         lambda r: (r.get("produce", {}).get("broker_cpu_s") / (r["produce"]["bytes"] / 1e9))
         if r.get("produce", {}).get("bytes") else None),
        ("rdkafka_lat_p50_ms", f"produce latency p50 {lat}, rdkafka", "ms", "lower",
         _g("latency", "latency_ms", "p50")),
        ("rdkafka_lat_p99_ms", f"produce latency p99 {lat}, rdkafka", "ms", "lower",
         _g("latency", "latency_ms", "p99")),
        ("rdkafka_lat_rate", f"latency phase: records/s reached of {args.lat_rate}, rdkafka", "rec/s", "higher",
         _g("latency", "records_per_s")),
        ("java_lat_p50_ms", f"produce latency p50 {lat}, Java", "ms", "lower", _g("java_latency", "latency_ms", "p50")),
        ("java_lat_p99_ms", f"produce latency p99 {lat}, Java", "ms", "lower", _g("java_latency", "latency_ms", "p99")),
        ("loaded_rss_MiB", "loaded RSS (max over the load phases)", "MiB", "lower",
         lambda r: r.get("loaded_rss_kib") and r["loaded_rss_kib"] / 1024),
        ("restart_listen_s", "restart after kill -9: to Metadata answered", "s", "lower",
         _g("restart", "to_metadata_s")),
        ("restart_offsets_s", "restart after kill -9: to end offsets served", "s", "lower",
         _g("restart", "to_offsets_s")),
    ]
    rf3 = [
        ("rf3_produce_MBps", "RF=3 produce (3 nodes), rdkafka_performance", "MB/s", "higher",
         _g("produce", "MBps")),
        ("failover_s", "failover: kill -9 of a leader to the next ack", "s", "lower",
         lambda r: [f["seconds"] for f in r.get("failovers", [])] or None),
    ]
    return single, rf3


def summarize(results: dict, args) -> dict:
    single, rf3 = metrics_table(args)
    summary = {}
    for group, defs in (("single", single), ("rf3", rf3)):
        for key, label, unit, better, get in defs:
            per = {}
            for s in SYSTEMS:
                vals = []
                for r in results.get(group, []):
                    if r["system"] != s or "failure" in r:
                        continue
                    try:
                        v = get(r)
                    except (KeyError, TypeError, ZeroDivisionError):
                        v = None
                    if isinstance(v, list):
                        vals += v
                    elif v is not None:
                        vals.append(v)
                per[s] = vals
            if not per["kafka"] and not per["strata"]:
                continue
            mk = statistics.median(per["kafka"]) if per["kafka"] else None
            ms = statistics.median(per["strata"]) if per["strata"] else None
            summary[key] = {"label": label, "unit": unit, "better": better,
                            "kafka_median": mk, "strata_median": ms,
                            "ratio_strata_over_kafka": (ms / mk) if (mk and ms is not None) else None,
                            "kafka_rounds": per["kafka"], "strata_rounds": per["strata"]}
    return summary


def other_share(r: dict) -> float | None:
    """CPUs other processes kept busy, on average, over a round's measured
    single-node phases (machine busy minus broker minus load generator)."""
    phases = [r[k] for k in ("produce", "consume", "java_produce", "java_consume")
              if isinstance(r.get(k), dict) and "other_cpu_s" in r[k]]
    wall = sum(p["sampled_wall_s"] for p in phases)
    return sum(p["other_cpu_s"] for p in phases) / wall if wall else None


def fmt_ratio(r) -> str:
    if r is None:
        return "-"
    return f"{r:.2f}" if r >= 0.1 else f"{r:.2g}"


def fmt(x, unit=""):
    if x is None:
        return "-"
    if unit == "MiB" or abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:,.1f}"
    return f"{x:,.2f}"


def print_table(out: dict):
    s = out["summary"]
    rows = [("metric", "unit", "Kafka", "Strata", "Strata/Kafka", "better", "rounds K / S")]
    for key, m in s.items():
        ratio = m["ratio_strata_over_kafka"]
        rows.append((m["label"], m["unit"], fmt(m["kafka_median"], m["unit"]), fmt(m["strata_median"], m["unit"]),
                     fmt_ratio(ratio), m["better"],
                     f"{len(m['kafka_rounds'])} / {len(m['strata_rounds'])}"))
    w = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print()
    print(f"$ {out['command']}")
    print(f"load average at start {out['loadavg_start']}, at end {out['loadavg_end']}; "
          f"{out['machine']['cpus']} CPUs shared by the brokers and the load generators")
    print(f"Apache Kafka {out['kafka_version']} (local-stack/kafka) vs Strata {out['strata_binary']} "
          f"(git {out['machine'].get('git_rev')}{'+dirty' if out['machine'].get('git_dirty') else ''})")
    print(f"durability: {out['durability_note']}")
    print()
    for i, r in enumerate(rows):
        print("  ".join(c.ljust(w[j]) if j in (0, 1, 5) else c.rjust(w[j]) for j, c in enumerate(r)))
        if i == 0:
            print("  ".join("-" * x for x in w))
    print()
    for name in SYSTEMS:
        shares = [x for x in out.get("other_cpu_share", {}).get(name, []) if x is not None]
        if shares:
            print(f"other processes during {name}'s measured single-node phases: "
                  f"{statistics.median(shares):.2f} CPUs busy (median of rounds; "
                  f"{', '.join(f'{x:.2f}' for x in shares)})")
    print("Medians of each system's rounds; ratio = Strata median / Kafka median. MB/s = 10^6 B/s. "
          f"Records {out['config']['record_size']} B, {out['config']['partitions']} partitions, "
          f"linger.ms={out['config']['linger_ms']} (latency: 0).")
    for f in out.get("failures", []):
        print(f"FAILED: {f}")
    print(f"results: {out['results_path']}")


DURABILITY_NOTES = {
    "default": "acks=all on both; Kafka acknowledges before fsync (page cache, its default flush policy), "
               "Strata after fsync",
    "fsync": "acks=all on both, both acknowledge after fsync (Kafka: log.flush.interval.messages=1)",
    "page-cache": "both acknowledge from the page cache of the one node (Kafka acks=all, Strata acks=1); "
                  "three-node phases skipped",
}


def markdown(out: dict) -> str:
    """The summary of a results file as a Markdown table (for the docs)."""
    la = out["loadavg_start"]
    lines = [f"`{out['command']}` ({out['time']}, Apache Kafka {out['kafka_version']}, "
             f"git {out['machine'].get('git_rev')}{'+dirty' if out['machine'].get('git_dirty') else ''}; "
             f"load average {la[0]:.1f} / {la[1]:.1f} / {la[2]:.1f} at the start; "
             f"durability: {out['durability_note']})", "",
             "| metric | Kafka | Strata | Strata / Kafka | rounds: Kafka; Strata |",
             "| --- | --- | --- | --- | --- |"]
    for m in out["summary"].values():
        r = m["ratio_strata_over_kafka"]
        rounds = "; ".join(" / ".join(fmt(x, m["unit"]) for x in m[f"{s}_rounds"]) for s in SYSTEMS)
        lines.append(f"| {m['label']} ({m['unit']}, {m['better']} is better) | {fmt(m['kafka_median'], m['unit'])} "
                     f"| {fmt(m['strata_median'], m['unit'])} | {fmt_ratio(r)} | {rounds} |")
    return "\n".join(lines)


def machine_info(work: Path) -> dict:
    info = {"cpus": os.cpu_count(), "kernel": platform.release()}
    try:
        with open("/proc/meminfo") as f:
            info["mem_total_kib"] = int(f.readline().split()[1])
        df = subprocess.run(["df", "-PT", str(work)], capture_output=True, text=True).stdout.splitlines()[-1].split()
        info["filesystem"] = {"device": df[0], "type": df[1], "mount": df[-1]}
        info["librdkafka"] = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "librdkafka1"],
                                            capture_output=True, text=True).stdout.strip() or None
        info["java"] = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
        info["git_rev"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                         capture_output=True, text=True).stdout.strip() or None
        info["git_dirty"] = bool(subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "broker"],
                                                capture_output=True, text=True).stdout.strip())
    except (OSError, IndexError, ValueError):
        pass
    return info


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_const", dest="preset", const="quick",
                      help="CI-size (about 15-30 minutes on 2 cores)")
    size.add_argument("--tiny", action="store_const", dest="preset", const="tiny",
                      help="a few MB, one round: for debugging the harness")
    ap.add_argument("--warmup-mb", type=int, help="MiB produced and consumed before the measured phases, "
                    "not measured: the JVM's JIT, both brokers' caches (128/32)")
    ap.add_argument("--warmup-lat-seconds", type=int,
                    help="then seconds of the latency phase's load (--lat-rate, linger.ms=0), not measured (5)")
    ap.add_argument("--rounds", type=int, help="single-node rounds per system (full 5, quick 3)")
    ap.add_argument("--produce-mb", type=int, help="MiB produced and consumed by rdkafka_performance (1024/256)")
    ap.add_argument("--java-mb", type=int, help="MiB produced and consumed by Kafka's Java perf tools (512/128)")
    ap.add_argument("--lat-rate", type=int, help="records/s of the latency phases (2000/1000)")
    ap.add_argument("--lat-seconds", type=int, help="seconds of each latency phase (10/5)")
    ap.add_argument("--restart-mb", type=int, help="MiB of segment files at the kill -9 (4096/1024)")
    ap.add_argument("--rf3-rounds", type=int, help="three-node rounds per system (3/3)")
    ap.add_argument("--rf3-mb", type=int, help="MiB produced at RF=3 (512/128)")
    ap.add_argument("--failovers", type=int, help="leader kills per three-node round (2/1)")
    ap.add_argument("--idle-wait", type=float, help="seconds after ready before the idle RSS is read (5)")
    ap.add_argument("--record-size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=6)
    ap.add_argument("--linger-ms", type=int, default=5)
    ap.add_argument("--segment-bytes", type=int, default=1 << 30, help="log.segment.bytes on both (1 GiB)")
    ap.add_argument("--session-ms", type=int, default=9000, help="broker.session.timeout.ms on both")
    ap.add_argument("--heartbeat-ms", type=int, default=2000, help="broker.heartbeat.interval.ms on both")
    ap.add_argument("--durability", choices=sorted(DURABILITY_NOTES), default="default")
    ap.add_argument("--only", default="single,rf3", help="comma list of: single, rf3")
    ap.add_argument("--skip-java", action="store_true")
    ap.add_argument("--skip-restart", action="store_true")
    ap.add_argument("--skip-failover", action="store_true")
    ap.add_argument("--kafka-set", action="append", default=[], metavar="NAME=VALUE",
                    help="extra server.properties for Kafka (recorded in the JSON)")
    ap.add_argument("--strata-set", action="append", default=[], metavar="NAME=VALUE",
                    help="extra --set for Strata (recorded in the JSON)")
    ap.add_argument("--tmpfs", action="store_true", help="data directories in /dev/shm instead of the disk")
    ap.add_argument("--work-dir", default=os.environ.get("BENCH_DIR") or str(REPO / "bench-results" / "work"))
    ap.add_argument("--keep", action="store_true", help="keep the data directories and tool outputs")
    ap.add_argument("--ready-timeout", type=float, default=180.0)
    ap.add_argument("--restart-timeout", type=float, default=600.0)
    ap.add_argument("--failover-timeout", type=float, default=120.0)
    ap.add_argument("--phase-timeout", type=float, default=600.0, help="cap on each load generator run (s)")
    ap.add_argument("--markdown", metavar="RESULTS.json",
                    help="only print the summary of an earlier run as a Markdown table")
    ap.add_argument("--rdkafka-performance", default=os.environ.get("RDKAFKA_PERFORMANCE")
                    or str(REPO / "target" / "bench-tools" / "rdkafka_performance"))
    a = ap.parse_args(argv)
    a.preset = a.preset or "full"
    for k, v in PRESETS[a.preset].items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    return a


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.markdown:
        prev = json.loads(Path(args.markdown).read_text())
        # recomputed from the rounds, with this version's metric table
        prev["summary"] = summarize(prev, argparse.Namespace(**prev["args"]))
        print(markdown(prev))
        return 0
    binary = check_binary()
    if not os.access(args.rdkafka_performance, os.X_OK):
        print(f"rdkafka_performance not found at {args.rdkafka_performance}; run benches/vs_kafka.sh",
              file=sys.stderr)
        return 2
    stamp = time.strftime("%Y%m%d-%H%M%S")
    root = Path("/dev/shm") if args.tmpfs else Path(args.work_dir)
    root.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix=f"vs-kafka-{stamp}-", dir=root))
    results_dir = REPO / "bench-results"
    results_dir.mkdir(exist_ok=True)
    path = results_dir / f"vs-kafka-{stamp}.json"
    command = os.environ.get("VS_KAFKA_COMMAND") or shlex.join(["benches/vs_kafka.sh", *argv])
    only = set(args.only.split(","))
    out = {"time": stamp, "command": command, "args": vars(args), "strata_binary": str(binary),
           "kafka_version": os.environ.get("KAFKA_VERSION", apache_kafka.DEFAULT_VERSION),
           "durability": args.durability, "durability_note": DURABILITY_NOTES[args.durability],
           "config": {"record_size": args.record_size, "partitions": args.partitions, "linger_ms": args.linger_ms},
           "machine": machine_info(base), "work_dir": str(base), "loadavg_start": os.getloadavg(),
           "results_path": str(path), "single": [], "rf3": []}
    log(f"{command}: work dir {base} ({out['machine'].get('filesystem', {}).get('type', '?')}), "
        f"load average {out['loadavg_start']}")
    tools = Tools(args, base)
    t_run = time.monotonic()
    try:
        if "single" in only:
            for rnd in range(args.rounds):
                for name in SYSTEMS:  # Kafka, Strata, Kafka, Strata, ...
                    out["single"].append(single_round(name, rnd, args, base, tools))
                    path.write_text(json.dumps(out, indent=2, default=str))
        if "rf3" in only and args.durability != "page-cache":
            for rnd in range(args.rf3_rounds):
                for name in SYSTEMS:
                    out["rf3"].append(rf3_round(name, rnd, args, base, tools))
                    path.write_text(json.dumps(out, indent=2, default=str))
    finally:
        out["loadavg_end"] = os.getloadavg()
        out["total_run_s"] = time.monotonic() - t_run
        out["failures"] = [f"{g} {r['system']} round {r['round']}: {r['failure']}"
                           for g in ("single", "rf3") for r in out[g] if "failure" in r]
        out["failures"] += [f"{g} {r['system']} round {r['round']} {ph}: not ok ({r[ph].get('command')})"
                            for g in ("single", "rf3") for r in out[g]
                            for ph in ("produce", "consume", "java_produce", "java_consume", "latency",
                                       "java_latency") if isinstance(r.get(ph), dict) and not r[ph].get("ok")]
        out["summary"] = summarize(out, args)
        out["other_cpu_share"] = {name: [other_share(r) for r in out["single"] if r["system"] == name]
                                  for name in SYSTEMS}
        path.write_text(json.dumps(out, indent=2, default=str))
        if not args.keep:
            logs = base / "logs"
            if logs.exists():
                shutil.copytree(logs, results_dir / f"vs-kafka-{stamp}-logs", dirs_exist_ok=True)
            shutil.rmtree(base, ignore_errors=True)
    print_table(out)
    return 1 if out["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
