"""Idempotent producers: retries across broker crashes write each record
exactly once, in order; sequence and epoch errors come back as Kafka's codes."""

import struct
import threading
import time

from confluent_kafka import KafkaError

import kutil
import wire


def _run_producer_through_crashes(b, topic, partitions, crashes, restart_kind):
    acked: dict[int, tuple[int, int]] = {}
    errors: list[KafkaError] = []
    stop = threading.Event()
    sent = [0]

    def on_delivery(err, msg):
        if err is None:
            acked[int(msg.value().split(b"-")[0])] = (msg.partition(), msg.offset())
        else:
            errors.append(err)

    def run():
        p = kutil.producer(b.bootstrap, **{"enable.idempotence": True, "acks": "all", "linger.ms": 2,
                                          "compression.type": "zstd", "message.timeout.ms": 120000,
                                          "retry.backoff.ms": 50, "reconnect.backoff.max.ms": 200})
        i = 0
        while not stop.is_set():
            try:
                p.produce(topic, key=f"k{i % 53}".encode(), value=f"{i}-".encode() + b"x" * 100,
                          on_delivery=on_delivery)
                i += 1
                sent[0] = i
            except BufferError:
                p.poll(0.01)
            p.poll(0)
            if len(p) > 20000:
                p.poll(0.005)
        p.flush(120)

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        for n in range(crashes):
            target = len(acked) + 3000
            kutil.wait_until(lambda: len(acked) >= target, 90, what=f"3000 acks before crash {n + 1}")
            if restart_kind == "kill9":
                b.kill9()
            else:
                assert b.stop() == 0
            time.sleep(0.3)
            b.start()
        target = len(acked) + 3000
        kutil.wait_until(lambda: len(acked) >= target, 90, what="3000 acks after the last restart")
    finally:
        stop.set()
        t.join(150)
    assert not t.is_alive(), "producer did not finish flushing"
    assert not errors, f"delivery errors: {[e.str() for e in errors[:5]]}"
    assert len(acked) == sent[0], f"{sent[0]} produced, {len(acked)} acknowledged"
    return acked, sent[0]


def _check_exactly_once_in_order(b, topic, partitions, acked, sent):
    res = kutil.consume(b.bootstrap, topic, list(range(partitions)), expected=sent, timeout=120)
    assert not res.errors, [e.str() for e in res.errors]
    ids = [int(m.value.split(b"-")[0]) for m in res.messages]
    dups = len(ids) - len(set(ids))
    assert dups == 0, f"{dups} duplicated records after retries"
    assert set(ids) == set(range(sent)), f"missing records: {sorted(set(range(sent)) - set(ids))[:10]}"
    for m in res.messages:
        assert acked[int(m.value.split(b"-")[0])] == (m.partition, m.offset), "record not at its acked offset"
    # Per key, records appear in the order they were produced.
    last: dict[bytes, int] = {}
    for m in sorted(res.messages, key=lambda m: (m.partition, m.offset)):
        i = int(m.value.split(b"-")[0])
        assert last.get(m.key, -1) < i, f"key {m.key!r} out of order at {m.partition}/{m.offset}"
        last[m.key] = i
    for p, msgs in res.by_partition().items():
        assert [m.offset for m in msgs] == list(range(len(msgs))), f"partition {p} has gaps"


def test_idempotent_producer_through_kill9(broker_factory):
    b = broker_factory()
    topic = kutil.unique("idem-crash")
    kutil.create_topic(kutil.admin(b.bootstrap), topic, 6)
    acked, sent = _run_producer_through_crashes(b, topic, 6, crashes=2, restart_kind="kill9")
    _check_exactly_once_in_order(b, topic, 6, acked, sent)


def test_idempotent_producer_through_clean_restart(broker_factory):
    b = broker_factory()
    topic = kutil.unique("idem-restart")
    kutil.create_topic(kutil.admin(b.bootstrap), topic, 3)
    acked, sent = _run_producer_through_crashes(b, topic, 3, crashes=1, restart_kind="sigterm")
    _check_exactly_once_in_order(b, topic, 3, acked, sent)


def _init_producer_id(bootstrap):
    """InitProducerId v1 over the wire: (error, producer id, epoch)."""
    with wire.KafkaConn.to(bootstrap) as conn:
        body = struct.pack(">hi", -1, 60000)  # transactional_id null, timeout
        resp = conn.request(22, 1, body)
    _throttle, err, pid, epoch = struct.unpack(">ihqh", resp[:16])
    return err, pid, epoch


def test_retried_batch_gets_original_offset_and_gaps_are_refused(broker):
    topic = kutil.unique("idem-wire")
    kutil.create_topic(kutil.admin(broker.bootstrap), topic, 1)
    err, pid, epoch = _init_producer_id(broker.bootstrap)
    assert err == 0 and pid >= 0 and epoch == 0
    err2, pid2, _ = _init_producer_id(broker.bootstrap)
    assert err2 == 0 and pid2 != pid, "every InitProducerId gets a fresh id"

    def send(seq, n, producer_epoch=0):
        recs = [wire.Rec(b"k", f"v{seq + i}".encode(), int(time.time() * 1000)) for i in range(n)]
        batch = wire.encode_batch(recs, producer_id=pid, producer_epoch=producer_epoch, base_sequence=seq)
        with wire.KafkaConn.to(broker.bootstrap) as conn:
            r = conn.produce_v3(topic, 0, batch, acks=-1)
        return r.error_code, r.base_offset

    code, base = send(0, 3)
    assert (code, base) == (0, 0)
    code, base = send(0, 3)  # the retry of the same batch
    assert (code, base) == (0, 0), "a duplicate is acknowledged with its original offset"
    code, _ = send(5, 1)
    assert code == 45, "a sequence gap is OUT_OF_ORDER_SEQUENCE_NUMBER"
    code, base = send(3, 2)
    assert (code, base) == (0, 3)
    code, base = send(0, 1, producer_epoch=1)  # epoch bump restarts the sequence
    assert (code, base) == (0, 5)
    code, _ = send(5, 1, producer_epoch=0)
    assert code == 47, "an older epoch is fenced with INVALID_PRODUCER_EPOCH"
    assert kutil.watermarks(broker.bootstrap, topic, 0) == (0, 6), "no duplicate was written"


def test_kafka_python_idempotent_producer(broker):
    """A second client implementation with idempotence on: InitProducerId,
    sequenced batches, no errors, every record exactly once."""
    from kafka import KafkaProducer

    topic = kutil.unique("idem-kp")
    kutil.create_topic(kutil.admin(broker.bootstrap), topic, 3)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True, acks="all",
                      linger_ms=5, request_timeout_ms=30000)
    try:
        futures = [p.send(topic, key=f"k{i % 7}".encode(), value=f"{i}".encode()) for i in range(3000)]
        p.flush(60)
        metas = [f.get(timeout=60) for f in futures]
    finally:
        p.close()
    assert len({(m.partition, m.offset) for m in metas}) == 3000
    res = kutil.consume(broker.bootstrap, topic, [0, 1, 2], expected=3000)
    assert not res.errors, [e.str() for e in res.errors]
    assert sorted(int(m.value) for m in res.messages) == list(range(3000))
    for m in res.messages:
        assert m.value == f"{int(m.value)}".encode()
    batches_with_pid = 0
    for part in range(3):
        # Records were written by an idempotent producer: the batches carry
        # a producer id (checked on the raw log through a raw Fetch).
        with wire.KafkaConn.to(broker.bootstrap) as conn:
            f = conn.fetch_v4(topic, part, 0, max_bytes=1 << 20)
        data = f.records or b""
        pos = 0
        while pos + wire.BATCH_HEADER_SIZE <= len(data):
            h = wire.parse_batch_header(data, pos)
            batches_with_pid += h.producer_id >= 0
            pos += 12 + h.batch_length
    assert batches_with_pid > 0
