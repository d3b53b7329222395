"""The historical read path (issue 5): reads below the local log start are
served by the prefetcher (ranged GETs of `remote.fetch.chunk.bytes` chunks
into a shared memory(+disk) cache, read-ahead per reading stream, a GET
budget shared by priority classes). Catch-up reads byte for byte with a
cold, a warm and an evicting cache; object-store outages during a read;
priority classes and the dynamic broker settings that steer them; tail
readers while a group catches up.

Most tests share one broker (module fixture `hist`) that reaches moto
through a TcpProxy, with 64 KiB chunks (batches of 32 KiB straddle them) and
~21 MiB of tiered history in three partitions, produced once. A test that
needs a cold cache or other cache settings restarts it (`Hist.restart`).
"""

from __future__ import annotations

import json
import math
import shutil
import threading
import time
from dataclasses import dataclass

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource,
                                   OffsetSpec, ResourceType)

import conftest
import kutil
import tierutil as tu
import wire
from tierutil import KiB, MiB

CHUNK = 64 * KiB
SEG = 512 * KiB
PARTITIONS = 3
RECORDS = 7000          # per partition, ~1 KiB each: ~7 MiB a partition, ~21 MiB in all

BASE = {**tu.TIER_SETTINGS, "remote.fetch.chunk.bytes": CHUNK}
TOPIC_CONFIG = {"segment.bytes": str(SEG), "segment.ms": "2000", "local.retention.ms": "1000"}

DYNAMIC = ("remote.fetch.priority.groups", "remote.fetch.priority.shares", "remote.fetch.bulk.paused")
ERR_KAFKA_STORAGE_ERROR = 56

COUNTERS = (
    "strata_remote_fetch_bytes_total", "strata_remote_fetch_reads_total", "strata_remote_fetch_wait_seconds_total",
    "strata_remote_get_total", "strata_remote_get_bytes_total", "strata_remote_get_seconds_total",
    "strata_remote_get_errors_total", "strata_remote_cache_hits_total", "strata_remote_cache_misses_total",
    "strata_remote_readahead_chunks_total", "strata_remote_fetch_throttled_total",
    "strata_remote_fetch_throttle_seconds_total",
)
GAUGES = ("strata_remote_reads_paused", "strata_remote_readahead_depth_chunks", "strata_remote_readahead_held_bytes",
          "strata_remote_gets_in_flight", "strata_remote_bytes_in_flight")
CLASSES = ("critical", "standard", "bulk")


# ---------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------


def pf_metrics(b) -> dict[str, float]:
    """The historical read path's samples: {name: value}, the waiting GETs
    as {"waiting.<class>": value}. Fails if one is missing."""
    out = {}
    for name, labels, v in tu.scrape(b):
        if name == "strata_remote_gets_waiting":
            out[f"waiting.{labels.get('class')}"] = v
        elif name in COUNTERS + GAUGES and not labels:
            out[name] = v
    missing = [n for n in COUNTERS + GAUGES + tuple(f"waiting.{c}" for c in CLASSES) if n not in out]
    assert not missing, f"/metrics lacks {missing}"
    return out


def delta(after: dict, before: dict) -> dict[str, float]:
    return {k: after[k] - before.get(k, 0) for k in COUNTERS}


def wait_idle(b, timeout: float = 30.0) -> dict[str, float]:
    """Wait until no GET is in flight or waiting (read-ahead done); return the metrics."""
    def idle():
        m = pf_metrics(b)
        busy = {k: m[k] for k in ("strata_remote_gets_in_flight", "strata_remote_bytes_in_flight")
                + tuple(f"waiting.{c}" for c in CLASSES) if m[k] != 0}
        return (m if not busy else None), f"busy: {busy}"
    return tu.wait_for(idle, timeout, "the historical read path idle (no GET in flight or waiting)")


def wait_disk_cache_written(cache_dir, nonempty: bool, timeout: float = 30.0):
    """Wait until the disk cache's writer has caught up: the blocks allocated
    under cache_dir (foyer creates its files at full size, sparse) did not
    change for a second, and, if `nonempty`, some were written."""
    def allocated() -> int:
        if not cache_dir.is_dir():
            return 0
        return sum(f.stat().st_blocks for f in cache_dir.rglob("*") if f.is_file()) * 512

    def settled():
        before = allocated()
        time.sleep(1.0)
        now = allocated()
        return (now == before and (now > 0 or not nonempty)), f"{before} -> {now} bytes allocated under {cache_dir}"
    tu.wait_for(settled, timeout, f"the disk cache's writer to catch up ({cache_dir})")


def broker_resource() -> ConfigResource:
    return ConfigResource(ResourceType.BROKER, "0")


def describe_broker(adm) -> dict:
    res = broker_resource()
    return adm.describe_configs([res], request_timeout=30)[res].result(timeout=60)


def alter_broker(adm, configs: dict):
    """IncrementalAlterConfigs on broker 0: SET each name (None: DELETE)."""
    entries = [ConfigEntry(n, None, incremental_operation=AlterConfigOpType.DELETE) if v is None
               else ConfigEntry(n, str(v), incremental_operation=AlterConfigOpType.SET)
               for n, v in configs.items()]
    res = ConfigResource(ResourceType.BROKER, "0", incremental_configs=entries)
    adm.incremental_alter_configs([res], request_timeout=30)[res].result(timeout=60)


def alter_broker_fails(adm, configs: dict) -> KafkaException:
    with pytest.raises(KafkaException) as ei:
        alter_broker(adm, configs)
    return ei.value


def produce_tiered(b, bucket, topic: str, dss: dict, n: int, timeout: float = 90.0) -> dict[int, dict]:
    """Produce records 0..n-1 of dss[p] to each partition p, then wait until
    everything is in the bucket and nothing is left on the local disk (the
    local log is only the empty active segment at n). Returns the manifests."""
    for p, ds in dss.items():
        tu.produce_range(b.bootstrap, topic, ds, 0, n, partition=p)
    out = {}
    for p in dss:
        out[p] = tu.wait_remote_end(bucket, topic, p, n, timeout=timeout)
        tu.wait_for(lambda p=p: (tu.local_start(b, topic, p) == n, f"local segments {list(tu.local_segments(b, topic, p))}"),
                    timeout, f"{topic}/{p}: every sealed segment deleted locally")
        out[p] = tu.manifest(bucket, topic, p)
        assert tu.check_manifest(out[p]) == n and out[p]["segments"][0]["base_offset"] == 0
    return out


def chunk_count(manifests: dict) -> int:
    return sum(math.ceil(s["size_bytes"] / CHUNK) for m in manifests.values() for s in m["segments"])


def remote_bytes(manifests: dict) -> int:
    return sum(s["size_bytes"] for m in manifests.values() for s in m["segments"])


def wait_log_start(b, topic: str, partitions, timeout: float = 30.0):
    """ListOffsets EARLIEST is 0 (the remote start) on every partition: after
    a restart the broker knows the bucket again."""
    adm = kutil.admin(b.bootstrap)

    def ok():
        got = {p: tu.list_offset(adm, topic, p, OffsetSpec.earliest()) for p in partitions}
        return all(v == 0 for v in got.values()), f"earliest offsets {got}"
    tu.wait_for(ok, timeout, f"{topic}: ListOffsets EARLIEST == 0 (remote log start) on every partition")


class CheckedReader(threading.Thread):
    """A confluent-kafka consumer polled in its own thread that checks every
    record as it arrives: per partition, offsets must follow each other
    from the start without gap or duplicate, and key, value and timestamp
    must be those of the data set. With `group`: subscribe() as a fresh
    member (auto.offset.reset=earliest, so the start is the log start 0);
    otherwise assign() at `starts` with auto.offset.reset=error (an offset
    the broker does not serve is an error, never a silent skip).

    `batch` and `pause` make a slow application (at most batch/pause
    records a second). `ends` ({partition: end offset}) may be raised while it runs; it keeps
    polling until stop(). Partition errors are recorded in `errors`; the
    first wrong record in `problems` (reading stops there)."""

    def __init__(self, name: str, bootstrap: str, topic: str, dss: dict, ends: dict[int, int],
                 group: str | None = None, starts: dict[int, int] | None = None, batch: int = 2000,
                 pause: float = 0.0, **conf):
        super().__init__(daemon=True, name=f"reader-{name}")
        self.label = name
        self.topic, self.dss = topic, dss
        self.starts = dict(starts or {p: 0 for p in dss})
        self.next = dict(self.starts)
        self.ends = dict(ends)
        self.group = group
        self.batch, self.pause = batch, pause   # a slow application: sleep `pause` after each batch
        base = {"client.id": name, "enable.partition.eof": False, **conf}
        if group is not None:
            assert all(v == 0 for v in self.starts.values())
            self.c = kutil.group_consumer(bootstrap, group, **{"auto.offset.reset": "earliest", **base})
        else:
            self.c = kutil.consumer(bootstrap, **{"auto.offset.reset": "error", **base})
        self.lock = threading.Lock()
        self.problems: list[str] = []
        self.errors: list[tuple[float, int | None, int, str]] = []   # (t, partition, code, text)
        self.first_record_at: float | None = None
        self._halt = threading.Event()

    def run(self):
        c = self.c
        try:
            if self.group is not None:
                c.subscribe([self.topic])
            else:
                c.assign([TopicPartition(self.topic, p, o) for p, o in self.starts.items()])
            while not self._halt.is_set() and not self.problems:
                msgs = c.consume(num_messages=self.batch, timeout=0.2)
                for m in msgs:
                    err = m.error()
                    if err is not None:
                        if err.code() != KafkaError._PARTITION_EOF:
                            with self.lock:
                                self.errors.append((time.monotonic(), m.partition() if m.topic() else None,
                                                    err.code(), err.str()))
                        continue
                    self._check(m)
                    if self.problems:
                        break
                if msgs and self.pause:
                    time.sleep(self.pause)
        except Exception as e:  # noqa: BLE001 - reported by the test
            self.problems.append(f"reader {self.label} crashed: {e!r}")
        finally:
            c.close()

    def _check(self, m):
        p, o = m.partition(), m.offset()
        ds = self.dss[p]
        with self.lock:
            want = self.next[p]
            if o != want:
                self.problems.append(f"{self.label}: partition {p}: expected offset {want}, got {o} (gap or duplicate)")
                return
            if m.key() != ds.key(o) or m.value() != ds.value(o):
                self.problems.append(
                    f"{self.label}: partition {p} offset {o}: key/value differ from record {o} (key {m.key()!r}, "
                    f"value[:20] {(m.value() or b'')[:20]!r}, len {len(m.value() or b'')} vs {len(ds.value(o))})")
                return
            ts = m.timestamp()[1]
            if ts != ds.timestamp(o):
                self.problems.append(f"{self.label}: partition {p} offset {o}: timestamp {ts}, produced {ds.timestamp(o)}")
                return
            self.next[p] = o + 1
            if self.first_record_at is None:
                self.first_record_at = time.monotonic()

    # -- main thread
    def count(self) -> int:
        with self.lock:
            return sum(self.next[p] - self.starts[p] for p in self.next)

    def positions(self) -> dict[int, int]:
        with self.lock:
            return dict(self.next)

    def finished(self) -> bool:
        with self.lock:
            return all(self.next[p] >= self.ends[p] for p in self.ends)

    def check_ok(self):
        assert not self.problems, self.problems[0]

    def wait_finished(self, timeout: float, what: str = ""):
        def state():
            self.check_ok()
            assert self.is_alive(), f"reader {self.label} stopped early"
            return self.finished(), f"positions {self.positions()}, ends {self.ends}, last errors {self.errors[-3:]}"
        tu.wait_for(state, timeout, what or f"reader {self.label} to read everything", interval=0.2)

    def stop(self):
        self._halt.set()
        self.join(30)
        assert not self.is_alive(), f"reader {self.label} did not stop"


@dataclass
class Hist:
    """The module's broker (through `proxy` to moto) and its tiered topic:
    dss[p] records 0..n-1 in partition p, all of them only in the bucket."""
    broker: object
    bucket: tu.S3Bucket
    proxy: tu.TcpProxy
    topic: str
    dss: dict
    n: int
    manifests: dict
    cold: bool = True

    def ends(self) -> dict[int, int]:
        return {p: self.n for p in self.dss}

    def restart(self, settings: dict | None = None, wipe_cache: bool = True):
        """Restart with BASE + settings; wipe_cache deletes the disk cache
        (<data-dir>/remote-cache) while it is down, so the cache is cold."""
        b = self.broker
        assert b.stop() == 0, "broker exited non-zero on SIGTERM"
        b.settings = {**BASE, **(settings or {})}
        if wipe_cache:
            shutil.rmtree(b.data_dir / "remote-cache", ignore_errors=True)
            if b.settings.get("remote.fetch.cache.dir"):
                shutil.rmtree(b.settings["remote.fetch.cache.dir"], ignore_errors=True)
        b.start()
        kutil.wait_topic_ready(kutil.admin(b.bootstrap), self.topic, PARTITIONS)
        wait_log_start(b, self.topic, list(self.dss))
        self.cold = wipe_cache

    def ensure(self, settings: dict | None = None):
        """A cold cache with exactly these settings."""
        want = {**BASE, **(settings or {})}
        if not self.cold or self.broker.settings != want:
            self.restart(settings)

    def read_all(self, name: str, group: str | None = None, timeout: float = 120.0, **conf) -> CheckedReader:
        """Read every record of the topic from offset 0 (group read) and check it."""
        self.cold = False
        r = CheckedReader(name, self.broker.bootstrap, self.topic, self.dss, self.ends(),
                          group=group or kutil.unique(name), **conf)
        r.start()
        try:
            r.wait_finished(timeout)
        finally:
            r.stop()
        r.check_ok()
        assert not r.errors, f"{name}: partition errors while reading: {r.errors[:5]}"
        return r


@pytest.fixture(scope="module")
def hist(moto, tmp_path_factory):
    proxy = tu.TcpProxy(moto.port)
    bucket = tu.S3Bucket(moto.client, kutil.unique("prefetch"))
    b = conftest._start(tmp_path_factory, "prefetch", dict(BASE),
                        extra_args=["--object-store", bucket.url], env=moto.env(proxy.endpoint))
    try:
        conftest._active.append(("prefetch", b, 0))
        topic = kutil.unique("hist")
        kutil.create_topic(kutil.admin(b.bootstrap), topic, PARTITIONS, config=TOPIC_CONFIG)
        dss = {p: tu.DataSet(seed=500 + p, ts0=tu.ms_ago(60)) for p in range(PARTITIONS)}
        t0 = time.monotonic()
        manifests = produce_tiered(b, bucket, topic, dss, RECORDS)
        print(f"hist: {remote_bytes(manifests)} bytes in {sum(len(m['segments']) for m in manifests.values())} "
              f"remote segments, {chunk_count(manifests)} chunks, ready in {time.monotonic() - t0:.1f}s")
        yield Hist(b, bucket, proxy, topic, dss, RECORDS, manifests)
    finally:
        b.close()
        proxy.close()


@pytest.fixture
def h(hist):
    """The module broker, alive, with its log attached to failures."""
    b = hist.broker
    if not b.alive():
        pytest.fail(f"the prefetch broker is not running; log tail:\n{b.log_tail()}", pytrace=False)
    hist.proxy.up()
    conftest._active.append(("prefetch", b, b.log_size()))
    yield hist
    hist.proxy.up()
    if not b.alive():
        pytest.fail(f"the prefetch broker died during this test; log tail:\n{b.log_tail()}", pytrace=False)


def new_tiered_topic(h: Hist, name: str, partitions: int, n: int, seed: int) -> tuple[str, dict, dict]:
    """Another topic on the module broker, all of it in the bucket only (its
    chunks are in no cache)."""
    b = h.broker
    topic = kutil.unique(name)
    kutil.create_topic(kutil.admin(b.bootstrap), topic, partitions, config=TOPIC_CONFIG)
    dss = {p: tu.DataSet(seed=seed + p, ts0=tu.ms_ago(60)) for p in range(partitions)}
    manifests = produce_tiered(b, h.bucket, topic, dss, n)
    return topic, dss, manifests


# ---------------------------------------------------------------------------
# 1: catch-up through the prefetcher, cold then warm
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_catch_up_cold_then_warm(h):
    """A group reads ~21 MiB of tiered history in three partitions from
    offset 0, byte for byte, through 64 KiB chunks: each chunk is fetched
    by exactly one GET (the bytes fetched are the segment objects' bytes),
    the sequential readers' read-ahead grows and fetches most chunks ahead
    of them, and the bytes served are the data. A second group reads it
    all again from the warm memory cache: no new GETs, every chunk a hit."""
    h.ensure()
    b = h.broker
    chunks, size = chunk_count(h.manifests), remote_bytes(h.manifests)
    segments = sum(len(m["segments"]) for m in h.manifests.values())
    m0 = pf_metrics(b)
    t0 = time.monotonic()
    h.read_all("catchup-a")
    cold_s = time.monotonic() - t0
    m1 = wait_idle(b)
    d = delta(m1, m0)
    depth = m1["strata_remote_readahead_depth_chunks"]
    print(f"cold read of {size} bytes ({segments} segments, {chunks} chunks) in {cold_s:.1f}s, "
          f"read-ahead depth {depth}: {d}")

    assert d["strata_remote_get_errors_total"] == 0, d
    assert d["strata_remote_get_total"] >= chunks, \
        f"{d['strata_remote_get_total']:.0f} GETs for {chunks} chunks: some chunk was never fetched?"
    assert d["strata_remote_get_total"] <= chunks * 1.02, \
        f"{d['strata_remote_get_total']:.0f} GETs for {chunks} chunks with a 256 MiB cache: chunks fetched twice"
    assert d["strata_remote_get_bytes_total"] == size, \
        f"GETs fetched {d['strata_remote_get_bytes_total']:.0f} bytes; the segment objects hold {size}"
    assert d["strata_remote_cache_misses_total"] >= chunks * 0.9, d
    assert d["strata_remote_readahead_chunks_total"] > 0, d
    assert d["strata_remote_get_seconds_total"] > 0 and d["strata_remote_fetch_wait_seconds_total"] > 0, d
    # a response carries data of one segment: at least one read per segment
    assert d["strata_remote_fetch_reads_total"] >= segments, d

    # checked after the warm read, so that both are checked when one fails
    soft = []
    # A sequential stream's window doubles up to readahead.max.chunks (16):
    # three streams that each read 7 MiB in order end with windows near 16,
    # and nearly every chunk was requested ahead of its reader.
    if depth < PARTITIONS * 8:
        soft.append(f"strata_remote_readahead_depth_chunks={depth:.0f} after three streams read 7 MiB each in "
                    f"order (windows stay at the minimum; expected >= {PARTITIONS * 8}, at most {PARTITIONS * 16})")
    if d["strata_remote_readahead_chunks_total"] < chunks * 0.8:
        soft.append(f"only {d['strata_remote_readahead_chunks_total']:.0f} of {chunks} chunks were requested "
                    f"ahead of sequential readers")
    # every record byte went to the client once
    if not size <= d["strata_remote_fetch_bytes_total"] <= size * 1.1:
        soft.append(f"cold read: strata_remote_fetch_bytes_total grew by {d['strata_remote_fetch_bytes_total']:.0f} "
                    f"({d['strata_remote_fetch_bytes_total'] / size:.2f}x) while the client read {size} bytes "
                    f"of batches once; strata_remote_fetch_reads_total grew by {d['strata_remote_fetch_reads_total']:.0f}")

    # warm: a second group, no new GETs
    t0 = time.monotonic()
    h.read_all("catchup-b")
    warm_s = time.monotonic() - t0
    m2 = wait_idle(b)
    d2 = delta(m2, m1)
    print(f"warm read in {warm_s:.1f}s: {d2}")
    assert d2["strata_remote_get_total"] <= chunks * 0.02, \
        f"the second group needed {d2['strata_remote_get_total']:.0f} GETs for {chunks} chunks already in the cache"
    assert d2["strata_remote_cache_hits_total"] >= chunks, \
        f"{d2['strata_remote_cache_hits_total']:.0f} cache hits reading {chunks} cached chunks"
    assert d2["strata_remote_get_errors_total"] == 0, d2
    if not size <= d2["strata_remote_fetch_bytes_total"] <= size * 1.1:
        soft.append(f"warm read: strata_remote_fetch_bytes_total grew by {d2['strata_remote_fetch_bytes_total']:.0f} "
                    f"for {size} bytes read")
    assert not soft, "\n".join(soft)


# ---------------------------------------------------------------------------
# 2: small caches
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_evicting_memory_cache(h):
    """A 1 MiB memory cache and no disk cache (21 MiB of history, three
    readers): reads stay byte for byte while chunks are evicted, and a
    second read needs the GETs again (the cache is bounded). First with
    consumers that wait up to 2 s per fetch (every remote read completes
    within one fetch), then with the suite's consumers (fetch.wait.max.ms
    100): reads that miss their wait are retried by the client, and the
    consumer must still get to the end."""
    b = h.broker
    chunks, size = chunk_count(h.manifests), remote_bytes(h.manifests)
    h.ensure({"remote.fetch.cache.memory.bytes": MiB, "remote.fetch.cache.disk.bytes": 0})
    patient = {"fetch.wait.max.ms": 2000}
    m0 = pf_metrics(b)
    h.read_all("evict-a", timeout=60, **patient)
    m1 = wait_idle(b)
    h.read_all("evict-b", timeout=60, **patient)
    m2 = wait_idle(b)
    d1, d2 = delta(m1, m0), delta(m2, m1)
    print(f"1 MiB memory only, fetch.wait.max.ms=2000: first read {d1}\nsecond read {d2}")
    assert d1["strata_remote_get_total"] >= chunks, d1
    assert d2["strata_remote_get_total"] >= chunks * 0.9, \
        f"with a 1 MiB cache a second read of {size} bytes needed only {d2['strata_remote_get_total']:.0f} GETs " \
        f"for {chunks} chunks: is remote.fetch.cache.memory.bytes applied?"
    assert d1["strata_remote_get_errors_total"] + d2["strata_remote_get_errors_total"] == 0
    cache_dir = b.data_dir / "remote-cache"
    assert not cache_dir.is_dir() or not any(f.is_file() for f in cache_dir.rglob("*")), \
        f"remote.fetch.cache.disk.bytes=0 but {cache_dir} holds files"

    t0 = time.monotonic()
    try:
        h.read_all("evict-c", timeout=60)
    except AssertionError as e:
        d3 = delta(pf_metrics(b), m2)
        raise AssertionError(
            f"{e}\nwith remote.fetch.cache.memory.bytes=1 MiB and fetch.wait.max.ms=100 the consumer did not read "
            f"{size} bytes in {time.monotonic() - t0:.0f}s: {d3['strata_remote_get_total']:.0f} GETs "
            f"({d3['strata_remote_get_bytes_total'] / MiB:.0f} MiB) for {chunks} chunks, "
            f"{d3['strata_remote_fetch_reads_total']:.0f} remote reads, "
            f"{d3['strata_remote_fetch_bytes_total'] / MiB:.0f} MiB counted as served") from None
    d3 = delta(wait_idle(b), m2)
    print(f"1 MiB memory only, fetch.wait.max.ms=100: read in {time.monotonic() - t0:.1f}s: {d3}")


@pytest.mark.slow
def test_disk_cache(h):
    """A 1 MiB memory cache over a 64 MiB disk cache in a directory of its
    own (remote.fetch.cache.dir, as on a disk the log does not use; the disk
    tier is off by default): chunks evicted from memory land there, so the
    first read fetches each chunk about once and a second read is served
    mostly from disk."""
    b = h.broker
    chunks = chunk_count(h.manifests)
    cache_dir = b.data_dir.parent / f"{b.data_dir.name}-chunk-cache"
    h.ensure({"remote.fetch.cache.memory.bytes": MiB, "remote.fetch.cache.disk.bytes": 64 * MiB,
              "remote.fetch.cache.disk.write.bytes.per.second": 0, "remote.fetch.cache.dir": str(cache_dir)})
    m0 = pf_metrics(b)
    h.read_all("disk-a", timeout=60)
    m1 = wait_idle(b)
    wait_disk_cache_written(cache_dir, nonempty=True)
    h.read_all("disk-b", timeout=60)
    m2 = wait_idle(b)
    d1, d2 = delta(m1, m0), delta(m2, m1)
    print(f"1 MiB memory + 64 MiB disk: first read {d1}\nsecond read {d2}")
    assert chunks <= d1["strata_remote_get_total"] <= chunks * 1.1, \
        f"first read: {d1['strata_remote_get_total']:.0f} GETs for {chunks} chunks with a 64 MiB disk cache"
    # allocated blocks, not sizes: foyer creates its files at full size, sparse
    on_disk = sum(f.stat().st_blocks for f in cache_dir.rglob("*") if f.is_file()) * 512 \
        if cache_dir.is_dir() else 0
    assert on_disk > 0, f"nothing written into the disk cache under {cache_dir} (remote.fetch.cache.dir)"
    default_dir = b.data_dir / "remote-cache"
    assert not default_dir.is_dir() or not any(f.is_file() for f in default_dir.rglob("*")), \
        f"remote.fetch.cache.dir={cache_dir} but {default_dir} holds files"
    assert d2["strata_remote_get_total"] <= chunks * 0.5, \
        f"with a 64 MiB disk cache a second read needed {d2['strata_remote_get_total']:.0f} GETs for {chunks} chunks"
    assert d2["strata_remote_cache_hits_total"] >= chunks * 0.5, d2


@pytest.mark.slow
def test_disk_cache_write_rate_limit(h):
    """remote.fetch.cache.disk.write.bytes.per.second bounds what a catch-up
    writes into the disk cache: at 64 KiB/s (one chunk a second) almost
    every chunk evicted from memory is dropped, not written, so a second
    read fetches most chunks again; reads stay exact."""
    b = h.broker
    chunks = chunk_count(h.manifests)
    h.ensure({"remote.fetch.cache.memory.bytes": MiB, "remote.fetch.cache.disk.bytes": 64 * MiB,
              "remote.fetch.cache.disk.write.bytes.per.second": CHUNK})
    m0 = pf_metrics(b)
    h.read_all("limited-a", timeout=60)
    m1 = wait_idle(b)
    wait_disk_cache_written(b.data_dir / "remote-cache", nonempty=False)
    h.read_all("limited-b", timeout=60)
    m2 = wait_idle(b)
    d2 = delta(m2, m1)
    print(f"disk writes limited to one chunk/s: first read {delta(m1, m0)}\nsecond read {d2}")
    assert d2["strata_remote_get_total"] >= chunks * 0.5, \
        f"the limit let most chunks onto disk: the second read needed only {d2['strata_remote_get_total']:.0f} " \
        f"GETs for {chunks} chunks"


# ---------------------------------------------------------------------------
# 3: object store down during a read
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_store_outage_during_catch_up(h):
    """The proxy to the object store goes down for 8 s while a consumer
    reads tiered history with a cold cache: it never gets a wrong, short or
    skipped record, a raw Fetch of an uncached offset answers
    KAFKA_STORAGE_ERROR, GETs fail (metrics, log), and once the store is
    back the consumer reads to the end."""
    b = h.broker
    h.ensure({"remote.fetch.cache.disk.bytes": 0})
    total = h.n * PARTITIONS
    m0 = pf_metrics(b)
    # assign(), strict: auto.offset.reset=error, offsets checked as they come
    r = CheckedReader("outage", b.bootstrap, h.topic, h.dss, h.ends(), starts={p: 0 for p in h.dss},
                      **{"queued.max.messages.kbytes": 1024})
    h.cold = False
    r.start()
    try:
        tu.wait_for(lambda: (r.count() >= total * 0.15 or r.problems, f"read {r.count()}"), 60,
                    "the reader 15% through the history")
        mark = b.log_size()
        h.proxy.down()
        t_down = time.monotonic()
        at_down = r.count()
        try:
            # an offset near the end of partition 2: neither cached nor read ahead
            t0 = time.monotonic()
            with wire.KafkaConn.to(b.bootstrap, client_id="outage-probe") as c:
                f = c.fetch_v4(h.topic, 2, h.n - 10, max_wait_ms=5000, max_bytes=64 * KiB)
            probe_s = time.monotonic() - t0
            while time.monotonic() - t_down < 8:
                r.check_ok()
                time.sleep(0.2)
            at_up = r.count()
            m_down = pf_metrics(b)
        finally:
            h.proxy.up()
        r.wait_finished(90, "the reader to finish after the object store is back")
    finally:
        r.stop()
    r.check_ok()
    assert r.count() == total
    d = delta(pf_metrics(b), m0)
    d_down = delta(m_down, m0)
    log = b.log_text(mark)
    warnings = [ln for ln in log.splitlines() if "remote read failed" in ln]
    print(f"read {at_down} records before the outage, {at_up} at its end; probe {f.error_code} in {probe_s:.1f}s; "
          f"client errors {r.errors[:3]}; {len(warnings)} 'remote read failed' lines; metrics {d}")
    assert at_up < total, "the reader finished during the outage: the outage did not hit the read"
    assert f.error_code == ERR_KAFKA_STORAGE_ERROR, \
        f"Fetch of an uncached remote offset during the outage: error {f.error_code} after {probe_s:.1f}s " \
        f"({len(f.records or b'')} record bytes), want KAFKA_STORAGE_ERROR ({ERR_KAFKA_STORAGE_ERROR})"
    assert not (f.records or b""), "a failed remote read returned records"
    assert d_down["strata_remote_get_errors_total"] > 0, f"no failed GET counted during the outage: {d_down}"
    assert warnings, f"no 'remote read failed' warning in the broker log during the outage:\n{log[-3000:]}"
    wrong = [e for e in r.errors if e[2] != ERR_KAFKA_STORAGE_ERROR]
    assert not wrong, f"the consumer saw errors other than KAFKA_STORAGE_ERROR: {wrong[:5]}"


# ---------------------------------------------------------------------------
# 4: priority classes (dynamic broker settings)
# ---------------------------------------------------------------------------


def test_dynamic_broker_settings(h):
    """DescribeConfigs shows the three dynamic settings (defaults, writable);
    IncrementalAlterConfigs changes them (DYNAMIC_BROKER_CONFIG), they are
    persisted in <data-dir>/dynamic-broker-configs.json and survive a
    restart; static settings are refused with INVALID_REQUEST naming the
    dynamic ones; invalid values get INVALID_CONFIG naming the setting and
    change nothing; DELETE goes back to the default."""
    b = h.broker
    adm = kutil.admin(b.bootstrap)
    e = describe_broker(adm)
    for name, default in zip(DYNAMIC, ("", "critical=50,standard=35,bulk=15", "false")):
        assert name in e, f"DescribeConfigs on the broker lacks {name}"
        assert tu.config_source(e[name]) == ConfigSource.DEFAULT_CONFIG, f"{name}: {e[name]}"
        assert (e[name].value or "") == default, f"{name} = {e[name].value!r}, want {default!r}"
        assert not e[name].is_read_only, f"{name} is dynamic but described read-only"
    assert e["remote.fetch.chunk.bytes"].value == str(CHUNK)
    assert tu.config_source(e["remote.fetch.chunk.bytes"]) == ConfigSource.STATIC_BROKER_CONFIG
    assert e["num.partitions"].is_read_only, "a static broker setting must be described read-only"

    values = {"remote.fetch.priority.groups": "etl=bulk,payments=critical",
              "remote.fetch.priority.shares": "critical=60,standard=30,bulk=10",
              "remote.fetch.bulk.paused": "true"}
    try:
        alter_broker(adm, values)

        def check(where):
            e = describe_broker(kutil.admin(b.bootstrap))
            for k, v in values.items():
                assert (e[k].value, tu.config_source(e[k])) == (v, ConfigSource.DYNAMIC_BROKER_CONFIG), \
                    f"{where}: {k} = {e[k].value!r} ({tu.config_source(e[k])!r}), want {v!r} (DYNAMIC_BROKER_CONFIG)"
        check("after IncrementalAlterConfigs")
        saved = json.loads((b.data_dir / "dynamic-broker-configs.json").read_text())
        assert {k: saved.get(k) for k in values} == values, f"dynamic-broker-configs.json holds {saved}"

        # static settings are refused, naming those that are dynamic
        for static in ({"num.partitions": "5"}, {"remote.fetch.chunk.bytes": str(128 * KiB)}):
            err = alter_broker_fails(adm, static)
            assert kutil.error_code(err) == KafkaError.INVALID_REQUEST, kutil.error_str(err)
            assert all(n in kutil.error_str(err) for n in DYNAMIC), \
                f"refusal of {static} does not say which settings are dynamic: {kutil.error_str(err)!r}"
        # invalid values
        for name, bad in (("remote.fetch.priority.groups", "etl=urgent"),
                          ("remote.fetch.priority.groups", "etl"),
                          ("remote.fetch.priority.shares", "bulk=0"),
                          ("remote.fetch.priority.shares", "fast=3"),
                          ("remote.fetch.bulk.paused", "maybe")):
            err = alter_broker_fails(adm, {name: bad})
            assert kutil.error_code(err) == KafkaError.INVALID_CONFIG, f"{name}={bad}: {kutil.error_str(err)}"
            assert name in kutil.error_str(err), f"INVALID_CONFIG for {name}={bad} does not name it: {kutil.error_str(err)!r}"
        check("after rejected alters")

        h.restart(wipe_cache=False)
        check("after a restart")
    finally:
        alter_broker(kutil.admin(b.bootstrap), {k: None for k in DYNAMIC})
    e = describe_broker(kutil.admin(b.bootstrap))
    for name in DYNAMIC:
        assert tu.config_source(e[name]) == ConfigSource.DEFAULT_CONFIG, f"{name} after DELETE: {e[name]}"
    assert e["remote.fetch.bulk.paused"].value == "false"


QUOTA = "remote.log.manager.fetch.max.bytes.per.second"


@pytest.mark.slow
def test_remote_fetch_quota(h):
    """remote.log.manager.fetch.max.bytes.per.second (dynamic) caps the rate
    at which history is served: a group reading ~21 MiB of tiered history
    at a 4 MiB/s quota takes at least (size - a tenth of a second's burst)
    / rate,
    reads every record byte for byte, and the broker counts the fetches
    that waited. Bad values are refused naming the setting; DELETE lifts
    the quota, after which a new group is not throttled."""
    b = h.broker
    h.ensure()
    size = remote_bytes(h.manifests)
    rate = 4 * MiB
    adm = kutil.admin(b.bootstrap)
    for bad in ("0", "-5", "fast"):
        err = alter_broker_fails(adm, {QUOTA: bad})
        assert kutil.error_code(err) == KafkaError.INVALID_CONFIG, f"{QUOTA}={bad}: {kutil.error_str(err)}"
        assert QUOTA in kutil.error_str(err), f"INVALID_CONFIG for {QUOTA}={bad} does not name it"
    try:
        alter_broker(adm, {QUOTA: rate})
        e = describe_broker(adm)
        assert e[QUOTA].value == str(rate), e[QUOTA]
        assert tu.config_source(e[QUOTA]) == ConfigSource.DYNAMIC_BROKER_CONFIG, e[QUOTA]
        m0 = pf_metrics(b)
        t0 = time.monotonic()
        h.read_all("quota-a", timeout=120)
        took = time.monotonic() - t0
        d = delta(pf_metrics(b), m0)
        least = (size - rate / 10) / rate
        print(f"{size} bytes of history at a {rate} B/s quota: {took:.1f}s (at least {least:.1f}s): {d}")
        assert took >= least * 0.95, \
            f"{size} bytes of history were served in {took:.1f}s under a {rate} B/s quota (at least {least:.1f}s)"
        assert d["strata_remote_fetch_throttled_total"] > 0, d
        assert d["strata_remote_fetch_throttle_seconds_total"] > 0, d
    finally:
        alter_broker(adm, {QUOTA: None})
    e = describe_broker(adm)
    assert tu.config_source(e[QUOTA]) == ConfigSource.DEFAULT_CONFIG, e[QUOTA]
    m1 = pf_metrics(b)
    h.read_all("quota-b", timeout=120)
    d = delta(pf_metrics(b), m1)
    assert d["strata_remote_fetch_throttled_total"] == 0, f"throttled after the quota was deleted: {d}"


@pytest.mark.slow
def test_bulk_pause(h):
    """remote.fetch.priority.groups puts a consumer group (and, by client.id,
    a group-less consumer) in the bulk class and remote.fetch.bulk.paused
    pauses it at run time: those readers get no tiered data (a Fetch
    answers empty, without error, after its max_wait), also where the
    cache already holds it, while standard-class groups read everything,
    of another topic and of the very history the paused readers wait for;
    unpaused, the bulk readers finish."""
    b = h.broker
    adm = kutil.admin(b.bootstrap)
    n = 1500
    topic, dss, _ = new_tiered_topic(h, "prio", PARTITIONS, n, seed=600)
    other, other_dss, _ = new_tiered_topic(h, "prio-other", PARTITIONS, 1000, seed=650)
    ends = {p: n for p in dss}
    bulk_group = kutil.unique("backfill")
    alter_broker(adm, {"remote.fetch.priority.groups": f"{bulk_group}=bulk,archiver=bulk",
                       "remote.fetch.bulk.paused": "true"})
    readers = []
    soft = []
    try:
        bulk = CheckedReader("bulk-reader", b.bootstrap, topic, dss, ends, group=bulk_group)
        arch = CheckedReader("archiver", b.bootstrap, topic, dss, ends, starts={p: 0 for p in dss})
        readers += [bulk, arch]
        bulk.start()
        arch.start()
        kutil.wait_until(lambda: kutil.describe_group(adm, bulk_group).state.name == "STABLE", 30,
                         what=f"group {bulk_group} stable")
        time.sleep(4.0)

        def bulk_read_waiting():
            m = pf_metrics(b)
            return (m if m["strata_remote_reads_paused"] > 0 else None), m
        waiting = tu.wait_for(bulk_read_waiting, 30, "a bulk read waiting while paused (strata_remote_reads_paused)")
        # a raw Fetch by the bulk client id: empty, no error, after max_wait
        t0 = time.monotonic()
        with wire.KafkaConn.to(b.bootstrap, client_id="archiver") as c:
            f = c.fetch_v4(topic, 0, 0, max_wait_ms=700)
        fetch_s = time.monotonic() - t0
        assert (bulk.count(), arch.count()) == (0, 0), \
            f"paused bulk readers received records: group {bulk.positions()}, client id {arch.positions()}"
        assert f.error_code == 0 and not (f.records or b""), \
            f"raw Fetch of a paused bulk reader: error {f.error_code}, {len(f.records or b'')} bytes"
        assert 0.6 <= fetch_s <= 5, f"the paused Fetch answered after {fetch_s:.2f}s, max_wait_ms was 700"
        assert waiting["strata_remote_reads_paused"] > 0, f"no bulk read waiting while paused: {waiting}"

        # a standard group on another topic is unaffected
        std_other = CheckedReader("std-other", b.bootstrap, other, other_dss, {p: 1000 for p in other_dss},
                                  group=kutil.unique("dashboards"))
        readers.append(std_other)
        std_other.start()
        std_other.wait_finished(30, "a standard-class group reading another topic while bulk is paused")

        # that topic is in the cache now; a paused bulk reader still gets nothing of it
        with wire.KafkaConn.to(b.bootstrap, client_id="archiver") as c:
            f = c.fetch_v4(other, 0, 0, max_wait_ms=500)
        if f.error_code != 0 or f.records:
            soft.append(f"bulk paused: a Fetch by client id 'archiver' (bulk) of {other}/0 at offset 0, whose chunks "
                        f"are cached, answered error {f.error_code} with {len(f.records or b'')} record bytes; "
                        f"want empty")

        # a standard group on the history the paused bulk readers wait for
        std = CheckedReader("std-reader", b.bootstrap, topic, dss, ends, group=kutil.unique("dashboards"))
        readers.append(std)
        t0 = time.monotonic()
        std.start()
        try:
            std.wait_finished(20, "the standard-class group to read the topic the paused bulk group waits for")
            print(f"standard group read {std.count()} records in {time.monotonic() - t0:.1f}s while bulk was paused")
            time.sleep(1.0)
            if (bulk.count(), arch.count()) != (0, 0):
                soft.append(f"paused bulk readers received records once the standard group had read the topic "
                            f"(the cache is warm): group {bulk.positions()}, client id {arch.positions()}")
        except AssertionError as e:
            m = pf_metrics(b)
            soft.append(f"{e}\n  with bulk paused, a standard-class group got {std.count()} of {n * PARTITIONS} records "
                        f"of the topic the paused bulk readers had requested, in 20 s (waiting GETs: bulk "
                        f"{m['waiting.bulk']:.0f}, standard {m['waiting.standard']:.0f}; in flight "
                        f"{m['strata_remote_gets_in_flight']:.0f})")

        alter_broker(adm, {"remote.fetch.bulk.paused": "false"})
        t0 = time.monotonic()
        bulk.wait_finished(45, "the bulk group to finish after unpausing")
        arch.wait_finished(45, "the bulk client id reader to finish after unpausing")
        std.wait_finished(45, "the standard group to finish after unpausing")
        print(f"after unpausing every reader finished in {time.monotonic() - t0:.1f}s")
        for r in readers:
            r.check_ok()
            assert not r.errors, f"{r.label}: {r.errors[:5]}"
    finally:
        for r in readers:
            if r.is_alive():
                r.stop()
        alter_broker(kutil.admin(b.bootstrap), {k: None for k in DYNAMIC})
    assert not soft, "\n".join(soft)


# ---------------------------------------------------------------------------
# 5: tail readers while a group catches up
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_tail_reader_during_catch_up(h):
    """While a group catches up from the start of tiered history (a slow
    application: at most ~1000 records a second), a consumer at the tail
    receives every newly produced record, exactly; the catch-up group then
    reads the old and the new records, exactly."""
    b = h.broker
    n = 3000
    topic, dss, _ = new_tiered_topic(h, "tail", 1, n, seed=700)
    m0 = pf_metrics(b)
    catch = CheckedReader("catch-up", b.bootstrap, topic, dss, {0: n}, group=kutil.unique("catch-up"),
                          batch=100, pause=0.1)
    tail = CheckedReader("tail", b.bootstrap, topic, dss, {0: n}, starts={0: n})
    prod = None
    try:
        catch.start()
        tail.start()
        tu.wait_for(lambda: (catch.count() > 0, f"catch-up read {catch.count()}"), 30, "the catch-up group reading")
        prod = tu.SeqProducer(b.bootstrap, topic, dss[0], start=n, rate=400)
        prod.start()
        tu.wait_for(lambda: (tail.count() > 0, f"tail read {tail.count()}"), 15, "the tail consumer's first new record")
        catch_at_first_tail = catch.positions()[0]
        time.sleep(3.0)
        end = prod.stop()
        prod = None
        assert end > n + 500, f"only {end - n} records produced in 3 s"
        tail.ends = {0: end}
        tail.wait_finished(30, "the tail consumer to receive every new record")
        catch_at_tail_end = catch.positions()[0]
        catch.ends = {0: end}
        catch.wait_finished(60, "the catch-up group to read old and new records")
    finally:
        if prod is not None:
            prod.stop_flag.set()
        for r in (catch, tail):
            if r.is_alive():
                r.stop()
    for r in (catch, tail):
        r.check_ok()
        assert not r.errors, f"{r.label}: {r.errors[:5]}"
    assert tail.count() == end - n and catch.count() == end
    d = delta(pf_metrics(b), m0)
    print(f"tail got {end - n} new records; the catch-up group was at offset {catch_at_first_tail} when the first "
          f"arrived and at {catch_at_tail_end} when the last did; {d}")
    # the premise: the tail was served while the group was still in the tiered history
    assert catch_at_first_tail < n, \
        f"the catch-up group had already read the history ({catch_at_first_tail}) when the tail got its first record"
    assert d["strata_remote_fetch_reads_total"] > 0 and \
        d["strata_remote_fetch_bytes_total"] >= tu.payload_bytes(dss[0], 0, n), \
        f"the catch-up did not read the history through the historical read path: {d}"


# ---------------------------------------------------------------------------
# Responses carrying history are written by the prefetch runtime; on a
# pipelined connection they still go out in request order, whole.
# ---------------------------------------------------------------------------


def test_history_responses_keep_request_order(h):
    """Fetches of tiered history pipelined on one connection with requests
    answered at once (ApiVersions) and with fetches of the local tail: the
    responses come back in request order (the wire helper checks each
    correlation id), and each history response holds exactly the records
    produced at those offsets, CRCs intact."""
    h.ensure()
    b = h.broker
    parts = sorted(h.dss)
    plan = []  # (kind, partition, offset)
    for k in range(12):
        p = parts[k % len(parts)]
        plan.append(("fetch", p, (k * 997) % (h.n - 200)))
        plan.append(("versions", None, None))
    # the local end of the log: a fetch there answers at once, on the request workers
    plan.append(("tail", parts[0], h.n))
    plan.append(("fetch", parts[-1], 0))
    m0 = pf_metrics(b)
    with wire.KafkaConn.to(b.bootstrap, timeout=60.0) as conn:
        sent = []
        for kind, p, off in plan:
            if kind == "versions":
                sent.append(conn.send_request(18, 0, b""))
            else:
                body = wire.fetch_v4_body(max_wait_ms=100 if kind == "tail" else 10000, min_bytes=1,
                                          max_bytes=4 * MiB, partitions={h.topic: {p: (off, 256 * KiB)}})
                sent.append(conn.send_request(1, 4, body))
        for (kind, p, off), corr in zip(plan, sent):
            body = conn.recv_response(corr)
            if kind == "versions":
                err, apis = wire.parse_api_versions_v0_response(body)
                assert err == 0 and 1 in apis, f"ApiVersions answered {err}"
                continue
            res = wire.parse_fetch_v4_response(body)[(h.topic, p)]
            assert res.error_code == 0, f"fetch of partition {p} at {off}: error {res.error_code}"
            recs = wire.decode_batches(res.records or b"")
            if kind == "tail":
                assert recs == [], "records past the end of the log"
                continue
            assert recs, f"no records for partition {p} at {off} (max_wait 10 s)"
            first = [r for r in recs if r.offset >= off]
            assert first and first[0].offset == off, f"partition {p}: expected offset {off}, got {recs[0].offset}"
            ds = h.dss[p]
            for r in first:
                assert r.key == ds.key(r.offset) and r.value == ds.value(r.offset), \
                    f"partition {p} offset {r.offset}: not the record produced there"
    d = delta(pf_metrics(b), m0)
    assert d["strata_remote_fetch_bytes_total"] > 0, f"the fetches were not served from history: {d}"


# ---------------------------------------------------------------------------
# The adaptive history rate (docs/adaptive-history-rate.md)
# ---------------------------------------------------------------------------

ADAPTIVE = ("remote.fetch.adaptive.enable", "remote.fetch.adaptive.min.bytes.per.second",
            "remote.fetch.adaptive.headroom.percent")
RATE_LIMIT = "strata_remote_fetch_rate_limit_bytes_per_second"


def sample_rate_limit(b, stop: threading.Event, out: list):
    while not stop.is_set():
        out.append(next(v for name, _, v in tu.scrape(b) if name == RATE_LIMIT))
        time.sleep(0.05)


@pytest.mark.slow
def test_adaptive_history_rate(h):
    """While producers write, history is served at a rate the broker limits
    itself (never below remote.fetch.adaptive.min.bytes.per.second), and
    the catch-up still reads every record byte for byte; with no producer
    traffic there is no limit; remote.fetch.adaptive.enable=false (dynamic)
    lifts it at once. Bad values are refused, naming the setting."""
    b = h.broker
    h.ensure()
    adm = kutil.admin(b.bootstrap)
    e = describe_broker(adm)
    assert [e[n].value for n in ADAPTIVE] == ["true", str(8 * MiB), "50"], [e[n] for n in ADAPTIVE]
    for name, bad in ((ADAPTIVE[0], "sometimes"), (ADAPTIVE[1], "0"), (ADAPTIVE[2], "-1"), (ADAPTIVE[2], "x")):
        err = alter_broker_fails(adm, {name: bad})
        assert kutil.error_code(err) == KafkaError.INVALID_CONFIG, f"{name}={bad}: {kutil.error_str(err)}"
        assert name in kutil.error_str(err), f"INVALID_CONFIG for {name}={bad} does not name it"

    # No producer: a catch-up runs unlimited.
    stop, quiet_samples = threading.Event(), []
    sampler = threading.Thread(target=sample_rate_limit, args=(b, stop, quiet_samples), daemon=True)
    sampler.start()
    try:
        h.read_all("adaptive-quiet")
    finally:
        stop.set()
        sampler.join()
    assert quiet_samples and all(v == 0 for v in quiet_samples), \
        f"history was limited with no producer traffic: {sorted(set(quiet_samples))}"

    # A producer writing meanwhile: limited, never below the floor.
    floor = 2 * MiB
    live_topic = kutil.unique("adaptive-live")
    kutil.create_topic(adm, live_topic, 1)
    ds = tu.DataSet(seed=990, ts0=tu.ms_ago(1))
    prod = tu.SeqProducer(b.bootstrap, live_topic, ds, rate=1000)
    stop, busy_samples, off_samples = threading.Event(), [], []
    try:
        alter_broker(adm, {ADAPTIVE[1]: floor})
        prod.start()
        tu.wait_for(lambda: (prod.acked > 100, f"{prod.acked} acked"), 30, "the producer writing")
        m0 = pf_metrics(b)
        sampler = threading.Thread(target=sample_rate_limit, args=(b, stop, busy_samples), daemon=True)
        sampler.start()
        try:
            h.read_all("adaptive-busy", timeout=180)
        finally:
            stop.set()
            sampler.join()
        served = delta(pf_metrics(b), m0)["strata_remote_fetch_bytes_total"]
        limited = [v for v in busy_samples if v > 0]
        print(f"while producing: {len(limited)}/{len(busy_samples)} samples limited, "
              f"{min(limited, default=0) / MiB:.1f}..{max(limited, default=0) / MiB:.1f} MiB/s; served {served} B")
        assert len(limited) >= 0.5 * len(busy_samples) > 0, \
            f"history not limited while producers wrote: {busy_samples}"
        assert min(limited) >= floor, f"limited below {ADAPTIVE[1]}={floor}: {min(limited)}"
        assert served >= remote_bytes(h.manifests), f"served {served} B of history"

        # Turned off at run time: no limit, while the producer still writes.
        alter_broker(adm, {ADAPTIVE[0]: "false"})

        def unlimited():
            v = next(v for name, _, v in tu.scrape(b) if name == RATE_LIMIT)
            return v == 0, f"{RATE_LIMIT}={v}"
        tu.wait_for(unlimited, 30, f"no limit once {ADAPTIVE[0]}=false")
        stop = threading.Event()
        sampler = threading.Thread(target=sample_rate_limit, args=(b, stop, off_samples), daemon=True)
        sampler.start()
        time.sleep(1.0)
        stop.set()
        sampler.join()
        assert prod.is_alive() and off_samples and all(v == 0 for v in off_samples), \
            f"still limited with {ADAPTIVE[0]}=false: {off_samples}"
    finally:
        prod.stop_flag.set()
        prod.join(timeout=150)
        alter_broker(adm, {n: None for n in ADAPTIVE})
    assert not prod.bad and prod.unflushed == 0, prod.bad[:5]
