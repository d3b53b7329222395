"""Every API version Apache Kafka 3.9 accepts, for the APIs Strata
implements (issue 15, docs/protocol.md).

Kafka 3.9's table is the one kafka-python records from a 3.9 broker
(`BROKER_API_VERSIONS[(3, 9)]`). Each pair is sent as kafka-python encodes
it, or, for the flexible versions kafka-python does not implement, as kio
(a codec generated from Kafka's message schemas) encodes it. Versions below the codec crate's range are
served by broker/src/server/legacy/: Produce v0-v2 up-converted to record
batch v2, OffsetCommit v1, ListOffsets v0, CreateTopics v0-v1, DeleteTopics
v0, DescribeConfigs v0; OffsetCommit v0 and OffsetFetch v0 (ZooKeeper
offsets) and Fetch v0-v3 (message sets v0/v1, which Strata never
down-converts) answered with UNSUPPORTED_VERSION, as Kafka 3.9 in KRaft
mode with message.downconversion.enable=false answers them.
"""

import io
import struct
import time

import pytest
from kafka.protocol.broker_api_versions import BROKER_API_VERSIONS
from kafka.protocol.types import Array, Schema

import kutil
import wire

UNSUPPORTED_VERSION = 35
KAFKA_39 = BROKER_API_VERSIONS[(3, 9)]
# The APIs Strata implements (checked against its ApiVersions below).
STRATA_APIS = {0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30,
               31, 32, 33, 37, 35, 36, 42, 43, 44, 45, 46, 47, 50, 51, 60, 61, 65, 66}


def test_api_versions_span_kafka_39s_range(broker):
    """Every API Strata serves is advertised from the lowest version Kafka
    3.9 accepts up to the highest."""
    with wire.KafkaConn.to(broker.bootstrap) as c:
        code, ours = c.api_versions()
    assert code == 0
    low = {api: (lo, KAFKA_39[api][0]) for api, (lo, _) in ours.items() if api in KAFKA_39 and lo > KAFKA_39[api][0]}
    assert not low, f"(ours, Kafka 3.9's) lowest versions where Strata starts higher: {low}"
    short = {api: (hi, KAFKA_39[api][1]) for api, (_, hi) in ours.items() if api in KAFKA_39 and hi < KAFKA_39[api][1]}
    assert not short, f"(ours, Kafka 3.9's) highest versions where Strata stops lower: {short}"
    assert set(ours) == STRATA_APIS, "STRATA_APIS in this file lists the APIs the broker advertises"


# ---------------------------------------------------------------- producers

def _stored_codec(b, topic: str) -> int:
    with wire.KafkaConn.to(b.bootstrap) as c:
        r = c.fetch_v4(topic, 0, 0)
    assert r.error_code == 0 and r.records, r
    return wire.parse_batch_header(r.records).attributes & 0x07


@pytest.mark.parametrize("api_version,codec", [
    ((0, 8, 2), None), ((0, 8, 2), "gzip"), ((0, 8, 2), "snappy"),
    ((0, 10, 0), None), ((0, 10, 0), "gzip"), ((0, 10, 0), "snappy"), ((0, 10, 0), "lz4"),
], ids=lambda v: "-".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_legacy_producers_are_up_converted(broker, admin, topic_name, api_version, codec):
    """kafka-python pinned to Kafka 0.8.2 (Produce v0, magic 0) or 0.10.0
    (Produce v2, magic 1, CreateTime): the records are stored as one record
    batch v2 with the producer's codec and read back by librdkafka with
    their keys, values and (magic 1) timestamps."""
    from kafka import KafkaProducer
    kutil.create_topic(admin, topic_name, 1)
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, api_version=api_version, compression_type=codec,
                      linger_ms=50)
    t0 = int(time.time() * 1000) - 5000
    has_ts = api_version >= (0, 10)
    try:
        futs = [p.send(topic_name, key=b"k%d" % i, value=b"v%d" % i * 20, partition=0,
                       timestamp_ms=t0 + i if has_ts else None) for i in range(20)]
        p.flush(30)
        offsets = [f.get(timeout=30).offset for f in futs]
    finally:
        p.close()
    assert offsets == list(range(20)), offsets
    res = kutil.consume(broker.bootstrap, topic_name, [0], expected=20)
    assert [m.key for m in res.messages] == [b"k%d" % i for i in range(20)]
    assert [m.value for m in res.messages] == [b"v%d" % i * 20 for i in range(20)]
    if has_ts:
        assert [m.timestamp[1] for m in res.messages] == [t0 + i for i in range(20)]
        assert kutil.offsets_for_times(broker.bootstrap, topic_name, 0, [t0 + 7]) == [7]
    want = {None: 0, "gzip": 1, "snappy": 2, "lz4": 3}[codec]
    assert _stored_codec(broker, topic_name) == want


def _message_v0(value: bytes, crc_ok: bool = True) -> bytes:
    import zlib
    m = struct.pack(">bb", 0, 0) + struct.pack(">i", -1) + struct.pack(">i", len(value)) + value
    crc = zlib.crc32(m) ^ (0 if crc_ok else 1)
    return struct.pack(">qiI", 0, len(m) + 4, crc) + m


def _produce_v0(b, topic: str, records: bytes) -> tuple[int, int]:
    body = struct.pack(">hi", -1, 10000) + struct.pack(">i", 1) + wire.kstring(topic) \
        + struct.pack(">ii", 1, 0) + wire.kbytes(records)
    with wire.KafkaConn.to(b.bootstrap) as c:
        r = wire.Reader(c.request(0, 0, body))
    topics = r.array(lambda t: (t.string(), t.array(lambda p: (p.i32(), p.i16(), p.i64()))))
    assert r.done()
    (_, [(_, code, base)]) = topics[0]
    return code, base


def test_bad_legacy_message_sets_are_refused(broker, admin, topic_name):
    """A CRC that does not match: CORRUPT_MESSAGE; mixed magic: INVALID_RECORD;
    a message cut short: CORRUPT_MESSAGE. Nothing is stored."""
    kutil.create_topic(admin, topic_name, 1)
    assert _produce_v0(broker, topic_name, _message_v0(b"x", crc_ok=False))[0] == 2
    assert _produce_v0(broker, topic_name, _message_v0(b"xyz")[:-1])[0] == 2
    v1 = bytearray(_message_v0(b"y"))
    v1[16] = 1  # magic 1 without the timestamp: too short or wrong CRC
    assert _produce_v0(broker, topic_name, _message_v0(b"x") + bytes(v1))[0] in (2, 87)
    assert kutil.watermarks(broker.bootstrap, topic_name, 0) == (0, 0)
    assert _produce_v0(broker, topic_name, _message_v0(b"good") + _message_v0(b"two")) == (0, 0)
    res = kutil.consume(broker.bootstrap, topic_name, [0], expected=2)
    assert [m.value for m in res.messages] == [b"good", b"two"]


# ---------------------------------------------------------------- consumers, lag monitors

def test_lag_monitor_with_offset_commit_v1_and_list_offsets_v0(broker, admin, topic_name):
    """kafka-python pinned to 0.8.2 commits with OffsetCommit v1, reads the
    commit back with OffsetFetch v1 and the log end with ListOffsets v0, as
    a consumer-lag monitor does; librdkafka's AdminClient sees the same
    committed offset."""
    from kafka import KafkaConsumer, TopicPartition
    from kafka.structs import OffsetAndMetadata
    kutil.create_topic(admin, topic_name, 2)
    kutil.produce(broker.bootstrap, topic_name, [{"value": b"x", "partition": i % 2} for i in range(30)])
    group = kutil.unique("lag-v1")
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, api_version=(0, 8, 2), group_id=group,
                      enable_auto_commit=False, request_timeout_ms=40000)
    try:
        tp0, tp1 = TopicPartition(topic_name, 0), TopicPartition(topic_name, 1)
        c.commit({tp0: OffsetAndMetadata(4, "by-v1", -1), tp1: OffsetAndMetadata(11, "", -1)})
        assert c.committed(tp0) == 4 and c.committed(tp1) == 11
        stored = c._coordinator.fetch_committed_offsets([tp0, tp1])  # OffsetFetch v1
        assert (stored[tp0].offset, stored[tp0].metadata) == (4, "by-v1"), stored
        assert (stored[tp1].offset, stored[tp1].metadata) == (11, ""), stored
        ends = c.end_offsets([tp0, tp1])
        assert ends == {tp0: 15, tp1: 15}, ends
        assert c.beginning_offsets([tp0, tp1]) == {tp0: 0, tp1: 0}
        lag = {tp.partition: ends[tp] - c.committed(tp) for tp in (tp0, tp1)}
        assert lag == {0: 11, 1: 4}
    finally:
        c.close()
    # (confluent-kafka's TopicPartition.metadata of these results is not
    # reliable: it shows "by-v1\x7f" and None; the offsets are compared.)
    got = kutil.committed(admin, group)
    assert {k: tp.offset for k, tp in got.items()} == {(topic_name, 0): 4, (topic_name, 1): 11}, got


def test_list_offsets_v0_by_time_and_count(broker, admin, topic_name):
    """ListOffsets v0 on the wire: -1 with room for 5 offsets gives the log
    end then segment starts, newest first; -2 the log start; an unknown
    partition UNKNOWN_TOPIC_OR_PARTITION."""
    kutil.create_topic(admin, topic_name, 1, config={"segment.bytes": "1024", "remote.storage.enable": "false"})
    for i in range(3):
        kutil.produce(broker.bootstrap, topic_name, [{"value": bytes(700)}])

    def v0(partition: int, ts: int, n: int):
        body = struct.pack(">ii", -1, 1) + wire.kstring(topic_name) + struct.pack(">iiqi", 1, partition, ts, n)
        with wire.KafkaConn.to(broker.bootstrap) as c:
            r = wire.Reader(c.request(2, 0, body))
        out = r.array(lambda t: (t.string(), t.array(lambda p: (p.i32(), p.i16(), p.array(lambda o: o.i64())))))
        assert r.done()
        return out[0][1][0][1:]

    assert v0(0, -1, 5) == (0, [3, 2, 1, 0])
    assert v0(0, -1, 1) == (0, [3])
    assert v0(0, -2, 5) == (0, [0])
    assert v0(7, -1, 1)[0] == 3


def test_zookeeper_era_and_message_set_fetches_get_unsupported_version(broker, admin, topic_name):
    """OffsetCommit v0, OffsetFetch v0 and Fetch v0-v3 are answered, in
    their own layout, with UNSUPPORTED_VERSION for every partition; the
    connection stays open."""
    kutil.create_topic(admin, topic_name, 1)
    kutil.produce(broker.bootstrap, topic_name, [{"value": b"x"}])
    t = wire.kstring(topic_name)
    with wire.KafkaConn.to(broker.bootstrap) as c:
        r = wire.Reader(c.request(8, 0, wire.kstring("g") + struct.pack(">i", 1) + t
                                  + struct.pack(">iiq", 1, 0, 1) + wire.kstring(None)))
        assert r.array(lambda x: (x.string(), x.array(lambda p: (p.i32(), p.i16())))) == [(topic_name, [(0, 35)])]
        assert r.done()
        r = wire.Reader(c.request(9, 0, wire.kstring("g") + struct.pack(">i", 1) + t + struct.pack(">ii", 1, 0)))
        got = r.array(lambda x: (x.string(), x.array(lambda p: (p.i32(), p.i64(), p.string(), p.i16()))))
        assert got == [(topic_name, [(0, -1, "", 35)])] and r.done()
        for v in range(4):
            body = struct.pack(">iii", -1, 100, 1) + (struct.pack(">i", 1 << 20) if v >= 3 else b"") \
                + struct.pack(">i", 1) + t + struct.pack(">iiqi", 1, 0, 0, 1 << 20)
            r = wire.Reader(c.request(1, v, body))
            if v >= 1:
                r.i32()  # throttle
            got = r.array(lambda x: (x.string(), x.array(lambda p: (p.i32(), p.i16(), p.i64(), p.bytes_()))))
            assert got == [(topic_name, [(0, UNSUPPORTED_VERSION, -1, b"")])], (v, got)
            assert r.done(), v
        assert c.api_versions()[0] == 0, "the connection stays usable"


def test_kafka_python_at_the_floor_consumes_commits_and_resumes_in_a_group(broker, admin, topic_name):
    """kafka-python pinned to 0.11 (the oldest protocol level that reads
    record batch v2: Fetch v4+) in a consumer group: consumes 2,000
    records, commits, and a second consumer of the group after a restart
    of the client resumes where it left off."""
    from kafka import KafkaConsumer
    kutil.create_topic(admin, topic_name, 3)
    kutil.produce(broker.bootstrap, topic_name, [{"key": b"%d" % i, "value": b"v%d" % i} for i in range(2000)])
    group = kutil.unique("floor")

    def consumer():
        return KafkaConsumer(topic_name, bootstrap_servers=broker.bootstrap, api_version=(0, 11), group_id=group,
                             auto_offset_reset="earliest", enable_auto_commit=False, consumer_timeout_ms=8000)

    c = consumer()
    seen = []
    try:
        for m in c:
            seen.append(m.value)
            if len(seen) == 2000:
                break
        c.commit()
    finally:
        c.close()
    assert sorted(seen) == sorted(b"v%d" % i for i in range(2000))
    kutil.produce(broker.bootstrap, topic_name, [{"value": b"late%d" % i} for i in range(10)])
    c = consumer()
    try:
        again = [m.value for m in c]
    finally:
        c.close()
    assert sorted(again) == sorted(b"late%d" % i for i in range(10)), again[:5]


# ---------------------------------------------------------------- the table

def _fill(t, name: str, ctx: dict, version: int):
    """A value for field `name` of kafka-python type `t`, meaningful enough
    for the broker to do real work (one topic, partition 0, a group)."""
    from kafka.protocol import types as T
    if t is T.TaggedFields:
        return {}
    if isinstance(t, Schema):
        return tuple(_fill(ft, fn, ctx, version) for fn, ft in zip(t.names, t.fields))
    if isinstance(t, (Array, getattr(T, "CompactArray", Array))):
        if name in ("config_names", "configs", "assignments", "replica_assignment", "forgotten_topics_data",
                    "group_assignment"):
            return [] if name != "config_names" else None
        return [_fill(t.array_of, name, ctx, version)]
    n = name.lower()
    if t in (T.Int8, T.Int16, T.Int32, T.Int64):
        for key, v in (("replica_id", -1), ("required_acks", -1), ("acks", -1), ("session_timeout", 10000),
                       ("rebalance_timeout", 10000), ("max_wait", 0), ("min_bytes", 0), ("max_bytes", 1 << 20),
                       ("timeout", 10000), ("max_offsets", 1), ("max_num_offsets", 1), ("timestamp", -1),
                       ("generation", -1), ("isolation_level", 0), ("session_id", 0), ("epoch", -1),
                       ("replication_factor", 1), ("num_partitions", 1), ("count", 2), ("resource_type", 2),
                       ("coordinator_type", 0), ("key_type", 0), ("producer_id", -1), ("retention", -1),
                       ("log_start_offset", -1), ("transaction_timeout", 60000)):
            if key in n:
                return v
        return 0
    if isinstance(t, T.Boolean) or t is T.Boolean:
        return False
    if isinstance(t, (T.String, getattr(T, "CompactString", T.String))):
        if "transactional_id" in n or "group_instance_id" in n:
            return None
        if "topic" in n or n in ("name", "resource_name"):
            return ctx["topic"]
        if "group" in n and "protocol" not in n:
            return ctx["group"]
        if "protocol_type" in n:
            return "consumer"
        if "protocol_name" in n:
            return "range"
        if "member" in n or "consumer_id" in n:
            return ""
        return "x"
    if isinstance(t, (T.Bytes, getattr(T, "CompactBytes", T.Bytes))) or t is T.Bytes:
        if "record" in n or "message" in n:
            if ctx["api"] == 0 and version <= 2:
                return _message_v0(b"table")
            return wire.encode_batch([wire.Rec(None, b"table", int(time.time() * 1000))])
        return b""
    return None


def _kafka_python_requests():
    from kafka.protocol import admin as A, api_versions as AV, commit as C, fetch as F, find_coordinator as FC
    from kafka.protocol import group as G, init_producer_id as IP, list_offsets as L, metadata as M
    from kafka.protocol import produce as P
    for cls in (P.ProduceRequest, F.FetchRequest, L.ListOffsetsRequest, M.MetadataRequest, C.OffsetCommitRequest,
                C.OffsetFetchRequest, FC.FindCoordinatorRequest, G.JoinGroupRequest, G.SyncGroupRequest,
                G.HeartbeatRequest, G.LeaveGroupRequest, AV.ApiVersionsRequest, A.CreateTopicsRequest,
                A.DeleteTopicsRequest, A.DescribeConfigsRequest, A.AlterConfigsRequest, A.CreatePartitionsRequest,
                A.DescribeGroupsRequest, A.ListGroupsRequest, A.DeleteGroupsRequest, IP.InitProducerIdRequest):
        for req in cls:
            yield req
    # The ACL APIs' versions 0 and 1 (kafka-python encodes DescribeAcls v2
    # without the flexible layout Kafka's v2 has; kio covers v2 and v3).
    for cls in (A.DescribeAclsRequest, A.CreateAclsRequest, A.DeleteAclsRequest):
        for req in cls:
            if req.API_VERSION <= 1:
                yield req


def _response_class(api: int, version: int, req):
    """kafka-python's response class for the version, where kafka-python
    2.2 gets its own wrong: DescribeGroups v3's response lacks
    authorized_operations, ProduceResponse_v8 lacks v8's record_errors
    and error_message (Kafka's schema has both since v8)."""
    from kafka.protocol import types as T
    from kafka.protocol.admin import DescribeGroupsResponse
    from kafka.protocol.api import Response
    from kafka.protocol.produce import ProduceResponse
    if api == 15 and version >= 3:
        group = DescribeGroupsResponse[version].SCHEMA.fields[1].array_of
        if "authorized_operations" not in group.names:
            class DescribeGroupsResponseV3(Response):
                API_KEY, API_VERSION = 15, version
                SCHEMA = Schema(
                    ("throttle_time_ms", T.Int32),
                    ("groups", Array(*zip(group.names, group.fields), ("authorized_operations", T.Int32))))
            return DescribeGroupsResponseV3
    if api == 0 and version == 8:
        v7 = ProduceResponse[7].SCHEMA
        part = v7.fields[0].array_of.fields[1].array_of

        class ProduceResponseV8(Response):
            API_KEY, API_VERSION = 0, 8
            SCHEMA = Schema(
                ("topics", Array(("topic", T.String("utf-8")), ("partitions", Array(
                    *zip(part.names, part.fields),
                    ("record_errors", Array(("batch_index", T.Int32),
                                            ("batch_index_error_message", T.String("utf-8")))),
                    ("error_message", T.String("utf-8")))))),
                ("throttle_time_ms", T.Int32))
        return ProduceResponseV8
    return req.RESPONSE_TYPE


TABLE = [(r.API_KEY, r.API_VERSION, r) for r in _kafka_python_requests()
         if r.API_KEY in KAFKA_39 and KAFKA_39[r.API_KEY][0] <= r.API_VERSION <= KAFKA_39[r.API_KEY][1]]


@pytest.mark.parametrize("api,version,req", TABLE, ids=[f"{r.__name__}" for _, _, r in TABLE])
def test_every_kafka_39_version_round_trips(broker, admin, api, version, req):
    """kafka-python's encoding of each (API, version) Kafka 3.9 accepts and
    kafka-python implements: Strata answers in that version's layout
    (kafka-python's decoder reads the whole response), on a connection
    that stays open."""
    topic = kutil.unique(f"tbl-{api}-{version}")
    if api not in (19,):  # CreateTopics creates it
        kutil.create_topic(admin, topic, 1)
    ctx = {"api": api, "topic": topic if api != 20 else kutil.create_topic(admin, kutil.unique("del"), 1),
           "group": kutil.unique("tbl")}
    values = _fill(req.SCHEMA, "", ctx, version)
    if api == 18 and version >= 3:
        values = ("strata-e2e", "1.0") + tuple(values[2:])
    request = req(*values)
    body = request.encode()
    with wire.KafkaConn.to(broker.bootstrap) as c:
        raw = c.request(api, version, body, flexible=bool(getattr(req, "FLEXIBLE_VERSION", False)))
        resp_cls = _response_class(api, version, req)
        buf = io.BytesIO(raw)
        if getattr(resp_cls, "FLEXIBLE_VERSION", False) and api != 18:
            from kafka.protocol.types import TaggedFields
            TaggedFields.decode(buf)  # response header tagged fields
        decoded = resp_cls.decode(buf)
        assert buf.tell() == len(raw), \
            f"{req.__name__}: {len(raw) - buf.tell()} bytes left after kafka-python decoded {decoded}"
        assert c.api_versions()[0] == 0
    assert broker.alive()


# ------------------------------------------- the table, flexible versions

def _kio_value(field, ctx: dict, api: int):
    """A value for a kio request field: meaningful names (the topic, the
    group), neutral numbers, one element per array."""
    import dataclasses
    import datetime
    from kio.serial._introspect import EntityField, EntityTupleField, PrimitiveTupleField, classify_field
    n = field.name.lower()
    kind = classify_field(field)
    if isinstance(kind, EntityTupleField):
        if n in ("forgotten_topics_data", "assignments", "configs", "group_assignment", "replica_state"):
            return ()
        return (_kio_entity(kind.type_, ctx, api),)
    if isinstance(kind, EntityField):
        if field.default is not dataclasses.MISSING or n == "replica_state":
            return field.default if field.default is not dataclasses.MISSING else None
        return _kio_entity(kind.type_, ctx, api)
    t = field.metadata["kafka_type"]
    if isinstance(kind, PrimitiveTupleField):
        if t == "string":
            if "topic" in n or n == "names":
                return (ctx["topic"],)
            return (ctx["group"],) if "group" in n or "key" in n else ()
        return (0,) if n in ("partitions", "partition_indexes") else ()
    if t == "string":
        if "transactional_id" in n and field.default is not None:
            return "kio-never-initialised"  # a transaction API's (not nullable) id
        if "transactional_id" in n or "group_instance_id" in n or n in ("rack_id", "reason", "client_rack"):
            return None if field.default is None or "instance" in n or "transactional" in n else ""
        if "topic" in n or n in ("name", "resource_name"):
            return ctx["topic"]
        if "group" in n or n == "key":
            return ctx["group"]
        if "protocol_type" in n:
            return "consumer"
        if "protocol_name" in n:
            return "range"
        if "member" in n:
            return ""
        if "software_name" in n:
            return "strata-e2e"
        if "software_version" in n:
            return "1.0"
        return field.default if isinstance(field.default, str) else "x"
    if t in ("timedelta_i32", "timedelta_i64"):
        ms = {"max_wait": 0, "timeout": 10000, "session_timeout": 10000, "rebalance_timeout": 10000,
              "transaction_timeout": 60000}.get(n, 10000)
        if "retention" in n:
            ms = -1
        return datetime.timedelta(milliseconds=ms)
    if t == "uuid":
        return ctx["topic_id"] if "topic" in n else None
    if t == "bool":
        return False
    if t == "records":
        return wire.encode_batch([wire.Rec(None, b"table", int(time.time() * 1000))])
    if t == "bytes":
        return b""
    if t == "float64":
        return 0.0
    for key, v in (("replica_id", -1), ("acks", -1), ("min_bytes", 0), ("max_bytes", 1 << 20),
                   ("partition_max_bytes", 1 << 20), ("timestamp", -1), ("generation", -1), ("epoch", -1),
                   ("isolation_level", 0), ("session_id", 0), ("replication_factor", 1), ("num_partitions", 1),
                   ("count", 2), ("resource_type", 2), ("key_type", 0), ("producer_id", -1), ("endpoint_type", 1),
                   ("log_start_offset", -1), ("leader_epoch", -1), ("committed_offset", 0), ("fetch_offset", 0)):
        if key in n:
            return v
    return 0


def _kio_entity(cls, ctx: dict, api: int):
    import dataclasses
    values = {f.name: _kio_value(f, ctx, api) for f in dataclasses.fields(cls)}
    if api == 20 and "topic_id" in values and "name" in values:  # DeleteTopics v6: by name
        values["topic_id"] = None
    return cls(**values)


def _kio_pairs():
    """(API, version) pairs Kafka 3.9 accepts, Strata serves, and
    kafka-python cannot encode: the flexible versions."""
    from kio.index import load_request_schema
    with_kafka_python = {(api, v) for api, v, _ in TABLE}
    from kio.index import UnknownEntity
    out = []
    for api, (lo, hi) in sorted((a, r) for a, r in KAFKA_39.items() if a in STRATA_APIS):
        for v in range(lo, hi + 1):
            if (api, v) in with_kafka_python:
                continue
            try:
                load_request_schema(api, v)
            except UnknownEntity:
                continue
            out.append((api, v))
    return out


def _served(b) -> dict[int, tuple[int, int]]:
    with wire.KafkaConn.to(b.bootstrap) as c:
        return c.api_versions()[1]


KIO_TABLE = _kio_pairs()
# The right answers to a lone request from no member of an empty group:
# JoinGroup without a member id gets MEMBER_ID_REQUIRED (KIP-394);
# Heartbeat, SyncGroup and LeaveGroup from no member UNKNOWN_MEMBER_ID;
# DeleteGroups and OffsetDelete of a group never created GROUP_ID_NOT_FOUND.
# The transaction APIs for a transactional id never initialised:
# INVALID_PRODUCER_ID_MAPPING (AddPartitionsToTxn's verify-only check:
# INVALID_TXN_STATE); DescribeTransactions: TRANSACTIONAL_ID_NOT_FOUND.
EXPECTED_ERRORS = {11: {79}, 12: {25}, 14: {25}, 13: {25}, 42: {69}, 47: {69},
                   24: {49, 48}, 25: {49}, 26: {49}, 28: {49}, 65: {105},
                   # a single broker always leads: no election is needed
                   43: {84},
                   # an empty target replica list is not an assignment
                   45: {39},
                   # SASL on a PLAINTEXT listener: ILLEGAL_SASL_STATE, as Kafka
                   17: {34}, 36: {34},
                   # a user with no credential: RESOURCE_NOT_FOUND; SCRAM
                   # mechanism 0 is no mechanism: UNSUPPORTED_SASL_MECHANISM
                   50: {91}, 51: {33},
                   # the ACL APIs without an authorizer: SECURITY_DISABLED, as Kafka
                   29: {54}, 30: {54}, 31: {54}}


@pytest.mark.parametrize("api,version", KIO_TABLE, ids=[f"api{a}v{v}" for a, v in KIO_TABLE])
def test_every_flexible_kafka_39_version_round_trips(broker, admin, api, version):
    """kio's encoding (generated from Kafka's message schemas, independent of
    the broker's codec crate) of each (API, version) Kafka 3.9 accepts that
    kafka-python does not implement: Strata answers in that version's layout
    (kio's decoder reads the whole response), and the connection stays open."""
    import uuid as uuidlib
    from kio.index import load_request_schema, load_response_schema
    from kio.serial import entity_reader, entity_writer
    from kafka.protocol.types import TaggedFields
    lo, hi = _served(broker).get(api, (0, -1))
    if not lo <= version <= hi:
        pytest.fail(f"api {api} v{version}: Kafka 3.9 accepts it, Strata serves {lo}..{hi}")
    topic = kutil.unique(f"kio-{api}-{version}")
    if api != 19:
        kutil.create_topic(admin, topic, 1)
    if api == 20:
        topic = kutil.create_topic(admin, kutil.unique("del"), 1)
    tid = uuidlib.UUID(int=0)
    if api != 19:
        from test_newest_versions import _topic_id
        tid = _topic_id(admin, topic)
    ctx = {"topic": topic, "group": kutil.unique("kio"), "topic_id": tid}
    req_cls = load_request_schema(api, version)
    request = _kio_entity(req_cls, ctx, api)
    buf = io.BytesIO()
    entity_writer(req_cls)(buf, request)
    resp_cls = load_response_schema(api, version)
    with wire.KafkaConn.to(broker.bootstrap) as c:
        raw = c.request(api, version, buf.getvalue(), flexible=req_cls.__flexible__ and api != 18)
        at = 0
        if resp_cls.__flexible__ and api != 18:
            b = io.BytesIO(raw)
            TaggedFields.decode(b)  # response header tagged fields
            at = b.tell()
        decoded, size = entity_reader(resp_cls)(raw, at)
        assert at + size == len(raw), f"{len(raw) - at - size} bytes left after kio decoded {decoded}"
        assert c.api_versions()[0] == 0
    errors = _error_codes(decoded) - {0} - EXPECTED_ERRORS.get(api, set())
    assert not errors, f"{resp_cls.__name__} v{version}: errors {errors} in {decoded}"
    assert broker.alive()


def _error_codes(entity) -> set[int]:
    """Every error code in a decoded kio response."""
    import dataclasses
    out = set()
    if dataclasses.is_dataclass(entity):
        for f in dataclasses.fields(entity):
            v = getattr(entity, f.name)
            if f.name == "error_code":
                out.add(int(getattr(v, "value", v)))
            else:
                out |= _error_codes(v)
    elif isinstance(entity, tuple):
        for v in entity:
            out |= _error_codes(v)
    return out
