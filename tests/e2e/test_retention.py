"""Retention by size and by time: whole old segments are deleted, the log
start offset moves up, reading below it is OFFSET_OUT_OF_RANGE."""

import os
import time

from confluent_kafka import KafkaError, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, OffsetSpec, ResourceType

import kutil
import wire

MiB = 1024 * 1024


def _segments(b, topic, p=0):
    return kutil.segment_sizes(b, topic, p)


def _wait_retention_settled(b, topic, max_bytes=None, timeout=30.0):
    """Wait until the log start offset moved up and then stayed put across
    several retention checks (0.5 s apart), and, if given, the log is at most
    max_bytes."""
    def stable():
        low1 = kutil.watermarks(b.bootstrap, topic, 0)[0]
        segs1 = _segments(b, topic)
        if low1 == 0 or (max_bytes is not None and sum(segs1.values()) > max_bytes):
            return False
        time.sleep(1.6)
        low2 = kutil.watermarks(b.bootstrap, topic, 0)[0]
        return low1 == low2 and segs1 == _segments(b, topic)
    kutil.wait_until(stable, timeout, interval=0.2,
                     what="log start offset > 0 and stable" + (f", log <= {max_bytes} bytes" if max_bytes else ""))


def _check_trimmed_log(b, adm, topic, total, values):
    """After retention kicked in: consistent log start, OOR below it,
    everything from it on intact."""
    low, high = kutil.watermarks(b.bootstrap, topic, 0)
    assert high == total, "retention must not change the high watermark"
    segs = _segments(b, topic)
    assert low > 0
    assert segs, "no .log segment file left at all (Kafka always keeps an active segment)"
    assert min(segs) == low, f"log start {low} != base offset of oldest remaining segment {list(segs)}"
    assert f"{0:020d}.log" not in os.listdir(b.partition_dir(topic, 0))

    tp = TopicPartition(topic, 0)
    earliest = adm.list_offsets({tp: OffsetSpec.earliest()})[tp].result(timeout=30).offset
    assert earliest == low

    # consumer with auto.offset.reset=error asking for offset 0
    res = kutil.consume(b.bootstrap, topic, {0: 0}, timeout=30,
                        stop_on_codes=(KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET),
                        **{"auto.offset.reset": "error"})
    codes = res.all_error_codes()
    assert codes & {KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._AUTO_OFFSET_RESET}, \
        f"expected an offset-out-of-range error fetching offset 0, got messages={len(res.messages)} " \
        f"errors={[e.str() for e in res.errors + res.client_errors]}"
    assert not res.messages

    # raw Fetch below the log start: error 1, no records
    with wire.KafkaConn.to(b.bootstrap) as c:
        f = c.fetch_v4(topic, 0, 0, max_wait_ms=100)
        assert f.error_code == 1, f"fetch at 0 below log start {low}: {f.error_code}"
        f = c.fetch_v4(topic, 0, low - 1, max_wait_ms=100)
        assert f.error_code == 1, f"fetch at {low - 1} below log start {low}: {f.error_code}"

    # auto.offset.reset=earliest lands exactly on the log start; the rest is intact
    res = kutil.consume(b.bootstrap, topic, {0: 0}, expected=total - low, timeout=60,
                        stop_on_partition_error=False, **{"auto.offset.reset": "earliest"})
    assert not [e for e in res.errors if e.code() not in (KafkaError._AUTO_OFFSET_RESET,
                                                          KafkaError.OFFSET_OUT_OF_RANGE)], res.errors
    assert [m.offset for m in res.messages] == list(range(low, total))
    assert all(m.value == values[m.offset] for m in res.messages)


def test_retention_bytes(broker, admin, topic_name):
    """Shared broker has log.retention.check.interval.ms=500."""
    kutil.create_topic(admin, topic_name, 1, config={"segment.bytes": str(MiB), "retention.bytes": str(MiB)})
    total = 5000
    dels = kutil.produce(broker.bootstrap, topic_name, [{"value": os.urandom(1024)} for _ in range(total)])
    assert sorted(d.offset for d in dels) == list(range(total))
    values = {d.offset: d.value for d in dels}

    # the log shrinks to within retention.bytes plus (at most) one segment
    _wait_retention_settled(broker, topic_name, max_bytes=2 * MiB + 64 * 1024)
    segs = _segments(broker, topic_name)
    assert sum(segs.values()) >= MiB - 64 * 1024, f"retention deleted too much: {segs}"
    _check_trimmed_log(broker, admin, topic_name, total, values)


def test_retention_ms_dynamic(broker, admin, topic_name):
    """Records carry CreateTime timestamps two days old; lowering retention.ms
    at runtime deletes the old segments (time retention looks at the record
    timestamps, like Kafka, not at file times)."""
    kutil.create_topic(admin, topic_name, 1, config={"segment.bytes": str(MiB)})
    total = 3500
    old = int(time.time() * 1000) - 2 * 86400 * 1000
    dels = kutil.produce(broker.bootstrap, topic_name,
                         [{"value": os.urandom(1024), "timestamp": old + i} for i in range(total)])
    values = {d.offset: d.value for d in dels}
    assert len(_segments(broker, topic_name)) >= 3

    # default retention (7 days) keeps everything
    time.sleep(1.5)  # three retention checks
    assert kutil.watermarks(broker.bootstrap, topic_name, 0) == (0, total)

    res = ConfigResource(ResourceType.TOPIC, topic_name, incremental_configs=[
        ConfigEntry("retention.ms", str(86400 * 1000), incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([res])[res].result(timeout=60)
    _wait_retention_settled(broker, topic_name)
    _check_trimmed_log(broker, admin, topic_name, total, values)


def test_segment_ms_rolls(broker, admin, topic_name):
    """A segment older than segment.ms is rolled (Kafka rolls on the next
    append; Strata also rolls idle segments), so the next record starts a new
    segment named by its offset."""
    kutil.create_topic(admin, topic_name, 1, config={"segment.ms": "1000"})
    kutil.produce(broker.bootstrap, topic_name, [{"value": b"first"}])
    assert list(_segments(broker, topic_name)) == [0]
    time.sleep(1.5)
    kutil.produce(broker.bootstrap, topic_name, [{"value": b"second"}])
    kutil.wait_until(lambda: 1 in _segments(broker, topic_name), 10,
                     what="a new segment 00000000000000000001.log after segment.ms")
    res = kutil.consume(broker.bootstrap, topic_name, [0], expected=2)
    assert [m.value for m in res.messages] == [b"first", b"second"]
