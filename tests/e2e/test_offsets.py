"""ListOffsets: earliest / latest / by timestamp / max timestamp, through both
the consumer API (get_watermark_offsets, offsets_for_times) and the
AdminClient (list_offsets), plus message.timestamp.type=LogAppendTime."""

import time

from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, TopicPartition
from confluent_kafka.admin import OffsetSpec

import kutil
import wire

HOUR = 3600 * 1000


def _list_offsets(adm, topic, partition, spec):
    tp = TopicPartition(topic, partition)
    res = adm.list_offsets({tp: spec}, request_timeout=15)[tp].result(timeout=30)
    return res.offset, res.timestamp


def _setup_timestamped_topic(broker, adm, topic):
    """Offsets 0..9: one record per batch, timestamps T0 + 10 s * i.
    Offsets 10..14: ONE hand-made batch, timestamps T1 + 1 s * j."""
    kutil.create_topic(adm, topic, 1)
    t0 = int(time.time() * 1000) - 2 * HOUR
    recs = [{"value": f"r{i}".encode(), "timestamp": t0 + 10_000 * i} for i in range(10)]
    dels = kutil.produce_one_per_batch(broker.bootstrap, topic, recs)
    assert [d.offset for d in dels] == list(range(10))
    t1 = t0 + HOUR
    batch = wire.encode_batch([wire.Rec(None, f"b{j}".encode(), t1 + 1000 * j) for j in range(5)])
    with wire.KafkaConn.to(broker.bootstrap) as c:
        r = c.produce_v3(topic, 0, batch, acks=-1)
    assert r.error_code == 0 and r.base_offset == 10, r
    return t0, t1


def test_offsets_for_times(broker, admin, topic_name):
    t0, t1 = _setup_timestamped_topic(broker, admin, topic_name)
    lookups = {
        t0 - 60_000: 0,            # before everything -> first offset
        t0: 0,                     # exact hit
        t0 + 1: 1,                 # just after record 0 -> record 1
        t0 + 5_000: 1,             # between 0 and 1
        t0 + 10_000: 1,            # exact hit on 1
        t0 + 45_000: 5,            # between 4 and 5
        t0 + 90_000: 9,            # last single-record batch
        t0 + 90_001: 10,           # between batches -> first record of the big batch
        t1 + 1_500: 12,            # inside one batch: record-precise, not batch-precise
        t1 + 4_000: 14,            # last record
        t1 + 4_001: -1,            # after everything -> no offset (-1)
    }
    got = kutil.offsets_for_times(broker.bootstrap, topic_name, 0, list(lookups))
    assert dict(zip(lookups, got)) == lookups


def test_admin_list_offsets(broker, admin, topic_name):
    t0, t1 = _setup_timestamped_topic(broker, admin, topic_name)
    assert _list_offsets(admin, topic_name, 0, OffsetSpec.earliest())[0] == 0
    assert _list_offsets(admin, topic_name, 0, OffsetSpec.latest())[0] == 15
    assert _list_offsets(admin, topic_name, 0, OffsetSpec.for_timestamp(t0 + 25_000))[0] == 3
    assert _list_offsets(admin, topic_name, 0, OffsetSpec.for_timestamp(t1 + 2_000))[0] == 12
    assert _list_offsets(admin, topic_name, 0, OffsetSpec.max_timestamp()) == (14, t1 + 4_000)
    assert kutil.watermarks(broker.bootstrap, topic_name, 0) == (0, 15)


def test_max_timestamp_not_last(broker, admin, topic_name):
    """MAX_TIMESTAMP returns the record with the largest timestamp, which
    need not be the last one."""
    kutil.create_topic(admin, topic_name, 1)
    t0 = int(time.time() * 1000) - HOUR
    ts = [t0, t0 + 50_000, t0 + 1_000, t0 + 2_000]
    kutil.produce_one_per_batch(broker.bootstrap, topic_name,
                                [{"value": b"x", "timestamp": t} for t in ts])
    assert _list_offsets(admin, topic_name, 0, OffsetSpec.max_timestamp()) == (1, t0 + 50_000)


def test_empty_partition_offsets(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 2)
    assert kutil.watermarks(broker.bootstrap, topic_name, 1) == (0, 0)
    assert _list_offsets(admin, topic_name, 1, OffsetSpec.earliest())[0] == 0
    assert _list_offsets(admin, topic_name, 1, OffsetSpec.latest())[0] == 0
    assert kutil.offsets_for_times(broker.bootstrap, topic_name, 1, [0]) == [-1]


def test_create_time_is_kept(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1)
    # an hour ago: distinguishable from "now", yet well inside the default
    # 7-day retention (records older than that may be deleted at once, as in Kafka)
    t = int(time.time() * 1000) - HOUR
    kutil.produce_one_per_batch(broker.bootstrap, topic_name, [{"value": b"a", "timestamp": t},
                                                               {"value": b"b", "timestamp": t + 7}])
    res = kutil.consume(broker.bootstrap, topic_name, [0], expected=2)
    assert [m.timestamp for m in res.messages] == [(TIMESTAMP_CREATE_TIME, t), (TIMESTAMP_CREATE_TIME, t + 7)]
    with wire.KafkaConn.to(broker.bootstrap) as c:
        r = c.produce_v3(topic_name, 0, wire.encode_batch([wire.Rec(None, b"c", t)]))
    assert r.error_code == 0 and r.log_append_time == -1, \
        f"CreateTime topic must answer log_append_time=-1, got {r}"


def test_log_append_time(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1, config={"message.timestamp.type": "LogAppendTime"})
    producer_ts = 1_000_000_000_000  # 2001: far from now
    before = int(time.time() * 1000)
    kutil.produce(broker.bootstrap, topic_name,
                  [{"value": f"v{i}".encode(), "timestamp": producer_ts + i} for i in range(20)])
    with wire.KafkaConn.to(broker.bootstrap) as c:
        r = c.produce_v3(topic_name, 0, wire.encode_batch(
            [wire.Rec(None, b"raw0", producer_ts), wire.Rec(None, b"raw1", producer_ts + 1)]))
    after = int(time.time() * 1000)
    slack = 5_000
    assert r.error_code == 0 and r.base_offset == 20
    assert before - slack <= r.log_append_time <= after + slack, \
        f"ProduceResponse log_append_time {r.log_append_time} not broker time [{before}, {after}]"

    res = kutil.consume(broker.bootstrap, topic_name, [0], expected=22)
    assert not res.errors
    for m in res.messages:
        ttype, ts = m.timestamp
        assert ttype == TIMESTAMP_LOG_APPEND_TIME, f"offset {m.offset}: timestamp type {ttype}"
        assert before - slack <= ts <= after + slack, \
            f"offset {m.offset}: timestamp {ts} is not broker time (producer sent {producer_ts})"
    # by-timestamp lookups use the broker's time too
    assert kutil.offsets_for_times(broker.bootstrap, topic_name, 0, [producer_ts + 5]) == [0]
    assert kutil.offsets_for_times(broker.bootstrap, topic_name, 0, [after + 60_000]) == [-1]
