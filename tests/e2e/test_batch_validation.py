"""Batches validated on append as Kafka's LogValidator validates them
(issue 15, docs/batch-validation.md).

A producer's batch header is not trusted: its max timestamp is replaced by
the largest timestamp its records carry (-1, as some older producers leave
it, or a lie), so ListOffsets by timestamp, the time index and time-based
retention see the real times, locally and after tiering. Per-record errors
(timestamps out of the topic's bounds, LogAppendTime sent by a producer,
offsets that skip, records that do not parse) are answered as Kafka
answers them, with the record's index, and nothing of a refused batch is
stored.
"""

import struct
import time

import pytest
from confluent_kafka import KafkaError, TopicPartition
from confluent_kafka.admin import OffsetSpec

import kutil
import tierutil as tu
import wire

INVALID_TIMESTAMP = 32
INVALID_RECORD = 87
CORRUPT_MESSAGE = 2


def _now() -> int:
    return int(time.time() * 1000)


def _records(t0: int, n: int, step: int = 1000, tag: str = "r") -> list:
    return [wire.Rec(f"k{i}".encode(), f"{tag}{i}".encode(), t0 + step * i) for i in range(n)]


def _produce_raw(b, topic: str, batch: bytes, partition: int = 0) -> wire.ProduceV8PartitionResult:
    with wire.KafkaConn.to(b.bootstrap) as c:
        return c.produce_v8(topic, partition, batch)


def _stored_headers(b, topic: str, offset: int = 0) -> list:
    """Headers of the batches a Fetch returns from `offset` (CRC checked)."""
    with wire.KafkaConn.to(b.bootstrap) as c:
        r = c.fetch_v4(topic, 0, offset, max_bytes=8 << 20)
    assert r.error_code == 0, r
    wire.decode_batches(r.records)  # asserts every CRC
    out, pos = [], 0
    while pos + 12 <= len(r.records):
        h = wire.parse_batch_header(r.records, pos)
        if pos + 12 + h.batch_length > len(r.records):
            break
        out.append(h)
        pos += 12 + h.batch_length
    return out


def _list_offset(adm, topic: str, spec) -> tuple[int, int]:
    tp = TopicPartition(topic, 0)
    r = adm.list_offsets({tp: spec})[tp].result(timeout=30)
    return r.offset, r.timestamp


@pytest.mark.parametrize("header", ["minus_one", "too_low", "too_high"])
def test_the_header_max_timestamp_is_what_the_records_say(broker, admin, topic_name, header):
    """Five records 1 s apart whose header's max timestamp is -1, lower or
    higher than the records': stored with the records' max (CRC valid),
    found by ListOffsets by timestamp and by max timestamp."""
    kutil.create_topic(admin, topic_name, 1)
    t0 = _now() - 60_000
    lie = {"minus_one": -1, "too_low": t0 - 50_000, "too_high": t0 + 10**9}[header]
    r = _produce_raw(broker, topic_name, wire.encode_batch(_records(t0, 5), max_timestamp=lie))
    assert r.error_code == 0, r
    # a second, honest batch after it
    r = _produce_raw(broker, topic_name, wire.encode_batch(_records(t0 + 5000, 2, tag="s")))
    assert (r.error_code, r.base_offset) == (0, 5), r

    heads = _stored_headers(broker, topic_name)
    assert [h.max_timestamp for h in heads] == [t0 + 4000, t0 + 6000], heads
    assert kutil.offsets_for_times(broker.bootstrap, topic_name, 0,
                                   [t0, t0 + 2500, t0 + 4000, t0 + 4001, t0 + 6000, t0 + 6001]) \
        == [0, 3, 4, 5, 6, -1]
    assert _list_offset(admin, topic_name, OffsetSpec.max_timestamp()) == (6, t0 + 6000)
    res = kutil.consume(broker.bootstrap, topic_name, [0], expected=7)
    assert [m.timestamp[1] for m in res.messages] == [t0 + 1000 * i for i in range(7)]


def _time_index_entries(b, topic: str) -> dict[int, list[tuple[int, int]]]:
    """(timestamp, relative offset) entries of each segment's .timeindex."""
    d = b.partition_dir(topic, 0)
    out = {}
    for f in sorted(d.glob("*.timeindex")):
        data = f.read_bytes()
        entries = [struct.unpack_from(">qi", data, i) for i in range(0, len(data) - len(data) % 12, 12)]
        out[int(f.name.split(".")[0])] = [e for e in entries if e != (0, 0)]
    return out


def test_the_time_index_holds_the_records_times(broker, admin, topic_name):
    """Batches whose header says -1, each in a segment of its own: every
    sealed segment's .timeindex ends with its records' max timestamp."""
    kutil.create_topic(admin, topic_name, 1, config={
        "segment.bytes": "1024", "index.interval.bytes": "1", "remote.storage.enable": "false"})
    t0 = _now() - 60_000
    for j in range(3):
        recs = [wire.Rec(None, bytes(600), t0 + 10_000 * j + i) for i in range(2)]
        r = _produce_raw(broker, topic_name, wire.encode_batch(recs, max_timestamp=-1))
        assert (r.error_code, r.base_offset) == (0, 2 * j), r
    kutil.wait_until(lambda: len(_time_index_entries(broker, topic_name)) >= 3, 10,
                     what="three segments")
    index = _time_index_entries(broker, topic_name)
    for j, base in enumerate(sorted(index)[:2]):  # the sealed ones
        assert index[base], f"segment {base}: empty time index"
        # (timestamp, relative offset of the batch holding it)
        assert index[base][-1] == (t0 + 10_000 * j + 1, 0), f"segment {base}: {index[base]}"
    assert kutil.offsets_for_times(broker.bootstrap, topic_name, 0, [t0 + 10_001, t0 + 10_002]) == [3, 4]


def _wait_log_start_above(b, topic: str, offset: int, timeout: float):
    kutil.wait_until(lambda: kutil.watermarks(b.bootstrap, topic, 0)[0] > offset, timeout, interval=0.2,
                     what=f"log start offset above {offset}")


@pytest.mark.parametrize("tiered", [False, True], ids=["local", "tiered"])
def test_retention_ms_expires_by_the_records_times(broker_factory, tiered):
    """A batch whose header says -1, with records 12 s old, on a topic with
    retention.ms 20 s: its segment is deleted about 8 s after the produce
    (its records' age), not at once and not 20 s after the file was
    written (what the file's mtime, used for segments without timestamps,
    would give). Tiered: the same for the remote copy, after the local one
    went with a 1 s hot window; ListOffsets by timestamp is answered from
    the bucket in between."""
    b, bucket = tu.file_broker(broker_factory, {"num.partitions": 1})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("ret-ts"), 1, config={
        "retention.ms": "20000", "segment.bytes": "1024",
        **({"local.retention.ms": "1000"} if tiered else {"remote.storage.enable": "false"})})
    produced = time.monotonic()
    t0 = _now() - 12_000
    recs = [wire.Rec(None, bytes(600), t0 + i) for i in range(2)]
    r = _produce_raw(b, topic, wire.encode_batch(recs, max_timestamp=-1))
    assert r.error_code == 0, r
    # A fresh batch rolls the first segment (it is full), sealing it.
    r = _produce_raw(b, topic, wire.encode_batch([wire.Rec(None, bytes(600), _now())]))
    assert (r.error_code, r.base_offset) == (0, 2), r
    if tiered:
        tu.wait_remote_end(bucket, topic, 0, 2, timeout=15)
        kutil.wait_until(lambda: min(tu.local_segments(b, topic)) >= 2, 15, what="local copy deleted")
        m = tu.manifest(bucket, topic, 0)
        assert m["segments"][0]["max_timestamp"] == t0 + 1, m["segments"][0]
        assert kutil.offsets_for_times(b.bootstrap, topic, 0, [t0 + 1]) == [1], "served from the bucket"
    _wait_log_start_above(b, topic, 1, timeout=30)
    age = time.monotonic() - produced
    assert 7.0 <= age <= 16.0, \
        f"the segment went {age:.1f} s after the produce; its records expire {20 - 12} s after it"
    assert kutil.watermarks(b.bootstrap, topic, 0) == (2, 3)


def test_timestamps_out_of_bounds_are_refused_with_invalid_timestamp(broker, admin, topic_name):
    """message.timestamp.{before,after}.max.ms: confluent-kafka's delivery
    report says INVALID_TIMESTAMP for a record an hour too old or too new;
    one in bounds is stored. Produce v8 names the failing records."""
    kutil.create_topic(admin, topic_name, 1, config={
        "message.timestamp.before.max.ms": "600000", "message.timestamp.after.max.ms": "60000"})
    now = _now()
    for ts in (now - 3_600_000, now + 3_600_000):
        dels = kutil.produce(broker.bootstrap, topic_name, [{"value": b"x", "timestamp": ts}],
                             allow_errors=True, **{"retries": 0})
        assert dels[0].error is not None and dels[0].error.code() == KafkaError.INVALID_TIMESTAMP, dels[0].error
    ok = kutil.produce(broker.bootstrap, topic_name, [{"value": b"ok", "timestamp": now - 1000}])
    assert ok[0].error is None and ok[0].offset == 0

    recs = [wire.Rec(None, b"a", now), wire.Rec(None, b"b", now - 3_600_000), wire.Rec(None, b"c", now)]
    r = _produce_raw(broker, topic_name, wire.encode_batch(recs))
    assert r.error_code == INVALID_TIMESTAMP, r
    assert [i for i, _ in r.record_errors] == [1], r
    assert "out of range" in (r.record_errors[0][1] or ""), r
    assert "invalid timestamp" in (r.error_message or ""), r
    assert kutil.watermarks(broker.bootstrap, topic_name, 0) == (0, 1), "a refused batch was stored"


def test_deprecated_timestamp_difference_bound_applies(broker, admin, topic_name):
    """message.timestamp.difference.max.ms (deprecated in Kafka 3.9, still
    honoured where before/after are left at their default)."""
    kutil.create_topic(admin, topic_name, 1, config={"message.timestamp.difference.max.ms": "60000"})
    now = _now()
    r = _produce_raw(broker, topic_name, wire.encode_batch([wire.Rec(None, b"old", now - 120_000)]))
    assert r.error_code == INVALID_TIMESTAMP, r
    r = _produce_raw(broker, topic_name, wire.encode_batch([wire.Rec(None, b"new", now + 120_000)]))
    assert r.error_code == INVALID_TIMESTAMP, r
    r = _produce_raw(broker, topic_name, wire.encode_batch([wire.Rec(None, b"now", now)]))
    assert (r.error_code, r.base_offset) == (0, 0), r


def test_kafka_python_reports_invalid_timestamp(broker, admin, topic_name):
    """The same refusal seen through kafka-python: InvalidTimestampError."""
    from kafka import KafkaProducer
    from kafka.errors import InvalidTimestampError
    kutil.create_topic(admin, topic_name, 1, config={"message.timestamp.before.max.ms": "600000"})
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, retries=0, acks="all")
    try:
        fut = p.send(topic_name, b"old", partition=0, timestamp_ms=_now() - 3_600_000)
        with pytest.raises(InvalidTimestampError):
            fut.get(timeout=30)
        md = p.send(topic_name, b"fine", partition=0, timestamp_ms=_now()).get(timeout=30)
        assert md.offset == 0
    finally:
        p.close()


def test_batch_level_refusals(broker, admin, topic_name):
    """What Kafka refuses of a batch as a whole, with its error code; none
    of it is stored, and the partition takes the next good batch at 0."""
    kutil.create_topic(admin, topic_name, 1)
    now = _now()
    good = wire.encode_batch(_records(now, 2))

    def with_crc(b: bytearray) -> bytes:
        struct.pack_into(">I", b, 17, wire.crc32c(bytes(b[21:])))
        return bytes(b)

    # LogAppendTime set by the producer on a CreateTime topic
    lat = bytearray(good)
    struct.pack_into(">h", lat, 21, 0x08)
    # a control batch
    control = bytearray(good)
    struct.pack_into(">h", control, 21, 0x20)
    # the second record's offset delta skips one (zigzag 1 -> 2 becomes 4)
    skip = bytearray(wire.encode_batch([wire.Rec(None, b"a", now), wire.Rec(None, b"b", now)]))
    second = 61 + 1 + (skip[61] >> 1)
    assert skip[second + 3] == 2
    skip[second + 3] = 4
    # a record count the offsets do not match
    count = bytearray(good)
    struct.pack_into(">i", count, 57, 1)
    # a record whose length runs past the batch
    short = bytearray(good)
    short[61] = 0x7E  # zigzag(63)
    # an idempotent batch with a negative sequence
    seq = wire.encode_batch(_records(now, 1), producer_id=5, producer_epoch=0, base_sequence=-5)
    cases = {
        "log_append_time_from_producer": (with_crc(lat), INVALID_TIMESTAMP, "LogAppendTime"),
        "control_batch": (with_crc(control), INVALID_RECORD, "control records"),
        "offset_delta_skips": (with_crc(skip), INVALID_RECORD, "incremental offsets"),
        "count_mismatch": (with_crc(count), INVALID_RECORD, "Inconsistent batch offset range"),
        "record_past_the_batch": (with_crc(short), INVALID_RECORD, "invalid record structure"),
        "two_batches": (good + good, INVALID_RECORD, "more than one batch"),
        "negative_sequence": (seq, INVALID_RECORD, "Invalid sequence number"),
        "crc_mismatch": (good[:-1] + bytes([good[-1] ^ 1]), CORRUPT_MESSAGE, "CRC"),
    }
    for name, (batch, code, says) in cases.items():
        r = _produce_raw(broker, topic_name, batch)
        assert r.error_code == code, f"{name}: {r}"
        assert says.lower() in (r.error_message or "").lower() + " ".join(m or "" for _, m in r.record_errors).lower(), \
            f"{name}: {r}"
        assert r.base_offset == -1, f"{name}: {r}"
    assert kutil.watermarks(broker.bootstrap, topic_name, 0) == (0, 0), "a refused batch was stored"
    r = _produce_raw(broker, topic_name, good)
    assert (r.error_code, r.base_offset) == (0, 0), r
    assert broker.alive()


def test_leader_epoch_is_stamped_on_stored_batches(broker, admin, topic_name):
    """Producers send partition leader epoch -1; the broker stores its own
    (0, what Metadata reports), as Kafka does."""
    kutil.create_topic(admin, topic_name, 1)
    r = _produce_raw(broker, topic_name, wire.encode_batch(_records(_now(), 2), partition_leader_epoch=-1))
    assert r.error_code == 0, r
    assert [h.partition_leader_epoch for h in _stored_headers(broker, topic_name)] == [0]
