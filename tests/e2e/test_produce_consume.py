"""Produce/consume round trips with confluent-kafka (librdkafka)."""

import os
import random
import re
import time

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME

import kutil
import wire


def _keyed_records(n_keys: int, per_key: int, seed: int = 1):
    rnd = random.Random(seed)
    records = []
    for seq in range(per_key):
        for k in range(n_keys):
            key = f"key-{k:04d}".encode()
            value = f"{k}:{seq}:".encode() + rnd.randbytes(rnd.randint(0, 300))
            headers = [("seq", str(seq).encode()), ("bin", bytes([k % 256, 0, 255])),
                       ("dup", b"first"), ("dup", b"second")]
            if seq % 7 == 0:
                headers.append(("empty", b""))
            records.append({"key": key, "value": value, "headers": headers})
    return records


def test_keyed_roundtrip_12_partitions(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 12)
    records = _keyed_records(n_keys=150, per_key=20)
    dels = kutil.produce(broker.bootstrap, topic_name, records, acks="all")

    # delivery reports: same key -> same partition, offsets increase in produce order
    by_key: dict[bytes, list] = {}
    for d in dels:
        assert 0 <= d.partition < 12 and d.offset >= 0
        by_key.setdefault(d.key, []).append(d)
    for key, ds in by_key.items():
        assert len({d.partition for d in ds}) == 1, f"key {key} spread over partitions"
        offs = [d.offset for d in ds]
        assert offs == sorted(offs) and len(set(offs)) == len(offs), f"key {key} offsets {offs}"
    used = {d.partition for d in dels}
    assert len(used) >= 8, f"150 keys landed on only {len(used)} of 12 partitions"

    # unique (partition, offset) for every record, contiguous per partition
    per_part: dict[int, list[int]] = {}
    for d in dels:
        per_part.setdefault(d.partition, []).append(d.offset)
    for p, offs in per_part.items():
        assert sorted(offs) == list(range(len(offs))), f"partition {p} offsets not 0..n-1"
        assert kutil.watermarks(broker.bootstrap, topic_name, p) == (0, len(offs))

    res = kutil.consume(broker.bootstrap, topic_name, list(range(12)), expected=len(records))
    assert not res.errors, res.errors
    assert len(res.messages) == len(records)
    expected = {(d.partition, d.offset): records[d.index] for d in dels}
    for m in res.messages:
        rec = expected.pop((m.partition, m.offset))
        assert m.key == rec["key"]
        assert m.value == rec["value"]
        assert m.headers == rec["headers"], (m.headers, rec["headers"])
        assert m.timestamp[0] == TIMESTAMP_CREATE_TIME
    assert not expected, f"{len(expected)} produced records not consumed"

    # consumption order within a partition follows offsets; per key follows produce order
    for p, msgs in res.by_partition().items():
        assert [m.offset for m in msgs] == sorted(m.offset for m in msgs)
    seen: dict[bytes, list[int]] = {}
    for m in res.messages:
        seen.setdefault(m.key, []).append(int(m.value.split(b":")[1]))
    for key, seqs in seen.items():
        assert seqs == list(range(20)), f"key {key} consumed out of order: {seqs}"


@pytest.mark.parametrize("acks", [-1, 1])
def test_pipelined_produce_keeps_request_order(broker, admin, topic_name, acks):
    """Kafka handles the requests of one connection strictly in order, so a
    client pipelining Produce requests (librdkafka does, max.in.flight > 1)
    gets its batches appended in send order. 64 raw Produce v3 requests for
    the same partition are sent back to back, then the responses read."""
    kutil.create_topic(admin, topic_name, 1)
    with wire.KafkaConn.to(broker.bootstrap) as c:
        corr = []
        for i in range(64):
            # alternate large and small batches so concurrent handling would show
            value = str(i).encode() * (3000 if i % 2 == 0 else 1)
            batch = wire.encode_batch([wire.Rec(None, value, int(time.time() * 1000))])
            corr.append(c.send_request(wire.API_PRODUCE, 3, wire.produce_v3_body(acks, 30000, {topic_name: {0: batch}})))
        offsets = []
        for cid in corr:  # recv_response asserts responses come back in request order
            r = wire.parse_produce_v3_response(c.recv_response(cid))[(topic_name, 0)]
            assert r.error_code == 0, r
            offsets.append(r.base_offset)
    assert offsets == list(range(64)), f"pipelined batches appended out of request order: {offsets}"
    res = kutil.consume(broker.bootstrap, topic_name, [0], expected=64)
    assert [m.value[: len(str(i))] for i, m in enumerate(res.messages)] == [str(i).encode() for i in range(64)]


def test_edge_values(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1)
    big = os.urandom(900_000)  # below the default max.message.bytes (1048588)
    records = [
        {"key": None, "value": b"null key"},
        {"key": b"k", "value": b""},
        {"key": b"tombstone", "value": None},
        {"key": b"", "value": bytes(range(256))},
        {"key": "ключ-🔑".encode(), "value": "значение".encode(),
         "headers": [("h-null", None), ("ü", "ü".encode())]},
        {"key": b"big", "value": big},
        {"key": b"after-big", "value": b"x"},
    ]
    dels = kutil.produce_one_per_batch(broker.bootstrap, topic_name, records)
    assert [d.offset for d in dels] == list(range(len(records)))
    res = kutil.consume(broker.bootstrap, topic_name, [0], expected=len(records))
    assert not res.errors, res.errors
    got = [(m.key, m.value, m.headers or []) for m in res.messages]
    want = [(r["key"], r["value"], r.get("headers", [])) for r in records]
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        assert g[0] == w[0], f"record {i} key"
        assert g[1] == w[1], f"record {i} value ({None if g[1] is None else len(g[1])} bytes)"
        assert g[2] == w[2], f"record {i} headers"


def test_acks_levels(broker, admin, topic_name):
    """acks=0, 1 and all each to its own partition; everything is readable
    and the high watermark reaches the count (acks=0 gets no offsets back)."""
    kutil.create_topic(admin, topic_name, 3)
    n = 300
    for p, acks in enumerate(["0", "1", "all"]):
        recs = [{"value": f"{acks}-{i}".encode(), "partition": p} for i in range(n)]
        dels = kutil.produce(broker.bootstrap, topic_name, recs, acks=acks)
        if acks != "0":
            assert sorted(d.offset for d in dels) == list(range(n)), f"acks={acks}"
        kutil.wait_until(lambda p=p: kutil.watermarks(broker.bootstrap, topic_name, p) == (0, n),
                         timeout=30, what=f"high watermark {n} on partition {p} (acks={acks})")
    res = kutil.consume(broker.bootstrap, topic_name, [0, 1, 2], expected=3 * n)
    assert not res.errors
    for p, acks in enumerate(["0", "1", "all"]):
        msgs = res.by_partition()[p]
        assert sorted(m.value for m in msgs) == sorted(f"{acks}-{i}".encode() for i in range(n))
        assert [m.offset for m in msgs] == list(range(n))


def test_consume_from_middle_offset(broker, admin, topic_name):
    """Fetching from an offset inside a batch returns records from that offset on."""
    kutil.create_topic(admin, topic_name, 1)
    recs = [{"value": f"v{i}".encode()} for i in range(500)]
    dels = kutil.produce(broker.bootstrap, topic_name, recs, **{"linger.ms": 50})  # multi-record batches
    value_at = {d.offset: d.value for d in dels}
    for start in (1, 137, 499):
        res = kutil.consume(broker.bootstrap, topic_name, {0: start}, expected=500 - start)
        assert not res.errors
        assert [m.offset for m in res.messages] == list(range(start, 500))
        assert all(m.value == value_at[m.offset] for m in res.messages)
    # starting exactly at the end yields nothing but EOF
    res = kutil.consume(broker.bootstrap, topic_name, {0: 500}, expected=0)
    assert res.messages == [] and not res.errors


LOG_NAME = re.compile(r"^(\d{20})\.(log|index|timeindex)$")


def test_on_disk_layout(broker, admin, topic_name):
    """DATA_DIR/<topic>-<partition>/<20-digit base offset>.log/.index/.timeindex,
    and segments roll at segment.bytes."""
    kutil.create_topic(admin, topic_name, 2, config={"segment.bytes": str(1024 * 1024)})
    value = os.urandom(1000)
    recs = [{"value": value, "partition": 0} for _ in range(3500)]  # ~3.5 MiB
    recs.append({"value": b"p1", "partition": 1})
    kutil.produce(broker.bootstrap, topic_name, recs)

    for p in (0, 1):
        d = broker.partition_dir(topic_name, p)
        assert d.is_dir(), f"missing partition dir {d}; data dir has {sorted(os.listdir(broker.data_dir))}"
        names = os.listdir(d)
        for ext in ("log", "index", "timeindex"):
            assert f"{0:020d}.{ext}" in names, f"{d} lacks {0:020d}.{ext}: {sorted(names)}"

    d0 = broker.partition_dir(topic_name, 0)
    logs = sorted(int(m.group(1)) for n in os.listdir(d0) if (m := LOG_NAME.match(n)) and m.group(2) == "log")
    assert len(logs) >= 3, f"~3.5 MiB with segment.bytes=1MiB should give >= 3 segments, got {logs}"
    assert logs[0] == 0 and all(0 < b < 3500 for b in logs[1:]), logs
    sizes = [(d0 / f"{b:020d}.log").stat().st_size for b in logs]
    assert all(s <= 1024 * 1024 for s in sizes[:-1]), f"closed segments larger than segment.bytes: {sizes}"
    assert sum(sizes) >= 3500 * 1000, f"log files hold less than the payload: {sizes}"
    for b in logs:
        assert (d0 / f"{b:020d}.index").exists() and (d0 / f"{b:020d}.timeindex").exists(), \
            f"segment {b} lacks index files: {sorted(os.listdir(d0))}"

    # every record still readable across segment boundaries
    res = kutil.consume(broker.bootstrap, topic_name, [0], expected=3500, **{"fetch.max.bytes": 1 << 20})
    assert [m.offset for m in res.messages] == list(range(3500))
    assert all(m.value == value for m in res.messages)


def test_min_insync_replicas(broker, admin, topic_name):
    """With one replica in sync, min.insync.replicas=2 makes acks=all produce
    fail with NOT_ENOUGH_REPLICAS (19) and store nothing; acks=1 still works."""
    kutil.create_topic(admin, topic_name, 1, config={"min.insync.replicas": "2"})
    batch = wire.encode_batch([wire.Rec(None, b"x", int(time.time() * 1000))])
    with wire.KafkaConn.to(broker.bootstrap) as c:
        r = c.produce_v3(topic_name, 0, batch, acks=-1)
        assert r.error_code == 19, f"acks=all with ISR 1 < min.insync.replicas 2: {r}"
        assert kutil.watermarks(broker.bootstrap, topic_name, 0) == (0, 0)
        r = c.produce_v3(topic_name, 0, batch, acks=1)
        assert r.error_code == 0 and r.base_offset == 0, r
