"""Many partitions and many connections on one broker: it creates and
serves them, its RSS and open file descriptors stay proportional to what it
holds, and it restarts. CI size: STRATA_LOAD_PARTITIONS (2,000) and
STRATA_LOAD_CONNECTIONS (300); the issue's size, 10,000 and 1,000:

    STRATA_LOAD_PARTITIONS=10000 STRATA_LOAD_CONNECTIONS=1000 \\
        .venv/bin/pytest tests/e2e/test_load.py -s
"""

import os
import statistics
import struct
import time

from confluent_kafka.admin import NewTopic

import kutil
import wire

PARTITIONS = int(os.environ.get("STRATA_LOAD_PARTITIONS", "2000"))
CONNECTIONS = int(os.environ.get("STRATA_LOAD_CONNECTIONS", "300"))
PER_TOPIC = 1000


def _fds(b) -> int:
    return len(os.listdir(f"/proc/{b.pid}/fd"))


def _rss_mib(b) -> int:
    return b.rss_kib() // 1024


def test_many_partitions_and_connections(broker_factory):
    b = broker_factory({"num.partitions": 1})
    b.READY_TIMEOUT = 300
    adm = kutil.admin(b.bootstrap)
    topics = [kutil.unique("load") for _ in range(max(1, PARTITIONS // PER_TOPIC))]
    t = time.monotonic()
    for name in topics:
        adm.create_topics([NewTopic(name, num_partitions=PER_TOPIC)], request_timeout=120)[name].result(timeout=180)
    create_s = time.monotonic() - t
    n = len(topics) * PER_TOPIC
    p = kutil.producer(b.bootstrap, **{"linger.ms": 20})
    for name in topics:
        for part in range(PER_TOPIC):
            p.produce(name, value=b"%d" % part, partition=part)
        p.poll(0)
    assert p.flush(120) == 0
    fds_partitions = _fds(b)
    # One open log segment per partition, and little else.
    assert fds_partitions <= n + 200, f"{fds_partitions} fds for {n} single-segment partitions"

    lat = []
    with wire.KafkaConn.to(b.bootstrap, timeout=60) as c:
        for _ in range(10):
            t = time.monotonic()
            c.request(3, 4, struct.pack(">i", -1) + b"\x00")  # Metadata v4, all topics
            lat.append(time.monotonic() - t)
    metadata_ms = statistics.median(lat) * 1e3

    conns = []
    for _ in range(CONNECTIONS):
        c = wire.KafkaConn.to(b.bootstrap, timeout=60)
        assert c.api_versions()[0] == 0
        conns.append(c)
    for i, c in enumerate(conns):
        f = c.fetch_v4(topics[i % len(topics)], i % PER_TOPIC, 0, max_wait_ms=10)
        assert f.error_code == 0 and f.high_watermark == 1
    fds_all, rss_all = _fds(b), _rss_mib(b)
    assert fds_all <= fds_partitions + CONNECTIONS + 50
    assert rss_all < 64 + n * 64 // 1024 + CONNECTIONS // 4, f"RSS {rss_all} MiB"
    for c in conns:
        c.close()

    t = time.monotonic()
    assert b.stop(timeout=120) == 0
    b.start()
    restart_s = time.monotonic() - t
    assert kutil.watermarks(b.bootstrap, topics[-1], PER_TOPIC - 1) == (0, 1)
    b.kill9()
    t = time.monotonic()
    b.start()
    crash_restart_s = time.monotonic() - t
    assert kutil.watermarks(b.bootstrap, topics[0], 0) == (0, 1)
    print(f"\n{n} partitions, {CONNECTIONS} connections: create {create_s:.1f}s, fds {fds_all}, "
          f"RSS {rss_all} MiB, Metadata (all) p50 {metadata_ms:.1f} ms, restart {restart_s:.1f}s "
          f"(after kill -9 {crash_restart_s:.1f}s)")


SEGMENTS = 300
POOL = 16


def test_sealed_segments_share_a_bounded_file_pool(broker_factory):
    """Open descriptors do not grow with the number of sealed segments:
    reading every one of 300 segments, or restarting with them, keeps the
    broker within the pool's 16 handles of where it started."""
    b = broker_factory({"log.segment.open.files.max": POOL, "remote.log.storage.system.enable": "false"})
    t0 = int(time.time() * 1000) - 60_000
    topic = kutil.unique("segs")
    kutil.create_topic(kutil.admin(b.bootstrap), topic, 1, {"segment.bytes": "200"})
    base = _fds(b)
    sent = kutil.produce_one_per_batch(
        b.bootstrap, topic, [{"value": b"v%05d" % i + b"." * 100, "timestamp": t0 + i}
                             for i in range(SEGMENTS)])
    assert [d.offset for d in sent] == list(range(SEGMENTS))
    assert len(kutil.segment_sizes(b, topic)) >= SEGMENTS
    after_produce = _fds(b)
    assert after_produce <= base + POOL + 8, f"{after_produce} fds after {SEGMENTS} rolls (from {base})"

    # Reading all of them twice: handles are evicted and reopened.
    for _ in range(2):
        got = kutil.consume(b.bootstrap, topic, [0], expected=SEGMENTS)
        assert [m.value[:6] for m in got.messages] == [b"v%05d" % i for i in range(SEGMENTS)]
        assert _fds(b) <= base + POOL + 8
    # Timestamp lookups land in the right sealed segment.
    assert kutil.offsets_for_times(b.bootstrap, topic, 0, [t0, t0 + 150, t0 + 299]) == [0, 150, 299]

    b.kill9()
    b.start()
    assert _fds(b) <= base + POOL + 8, "a restart opens every segment's file"
    got = kutil.consume(b.bootstrap, topic, {0: 100}, expected=SEGMENTS - 100)
    assert got.messages[0].offset == 100 and len(got.messages) == SEGMENTS - 100
