"""Self-check of the hand-rolled wire encoders in wire.py against
kafka-python's independent implementation. Needs no broker: it proves that a
broker rejecting our hand-made requests is the broker's doing."""

import struct

from kafka.protocol.fetch import FetchRequest
from kafka.protocol.produce import ProduceRequest
from kafka.record._crc32c import crc as kp_crc32c
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

import wire


def test_crc32c_known_vectors():
    # RFC 3720 B.4 test vectors and the classic "123456789" check value
    assert wire.crc32c(b"123456789") == 0xE3069283
    assert wire.crc32c(bytes(32)) == 0x8A9136AA
    assert wire.crc32c(b"\xff" * 32) == 0x62A8AB43
    assert wire.crc32c(bytes(range(32))) == 0x46DD794E
    for data in (b"", b"a", b"kafka" * 100, bytes(range(256)) * 3):
        assert wire.crc32c(data) == kp_crc32c(data)


def test_varint_roundtrip():
    for v in (0, 1, -1, 63, -64, 64, 300, -300, 2**31 - 1, -(2**31), 2**62, -(2**63)):
        enc = wire.zigzag_varint(v)
        dec, pos = wire.read_zigzag_varint(enc, 0)
        assert (dec, pos) == (v, len(enc))
    assert wire.zigzag_varint(-1) == b"\x01"
    assert wire.zigzag_varint(1) == b"\x02"


def _records():
    return [
        wire.Rec(b"k1", b"v1", 1_600_000_000_000, [("h", b"x"), ("n", None)]),
        wire.Rec(None, b"", 1_600_000_000_005, []),
        wire.Rec(b"k3", None, 1_600_000_000_002, [("a", b"")]),
        wire.Rec(b"k" * 300, b"v" * 5000, 1_600_000_000_010, []),
    ]


def test_batch_encoding_matches_kafka_python():
    recs = _records()
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=0,
                                  producer_id=-1, producer_epoch=-1, base_sequence=-1,
                                  batch_size=1 << 20)
    for i, r in enumerate(recs):
        b.append(i, timestamp=r.timestamp, key=r.key, value=r.value, headers=r.headers)
    theirs = bytes(b.build())
    ours = wire.encode_batch(recs, partition_leader_epoch=0)
    # kafka-python always writes partitionLeaderEpoch 0; otherwise identical
    assert ours == theirs

    # and kafka-python decodes ours, CRC valid
    batch = DefaultRecordBatch(bytearray(wire.encode_batch(recs)))
    assert batch.validate_crc()
    got = list(batch)
    assert [(r.key, r.value, r.timestamp, list(r.headers)) for r in got] == \
           [(r.key, r.value, r.timestamp, r.headers) for r in recs]

    # our decoder reads it back too
    dec = wire.decode_batches(ours + wire.encode_batch(recs, base_offset=4))
    assert [d.offset for d in dec] == list(range(8))
    assert [(d.key, d.value, d.timestamp, d.headers) for d in dec[:4]] == \
           [(r.key, r.value, r.timestamp, r.headers) for r in recs]


def test_corrupt_batch_fails_crc_check():
    recs = _records()
    good = wire.encode_batch(recs)
    h = wire.parse_batch_header(good)
    bad = wire.encode_batch(recs, crc_override=h.crc ^ 0xDEADBEEF)
    assert len(bad) == len(good) and bad != good
    assert not DefaultRecordBatch(bytearray(bad)).validate_crc()


def test_produce_v3_request_matches_kafka_python():
    batch = wire.encode_batch(_records())
    ours_body = wire.produce_v3_body(-1, 30000, {"topic-a": {2: batch}})
    req = ProduceRequest[3](transactional_id=None, required_acks=-1, timeout=30000,
                            topics=[("topic-a", [(2, batch)])])
    assert ours_body == req.encode()
    hdr = req.build_header(correlation_id=7, client_id="cid")
    assert wire.request_header_v1(0, 3, 7, "cid") == hdr.encode()


def test_fetch_v4_request_matches_kafka_python():
    ours = wire.fetch_v4_body(500, 1, 1 << 20, {"t": {0: (42, 65536), 3: (0, 100)}})
    req = FetchRequest[4](replica_id=-1, max_wait_time=500, min_bytes=1, max_bytes=1 << 20,
                          isolation_level=0, topics=[("t", [(0, 42, 65536), (3, 0, 100)])])
    assert ours == req.encode()


def test_response_parsers():
    body = struct.pack(">i", 1) + wire.kstring("t") + struct.pack(">i", 1) + \
        struct.pack(">ihqq", 0, 2, -1, -1) + struct.pack(">i", 0)
    r = wire.parse_produce_v3_response(body)
    assert r[("t", 0)].error_code == 2 and r[("t", 0)].base_offset == -1

    recs = wire.encode_batch(_records())
    body = struct.pack(">i", 0) + struct.pack(">i", 1) + wire.kstring("t") + struct.pack(">i", 1) + \
        struct.pack(">ihqq", 0, 0, 4, 4) + struct.pack(">i", -1) + wire.kbytes(recs)
    f = wire.parse_fetch_v4_response(body)[("t", 0)]
    assert f.high_watermark == 4 and f.records == recs


def test_api_versions_flexible_request_matches_kafka_python():
    from kafka.protocol.api_versions import ApiVersionsRequest
    req = ApiVersionsRequest[3](client_software_name="strata-e2e", client_software_version="1.0",
                                _tagged_fields={})
    hdr = req.build_header(correlation_id=4242, client_id="strata-e2e-raw")
    assert wire.api_versions_future_request(4242, 3)[4:] == hdr.encode() + req.encode()


def test_metadata_v4_matches_kafka_python():
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse
    req = MetadataRequest[4](topics=["a", "bb"], allow_auto_topic_creation=False)
    assert wire.metadata_v4_body(["a", "bb"], False) == req.encode()
    req = MetadataRequest[4](topics=None, allow_auto_topic_creation=True)
    assert wire.metadata_v4_body(None, True) == req.encode()
    resp = MetadataResponse[4](
        throttle_time_ms=0, brokers=[(0, "127.0.0.1", 9092, None)], cluster_id="c", controller_id=0,
        topics=[(0, "t", False, [(0, 0, 0, [0], [0]), (0, 1, 0, [0], [0])]), (3, "u", False, [])])
    brokers, controller, topics = wire.parse_metadata_v4_response(resp.encode())
    assert brokers == [(0, "127.0.0.1", 9092)] and controller == 0
    assert topics["t"].partitions == {0: (0, 0, [0], [0]), 1: (0, 0, [0], [0])}
    assert topics["u"].error_code == 3
