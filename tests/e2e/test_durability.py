"""Restart (SIGTERM) and crash (SIGKILL) durability."""

import os
import random
import threading
import time

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import ConfigResource, ResourceType

import kutil
import wire


def _snapshot(b, topic, partitions, expected):
    res = kutil.consume(b.bootstrap, topic, list(range(partitions)), expected=expected, timeout=90)
    assert not res.errors, [e.str() for e in res.errors]
    return {(m.partition, m.offset): (m.key, m.value, m.headers, m.timestamp) for m in res.messages}


@pytest.mark.parametrize("mode", ["sigterm", "kill9"])
def test_restart_preserves_everything(broker_factory, mode):
    b = broker_factory()
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("dur")
    kutil.create_topic(adm, topic, 12, config={"retention.ms": "86400000", "segment.bytes": str(1 << 20)})
    rnd = random.Random(7)
    t0 = int(time.time() * 1000) - 3_600_000
    records = [{"key": f"k{i % 97}".encode(), "value": rnd.randbytes(rnd.randint(1, 2000)),
                "headers": [("i", str(i).encode())], "timestamp": t0 + i} for i in range(6000)]
    dels = kutil.produce(b.bootstrap, topic, records, acks="all")
    hw = {p: kutil.watermarks(b.bootstrap, topic, p) for p in range(12)}
    lookups = [t0 + 10, t0 + 3000, t0 + 5999]
    ts_before = {p: kutil.offsets_for_times(b.bootstrap, topic, p, lookups) for p in range(12)}
    before = _snapshot(b, topic, 12, len(records))
    assert len(before) == len(records)
    for d in dels:
        assert before[(d.partition, d.offset)][1] == records[d.index]["value"]

    if mode == "sigterm":
        rc = b.stop()
        assert rc == 0, f"broker exited with code {rc} on SIGTERM"
        b.start()
    else:
        b.kill9()
        b.start()

    adm = kutil.admin(b.bootstrap)
    kutil.wait_topic_ready(adm, topic, 12)
    after = _snapshot(b, topic, 12, len(records))
    assert after == before, "data differs after restart"
    assert {p: kutil.watermarks(b.bootstrap, topic, p) for p in range(12)} == hw
    assert {p: kutil.offsets_for_times(b.bootstrap, topic, p, lookups) for p in range(12)} == ts_before, \
        "timestamp lookups differ after restart (time index)"
    res = ConfigResource(ResourceType.TOPIC, topic)
    cfg = adm.describe_configs([res])[res].result(timeout=60)
    assert cfg["retention.ms"].value == "86400000", "topic config lost on restart"

    # appends continue at the old high watermark
    more = kutil.produce(b.bootstrap, topic, [{"value": b"after", "partition": p} for p in range(12)])
    assert sorted((d.partition, d.offset) for d in more) == sorted((p, hw[p][1]) for p in range(12))


def test_kill9_during_acks_all_production(broker_factory):
    """Every record whose delivery report said success survives a kill -9,
    at the offset the report gave, with its value."""
    b = broker_factory()
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("crash")
    kutil.create_topic(adm, topic, 3)

    acked: list[tuple[int, int, bytes]] = []
    failed: list[KafkaError] = []
    stop = threading.Event()
    produced = [0]

    def on_delivery(err, msg):
        if err is None:
            acked.append((msg.partition(), msg.offset(), msg.value()))
        else:
            failed.append(err)

    def run():
        p = kutil.producer(b.bootstrap, acks="all", **{"enable.idempotence": False, "linger.ms": 2,
                                                     "message.timeout.ms": 15000,
                                                     "reconnect.backoff.max.ms": 200})
        i = 0
        while not stop.is_set():
            try:
                p.produce(topic, value=f"{i:08d}-".encode() + os.urandom(100), key=str(i % 31).encode(),
                          on_delivery=on_delivery)
                i += 1
                produced[0] = i
            except BufferError:
                p.poll(0.01)
            p.poll(0)
            if len(p) > 20000:  # keep the backlog bounded while the broker is down
                p.poll(0.005)
        p.flush(40)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        kutil.wait_until(lambda: len(acked) >= 5000, 60, what="5000 acked records before the crash")
        b.kill9()
        n_at_kill = len(acked)
        time.sleep(0.5)
        b.start()
        kutil.wait_until(lambda: len(acked) >= n_at_kill + 2000, 60,
                         what="2000 more acked records after the restart")
    finally:
        stop.set()
        t.join(60)
    assert not t.is_alive(), "producer thread did not finish"

    stored = {}
    res = kutil.consume(b.bootstrap, topic, [0, 1, 2], timeout=120)
    assert not res.errors, [e.str() for e in res.errors]
    for m in res.messages:
        stored[(m.partition, m.offset)] = m.value
    for p, msgs in res.by_partition().items():
        assert [m.offset for m in msgs] == list(range(len(msgs))), f"partition {p}: offsets not contiguous"

    missing = [(p, o) for p, o, v in acked if stored.get((p, o)) != v]
    assert not missing, (f"{len(missing)} of {len(acked)} acknowledged records lost or changed after kill -9, "
                         f"e.g. {missing[:5]}; produced={produced[0]}, failed deliveries={len(failed)}")
    assert len({(p, o) for p, o, _ in acked}) == len(acked), "two acks reported the same offset"


@pytest.mark.parametrize("tail", ["partial_batch", "bad_crc_batch", "zeros"])
def test_torn_tail_cut_on_recovery(broker_factory, tail):
    """Garbage after the last complete batch (a torn write at a crash) is cut
    on restart; every record before it is served, appends continue after it."""
    b = broker_factory()
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("torn")
    kutil.create_topic(adm, topic, 1)
    dels = kutil.produce(b.bootstrap, topic, [{"value": os.urandom(200)} for _ in range(500)])
    value_at = {d.offset: d.value for d in dels}
    b.kill9()

    segs = kutil.segment_sizes(b, topic, 0)
    last = b.partition_dir(topic, 0) / f"{max(segs):020d}.log"
    batch = wire.encode_batch([wire.Rec(None, b"torn" * 100, int(time.time() * 1000))], base_offset=500)
    garbage = {
        "partial_batch": batch[: len(batch) // 2],
        "bad_crc_batch": wire.encode_batch([wire.Rec(None, b"torn" * 100, int(time.time() * 1000))],
                                           base_offset=500, crc_override=12345),
        "zeros": bytes(4096),
    }[tail]
    with open(last, "ab") as f:
        f.write(garbage)

    b.start()
    adm = kutil.admin(b.bootstrap)
    kutil.wait_topic_ready(adm, topic, 1)
    assert kutil.watermarks(b.bootstrap, topic, 0) == (0, 500)
    res = kutil.consume(b.bootstrap, topic, [0], expected=500)
    assert not res.errors, [e.str() for e in res.errors]
    assert {m.offset: m.value for m in res.messages} == value_at
    more = kutil.produce(b.bootstrap, topic, [{"value": b"after-recovery"}])
    assert more[0].offset == 500
    res = kutil.consume(b.bootstrap, topic, {0: 490}, expected=11)
    assert [m.offset for m in res.messages] == list(range(490, 501))
    assert res.messages[-1].value == b"after-recovery"


def test_indexes_rebuilt_when_missing(broker_factory):
    b = broker_factory()
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("idx")
    kutil.create_topic(adm, topic, 1, config={"segment.bytes": str(1 << 20)})
    t0 = int(time.time() * 1000) - 3_600_000
    dels = kutil.produce(b.bootstrap, topic, [{"value": os.urandom(1000), "timestamp": t0 + i * 10}
                                             for i in range(3000)])
    value_at = {d.offset: d.value for d in dels}
    ts_at = {d.offset: d.timestamp[1] for d in dels}
    # expected answers computed from what was acknowledged (first offset with ts >= target)
    targets = [t0 - 1, t0 + 5, t0 + 12_345, t0 + 29_990, t0 + 29_991]
    expected = [min((o for o, ts in ts_at.items() if ts >= tg), default=-1) for tg in targets]
    assert kutil.offsets_for_times(b.bootstrap, topic, 0, targets) == expected
    assert b.stop() == 0
    d = b.partition_dir(topic, 0)
    removed = [f for f in d.iterdir() if f.suffix in (".index", ".timeindex")]
    assert len(removed) >= 4, f"expected index files for >= 2 segments: {sorted(os.listdir(d))}"
    for f in removed:
        f.unlink()
    b.start()
    kutil.wait_topic_ready(kutil.admin(b.bootstrap), topic, 1)
    assert kutil.offsets_for_times(b.bootstrap, topic, 0, targets) == expected
    for start in (0, 1234, 2999):
        res = kutil.consume(b.bootstrap, topic, {0: start}, expected=3000 - start)
        assert [m.offset for m in res.messages] == list(range(start, 3000))
        assert all(m.value == value_at[m.offset] for m in res.messages)
