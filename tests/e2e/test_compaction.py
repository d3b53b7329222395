"""Log compaction (issue 16, docs/compaction.md), local part: a
`cleanup.policy=compact` topic keeps the latest value of each key at its
original offset; tombstones hide a key and go after `delete.retention.ms`;
consumers and idempotent producers carry on through cleaning passes and a
restart. Real clients: confluent-kafka (librdkafka) produces and consumes,
kafka-python reads the cleaned log with its own decoder.
"""

import os
import time

import pytest
from confluent_kafka import KafkaError, TopicPartition

import kutil

FAST_CLEANER = {"log.cleaner.backoff.ms": 100, "log.retention.check.interval.ms": 200}
TOPIC = {"cleanup.policy": "compact", "segment.bytes": "65536", "min.cleanable.dirty.ratio": "0.01",
         "delete.retention.ms": "3000"}


def _cdc(b, topic: str, keys: int, rounds: int, deleted: range, **conf) -> dict:
    """Every key updated `rounds` times, then tombstones for `deleted`.
    Returns key -> (offset, value) of the latest record of each key."""
    latest = {}
    for r in range(rounds):
        recs = [{"key": b"key-%d" % k, "value": b"v%d-%d" % (r, k) * 4} for k in range(keys)]
        for d in kutil.produce(b.bootstrap, topic, recs, **{"linger.ms": 20, **conf}):
            assert d.error is None, d.error
            latest[d.key] = (d.offset, d.value)
    tomb = [{"key": b"key-%d" % k, "value": None} for k in deleted]
    for d in kutil.produce(b.bootstrap, topic, tomb, **conf):
        assert d.error is None, d.error
        latest[d.key] = (d.offset, None)
    return latest


def _roll(b, topic: str, **conf):
    """A record bigger than segment.bytes, incompressible: the segment
    before it is sealed, so the cleaner may take it."""
    ds = kutil.produce(b.bootstrap, topic, [{"key": b"tail", "value": os.urandom(70_000)}],
                       **{**conf, "message.max.bytes": 200_000, "compression.type": "none"})
    assert ds[0].error is None, ds[0].error


def _read(b, topic: str) -> list:
    end = kutil.watermarks(b.bootstrap, topic, 0)[1]
    res = kutil.consume(b.bootstrap, topic, [0], timeout=120)
    assert not res.errors, [e.str() for e in res.errors]
    got = [(m.offset, m.key, m.value) for m in res.messages]
    assert got == sorted(got), "offsets increase"
    assert not got or got[-1][0] < end
    return got


def _wait_compacted(b, topic: str, at_most: int, timeout: float = 90):
    return kutil.wait_until(lambda: (lambda g: g if len(g) <= at_most else None)(_read(b, topic)),
                            timeout, interval=1.0, what=f"{topic} compacted to at most {at_most} records")


def test_cdc_topic_keeps_the_latest_value_of_each_key(broker_factory):
    b = broker_factory(FAST_CLEANER)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("cdc"), 1, config=TOPIC)
    keys, rounds = 10_000, 5
    latest = _cdc(b, topic, keys, rounds, range(0, 500), **{"compression.type": "lz4"})
    total = keys * rounds + 500
    # Roll the segment holding the tail so it can be cleaned: a record in a new one.
    _roll(b, topic)
    got = _wait_compacted(b, topic, at_most=keys + 1 + 2_000)
    assert len(got) < total / 2
    by_key = {}
    for offset, key, value in got:
        by_key[key] = (offset, value)
    # Every live key: its latest value at its original offset.
    for k in range(500, keys):
        key = b"key-%d" % k
        assert by_key[key] == latest[key], key
    # After delete.retention.ms and another pass, no deleted key is left.
    time.sleep(3.5)
    kutil.produce(b.bootstrap, topic, [{"key": b"key-600", "value": b"again"}])
    _roll(b, topic)
    got = kutil.wait_until(
        lambda: (lambda g: g if not any(k in {b"key-%d" % i for i in range(500)} for _, k, _ in g) else None)(
            _read(b, topic)), 90, interval=1.0, what="tombstones removed")
    keys_left = {k for _, k, _ in got}
    assert all(b"key-%d" % k in keys_left for k in range(500, keys))
    # kafka-python's decoder reads the cleaned batches (gaps, rewritten lz4).
    from kafka import KafkaConsumer, TopicPartition as KTP
    kc = KafkaConsumer(bootstrap_servers=b.bootstrap, enable_auto_commit=False, auto_offset_reset="earliest",
                       consumer_timeout_ms=5000)
    try:
        kc.assign([KTP(topic, 0)])
        kc.seek_to_beginning()
        seen = []
        deadline = time.monotonic() + 60
        while len(seen) < len(got) and time.monotonic() < deadline:
            for msgs in kc.poll(timeout_ms=500).values():
                seen += [(m.offset, m.key, m.value) for m in msgs]
        assert [s[0] for s in seen[:len(got)]] == [g[0] for g in got]
    finally:
        kc.close()


def test_consumer_mid_way_and_idempotent_producer_carry_on(broker_factory):
    b = broker_factory(FAST_CLEANER)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("cdc-mid"), 1, config=TOPIC)
    idem = {"enable.idempotence": True, "compression.type": "zstd"}
    _cdc(b, topic, 2_000, 3, range(0), **idem)
    # A consumer reads the first 1,500 records, then the cleaner runs.
    c = kutil.consumer(b.bootstrap)
    c.assign([TopicPartition(topic, 0, 0)])
    first = []
    deadline = time.monotonic() + 30
    while len(first) < 1500 and time.monotonic() < deadline:
        for m in c.consume(500, timeout=0.5):
            if m.error() is None:
                first.append(m.offset())
    assert len(first) >= 1500
    _roll(b, topic, **idem)
    _wait_compacted(b, topic, at_most=2_001 + 800)
    # More from the same idempotent producer settings, through and after the pass.
    _cdc(b, topic, 2_000, 1, range(0), **idem)
    rest = []
    deadline = time.monotonic() + 30
    end = kutil.watermarks(b.bootstrap, topic, 0)[1]
    while (not rest or rest[-1] < end - 1) and time.monotonic() < deadline:
        for m in c.consume(500, timeout=0.5):
            assert m.error() is None or m.error().code() == KafkaError._PARTITION_EOF, m.error()
            if m.error() is None:
                rest.append(m.offset())
    c.close()
    offsets = first + rest
    assert offsets == sorted(set(offsets)), "no duplicate, no going back"
    # Restart: the cleaned log, gaps included, reads the same.
    before = _read(b, topic)
    b = b.restart()
    assert _read(b, topic) == before
    ds = kutil.produce(b.bootstrap, topic, [{"key": b"key-1", "value": b"after-restart"}], **idem)
    assert ds[0].error is None and ds[0].offset == before[-1][0] + 1


def test_a_record_without_key_is_refused_with_invalid_record(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1, config={"cleanup.policy": "compact"})
    ds = kutil.produce(broker.bootstrap, topic_name, [{"value": b"no key"}], allow_errors=True, retries=0)
    assert ds[0].error is not None and ds[0].error.code() == KafkaError.INVALID_RECORD, ds[0].error
    assert kutil.watermarks(broker.bootstrap, topic_name, 0) == (0, 0), "nothing stored"
    ds = kutil.produce(broker.bootstrap, topic_name, [{"key": b"k", "value": b"keyed"}])
    assert ds[0].error is None


def test_cleanup_policy_is_changeable_at_run_time(broker_factory):
    from test_admin import describe, incremental
    from confluent_kafka.admin import AlterConfigOpType
    b = broker_factory(FAST_CLEANER)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("switch"), 1, config={"segment.bytes": "65536"})
    _cdc(b, topic, 300, 4, range(0))
    incremental(adm, topic, [("cleanup.policy", "compact,delete", AlterConfigOpType.SET),
                             ("min.cleanable.dirty.ratio", "0.01", AlterConfigOpType.SET)])
    assert describe(adm, topic)["cleanup.policy"].value == "compact,delete"
    _roll(b, topic)
    got = _wait_compacted(b, topic, at_most=301 + 200)
    assert {k for _, k, _ in got} >= {b"key-%d" % k for k in range(300)}


@pytest.mark.parametrize("name,value", [("min.cleanable.dirty.ratio", "1.5"), ("delete.retention.ms", "-1"),
                                        ("min.compaction.lag.ms", "x")])
def test_bad_compaction_settings_are_refused(broker, admin, topic_name, name, value):
    from test_admin import _create_error
    from confluent_kafka.admin import NewTopic
    e = _create_error(admin, NewTopic(topic_name, 1, 1, config={name: value}))
    assert kutil.error_code(e) == KafkaError.INVALID_CONFIG
    assert name in kutil.error_str(e)
