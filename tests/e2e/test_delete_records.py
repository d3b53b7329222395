"""DeleteRecords (Admin.deleteRecords, kafka-delete-records.sh) through
confluent-kafka's AdminClient: the log start moves up to the requested
offset, records below it are never served again (locally, from the bucket,
after a restart, and after a rebuild from the bucket alone), and refusals
carry Kafka's error codes. docs/delete-records.md."""

from __future__ import annotations

import shutil

from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import OffsetSpec

import kutil
import tierutil as tu

SEG = 64 * 1024


def delete(adm, topic: str, partition: int, offset: int, timeout: float = 30):
    """DeleteRecords of one partition; returns the low watermark."""
    tp = TopicPartition(topic, partition, offset)
    fut = adm.delete_records([tp], request_timeout=timeout, operation_timeout=timeout)
    return next(iter(fut.values())).result(timeout=timeout + 30).low_watermark


def delete_error(adm, topic: str, partition: int, offset: int) -> int:
    try:
        delete(adm, topic, partition, offset)
    except KafkaException as e:
        return e.args[0].code()
    raise AssertionError(f"DeleteRecords {topic}/{partition} at {offset} succeeded")


def first_offset_read(bootstrap: str, topic: str, start: int, reset: str) -> int | str:
    """Assigns at `start` and returns the first offset delivered, or the
    error the client reports (auto.offset.reset=error)."""
    c = kutil.consumer(bootstrap, **{"auto.offset.reset": reset})
    c.assign([TopicPartition(topic, 0, start)])
    try:
        def poll():
            m = c.poll(0.5)
            if m is None:
                return None, "nothing yet"
            if m.error():
                return f"error {m.error().code()}", m.error().str()
            return m.offset(), "record"
        return tu.wait_for(poll, 30, f"a record or an error from {topic} at {start}", interval=0)
    finally:
        c.close()


def test_delete_records_in_the_bucket_survives_a_rebuild(broker_factory):
    """Records deleted below the local log (in the bucket) and then at the
    high watermark's neighbourhood: the catalog's log start follows before
    the answer, reads below it fail with OFFSET_OUT_OF_RANGE, and a broker
    rebuilt from the bucket alone starts its log at the same offset."""
    b, bucket = tu.file_broker(broker_factory)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("delrec-tiered")
    kutil.create_topic(adm, topic, 1, config={"segment.bytes": str(SEG), "segment.ms": "2000",
                                              "local.retention.ms": "1000"})
    ds = tu.DataSet(seed=70, ts0=tu.ms_ago(5))
    n = 1500
    tu.produce_range(b.bootstrap, topic, ds, 0, n)
    tu.wait_for(lambda: ((s := tu.local_start(b, topic)) > 600 and s, f"local start {s}"),
                60, "the hot window to leave the head of the log in the bucket only")

    x = 333  # inside a remote segment: its head goes, the rest stays
    assert delete(adm, topic, 0, x) == x
    m = tu.manifest(bucket, topic, 0)
    assert m["log_start_offset"] == x, "the catalog records the deletion before the answer"
    assert all(s["last_offset"] >= x for s in m["segments"]), "segments entirely below went"
    assert tu.list_offset(adm, topic, 0, OffsetSpec.earliest()) == x
    assert kutil.watermarks(b.bootstrap, topic, 0) == (x, n)
    assert first_offset_read(b.bootstrap, topic, 100, "error") == f"error {KafkaError._AUTO_OFFSET_RESET}"
    assert first_offset_read(b.bootstrap, topic, 100, "earliest") == x
    tu.verify_range(b.bootstrap, topic, ds, x, n)

    # Deleting below the log start changes nothing; above the high
    # watermark is out of range.
    assert delete(adm, topic, 0, 10) == x
    assert delete_error(adm, topic, 0, n + 1) == KafkaError.OFFSET_OUT_OF_RANGE

    y = n - 100
    assert delete(adm, topic, 0, y) == y
    assert kutil.watermarks(b.bootstrap, topic, 0) == (y, n)
    assert tu.list_offset(adm, topic, 0, OffsetSpec.earliest()) == y

    # The bucket alone: a broker rebuilt from it starts at y (once the
    # last segment, sealed by segment.ms, is there too).
    tu.wait_for(lambda: (tu.manifest(bucket, topic, 0)["log_start_offset"] == y, "catalog"), 30,
                "the catalog to hold the second deletion")
    tu.wait_remote_end(bucket, topic, 0, n, timeout=60)
    assert b.stop() == 0
    for child in b.data_dir.iterdir():
        if child.name != "bucket":
            shutil.rmtree(child) if child.is_dir() else child.unlink()
    b.start()
    adm = kutil.admin(b.bootstrap)
    kutil.wait_topic_ready(adm, topic, 1, timeout=60)
    assert tu.list_offset(adm, topic, 0, OffsetSpec.earliest()) == y
    assert first_offset_read(b.bootstrap, topic, 0, "earliest") == y
    tu.verify_range(b.bootstrap, topic, ds, y, n)


def test_delete_records_on_local_segments_and_restart(broker_factory):
    """A topic kept on local disk only: whole segments below the new start
    are deleted at once, the log start survives a restart, and appends go
    on at the old end."""
    b = broker_factory({"log.retention.check.interval.ms": 200})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("delrec-local")
    kutil.create_topic(adm, topic, 1, config={"segment.bytes": str(SEG),
                                              "remote.storage.enable": "false"})
    ds = tu.DataSet(seed=71, ts0=tu.ms_ago(5))
    tu.produce_range(b.bootstrap, topic, ds, 0, 600)
    before = tu.local_segments(b, topic)
    assert len(before) > 4

    x = 250
    assert delete(adm, topic, 0, x) == x
    after = tu.local_segments(b, topic)
    assert min(after) <= x < min(after) + 100 and len(after) < len(before), \
        f"segments entirely below {x} are gone: {sorted(after)}"
    assert kutil.watermarks(b.bootstrap, topic, 0) == (x, 600)

    b.restart()
    adm = kutil.admin(b.bootstrap)
    kutil.wait_topic_ready(adm, topic, 1)
    assert kutil.watermarks(b.bootstrap, topic, 0) == (x, 600)
    tu.produce_range(b.bootstrap, topic, ds, 600, 650)
    tu.verify_range(b.bootstrap, topic, ds, x, 650)
    # -1 stands for the high watermark: everything goes.
    assert delete(adm, topic, 0, -1) == 650
    assert kutil.watermarks(b.bootstrap, topic, 0) == (650, 650)


def test_delete_records_refusals(broker_factory):
    """Kafka's answers: a compact-only topic (POLICY_VIOLATION), an internal
    topic (INVALID_TOPIC_EXCEPTION), beyond the high watermark
    (OFFSET_OUT_OF_RANGE)."""
    b = broker_factory({})
    adm = kutil.admin(b.bootstrap)
    compacted = kutil.unique("delrec-compact")
    kutil.create_topic(adm, compacted, 1, config={"cleanup.policy": "compact"})
    kutil.produce(b.bootstrap, compacted, [{"key": b"k", "value": b"v", "partition": 0}])
    assert delete_error(adm, compacted, 0, 1) == KafkaError.POLICY_VIOLATION
    plain = kutil.unique("delrec-plain")
    kutil.create_topic(adm, plain, 1)
    kutil.produce(b.bootstrap, plain, [{"value": b"v%d" % i, "partition": 0} for i in range(5)])
    assert delete_error(adm, plain, 0, 6) == KafkaError.OFFSET_OUT_OF_RANGE
    # Kafka: "Cannot delete records of internal topic" (librdkafka checks
    # unknown partitions itself, so that case is the unit test's).
    assert delete_error(adm, "__consumer_offsets", 0, 0) == KafkaError.TOPIC_EXCEPTION
    assert delete(adm, plain, 0, 5) == 5
