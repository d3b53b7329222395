"""Malformed, truncated, oversized and bogus requests, table-driven.

Every length and count a request carries is a number the client chose. Each
case below sends one request whose numbers lie at some nesting level, to
an API the broker serves, and expects what Kafka does with an invalid
request: that connection is closed with one log line, nothing is stored,
other connections are served throughout, and the broker's peak memory
(VmHWM) stays where it was. Before the decode bounds
(docs/decode-bounds.md), the first case aborted the broker with
"memory allocation of 154618822584 bytes failed".
"""

import struct
import time

import pytest

import kutil
import wire

U31 = 0x7FFF_FFFF


def uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cstr(s: str) -> bytes:
    """Compact string."""
    b = s.encode()
    return uvarint(len(b) + 1) + b


def frame(api: int, version: int, body: bytes, flexible: bool = False, client_id: bytes = b"ab",
          correlation_id: int = 7) -> bytes:
    header = struct.pack(">hhi", api, version, correlation_id) + struct.pack(">h", len(client_id)) + client_id
    if flexible:
        header += b"\x00"  # header tagged fields
    payload = header + body
    return struct.pack(">i", len(payload)) + payload


def s(x: str) -> bytes:
    return wire.kstring(x)


# name -> (frame, what the log says). Levels count arrays from the body's top.
CASES = {
    # The 20-byte request that aborted the broker: Metadata v1, 2^31-1 topics.
    "metadata_v1_topics_2^31": (frame(3, 1, struct.pack(">i", U31)), "Topics"),
    "metadata_v9_compact_topics_2^32": (frame(3, 9, b"\xff\xff\xff\xff\x0f" + b"\x00" * 3, True), "Topics"),
    "metadata_v4_topics_-2": (frame(3, 4, struct.pack(">i", -2) + b"\x01"), "negative length"),
    "metadata_v1_topic_name_32767": (frame(3, 1, struct.pack(">ih", 1, 32767) + b"abc"), "Name"),
    # Level 2: a Produce's partitions, then level 3: its records' length.
    "produce_v3_partitions_2^31": (
        frame(0, 3, struct.pack(">hhii", -1, -1, 30000, 1) + s("t") + struct.pack(">i", U31)), "PartitionData"),
    "produce_v9_records_2^32": (
        frame(0, 9, b"\x00" + struct.pack(">hi", -1, 30000) + b"\x02" + cstr("t") + b"\x02"
              + struct.pack(">i", 0) + b"\xff\xff\xff\xff\x0f" + b"\x00" * 4, True), "Records"),
    "produce_v3_records_-7": (
        frame(0, 3, struct.pack(">hhii", -1, -1, 30000, 1) + s("t") + struct.pack(">iii", 1, 0, -7)),
        "negative length"),
    "fetch_v12_partitions_2^32": (
        frame(1, 12, struct.pack(">iiiibii", -1, 500, 1, 1 << 20, 0, 0, -1) + b"\x02" + cstr("t")
              + b"\xff\xff\xff\xff\x0f" + b"\x00" * 8, True), "Partitions"),
    "fetch_v4_topics_2^31": (frame(1, 4, struct.pack(">iiiibi", -1, 500, 1, 1 << 20, 0, U31)), "Topics"),
    # Level 3: CreateTopics' replica assignment broker ids.
    "create_topics_v2_broker_ids_2^31": (
        frame(19, 2, struct.pack(">i", 1) + s("t") + struct.pack(">ihii", -1, -1, 1, 0) + struct.pack(">i", U31)),
        "BrokerIds"),
    "create_topics_v5_configs_2^32": (
        frame(19, 5, b"\x02" + cstr("t") + struct.pack(">ih", 1, 1) + b"\x01" + b"\xff\xff\xff\xff\x0f"
              + b"\x00" * 4, True), "Configs"),
    "offset_commit_v8_partitions_2^32": (
        frame(8, 8, cstr("g") + struct.pack(">i", -1) + cstr("") + b"\x00" + b"\x02" + cstr("t")
              + b"\xff\xff\xff\xff\x0f" + b"\x00" * 4, True), "Partitions"),
    "list_offsets_v7_topics_2^32": (
        frame(2, 7, struct.pack(">ib", -1, 0) + b"\xff\xff\xff\xff\x0f" + b"\x00" * 4, True), "Topics"),
    "describe_configs_v4_resources_2^32": (
        frame(32, 4, b"\xff\xff\xff\xff\x0f" + b"\x00" * 4, True), "Resources"),
    "delete_topics_v1_names_-2": (frame(20, 1, struct.pack(">i", -2) + struct.pack(">i", 1000)), "negative length"),
    # A well-formed request made of nothing but tiny elements decodes to many
    # times its size: refused by the cost bound (16 bytes decoded per byte).
    "offset_fetch_v8_10000_tiny_groups": (
        frame(9, 8, uvarint(10_001) + b"\x02g\x00\x00" * 10_000 + b"\x00\x00", True), "would allocate"),
    # Tagged fields: a size larger than the request, a count with nothing behind it.
    "api_versions_v3_tagged_size_2^32": (
        frame(18, 3, cstr("a") + cstr("b") + b"\x01\x05" + b"\xff\xff\xff\xff\x0f", True), "exceeds"),
    "api_versions_v3_tagged_count_2^32": (
        frame(18, 3, cstr("a") + cstr("b") + b"\xff\xff\xff\xff\x0f", True), "ends"),
    # The header and the frame itself.
    "header_client_id_32767": (struct.pack(">ihhih", 12, 3, 1, 1, 32767) + b"ab", "malformed request"),
    "unknown_api_key_999": (frame(999, 0, b""), "unknown API key"),
    "metadata_impossible_version_32000": (frame(3, 32000, b""), "unsupported version"),
    "heartbeat_v0_truncated": (frame(12, 0, s("g") + b"\x00\x00"), "ends"),
}


def test_malformed_requests_close_only_their_connection(broker_factory):
    b = broker_factory({"num.partitions": 1})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("malformed"), 1)
    kutil.produce(b.bootstrap, topic, [{"value": b"before"}])
    peak_before = b.rss_kib("VmHWM")
    with wire.KafkaConn.to(b.bootstrap) as bystander:
        for name, (raw, says) in CASES.items():
            mark = b.log_size()
            with wire.KafkaConn.to(b.bootstrap) as victim:
                victim.send_raw(raw)
                outcome = victim.wait_closed(timeout=10)
            assert outcome is None, f"{name}: connection not closed: {outcome}"
            assert b.alive(), f"{name}: broker died; log:\n{b.log_tail(start=mark)}"
            # served in between, on a connection opened before
            assert bystander.api_versions()[0] == 0, name
            log = b.log_text(start=mark)
            lines = [l for l in log.splitlines() if "closing connection" in l]
            assert len(lines) == 1, f"{name}: expected one log line, got:\n{log}"
            assert says.lower() in lines[0].lower(), f"{name}: log line does not say {says!r}: {lines[0]}"
    peak_after = b.rss_kib("VmHWM")
    assert peak_after - peak_before < 64 * 1024, \
        f"peak RSS grew from {peak_before} to {peak_after} KiB while refusing malformed requests"
    assert kutil.watermarks(b.bootstrap, topic, 0) == (0, 1), "a malformed request stored something"
    kutil.produce(b.bootstrap, topic, [{"value": b"after"}])
    res = kutil.consume(b.bootstrap, topic, [0], expected=2)
    assert [m.value for m in res.messages] == [b"before", b"after"]


def _join_v3(conn, group: str, metadata: bytes) -> bytes:
    body = s(group) + struct.pack(">ii", 6000, 6000) + s("") + s("consumer") + struct.pack(">i", 1) \
        + s("range") + wire.kbytes(metadata)
    return conn.request(11, 3, body)


def test_subscription_claiming_two_billion_topics_is_harmless(broker):
    """The group coordinator decodes the consumer protocol inside JoinGroup's
    opaque metadata; a subscription whose topic count lies is treated as
    unreadable (as a non-consumer protocol would be), never sized from."""
    group = kutil.unique("bomb-group")
    bomb = struct.pack(">hi", 1, U31) + b"\x00" * 4  # ConsumerProtocolSubscription v1
    with wire.KafkaConn.to(broker.bootstrap, timeout=30) as c:
        resp = _join_v3(c, group, bomb)
        r = wire.Reader(resp)
        r.i32()  # throttle
        assert r.i16() == 0, "join refused"
        # OffsetDelete reads the group's subscribed topics from that metadata.
        body = s(group) + struct.pack(">i", 1) + s("t") + struct.pack(">ii", 1, 0)
        resp = c.request(47, 0, body)
        assert len(resp) >= 6
    assert broker.alive()


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_decompression_bomb_does_not_inflate_in_the_broker(broker_factory, codec):
    """Two records of 200 MiB of zeros, compressed by librdkafka to a batch
    of a few hundred KiB to ~10 MiB: validated on append and stored as sent
    (the broker never inflates a batch whole to validate, store or serve
    it), and a timestamp lookup that must look inside the batch reads it
    with bounded memory. Snappy: librdkafka's single raw block of 400 MiB
    is refused, since a raw block can only be inflated whole."""
    b = broker_factory({"num.partitions": 1})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique(f"bomb-{codec}"), 1,
                               config={"max.message.bytes": str(16 << 20)})
    now = int(time.time() * 1000)
    zeros = bytes(200 << 20)
    peak_before = b.rss_kib("VmHWM")
    dels = kutil.produce(b.bootstrap, topic, [{"value": zeros, "timestamp": now},
                                              {"value": zeros, "timestamp": now + 1}],
                         allow_errors=True,
                         **{"compression.type": codec, "message.max.bytes": 500_000_000,
                            "linger.ms": 50, "batch.size": 1_000_000_000})
    del zeros
    if codec == "snappy":
        # librdkafka writes the batch as one raw snappy block, which cannot
        # be inflated in parts: one over 16 MiB is refused (INVALID_RECORD)
        # rather than held in memory to validate it.
        assert all(d.error is not None and d.error.code() == 87 for d in dels), [d.error for d in dels]
        assert kutil.watermarks(b.bootstrap, topic, 0) == (0, 0)
    else:
        assert all(d.error is None for d in dels), [d.error for d in dels]
        assert kutil.offsets_for_times(b.bootstrap, topic, 0, [now + 1, now]) == [1, 0]
    peak_after = b.rss_kib("VmHWM")
    assert peak_after - peak_before < 64 * 1024, \
        f"peak RSS grew by {(peak_after - peak_before) // 1024} MiB reading a compressed batch"
    assert b.alive()


def test_partition_counts_beyond_the_fd_limit_are_refused(broker):
    """A CreateTopics for 100,000 partitions or a CreatePartitions to 2^31-1
    used to run the broker into `Too many open files` for seconds; both are
    refused at once with INVALID_PARTITIONS (37) naming the limit."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic
    adm = kutil.admin(broker.bootstrap)
    name = kutil.unique("huge")
    t = time.monotonic()
    with pytest.raises(KafkaException) as e:
        adm.create_topics([NewTopic(name, num_partitions=100_000)], request_timeout=60)[name].result(timeout=90)
    assert e.value.args[0].code() == 37, e.value
    assert "file descriptor limit" in e.value.args[0].str(), e.value
    assert time.monotonic() - t < 10
    assert name not in kutil.topic_names(adm)

    small = kutil.create_topic(adm, kutil.unique("small"), 1)
    body = struct.pack(">i", 1) + s(small) + struct.pack(">ii", U31, -1) + struct.pack(">ib", 30000, 0)
    with wire.KafkaConn.to(broker.bootstrap) as c:
        r = wire.Reader(c.request(37, 0, body))
    r.i32()  # throttle
    results = r.array(lambda rr: (rr.string(), rr.i16(), rr.string()))
    assert results[0][1] == 37 and "file descriptor limit" in (results[0][2] or ""), results
    assert kutil.partition_count(adm, small) == 1
    assert broker.alive()
