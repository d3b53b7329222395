"""Fetch long polling: a waiting fetch is answered when data arrives, and an
empty fetch waits (up to max_wait) instead of spinning."""

import threading
import time

from confluent_kafka import OFFSET_BEGINNING, KafkaError, TopicPartition

import kutil
import wire


def _produce_later(bootstrap, topic, delay, value):
    def run():
        time.sleep(delay)
        kutil.produce(bootstrap, topic, [{"value": value}])
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_consumer_gets_record_produced_later(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1)
    c = kutil.consumer(broker.bootstrap, **{"fetch.wait.max.ms": 9000, "enable.partition.eof": False})
    try:
        c.assign([TopicPartition(topic_name, 0, OFFSET_BEGINNING)])
        assert c.poll(0.5) is None, "empty partition returned a message"
        t = _produce_later(broker.bootstrap, topic_name, 1.0, b"late")
        start = time.monotonic()
        got = None
        while time.monotonic() - start < 20 and got is None:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got = m
            elif m is not None and m.error().code() != KafkaError._PARTITION_EOF and m.topic() is not None:
                raise AssertionError(f"consumer error: {m.error()}")
        elapsed = time.monotonic() - start
        t.join(10)
        assert got is not None, "record produced 1 s later never reached the waiting consumer"
        assert got.value() == b"late" and got.offset() == 0
        # a broker that does not wake waiting fetches answers only after
        # fetch.wait.max.ms (9 s); woken, it takes ~1 s. 6 s is generous.
        assert elapsed < 6, f"took {elapsed:.1f}s: waiting fetch not woken by the produce"
    finally:
        c.close()


def test_raw_fetch_wakes_on_produce(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1)
    with wire.KafkaConn.to(broker.bootstrap, timeout=30) as c:
        t = _produce_later(broker.bootstrap, topic_name, 1.0, b"wake")
        start = time.monotonic()
        f = c.fetch_v4(topic_name, 0, 0, max_wait_ms=15000, min_bytes=1)
        elapsed = time.monotonic() - start
        t.join(10)
    assert f.error_code == 0
    recs = wire.decode_batches(f.records or b"")
    assert [(r.offset, r.value) for r in recs] == [(0, b"wake")], \
        f"fetch returned after {elapsed:.1f}s with {recs}"
    assert 0.5 < elapsed < 10, f"long poll answered after {elapsed:.1f}s (data arrived after ~1 s)"


def test_raw_empty_fetch_waits_max_wait(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1)
    with wire.KafkaConn.to(broker.bootstrap, timeout=30) as c:
        start = time.monotonic()
        f = c.fetch_v4(topic_name, 0, 0, max_wait_ms=2000, min_bytes=1)
        elapsed = time.monotonic() - start
    assert f.error_code == 0 and f.high_watermark == 0 and not f.records
    assert 1.0 <= elapsed < 10, f"empty fetch with max_wait 2 s returned after {elapsed:.2f}s"
