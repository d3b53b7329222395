"""The newest versions Kafka 3.9 serves of the APIs Strata implements
(issue 15, docs/protocol.md): Fetch 13-17 (topics named by id, KIP-516),
ListOffsets 8-9 (earliest local -4, KIP-405; latest tiered -5, KIP-1005),
FindCoordinator 6 (KIP-932's share key type, refused as Kafka 3.9 refuses
it with share groups off).

librdkafka 2.16 fetches with v16 throughout the suite; these tests cover
every version of the range, the errors, and the special offsets, which no
installable client sends (the Java AdminClient's OffsetSpec.earliestLocal /
latestTiered). The requests are encoded with kafka-python's protocol types
from Kafka 3.9's message schemas, and every response is decoded whole.
"""

import io
import struct
import time
import uuid

import pytest
from kafka.protocol.types import (AbstractType, CompactArray, CompactBytes, CompactString, Int8, Int16,
                                  Int32, Int64, Schema, TaggedFields)

import kutil
import tierutil as tu
import wire

FETCH, LIST_OFFSETS, FIND_COORDINATOR = 1, 2, 10
UNKNOWN_TOPIC_ID, INVALID_REQUEST = 100, 42


class Uuid(AbstractType):
    @classmethod
    def encode(cls, value: uuid.UUID) -> bytes:
        return value.bytes

    @classmethod
    def decode(cls, data) -> uuid.UUID:
        return uuid.UUID(bytes=data.read(16))


def _fetch_request(version: int) -> Schema:
    partition = [("partition", Int32), ("current_leader_epoch", Int32), ("fetch_offset", Int64),
                 ("last_fetched_epoch", Int32), ("log_start_offset", Int64), ("partition_max_bytes", Int32),
                 ("tags", TaggedFields)]
    head = [] if version >= 15 else [("replica_id", Int32)]
    return Schema(*head, ("max_wait_ms", Int32), ("min_bytes", Int32), ("max_bytes", Int32),
                  ("isolation_level", Int8), ("session_id", Int32), ("session_epoch", Int32),
                  ("topics", CompactArray(("topic_id", Uuid), ("partitions", CompactArray(*partition)),
                                          ("tags", TaggedFields))),
                  ("forgotten", CompactArray(("topic_id", Uuid), ("partitions", CompactArray(Int32)),
                                             ("tags", TaggedFields))),
                  ("rack_id", CompactString("utf-8")), ("tags", TaggedFields))


FETCH_RESPONSE = Schema(
    ("throttle_time_ms", Int32), ("error_code", Int16), ("session_id", Int32),
    ("responses", CompactArray(
        ("topic_id", Uuid),
        ("partitions", CompactArray(
            ("partition", Int32), ("error_code", Int16), ("high_watermark", Int64),
            ("last_stable_offset", Int64), ("log_start_offset", Int64),
            ("aborted", CompactArray(("producer_id", Int64), ("first_offset", Int64), ("tags", TaggedFields))),
            ("preferred_read_replica", Int32), ("records", CompactBytes), ("tags", TaggedFields))),
        ("tags", TaggedFields))),
    ("tags", TaggedFields))

LIST_OFFSETS_REQUEST = Schema(
    ("replica_id", Int32), ("isolation_level", Int8),
    ("topics", CompactArray(("name", CompactString("utf-8")), ("partitions", CompactArray(
        ("partition", Int32), ("current_leader_epoch", Int32), ("timestamp", Int64), ("tags", TaggedFields))),
        ("tags", TaggedFields))),
    ("tags", TaggedFields))

LIST_OFFSETS_RESPONSE = Schema(
    ("throttle_time_ms", Int32),
    ("topics", CompactArray(("name", CompactString("utf-8")), ("partitions", CompactArray(
        ("partition", Int32), ("error_code", Int16), ("timestamp", Int64), ("offset", Int64),
        ("leader_epoch", Int32), ("tags", TaggedFields))), ("tags", TaggedFields))),
    ("tags", TaggedFields))

FIND_COORDINATOR_REQUEST = Schema(("key_type", Int8), ("keys", CompactArray(CompactString("utf-8"))),
                                  ("tags", TaggedFields))
FIND_COORDINATOR_RESPONSE = Schema(
    ("throttle_time_ms", Int32),
    ("coordinators", CompactArray(("key", CompactString("utf-8")), ("node_id", Int32),
                                  ("host", CompactString("utf-8")), ("port", Int32), ("error_code", Int16),
                                  ("error_message", CompactString("utf-8")), ("tags", TaggedFields))),
    ("tags", TaggedFields))


def _call(b, api: int, version: int, schema: Schema, values: tuple, response: Schema):
    with wire.KafkaConn.to(b.bootstrap) as c:
        raw = c.request(api, version, schema.encode(values), flexible=True)
        buf = io.BytesIO(raw)
        TaggedFields.decode(buf)  # response header
        out = response.decode(buf)
        assert buf.tell() == len(raw), f"{len(raw) - buf.tell()} bytes left after the response"
        assert c.api_versions()[0] == 0, "the connection stays usable"
    return out


def _topic_id(adm, topic: str) -> uuid.UUID:
    from confluent_kafka import TopicCollection
    d = adm.describe_topics(TopicCollection([topic]), request_timeout=30)[topic].result(timeout=60)
    tid = d.topic_id
    msb, lsb = tid.get_most_significant_bits(), tid.get_least_significant_bits()
    return uuid.UUID(bytes=struct.pack(">qq", msb, lsb))


def _fetch(b, version: int, topic_id: uuid.UUID, partition: int = 0, offset: int = 0):
    part = (partition, -1, offset, -1, -1, 1 << 20, {})
    head = () if version >= 15 else (-1,)
    values = head + (0, 0, 1 << 20, 0, 0, -1, [(topic_id, [part], {})], [], "", {})
    return _call(b, FETCH, version, _fetch_request(version), values, FETCH_RESPONSE)


def _records_in(raw: bytes) -> list[bytes]:
    return [r.value for r in wire.decode_batches(raw)]


@pytest.mark.parametrize("version", [13, 14, 15, 16, 17])
def test_fetch_by_topic_id(broker, admin, topic_name, version):
    kutil.create_topic(admin, topic_name, 2)
    kutil.produce(broker.bootstrap, topic_name, [{"value": b"v%d" % i, "partition": 0} for i in range(5)],
                  **{"compression.type": "none"})
    tid = _topic_id(admin, topic_name)
    r = _fetch(broker, version, tid)
    (topic_id, parts, _), = r[3]
    assert topic_id == tid
    (p, err, hw, lso, lso_start, aborted, pref, records, _), = parts
    assert (p, err, hw, lso_start, pref) == (0, 0, 5, 0, -1)
    assert _records_in(records) == [b"v%d" % i for i in range(5)]

    # A partition the topic does not have, and a topic id no topic has.
    (_, parts, _), = _fetch(broker, version, tid, partition=7)[3]
    assert parts[0][1] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    other = uuid.uuid4()
    (topic_id, parts, _), = _fetch(broker, version, other)[3]
    assert (topic_id, parts[0][1]) == (other, UNKNOWN_TOPIC_ID)
    assert broker.alive()


def _list_offsets(b, version: int, topic: str, timestamp: int) -> tuple[int, int, int, int]:
    values = (-1, 0, [(topic, [(0, -1, timestamp, {})], {})], {})
    r = _call(b, LIST_OFFSETS, version, LIST_OFFSETS_REQUEST, values, LIST_OFFSETS_RESPONSE)
    (_, parts, _), = r[1]
    (_, err, ts, offset, epoch, _), = parts
    return err, ts, offset, epoch


@pytest.mark.parametrize("version", [8, 9])
def test_earliest_local_and_latest_tiered_without_tiering(broker, admin, topic_name, version):
    """A topic with nothing in the bucket: -4 is the log start, -5 is -1
    with leader epoch -1 (Kafka's answer without a remote log). -5 came
    with v9 (KIP-1005): at v8 it is UNSUPPORTED_VERSION, as Kafka 4."""
    kutil.create_topic(admin, topic_name, 1, config={"remote.storage.enable": "false"})
    kutil.produce(broker.bootstrap, topic_name, [{"value": b"x"} for _ in range(3)])
    assert _list_offsets(broker, version, topic_name, -4) == (0, -1, 0, 0)
    if version >= 9:
        assert _list_offsets(broker, version, topic_name, -5) == (0, -1, -1, -1)
    else:
        assert _list_offsets(broker, version, topic_name, -5) == (35, -1, -1, -1)
    assert _list_offsets(broker, version, topic_name, -1) == (0, -1, 3, 0)


def test_earliest_local_and_latest_tiered_after_tiering(broker_factory):
    """1 KiB segments, a 1 s hot window: once segments are in the bucket and
    gone from disk, -2 is the (remote) log start, -4 the first offset on
    local disk, -5 the last offset in the bucket."""
    b, bucket = tu.file_broker(broker_factory, {"num.partitions": 1})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("lo-tiered"), 1, config={
        "segment.bytes": "1024", "local.retention.ms": "1000"})
    for i in range(12):
        r = wire.encode_batch([wire.Rec(None, bytes(600), int(time.time() * 1000))])
        with wire.KafkaConn.to(b.bootstrap) as c:
            assert c.produce_v8(topic, 0, r).error_code == 0
    m = tu.wait_remote_end(bucket, topic, 0, 6, timeout=30)
    kutil.wait_until(lambda: min(tu.local_segments(b, topic)) >= 6, 30, what="local copies deleted")

    def answers():
        remote_end = tu.remote_end(bucket, topic, 0)
        local_start = min(tu.local_segments(b, topic))
        return remote_end, local_start, _list_offsets(b, 9, topic, -2), _list_offsets(b, 9, topic, -4), \
            _list_offsets(b, 9, topic, -5)
    remote_end, local_start, earliest, local, tiered = answers()
    if local_start != answers()[1]:  # the hot window moved in between: read again
        remote_end, local_start, earliest, local, tiered = answers()
    assert earliest == (0, -1, 0, 0), m
    assert local == (0, -1, local_start, 0)
    assert tiered == (0, -1, remote_end - 1, 0)
    assert local_start > 0 and remote_end >= local_start


def test_find_coordinator_v6(broker):
    group = kutil.unique("fc")
    r = _call(broker, FIND_COORDINATOR, 6, FIND_COORDINATOR_REQUEST, (0, [group], {}), FIND_COORDINATOR_RESPONSE)
    (key, node, host, port, err, msg, _), = r[1]
    assert (key, err, port) == (group, 0, int(broker.bootstrap.rsplit(":", 1)[1]))
    r = _call(broker, FIND_COORDINATOR, 6, FIND_COORDINATOR_REQUEST, (2, ["share-g"], {}),
              FIND_COORDINATOR_RESPONSE)
    (key, node, host, port, err, msg, _), = r[1]
    assert (key, node, err) == ("share-g", -1, INVALID_REQUEST)
    assert "share" in msg
