"""A topic's `compression.type` (issue 15, docs/batch-validation.md).

`producer` (the default) stores batches as the producer compressed them.
A codec (uncompressed, gzip, snappy, lz4, zstd) makes the broker re-encode,
on append, every batch sent with another codec, as Kafka's LogValidator
does; a batch already in the topic's codec is stored as sent, whatever
level the producer used. What is stored is checked on the wire (the codec
bits of the batches a Fetch returns, CRCs verified), and read back by three
independent consumers: librdkafka, kafka-python and aiokafka, each with its
own decoders for every codec.
"""

import asyncio
import itertools
import time
import zlib

import pytest
from confluent_kafka import KafkaError

import kutil
import wire

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CODEC_ID = {"none": 0, "uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
TOPIC_CODECS = ["uncompressed", "gzip", "snappy", "lz4", "zstd"]


def _records(n: int, tag: str) -> list[dict]:
    # Compressible but not trivial, with keys, headers and timestamps.
    return [{"key": f"k{i}".encode(), "value": f"{tag}-{i}-".encode() * 20,
             "headers": [("h", f"{i}".encode())], "timestamp": 1_700_000_000_000 + i}
            for i in range(n)]


def _stored(b, topic: str, offset: int = 0) -> list[wire.BatchHeader]:
    """Headers of the stored batches a Fetch returns from `offset` (every CRC checked)."""
    with wire.KafkaConn.to(b.bootstrap) as c:
        r = c.fetch_v4(topic, 0, offset, max_bytes=8 << 20)
    assert r.error_code == 0, r
    out, pos = [], 0
    while pos + 12 <= len(r.records):
        h = wire.parse_batch_header(r.records, pos)
        if pos + 12 + h.batch_length > len(r.records):
            break
        assert wire.crc32c(r.records[pos + 21:pos + 12 + h.batch_length]) == h.crc, h
        out.append(h)
        pos += 12 + h.batch_length
    return out


def _read_back(b, topic: str, n: int) -> list:
    got = kutil.consume(b.bootstrap, topic, [0], expected=n).messages
    return [(m.key, m.value, m.headers, m.timestamp[1]) for m in got]


def _expected(records: list[dict]) -> list:
    return [(r["key"], r["value"], r["headers"], r["timestamp"]) for r in records]


@pytest.mark.parametrize("topic_codec", TOPIC_CODECS)
def test_every_producer_codec_is_stored_in_the_topic_codec(broker, admin, topic_name, topic_codec):
    kutil.create_topic(admin, topic_name, 1, config={"compression.type": topic_codec})
    sent = []
    for codec in CODECS:
        recs = _records(50, codec)
        ds = kutil.produce(broker.bootstrap, topic_name, recs, **{"compression.type": codec, "linger.ms": 50})
        assert all(d.error is None for d in ds), [d.error for d in ds if d.error]
        sent += recs
    headers = _stored(broker, topic_name)
    assert {h.attributes & 7 for h in headers} == {CODEC_ID[topic_codec]}, \
        [(h.base_offset, h.attributes & 7) for h in headers]
    assert sum(h.record_count for h in headers) == len(sent)
    assert _read_back(broker, topic_name, len(sent)) == _expected(sent)


def test_producer_keeps_every_batch_as_sent(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1)
    for codec in CODECS:
        kutil.produce(broker.bootstrap, topic_name, _records(20, codec), **{"compression.type": codec})
    # One produce call may become several batches; each keeps its codec.
    got = [codec for codec, _ in itertools.groupby(h.attributes & 7 for h in _stored(broker, topic_name))]
    assert got == [CODEC_ID[c] for c in CODECS]


def test_same_codec_other_level_is_not_reencoded(broker, admin, topic_name):
    """Kafka re-encodes only when the codec differs: a gzip level 1 batch on
    a topic asking for gzip level 9 is stored byte for byte as sent."""
    kutil.create_topic(admin, topic_name, 1, config={"compression.type": "gzip",
                                                      "compression.gzip.level": "9"})
    recs = [wire.Rec(f"k{i}".encode(), (f"value {i} " * 50).encode(), 1_700_000_000_000 + i)
            for i in range(30)]
    plain = wire.encode_batch(recs)
    # Re-compress the records section of an uncompressed batch with zlib level 1.
    gz = zlib.compressobj(1, zlib.DEFLATED, 31)
    body = gz.compress(plain[61:]) + gz.flush()
    batch = wire.with_records_section(plain, body, codec=1)
    with wire.KafkaConn.to(broker.bootstrap) as c:
        r = c.produce_v8(topic_name, 0, batch)
    assert r.error_code == 0, r
    with wire.KafkaConn.to(broker.bootstrap) as c:
        f = c.fetch_v4(topic_name, 0, 0, max_bytes=1 << 20)
    # Same bytes after the base offset and the leader epoch (set on append).
    assert f.records[16:] == batch[16:]


def test_level_is_applied_when_reencoding(broker, admin, topic_name):
    sizes = {}
    for level in ("1", "9"):
        name = f"{topic_name}-{level}"
        kutil.create_topic(admin, name, 1, config={"compression.type": "gzip",
                                                    "compression.gzip.level": level})
        recs = [{"value": " ".join(f"w{(i * 7919 + j * 104729) % 1000}" for j in range(200)).encode()}
                for i in range(100)]
        kutil.produce(broker.bootstrap, name, recs, **{"compression.type": "none", "linger.ms": 100})
        hs = _stored(broker, name)
        assert {h.attributes & 7 for h in hs} == {1}
        sizes[level] = sum(h.batch_length for h in hs)
        assert len(_read_back(broker, name, 100)) == 100
    assert sizes["9"] < sizes["1"], sizes


def test_other_clients_decode_reencoded_batches(broker, admin, topic_name):
    """kafka-python (python-snappy, lz4, zstandard, zlib) and aiokafka
    (cramjam) read what the broker wrote in each codec."""
    from kafka import KafkaConsumer, TopicPartition as KTP
    from aiokafka import AIOKafkaConsumer, TopicPartition as ATP

    for codec in TOPIC_CODECS:
        name = f"{topic_name}-{codec}"
        kutil.create_topic(admin, name, 1, config={"compression.type": codec})
        source = "zstd" if codec != "zstd" else "lz4"
        recs = _records(40, codec)
        kutil.produce(broker.bootstrap, name, recs, **{"compression.type": source})
        assert {h.attributes & 7 for h in _stored(broker, name)} == {CODEC_ID[codec]}
        want = [(r["key"], r["value"]) for r in recs]

        kc = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                           auto_offset_reset="earliest", consumer_timeout_ms=5000)
        try:
            kc.assign([KTP(name, 0)])
            kc.seek_to_beginning()
            got = []
            deadline = time.monotonic() + 30
            while len(got) < len(want) and time.monotonic() < deadline:
                for msgs in kc.poll(timeout_ms=500).values():
                    got += [(m.key, m.value) for m in msgs]
            assert got == want, f"kafka-python on {codec}"
        finally:
            kc.close()

        async def aio():
            c = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                                 auto_offset_reset="earliest")
            await c.start()
            try:
                c.assign([ATP(name, 0)])
                await c.seek_to_beginning(ATP(name, 0))
                out = []
                while len(out) < len(want):
                    batch = await asyncio.wait_for(c.getmany(timeout_ms=500), 30)
                    for msgs in batch.values():
                        out += [(m.key, m.value) for m in msgs]
                return out
            finally:
                await c.stop()

        assert asyncio.run(aio()) == want, f"aiokafka on {codec}"


def test_idempotent_producer_through_reencoding(broker, admin, topic_name):
    """Producer id, epoch and sequences survive re-encoding: a retried batch
    is still a duplicate, read back exactly once."""
    kutil.create_topic(admin, topic_name, 1, config={"compression.type": "zstd"})
    recs = [{"value": f"v{i}".encode() * 10} for i in range(2000)]
    ds = kutil.produce(broker.bootstrap, topic_name, recs,
                       **{"compression.type": "lz4", "enable.idempotence": True, "linger.ms": 2,
                          "batch.num.messages": 100})
    assert all(d.error is None for d in ds)
    hs = _stored(broker, topic_name)
    assert {h.attributes & 7 for h in hs} == {4}
    assert all(h.producer_id >= 0 for h in hs)
    seqs = [h.base_sequence for h in hs]
    assert seqs == sorted(seqs) and seqs[0] == 0
    got = kutil.consume(broker.bootstrap, topic_name, [0], expected=2000).messages
    assert [m.value for m in got] == [r["value"] for r in recs]


def test_log_append_time_with_reencoding(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1, config={"compression.type": "snappy",
                                                      "message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    kutil.produce(broker.bootstrap, topic_name, _records(30, "lat"), **{"compression.type": "gzip"})
    after = int(time.time() * 1000)
    hs = _stored(broker, topic_name)
    assert all(h.attributes & 7 == 2 and h.attributes & 8 for h in hs)
    got = kutil.consume(broker.bootstrap, topic_name, [0], expected=30).messages
    assert all(before - 1000 <= m.timestamp[1] <= after + 1000 for m in got)


def test_reencoded_batch_over_max_message_bytes_is_refused(broker, admin, topic_name):
    """A zstd batch of 200 KB of repeated text is small; stored uncompressed
    it would pass the topic's max.message.bytes: MESSAGE_TOO_LARGE, as
    Kafka's RecordTooLargeException after re-compression, with the reason,
    and nothing stored. (A raw-wire batch, so it is one batch whatever a
    client's batching would make of it.)"""
    import zstandard
    kutil.create_topic(admin, topic_name, 1, config={"compression.type": "uncompressed",
                                                      "max.message.bytes": "50000"})
    now = int(time.time() * 1000)
    plain = wire.encode_batch([wire.Rec(b"k%d" % i, b"x" * 1000, now) for i in range(200)])
    batch = wire.with_records_section(plain, zstandard.ZstdCompressor().compress(plain[61:]), codec=4)
    assert len(batch) < 50_000
    with wire.KafkaConn.to(broker.bootstrap) as c:
        r = c.produce_v8(topic_name, 0, batch)
    assert r.error_code == 10, r  # MESSAGE_TOO_LARGE
    assert "max.message.bytes" in (r.error_message or ""), r
    assert kutil.watermarks(broker.bootstrap, topic_name, 0) == (0, 0)
    # Batches that fit once re-encoded still go through.
    ds = kutil.produce(broker.bootstrap, topic_name, [{"value": b"y" * 100}], **{"compression.type": "zstd"})
    assert ds[0].error is None


def test_changing_compression_type_applies_to_new_batches(broker, admin, topic_name):
    from test_admin import describe, incremental
    from confluent_kafka.admin import AlterConfigOpType

    kutil.create_topic(admin, topic_name, 1)
    kutil.produce(broker.bootstrap, topic_name, _records(10, "a"), **{"compression.type": "gzip"})
    incremental(admin, topic_name, [("compression.type", "LZ4", AlterConfigOpType.SET),
                                    ("compression.lz4.level", "12", AlterConfigOpType.SET)])
    e = describe(admin, topic_name)
    assert (e["compression.type"].value, e["compression.lz4.level"].value) == ("LZ4", "12")
    kutil.produce(broker.bootstrap, topic_name, _records(10, "b"), **{"compression.type": "gzip"})
    # By offset, not by batch count: how many batches the producer sends
    # ten records in depends on its linger and the machine's load.
    stored = [(h.base_offset, h.attributes & 7) for h in _stored(broker, topic_name)]
    assert {codec for base, codec in stored if base < 10} == {1}, stored
    assert {codec for base, codec in stored if base >= 10} == {3}, stored
    assert len(_read_back(broker, topic_name, 20)) == 20


@pytest.mark.parametrize("name,value", [
    ("compression.type", "brotli"),
    ("compression.gzip.level", "0"),
    ("compression.gzip.level", "10"),
    ("compression.lz4.level", "18"),
    ("compression.zstd.level", "23"),
    ("compression.zstd.level", "fast"),
])
def test_bad_compression_settings_are_refused(broker, admin, topic_name, name, value):
    from test_admin import _create_error
    from confluent_kafka.admin import NewTopic

    e = _create_error(admin, NewTopic(topic_name, 1, 1, config={name: value}))
    assert kutil.error_code(e) == KafkaError.INVALID_CONFIG
    assert name in kutil.error_str(e), kutil.error_str(e)
