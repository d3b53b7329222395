"""Helpers for the tiered-storage tests (test_tiering*.py): an S3 server
(moto) with a `strata` bucket, a TCP proxy that can simulate an outage,
read access to the bucket (s3:// through boto3, file:// from disk), the
partition manifests in it, the broker's Prometheus metrics, and a
deterministic data set that can be produced and verified byte for byte
without keeping it in memory.

No pytest dependency except in the fixtures in conftest.py.
"""

from __future__ import annotations

import json
import os
import random
import re
import select
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

from confluent_kafka import KafkaError, TopicPartition

import kutil
from strata_broker import REPO_ROOT, free_port, port_accepts

KiB = 1024
MiB = 1024 * 1024

# Broker settings for every tiering test: check partitions for sealed
# segments to upload/delete five times a second, and retention as often.
TIER_SETTINGS = {
    "remote.log.manager.task.interval.ms": 200,
    "log.retention.check.interval.ms": 200,
    "group.initial.rebalance.delay.ms": 0,
}

BUCKET = "strata"


# ----------------------------------------------------------------------------
# S3 server (moto) and a switchable TCP proxy in front of it
# ----------------------------------------------------------------------------


def moto_binary() -> Path:
    if os.environ.get("STRATA_MOTO_SERVER"):
        return Path(os.environ["STRATA_MOTO_SERVER"])
    for cand in (Path(sys.executable).parent / "moto_server", REPO_ROOT / ".venv" / "bin" / "moto_server"):
        if cand.is_file():
            return cand
    raise RuntimeError("moto_server not found next to the Python interpreter nor in .venv/bin; "
                       "install tests/requirements.txt (moto[server]) or set STRATA_MOTO_SERVER")


class MotoServer:
    """moto_server on a free loopback port with bucket `strata`. moto keeps
    everything in memory; one server serves the whole session and every
    test uses its own key prefix."""

    def __init__(self, log_path: Path):
        self.port = free_port()
        self.log_path = Path(log_path)
        self._log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([str(moto_binary()), "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not port_accepts("127.0.0.1", self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"moto_server did not start on port {self.port}; log: "
                                   f"{self.log_path.read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
        self.client = s3_client(self.endpoint)
        self.client.create_bucket(Bucket=BUCKET)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, endpoint: str | None = None) -> dict:
        """Environment for a broker using s3://strata/... (optionally through
        another endpoint, e.g. a proxy)."""
        return {"AWS_ENDPOINT_URL": endpoint or self.endpoint, "AWS_ALLOW_HTTP": "true",
                "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                "AWS_REGION": "us-east-1"}

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


def s3_client(endpoint: str):
    import boto3  # installed with moto
    from botocore.config import Config
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test",
                        aws_secret_access_key="test", region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3},
                                      connect_timeout=5, read_timeout=30))


class TcpProxy:
    """Forwards 127.0.0.1:<port> to a target port. down() closes the
    listener and resets every open connection (the broker then sees
    connection refused / reset); up() listens again on the same port."""

    def __init__(self, target_port: int):
        self.target = ("127.0.0.1", target_port)
        self.port = free_port()
        self._lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self._accept_thread: threading.Thread | None = None
        self.is_up = False
        self.up()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def up(self):
        with self._lock:
            if self.is_up:
                return
            ls = listen_again(self.port)
            self._listener = ls
            self.is_up = True
            self._accept_thread = threading.Thread(target=self._accept, args=(ls,), daemon=True,
                                                   name="proxy-accept")
            self._accept_thread.start()

    def down(self):
        with self._lock:
            if not self.is_up:
                return
            self.is_up = False
            ls, self._listener = self._listener, None
            conns, self._conns = self._conns, []
        try:
            ls.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        ls.close()
        for c in conns:
            reset(c)
        if self._accept_thread is not None:
            self._accept_thread.join(5)

    def close(self):
        self.down()

    def _accept(self, ls: socket.socket):
        while True:
            try:
                client, _ = ls.accept()
            except OSError:
                return
            with self._lock:
                if not self.is_up:
                    reset(client)
                    return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
                upstream.settimeout(None)
            except OSError:
                reset(client)
                continue
            with self._lock:
                self._conns += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream), daemon=True,
                             name="proxy-pump").start()

    def _pump(self, a: socket.socket, b: socket.socket):
        peers = {a: b, b: a}
        try:
            while True:
                r, _, _ = select.select([a, b], [], [], 1.0)
                if not r and not self.is_up:
                    break
                done = False
                for s in r:
                    data = s.recv(65536)
                    if not data:
                        done = True
                        break
                    peers[s].sendall(data)
                if done:
                    break
        except (OSError, ValueError):
            pass
        finally:
            for s in (a, b):
                try:
                    s.close()
                except OSError:
                    pass
            with self._lock:
                self._conns = [c for c in self._conns if c not in (a, b)]


def listen_again(port: int, backlog: int = 128) -> socket.socket:
    """A loopback listener on `port`, retried for up to 10 s while the
    port's previous listener is still closing."""
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    deadline = time.monotonic() + 10
    while True:
        try:
            ls.bind(("127.0.0.1", port))
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
    ls.listen(backlog)
    return ls


def reset(s: socket.socket):
    """Closes `s` with a TCP reset."""
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        s.close()
    except OSError:
        pass


# ----------------------------------------------------------------------------
# reading the bucket
# ----------------------------------------------------------------------------


class S3Bucket:
    """`s3://strata/<prefix>` read directly from moto (never through a proxy)."""

    def __init__(self, client, prefix: str):
        self.client = client
        self.prefix = prefix.strip("/")

    @property
    def url(self) -> str:
        return f"s3://{BUCKET}/{self.prefix}"

    def _full(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def rel(self, key: str) -> str:
        """A full object key (as in a manifest) relative to the prefix."""
        return key[len(self.prefix) + 1:] if self.prefix and key.startswith(self.prefix + "/") else key

    def keys(self, under: str = "") -> list[str]:
        """Keys (relative to the prefix) starting with `under`."""
        out = []
        strip = len(self.prefix) + 1 if self.prefix else 0
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=self._full(under)):
            out += [c["Key"][strip:] for c in page.get("Contents", [])]
        return sorted(out)

    def get(self, key: str) -> bytes | None:
        try:
            return self.client.get_object(Bucket=BUCKET, Key=self._full(key))["Body"].read()
        except self.client.exceptions.NoSuchKey:
            return None

    def size(self, key: str) -> int | None:
        try:
            return self.client.head_object(Bucket=BUCKET, Key=self._full(key))["ContentLength"]
        except Exception:  # noqa: BLE001 - 404 is a ClientError
            return None


class FileBucket:
    """`file://<root>`: keys are paths under root."""

    def __init__(self, root: Path):
        self.root = Path(root)

    @property
    def url(self) -> str:
        return f"file://{self.root}"

    def rel(self, key: str) -> str:
        root = str(self.root).strip("/") + "/"
        k = key.lstrip("/")
        return k[len(root):] if k.startswith(root) else key

    def keys(self, under: str = "") -> list[str]:
        if not self.root.is_dir():
            return []
        out = []
        for dirpath, _, files in os.walk(self.root):
            for f in files:
                rel = os.path.relpath(os.path.join(dirpath, f), self.root).replace(os.sep, "/")
                if rel.startswith(under) and not f.startswith("."):
                    out.append(rel)
        return sorted(out)

    def get(self, key: str) -> bytes | None:
        try:
            return (self.root / key).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            return None

    def size(self, key: str) -> int | None:
        try:
            return (self.root / key).stat().st_size
        except FileNotFoundError:
            return None


MANIFEST_KEY = re.compile(r"^topics/([^/]+)/([^/]+)/(\d+)/manifest/(\d{20})\.json$")
# A segment's objects; a segment the cleaner rewrote has a tag after the epoch.
SEGMENT_KEY = re.compile(r"^topics/([^/]+)/([^/]+)/(\d+)/segments/(\d{20})-(\d+)(?:-(c[0-9a-f-]+))?"
                         r"\.(log|index|timeindex|snapshot)$")


def topic_ids(bucket, topic: str) -> set[str]:
    return {m.group(2) for k in bucket.keys(f"topics/{topic}/") if (m := MANIFEST_KEY.match(k) or SEGMENT_KEY.match(k))}


def topic_root(bucket, topic: str) -> str | None:
    """`topics/<topic>/<topic-id>` of the topic's (single) incarnation."""
    ids = topic_ids(bucket, topic)
    assert len(ids) <= 1, f"topic {topic} has objects under several topic ids in the bucket: {sorted(ids)}"
    return f"topics/{topic}/{ids.pop()}" if ids else None


def manifest(bucket, topic: str, partition: int) -> dict | None:
    """The newest manifest version of the partition, parsed, or None if the
    partition has no manifest yet. Retries when garbage collection removes
    the version between listing and reading."""
    for _ in range(10):
        root = topic_root(bucket, topic)
        if root is None:
            return None
        versions = []
        for k in bucket.keys(f"{root}/{partition}/manifest/"):
            m = MANIFEST_KEY.match(k)
            if m:
                versions.append((int(m.group(4)), k))
        if not versions:
            return None
        version, key = max(versions)
        raw = bucket.get(key)
        if raw is None:
            continue  # collected meanwhile
        m = json.loads(raw)
        assert m.get("version") == version, f"manifest {key} says version {m.get('version')}"
        m["_key"] = key
        return m
    raise AssertionError(f"could not read a stable manifest of {topic}/{partition}")


def check_manifest(m: dict, what: str = "manifest", compacted: bool = False) -> int:
    """Assert the manifest's segments are sorted, contiguous (for a
    compacted topic: with gaps where compaction emptied a segment) and
    non-overlapping, with sane fields; return the offset after the last one
    ever tiered (0 if none)."""
    segs = m["segments"]
    for field in ("version", "writer_epoch", "owner", "log_start_offset", "segments"):
        assert field in m, f"{what} lacks field {field!r}: {sorted(m)}"
    prev = None
    for s in segs:
        for field in ("base_offset", "last_offset", "max_timestamp", "size_bytes", "crc32c",
                      "leader_epoch", "writer_epoch", "log_key", "index_key", "time_index_key"):
            assert field in s, f"{what}: segment lacks {field!r}: {s}"
        assert s["base_offset"] <= s["last_offset"], f"{what}: empty/inverted segment {s}"
        assert s["size_bytes"] > 0, f"{what}: zero-size segment {s}"
        assert s["writer_epoch"] <= m["writer_epoch"], f"{what}: segment from a future epoch {s}"
        if prev is not None and compacted:
            assert s["base_offset"] > prev["last_offset"], f"{what}: overlapping segments {prev} {s}"
        elif prev is not None:
            assert s["base_offset"] == prev["last_offset"] + 1, (
                f"{what}: segments not contiguous / overlapping: "
                f"[{prev['base_offset']}..{prev['last_offset']}] then [{s['base_offset']}..{s['last_offset']}]")
        prev = s
    return max(segs[-1]["last_offset"] + 1 if segs else 0, m.get("end_offset") or 0)


def remote_end(bucket, topic: str, partition: int = 0, compacted: bool = False) -> int:
    """Offset after the last tiered segment (0 if none), after checking the manifest."""
    m = manifest(bucket, topic, partition)
    return check_manifest(m, compacted=compacted) if m else 0


def wait_remote_end(bucket, topic: str, partition: int, at_least: int, timeout: float = 60.0,
                    compacted: bool = False) -> dict:
    """Wait until the partition's manifest covers offsets below `at_least`; return it."""
    def covered():
        m = manifest(bucket, topic, partition)
        if m and check_manifest(m, compacted=compacted) >= at_least:
            return m
        return None
    return kutil.wait_until(covered, timeout, interval=0.25,
                            what=f"{topic}/{partition}: manifest covering offsets < {at_least} "
                                 f"(now {remote_end(bucket, topic, partition, compacted)})")


def segment_objects(bucket, topic: str, partition: int) -> list[tuple[int, int, str]]:
    """(base offset, writer epoch, kind) of every segment object of the partition."""
    root = topic_root(bucket, topic)
    if root is None:
        return []
    out = []
    for k in bucket.keys(f"{root}/{partition}/segments/"):
        m = SEGMENT_KEY.match(k)
        assert m, f"unexpected object under segments/: {k}"
        out.append((int(m.group(4)), int(m.group(5)), m.group(7)))
    return sorted(out)


def check_segment_objects(bucket, m: dict):
    """Every segment in the manifest has its four objects (.log with the
    recorded size, .index, .timeindex and the producer-state .snapshot that
    recovery of idempotent producers needs) in the bucket."""
    present = set(bucket.keys("topics/"))
    for s in m["segments"]:
        assert s.get("producer_snapshot_key"), \
            f"segment {s['base_offset']}..{s['last_offset']} was tiered without its producer state snapshot"
        for field in ("log_key", "index_key", "time_index_key", "producer_snapshot_key"):
            key = bucket.rel(s[field])
            assert key in present, f"segment {s['base_offset']}: {field} {s[field]} is not in the bucket"
        size = bucket.size(bucket.rel(s["log_key"]))
        assert size == s["size_bytes"], f"object {s['log_key']}: size {size}, manifest says {s['size_bytes']}"


# ----------------------------------------------------------------------------
# metrics
# ----------------------------------------------------------------------------

_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$")
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def scrape(b) -> list[tuple[str, dict, float]]:
    b.wait_ready()  # /metrics answers 503 until the broker is ready (a restart)
    req = urllib.request.Request(f"http://{b.host}:{b.http_port}/metrics")
    token = b.env.get("STRATA_HTTP_TOKEN")  # /metrics needs the API's token when it has one
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200, f"GET /metrics: HTTP {r.status}"
        text = r.read().decode()
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        labels = dict(_LABEL.findall(m.group(2) or ""))
        out.append((m.group(1), labels, float(m.group(3))))
    return out


def metric(b, name: str, topic: str | None = None, partition: int | None = None) -> float | None:
    """The value of one sample (None if absent). With topic/partition, the
    sample labelled with them; otherwise the unlabelled one (or the sum of
    all samples of that name)."""
    samples = [(lab, v) for n, lab, v in scrape(b) if n == name]
    if topic is not None:
        vals = [v for lab, v in samples if lab.get("topic") == topic
                and (partition is None or lab.get("partition") == str(partition))]
    else:
        vals = [v for _, v in samples]
    if not vals:
        return None
    return sum(vals)


def metrics_of(b, topic: str, partition: int = 0) -> dict[str, float]:
    """Every strata_* sample labelled with this topic/partition, plus the
    unlabelled ones: {name: value}."""
    out = {}
    for n, lab, v in scrape(b):
        if not lab:
            out[n] = v
        elif lab.get("topic") == topic and lab.get("partition") == str(partition):
            out[n] = v
    return out


# ----------------------------------------------------------------------------
# local log
# ----------------------------------------------------------------------------


def local_segments(b, topic: str, partition: int = 0) -> dict[int, int]:
    """{base offset: size} of the partition's local .log files, sorted;
    tolerates files deleted while listing (tiering deletes concurrently).
    A partition always has an active segment, so an empty listing is
    looked at again, for up to 10 s (a loaded machine), before it is
    returned."""
    d = b.partition_dir(topic, partition)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        out = {}
        try:
            for f in os.scandir(d):
                m = kutil.SEGMENT_LOG.match(f.name)
                if m:
                    try:
                        out[int(m.group(1))] = f.stat().st_size
                    except FileNotFoundError:
                        pass
        except FileNotFoundError:
            raise AssertionError(f"partition directory {d} does not exist")
        if out:
            return dict(sorted(out.items()))
        time.sleep(0.05)  # between deleting and creating? look again
    return {}


def local_bytes(b, topic: str, partition: int = 0) -> int:
    return sum(local_segments(b, topic, partition).values())


def local_start(b, topic: str, partition: int = 0) -> int:
    segs = local_segments(b, topic, partition)
    assert segs, f"{topic}/{partition} has no local segment at all"
    return min(segs)


# ----------------------------------------------------------------------------
# a deterministic data set: record i has key k(i), value v(i), timestamp ts0+i
# ----------------------------------------------------------------------------


class DataSet:
    """Record i: key b"k%09d", value = b"%09d|" + a deterministic
    pseudo-random slice (size between min_size and max_size), timestamp
    ts0 + i (CreateTime, 1 ms apart)."""

    def __init__(self, seed: int, ts0: int, min_size: int = 900, max_size: int = 1100):
        rnd = random.Random(seed)
        self.blob = rnd.randbytes(2 * MiB)
        self.seed = seed
        self.ts0 = ts0
        self.min_size = min_size
        self.max_size = max_size

    def key(self, i: int) -> bytes:
        return b"k%09d" % i

    def value(self, i: int) -> bytes:
        h = (i * 2654435761 + self.seed) & 0xFFFFFFFF
        size = self.min_size + h % (self.max_size - self.min_size + 1)
        start = (h >> 7) % (len(self.blob) - size)
        return b"%09d|" % i + self.blob[start:start + size]

    def timestamp(self, i: int) -> int:
        return self.ts0 + i

    def approx_bytes(self, n: int) -> int:
        return n * ((self.min_size + self.max_size) // 2 + 40)


def produce_range(bootstrap: str, topic: str, ds: DataSet, start: int, end: int, partition: int = 0,
                  **conf) -> None:
    """Produce records start..end-1 of the data set to one partition with
    acks=all and assert that record i landed at offset i."""
    # 32 KiB batches: segments of a few hundred KiB still hold several batches
    p = kutil.producer(bootstrap, **{"linger.ms": 5, "batch.size": 32 * KiB, "queue.buffering.max.kbytes": 65536,
                                     **conf})
    bad: list[str] = []
    acked = [0]

    def cb(err, msg):
        if err is not None:
            bad.append(f"record {msg.key()!r}: {err}")
            return
        i = int(msg.key()[1:])
        if msg.offset() != i:
            bad.append(f"record {i} landed at offset {msg.offset()}")
        acked[0] += 1

    for i in range(start, end):
        while True:
            try:
                p.produce(topic, key=ds.key(i), value=ds.value(i), partition=partition,
                          timestamp=ds.timestamp(i), on_delivery=cb)
                break
            except BufferError:
                p.poll(0.05)
        if i % 1000 == 0:
            p.poll(0)
    left = p.flush(120)
    assert left == 0, f"{left} records undelivered after 120 s"
    assert not bad, f"{len(bad)} bad deliveries, first: {bad[:3]}"
    assert acked[0] == end - start


def verify_range(bootstrap: str, topic: str, ds: DataSet, start: int, end: int, partition: int = 0,
                 timeout: float = 120.0, index_of=None, group: str | None = None, **conf) -> int:
    """Read offsets start..end-1 of one partition and compare key, value and
    timestamp of every record with the data set; every offset must come,
    in order, exactly once. index_of(offset) maps an offset to the data set
    index (default: the same number). Returns the count.

    Without `group`: assign() at `start` with auto.offset.reset=error, so an
    offset the broker does not serve is an error, not a silent skip. With
    `group`: subscribe() as a fresh member of that group with
    auto.offset.reset=earliest (start must then be the log start)."""
    index_of = index_of or (lambda o: o)
    if group is None:
        c = kutil.consumer(bootstrap, **{"auto.offset.reset": "error", **conf})
        c.assign([TopicPartition(topic, partition, start)])
    else:
        c = kutil.group_consumer(bootstrap, group, **{"auto.offset.reset": "earliest",
                                                       "enable.partition.eof": True, **conf})
        c.subscribe([topic])
    nxt = start
    deadline = time.monotonic() + timeout
    try:
        while nxt < end:
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic}/{partition}: read only up to offset {nxt} of {start}..{end - 1} "
                                     f"within {timeout}s")
            for m in c.consume(num_messages=5000, timeout=0.5):
                err = m.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    if m.topic() is None and group is not None and not err.fatal():
                        continue  # transient client-level group errors; partition errors fail below
                    raise AssertionError(f"{topic}/{partition}: error while reading at offset {nxt}: {err.str()}")
                if m.partition() != partition:
                    continue
                o = m.offset()
                assert o == nxt, f"{topic}/{partition}: expected offset {nxt}, got {o} (gap or duplicate)"
                i = index_of(o)
                if m.key() != ds.key(i) or m.value() != ds.value(i):
                    raise AssertionError(f"{topic}/{partition} offset {o}: key/value differ from record {i} "
                                         f"(key {m.key()!r}, value[:20] {(m.value() or b'')[:20]!r}, "
                                         f"len {len(m.value() or b'')} vs {len(ds.value(i))})")
                _, ts = m.timestamp()
                assert ts == ds.timestamp(i), f"offset {o}: timestamp {ts}, produced {ds.timestamp(i)}"
                nxt += 1
                if nxt >= end:
                    break
        return nxt - start
    finally:
        c.close()


def payload_bytes(ds: DataSet, start: int, end: int) -> int:
    """Sum of key and value sizes of records start..end-1 (a lower bound for
    the size of the batches holding them)."""
    return sum(len(ds.key(i)) + len(ds.value(i)) for i in range(start, end))


def wait_for(fn, timeout: float, what: str, interval: float = 0.25):
    """Poll fn() -> (result, state description) until result is truthy;
    return it. On timeout fail with `what` and the last state."""
    deadline = time.monotonic() + timeout
    while True:
        result, state = fn()
        if result:
            return result
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}; last state: {state}")
        time.sleep(interval)


def wait_settled(b, bucket, topic: str, partition: int = 0, timeout: float = 60.0) -> dict:
    """Wait until every sealed local segment is tiered: the copy-lag metric
    is 0 and the manifest ends exactly where the active (newest) local
    segment starts. Returns that manifest."""
    def state():
        segs = local_segments(b, topic, partition)
        active = max(segs) if segs else None
        lag = metric(b, "strata_remote_copy_lag_segments", topic, partition)
        m = manifest(bucket, topic, partition)
        end = check_manifest(m) if m else 0
        ok = m if (lag == 0 and end == active) else None
        return ok, f"copy lag {lag}, remote end {end}, local segments {list(segs)[:3]}...{list(segs)[-3:]}"
    return wait_for(state, timeout, f"{topic}/{partition}: all sealed segments tiered")


def wait_hot_tail(b, bucket, topic: str, partition: int = 0, max_bytes: int = 4 * MiB,
                  timeout: float = 60.0) -> int:
    """Wait until the local log is at most max_bytes and starts above 0 at
    or below the remote end (local and remote together cover the log).
    Returns the local start offset."""
    def state():
        segs = local_segments(b, topic, partition)
        start = min(segs)
        size = sum(segs.values())
        end = remote_end(bucket, topic, partition)
        ok = start if (0 < start <= end and size <= max_bytes) else None
        return ok, f"local start {start}, local bytes {size}, {len(segs)} local segments, remote end {end}"
    return wait_for(state, timeout, f"{topic}/{partition}: local log shrunk to the hot tail (<= {max_bytes} bytes)")


def ms_ago(minutes: float) -> int:
    """Wall-clock milliseconds `minutes` ago (record timestamps in the past,
    so local.retention.ms applies to them at once)."""
    return int(time.time() * 1000) - int(minutes * 60_000)


class SeqProducer(threading.Thread):
    """Produces data-set records start, start+1, ... to one partition at
    about `rate` records/s (acks=all) until stopped; checks that record i
    lands at offset i."""

    def __init__(self, bootstrap: str, topic: str, ds: DataSet, start: int = 0, rate: int = 500,
                 partition: int = 0):
        super().__init__(daemon=True, name="seq-producer")
        self.p = kutil.producer(bootstrap, **{"linger.ms": 5, "batch.size": 32 * KiB, "message.timeout.ms": 120000})
        self.topic, self.ds, self.partition, self.rate = topic, ds, partition, rate
        self.next = start
        self.start_index = start
        self.acked = 0
        self.bad: list[str] = []
        self.stop_flag = threading.Event()
        self.unflushed = -1

    def _cb(self, err, msg):
        if err is not None:
            self.bad.append(f"record {msg.key()!r}: {err}")
            return
        i = int(msg.key()[1:])
        if msg.offset() != i:
            self.bad.append(f"record {i} landed at offset {msg.offset()}")
        self.acked += 1

    def run(self):
        t0 = time.monotonic()
        while not self.stop_flag.is_set():
            due = self.start_index + int((time.monotonic() - t0) * self.rate)
            while self.next < due:
                i = self.next
                try:
                    self.p.produce(self.topic, key=self.ds.key(i), value=self.ds.value(i),
                                   partition=self.partition, timestamp=self.ds.timestamp(i), on_delivery=self._cb)
                except BufferError:
                    break
                self.next += 1
            self.p.poll(0.02)
        self.unflushed = self.p.flush(120)

    def stop(self) -> int:
        """Stop, wait for every delivery report, assert none failed; return
        the index after the last produced record."""
        self.stop_flag.set()
        self.join(150)
        assert not self.is_alive(), "producer thread did not stop"
        assert self.unflushed == 0, f"{self.unflushed} records undelivered"
        assert not self.bad, f"{len(self.bad)} deliveries failed/misplaced, first: {self.bad[:3]}"
        assert self.acked == self.next - self.start_index
        return self.next


# ----------------------------------------------------------------------------
# brokers, configs, offsets
# ----------------------------------------------------------------------------

PARTITION_METRICS = (
    "strata_remote_upload_segments_total", "strata_remote_upload_bytes_total",
    "strata_remote_upload_errors_total", "strata_remote_copy_lag_segments", "strata_remote_fenced",
    "strata_remote_log_size_bytes", "strata_local_log_size_bytes", "strata_remote_log_start_offset",
    "strata_local_log_start_offset", "strata_remote_copy_lag_seconds",
)


def s3_broker(broker_factory, bucket: S3Bucket, settings: dict | None = None, env: dict | None = None, **kw):
    """A dedicated broker (conftest's broker_factory) tiering to `bucket` on
    moto, with TIER_SETTINGS; env overrides the bucket's (e.g. a proxy)."""
    return broker_factory({**TIER_SETTINGS, **(settings or {})}, extra_args=["--object-store", bucket.url],
                          env=env or bucket.env, **kw)


def file_broker(broker_factory, settings: dict | None = None, **kw):
    """A dedicated broker on the default object store, file://<data-dir>/bucket;
    returns (broker, FileBucket)."""
    b = broker_factory({**TIER_SETTINGS, **(settings or {})}, **kw)
    return b, FileBucket(b.data_dir / "bucket")


def describe(adm, topic: str) -> dict:
    from confluent_kafka.admin import ConfigResource, ResourceType
    res = ConfigResource(ResourceType.TOPIC, topic)
    return adm.describe_configs([res], request_timeout=30)[res].result(timeout=60)


def config_source(entry):
    from confluent_kafka.admin import ConfigSource
    return ConfigSource(int(getattr(entry.source, "value", entry.source)))


def alter(adm, topic: str, configs: dict):
    """IncrementalAlterConfigs: SET each name to its value (None: DELETE)."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
    entries = [ConfigEntry(name, None, incremental_operation=AlterConfigOpType.DELETE) if v is None
               else ConfigEntry(name, str(v), incremental_operation=AlterConfigOpType.SET)
               for name, v in configs.items()]
    res = ConfigResource(ResourceType.TOPIC, topic, incremental_configs=entries)
    adm.incremental_alter_configs([res], request_timeout=30)[res].result(timeout=60)


def list_offset(adm, topic: str, partition: int, spec) -> int:
    tp = TopicPartition(topic, partition)
    return adm.list_offsets({tp: spec}, request_timeout=30)[tp].result(timeout=60).offset


def need_metrics(b, topic: str, partition: int = 0, names=()) -> dict:
    mt = metrics_of(b, topic, partition)
    missing = [n for n in names if n not in mt]
    assert not missing, f"/metrics lacks {missing} for {topic}/{partition}; has {sorted(mt)}"
    return mt


def wait_metric(b, name: str, topic: str | None, partition: int | None, expected, timeout: float = 10.0,
                what: str = ""):
    """Wait until a metric sample equals `expected` (metrics may trail the
    bucket by a task interval); fails showing the last value."""
    def state():
        v = metric(b, name, topic, partition)
        return (v == expected), f"{name}={v}"
    wait_for(state, timeout, what or f"{name}{{topic={topic},partition={partition}}} == {expected}")
    return expected
