"""Corrupted and truncated files in the data directory: detected at start or
on read, reported with the file name, recovered where possible (indexes
rebuilt, the bucket's copy of a tiered segment served); a corrupt batch is
never served."""

import os
import time

import kutil
import tierutil as tu
import wire

KAFKA_STORAGE_ERROR = 56
N = 300
T0 = int(time.time() * 1000) - 60_000  # recent: inside the default retention


def _fill(b, topic):
    """N records of ~1 KiB in 1-record batches: several 64 KiB segments."""
    recs = [{"key": b"k%04d" % i, "value": b"%06d|" % i + os.urandom(1000), "timestamp": T0 + i}
            for i in range(N)]
    kutil.produce_one_per_batch(b.bootstrap, topic, recs)
    return [r["value"] for r in recs]


def _flip_payload_byte(path, at_fraction=0.5):
    """Flips one byte inside a record payload (past the batch header at the
    chosen place), so only the CRC can tell."""
    data = bytearray(path.read_bytes())
    pos = 0
    target = int(len(data) * at_fraction)
    while pos + 12 <= len(data):
        n = int.from_bytes(data[pos + 8:pos + 12], "big")
        if pos + 12 + n > target:
            data[pos + 61 + (n - 49) // 2] ^= 0x40
            path.write_bytes(bytes(data))
            return int.from_bytes(data[pos:pos + 8], "big")
        pos += 12 + n
    raise AssertionError("no batch to corrupt")


def test_corrupt_batch_in_sealed_segment_is_never_served(broker_factory):
    b = broker_factory({"num.partitions": 1, "remote.log.storage.system.enable": "false"})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("rot"), 1, config={"segment.bytes": str(64 << 10)})
    values = _fill(b, topic)
    segs = kutil.segment_sizes(b, topic)
    assert len(segs) >= 3
    first = b.partition_dir(topic, 0) / f"{min(segs):020d}.log"
    assert b.stop() == 0
    bad = _flip_payload_byte(first)
    mark = b.log_size()
    b.start()
    # librdkafka retries KAFKA_STORAGE_ERROR without surfacing it: the raw
    # protocol shows what is served. From 0: exactly the batches before the
    # corrupt one, CRCs intact; at the corrupt one: the error, no records.
    with wire.KafkaConn.to(b.bootstrap) as c:
        f = c.fetch_v4(topic, 0, 0, max_wait_ms=100, max_bytes=1 << 20)
        assert f.error_code == 0
        got = [r.value for r in wire.decode_batches(f.records)]
        assert got == values[:bad], f"expected the {bad} records before the corrupt batch, got {len(got)}"
        f = c.fetch_v4(topic, 0, bad, max_wait_ms=100)
        assert f.error_code == KAFKA_STORAGE_ERROR and not f.records, (f.error_code, len(f.records or b""))
    log = b.log_text(start=mark)
    assert first.name in log and "corrupt record batch" in log, log[-2000:]
    # What lies after the corrupt batch is still served, CRC intact.
    res = kutil.consume(b.bootstrap, topic, {0: bad + 1}, expected=N - bad - 1, **{"check.crcs": True})
    assert not res.errors
    assert [m.value for m in res.messages] == values[bad + 1:]
    assert b.alive()


def _restart_and_read_all_from_bucket(b, topic, values, damaged):
    """Starts the stopped broker; a consumer reads every record byte for
    byte, CRC-checked, and the log says the bucket's copy of `damaged`
    (a local segment file) was served."""
    mark = b.log_size()
    b.start()
    res = kutil.consume(b.bootstrap, topic, [0], expected=N, timeout=60, **{"check.crcs": True})
    assert not res.errors, [e.str() for e in res.errors]
    assert [m.value for m in res.messages] == values
    log = b.log_text(start=mark)
    assert "serving the bucket's copy" in log and damaged.name in log, log[-2000:]


def test_corrupt_local_copy_of_a_tiered_segment_is_served_from_the_bucket(broker_factory):
    b, bucket = tu.file_broker(broker_factory, {"num.partitions": 1})
    adm = kutil.admin(b.bootstrap)
    # A long hot window: tiered segments stay local too.
    topic = kutil.create_topic(adm, kutil.unique("rot-tiered"), 1,
                               config={"segment.bytes": str(64 << 10), "local.retention.ms": "86400000"})
    values = _fill(b, topic)
    segs = kutil.segment_sizes(b, topic)
    tu.wait_remote_end(bucket, topic, 0, at_least=sorted(segs)[1])
    first = b.partition_dir(topic, 0) / f"{min(segs):020d}.log"
    assert b.stop() == 0
    bad = _flip_payload_byte(first)
    _restart_and_read_all_from_bucket(b, topic, values, first)
    assert bad > 0


def _cut_middle(path):
    """Cuts a segment file to 40% of its length, mid-batch."""
    data = path.read_bytes()
    path.write_bytes(data[:len(data) * 2 // 5 + 7])


def test_sealed_segment_cut_short_keeps_later_segments(broker_factory):
    """Damage, not a torn write: the first of several sealed segments loses
    its end. Recovery keeps every later segment; the records it lost are
    never skipped silently (KAFKA_STORAGE_ERROR there, naming the file)."""
    b = broker_factory({"num.partitions": 1, "remote.log.storage.system.enable": "false"})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("cut"), 1, config={"segment.bytes": str(64 << 10)})
    values = _fill(b, topic)
    segs = sorted(kutil.segment_sizes(b, topic))
    assert len(segs) >= 3
    first = b.partition_dir(topic, 0) / f"{segs[0]:020d}.log"
    b.kill9()
    _cut_middle(first)
    mark = b.log_size()
    b.start()
    assert kutil.watermarks(b.bootstrap, topic, 0) == (0, N), "later segments were dropped"
    with wire.KafkaConn.to(b.bootstrap) as c:
        f = c.fetch_v4(topic, 0, 0, max_wait_ms=100, max_bytes=1 << 20)
        kept = [r.value for r in wire.decode_batches(f.records)]
        assert f.error_code == 0 and 0 < len(kept) < segs[1] and kept == values[:len(kept)]
        f = c.fetch_v4(topic, 0, len(kept), max_wait_ms=100)
        assert f.error_code == KAFKA_STORAGE_ERROR and not f.records
        f = c.fetch_v4(topic, 0, segs[1] - 1, max_wait_ms=100)
        assert f.error_code == KAFKA_STORAGE_ERROR and not f.records
    log = b.log_text(start=mark)
    assert first.name in log and "shorter than its records" in log, log[-2000:]
    res = kutil.consume(b.bootstrap, topic, {0: segs[1]}, expected=N - segs[1], **{"check.crcs": True})
    assert not res.errors and [m.value for m in res.messages] == values[segs[1]:]


def test_sealed_segment_cut_short_is_read_from_the_bucket(broker_factory):
    b, bucket = tu.file_broker(broker_factory, {"num.partitions": 1})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("cut-tiered"), 1,
                               config={"segment.bytes": str(64 << 10), "local.retention.ms": "86400000"})
    values = _fill(b, topic)
    segs = sorted(kutil.segment_sizes(b, topic))
    tu.wait_remote_end(bucket, topic, 0, at_least=segs[2])
    second = b.partition_dir(topic, 0) / f"{segs[1]:020d}.log"
    b.kill9()
    _cut_middle(second)
    _restart_and_read_all_from_bucket(b, topic, values, second)


def test_truncated_indexes_and_garbage_checkpoint_are_rebuilt(broker_factory):
    b = broker_factory({"num.partitions": 1, "remote.log.storage.system.enable": "false"})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("idx"), 1, config={"segment.bytes": str(64 << 10)})
    values = _fill(b, topic)
    lookups = [T0 + i for i in (0, 77, 150, 299)]
    before = kutil.offsets_for_times(b.bootstrap, topic, 0, lookups)
    assert b.stop() == 0
    d = b.partition_dir(topic, 0)
    for f in sorted(d.glob("*.index")):
        f.write_bytes(f.read_bytes()[:7])  # not a whole entry
    for f in sorted(d.glob("*.timeindex")):
        f.write_bytes(os.urandom(24))       # entries, but out of order
    (b.data_dir / "recovery-point-offset-checkpoint").write_bytes(b"\x00garbage\xff\n")
    mark = b.log_size()
    b.start()
    res = kutil.consume(b.bootstrap, topic, [0], expected=N, **{"check.crcs": True})
    assert not res.errors
    assert [m.value for m in res.messages] == values
    assert kutil.offsets_for_times(b.bootstrap, topic, 0, lookups) == before
    log = b.log_text(start=mark)
    assert "recovery-point checkpoint" in log, log[-2000:]
    # Fetching from the middle uses the rebuilt offset index.
    with wire.KafkaConn.to(b.bootstrap) as c:
        f = c.fetch_v4(topic, 0, 211, max_wait_ms=100)
    assert f.error_code == 0
    assert wire.decode_batches(f.records)[0].offset == 211
