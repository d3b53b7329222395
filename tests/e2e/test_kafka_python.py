"""A second, independent client (kafka-python, pure Python protocol code):
admin, produce, consume, and interop with librdkafka in both directions."""

import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

import kutil


def _kp_consume(bootstrap, topic, partitions, expected, timeout_s=30):
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      auto_offset_reset="earliest", consumer_timeout_ms=1000, request_timeout_ms=30000)
    try:
        tps = [TopicPartition(topic, p) for p in partitions]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        out = []
        deadline = time.monotonic() + timeout_s
        while len(out) < expected and time.monotonic() < deadline:
            for recs in c.poll(timeout_ms=500).values():
                out.extend(recs)
        return out
    finally:
        c.close()


def test_kafka_python_admin_produce_consume(broker):
    bs = broker.bootstrap
    topic = kutil.unique("kp")
    adm = KafkaAdminClient(bootstrap_servers=bs, client_id="e2e-kp", request_timeout_ms=30000)
    try:
        adm.create_topics([NewTopic(name=topic, num_partitions=3, replication_factor=1)], timeout_ms=30000)
        assert topic in adm.list_topics()
        kutil.wait_topic_ready(kutil.admin(bs), topic, 3)

        prod = KafkaProducer(bootstrap_servers=bs, acks="all", linger_ms=5, request_timeout_ms=30000)
        sent = []
        for i in range(30):
            md = prod.send(topic, key=f"k{i % 4}".encode(), value=f"kp-{i}".encode(),
                           headers=[("n", str(i).encode())], partition=i % 3).get(timeout=30)
            sent.append((md.partition, md.offset, f"kp-{i}".encode(), str(i).encode()))
        prod.flush(30)
        prod.close(30)
        assert sorted((p, o) for p, o, _, _ in sent) == sorted((p, o) for p in range(3) for o in range(10))

        got = _kp_consume(bs, topic, [0, 1, 2], expected=30)
        assert sorted((r.partition, r.offset, r.value, dict(r.headers)["n"]) for r in got) == sorted(sent)

        # the same records through librdkafka
        res = kutil.consume(bs, topic, [0, 1, 2], expected=30)
        assert sorted((m.partition, m.offset, m.value, dict(m.headers)["n"]) for m in res.messages) == sorted(sent)

        adm.delete_topics([topic], timeout_ms=30000)
        kutil.wait_until(lambda: topic not in adm.list_topics(), 15, what="topic deleted (kafka-python)")
    finally:
        adm.close()


def test_librdkafka_gzip_read_by_kafka_python(broker, admin, topic_name):
    """Batches written by librdkafka (gzip) are decoded by kafka-python's
    independent record/gzip code, and kafka-python's gzip batches by librdkafka."""
    kutil.create_topic(admin, topic_name, 2)
    vals = [f"rd-{i}-".encode() * 20 for i in range(200)]
    dels = kutil.produce(broker.bootstrap, topic_name, [{"value": v, "partition": 0} for v in vals],
                         **{"compression.type": "gzip", "linger.ms": 20})
    got = _kp_consume(broker.bootstrap, topic_name, [0], expected=200)
    assert [r.offset for r in got] == list(range(200))
    assert {r.offset: r.value for r in got} == {d.offset: d.value for d in dels}

    prod = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", compression_type="gzip", linger_ms=20)
    futs = [prod.send(topic_name, value=f"kp-{i}".encode() * 20, partition=1) for i in range(200)]
    prod.flush(30)
    sent = {f.get(timeout=30).offset: f"kp-{i}".encode() * 20 for i, f in enumerate(futs)}
    prod.close(30)
    assert sorted(sent) == list(range(200))
    res = kutil.consume(broker.bootstrap, topic_name, [1], expected=200)
    assert {m.offset: m.value for m in res.messages} == sent
