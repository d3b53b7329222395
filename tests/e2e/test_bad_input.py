"""Corrupt and oversized input: wrong CRC, MESSAGE_TOO_LARGE, oversized and
garbage frames. The broker must reject the bad thing, store nothing of it,
and keep serving everything else."""

import os
import struct
import time

import pytest
from confluent_kafka import KafkaError

import kutil
import wire

CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10


def _values(b, topic, n):
    res = kutil.consume(b.bootstrap, topic, [0], expected=n)
    assert not res.errors, [e.str() for e in res.errors]
    assert [m.offset for m in res.messages] == list(range(n)), "offsets not contiguous"
    return [m.value for m in res.messages]


def test_corrupt_crc_rejected_and_valid_handmade_batch_accepted(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1)
    kutil.produce_one_per_batch(broker.bootstrap, topic_name, [{"value": f"good{i}".encode()} for i in range(5)])
    assert kutil.watermarks(broker.bootstrap, topic_name, 0) == (0, 5)

    recs = [wire.Rec(b"k", f"hand{j}".encode(), int(time.time() * 1000), [("h", b"1")]) for j in range(3)]
    good = wire.encode_batch(recs)
    correct_crc = wire.parse_batch_header(good).crc
    bad = wire.encode_batch(recs, crc_override=correct_crc ^ 0x5A5A5A5A)

    with wire.KafkaConn.to(broker.bootstrap) as c:
        r = c.produce_v3(topic_name, 0, bad, acks=-1)
        assert r.error_code == CORRUPT_MESSAGE, f"corrupt CRC: expected error 2, got {r}"
        # a payload bit flipped after computing the CRC is corrupt too
        flipped = bytearray(good)
        flipped[-3] ^= 0x01
        r = c.produce_v3(topic_name, 0, bytes(flipped), acks=1)
        assert r.error_code == CORRUPT_MESSAGE, f"flipped payload byte: expected error 2, got {r}"
        assert kutil.watermarks(broker.bootstrap, topic_name, 0) == (0, 5), "high watermark moved"

        # same connection still usable; the correct batch is accepted at offset 5
        r = c.produce_v3(topic_name, 0, good, acks=-1)
        assert r.error_code == 0 and r.base_offset == 5, f"valid hand-made batch: {r}"

    kutil.produce_one_per_batch(broker.bootstrap, topic_name, [{"value": f"after{i}".encode()} for i in range(4)])
    assert kutil.watermarks(broker.bootstrap, topic_name, 0) == (0, 12)
    assert _values(broker, topic_name, 12) == \
        [f"good{i}".encode() for i in range(5)] + [f"hand{j}".encode() for j in range(3)] + \
        [f"after{i}".encode() for i in range(4)]

    # raw Fetch returns the hand-made batch byte-for-byte decodable, CRC intact
    with wire.KafkaConn.to(broker.bootstrap) as c:
        f = c.fetch_v4(topic_name, 0, 5, max_wait_ms=100)
    assert f.error_code == 0 and f.high_watermark == 12
    dec = [r for r in wire.decode_batches(f.records) if r.offset >= 5]
    assert [(r.offset, r.key, r.value, r.headers) for r in dec[:3]] == \
        [(5 + j, b"k", f"hand{j}".encode(), [("h", b"1")]) for j in range(3)]


def test_message_too_large(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1, config={"max.message.bytes": "10000"})
    kutil.produce(broker.bootstrap, topic_name, [{"value": b"small-before"}])
    dels = kutil.produce(broker.bootstrap, topic_name, [{"value": os.urandom(50_000)}], allow_errors=True,
                         **{"message.max.bytes": 2_000_000, "linger.ms": 0})
    assert dels[0].error is not None, "50 kB record accepted by a topic with max.message.bytes=10000"
    assert dels[0].error.code() == KafkaError.MSG_SIZE_TOO_LARGE, dels[0].error
    assert kutil.watermarks(broker.bootstrap, topic_name, 0) == (0, 1)
    kutil.produce(broker.bootstrap, topic_name, [{"value": b"small-after"}])
    assert _values(broker, topic_name, 2) == [b"small-before", b"small-after"]

    # the raw protocol agrees: error 10, nothing stored
    big = wire.encode_batch([wire.Rec(None, os.urandom(20_000), int(time.time() * 1000))])
    with wire.KafkaConn.to(broker.bootstrap) as c:
        r = c.produce_v3(topic_name, 0, big)
    assert r.error_code == MESSAGE_TOO_LARGE, r
    assert kutil.watermarks(broker.bootstrap, topic_name, 0) == (0, 2)


def _client_still_works(broker, admin, topic):
    kutil.produce(broker.bootstrap, topic, [{"value": b"still alive"}])
    res = kutil.consume(broker.bootstrap, topic, [0], expected=1)
    assert [m.value for m in res.messages][-1] == b"still alive"


GARBAGE_FRAMES = {
    "length_2^31-1": struct.pack(">i", 2**31 - 1) + b"\x00" * 16,
    "length_negative": struct.pack(">i", -5) + b"\x00" * 16,
    "length_over_default_max": struct.pack(">i", 104857600 + 1) + b"\x00" * 16,
    "too_short_for_header": struct.pack(">i", 3) + b"\x00\x12\x00",
    "unknown_api_key": struct.pack(">i", 10) + struct.pack(">hhih", 31000, 0, 1, -1),
    "random_bytes": struct.pack(">i", 64) + bytes(range(200, 256)) + b"\xff" * 8,
    # a complete frame whose Produce v3 body stops in the middle of the timeout field
    "truncated_produce_body": struct.pack(">i", 15) + struct.pack(">hhih", 0, 3, 1, -1) + b"\xff\xff\x00\x01\x00",
    "garbage_in_valid_frame_after_good_request": None,  # see below
}


@pytest.mark.parametrize("kind", list(GARBAGE_FRAMES))
def test_bad_frame_closes_only_that_connection(broker, admin, topic_name, kind):
    kutil.create_topic(admin, topic_name, 1)
    with wire.KafkaConn.to(broker.bootstrap) as bystander, wire.KafkaConn.to(broker.bootstrap) as victim:
        assert bystander.api_versions()[0] == 0
        if kind == "garbage_in_valid_frame_after_good_request":
            assert victim.api_versions()[0] == 0
            # a Produce v3 whose records field claims more bytes than the frame holds
            body = wire.kstring(None) + struct.pack(">hii", -1, 1000, 1) + wire.kstring(topic_name) + \
                struct.pack(">iii", 1, 0, 5000) + b"\x00" * 10
            payload = wire.request_header_v1(0, 3, 99, "x") + body
            victim.send_raw(struct.pack(">i", len(payload)) + payload)
        else:
            victim.send_raw(GARBAGE_FRAMES[kind])
        outcome = victim.wait_closed(timeout=10)
        assert outcome is None, f"{kind}: connection not closed: {outcome}"
        # the other connection was not affected
        assert bystander.api_versions()[0] == 0
    assert broker.alive()
    assert kutil.watermarks(broker.bootstrap, topic_name, 0) == (0, 0), "garbage stored as data"
    _client_still_works(broker, admin, topic_name)


def test_socket_request_max_bytes_setting(broker_factory):
    b = broker_factory({"socket.request.max.bytes": 1 << 20})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("maxreq"), 1)
    with wire.KafkaConn.to(b.bootstrap) as victim:
        victim.send_raw(struct.pack(">i", (1 << 20) + 1024) + b"\x00" * 64)
        assert victim.wait_closed(timeout=10) is None, "frame over socket.request.max.bytes not refused"
    # a request just under the limit is still served
    with wire.KafkaConn.to(b.bootstrap) as c:
        batch = wire.encode_batch([wire.Rec(None, os.urandom(900_000), int(time.time() * 1000))])
        r = c.produce_v3(topic, 0, batch)
        assert r.error_code == 0 and r.base_offset == 0, r
    _client_still_works(b, adm, topic)
