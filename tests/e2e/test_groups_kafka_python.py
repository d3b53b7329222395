"""Consumer groups with a second, independent client: kafka-python's
KafkaConsumer (its own JoinGroup/SyncGroup/Heartbeat/OffsetCommit code)
joins, consumes, commits, reads back committed(), shares a group with a
second kafka-python member, and hands over to librdkafka."""

import time

from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata

import kutil

PARTITIONS = 4
PER_PARTITION = 25


def _kp_consumer(bs, group, **kw):
    base = dict(bootstrap_servers=bs, group_id=group, enable_auto_commit=False,
                auto_offset_reset="earliest", session_timeout_ms=10000, heartbeat_interval_ms=500,
                request_timeout_ms=30000, fetch_max_wait_ms=100)
    base.update(kw)
    return KafkaConsumer(**base)


def _drain(c, until, timeout=45):
    """Poll until `until(records)` holds; returns the records."""
    out = []
    deadline = time.monotonic() + timeout
    while not until(out):
        assert time.monotonic() < deadline, f"kafka-python consumer got {len(out)} records in {timeout}s"
        for recs in c.poll(timeout_ms=300).values():
            out.extend(recs)
    return out


def test_kafka_python_group_join_consume_commit(broker_factory):
    b = broker_factory(kutil.GROUP_BROKER)
    bs = b.bootstrap
    adm = kutil.admin(bs)
    topic = kutil.create_topic(adm, kutil.unique("kp-group"), PARTITIONS)
    dels = kutil.produce(bs, topic, [{"value": f"{q}-{i}".encode(), "partition": q}
                                     for q in range(PARTITIONS) for i in range(PER_PARTITION)])
    expected = {(d.partition, d.offset): d.value for d in dels}
    group = kutil.unique("kp")
    tps = [TopicPartition(topic, q) for q in range(PARTITIONS)]

    # one member: joins, gets everything, consumes, commits, committed() agrees
    c = _kp_consumer(bs, group)
    c.subscribe([topic])
    try:
        got = _drain(c, lambda r: len(r) >= len(expected))
        assert {(r.partition, r.offset): r.value for r in got} == expected
        assert c.assignment() == set(tps)
        c.commit()
        assert {tp.partition: c.committed(tp) for tp in tps} == {q: PER_PARTITION for q in range(PARTITIONS)}
        # an explicit commit with metadata
        c.commit({TopicPartition(topic, 0): OffsetAndMetadata(PER_PARTITION, "kp-meta", -1)})
        meta = c.committed(TopicPartition(topic, 0), metadata=True)
        assert (meta.offset, meta.metadata) == (PER_PARTITION, "kp-meta")
        d = kutil.describe_group(adm, group)
        assert d.state.name == "STABLE" and len(d.members) == 1
        assert {(tp.topic, tp.partition) for tp in d.members[0].assignment.topic_partitions} == \
            {(topic, q) for q in range(PARTITIONS)}
    finally:
        c.close()   # LeaveGroup
    kutil.wait_until(lambda: kutil.group_state(adm, group) == "EMPTY", 20, what="group empty after close")
    # librdkafka's AdminClient sees what kafka-python committed
    offs = kutil.committed(adm, group, topic, list(range(PARTITIONS)))
    assert {q: offs[(topic, q)].offset for q in range(PARTITIONS)} == {q: PER_PARTITION for q in range(PARTITIONS)}
    assert offs[(topic, 0)].metadata == "kp-meta"

    # two kafka-python members share the group; once both are in, new records
    # go to exactly one of them (the owner of their partition)
    c1, c2 = _kp_consumer(bs, group), _kp_consumer(bs, group)
    c1.subscribe([topic])
    c2.subscribe([topic])
    try:
        got1, got2 = [], []

        def poll_both():
            for c_, acc in ((c1, got1), (c2, got2)):
                for recs in c_.poll(timeout_ms=200).values():
                    acc.extend(recs)

        def balanced():
            poll_both()
            a1, a2 = c1.assignment(), c2.assignment()
            if not (a1 and a2 and not (a1 & a2) and (a1 | a2) == set(tps)):
                return None
            d = kutil.describe_group(adm, group)
            return d if d.state.name == "STABLE" and len(d.members) == 2 else None
        d = kutil.wait_until(balanced, 45, interval=0, what="two kafka-python members share the partitions")
        assert not got1 and not got2, "members re-read records below the committed offsets"
        a1, a2 = c1.assignment(), c2.assignment()
        described = {frozenset(TopicPartition(tp.topic, tp.partition) for tp in x.assignment.topic_partitions)
                     for x in d.members}
        assert described == {frozenset(a1), frozenset(a2)}, "DescribeGroups disagrees with the members"
        assert sorted(map(len, (a1, a2))) == [2, 2]

        more = kutil.produce(bs, topic, [{"value": f"more-{q}-{i}".encode(), "partition": q}
                                         for q in range(PARTITIONS) for i in range(5)])
        want_more = {(x.partition, x.offset) for x in more}
        deadline = time.monotonic() + 30
        while {(r.partition, r.offset) for r in got1 + got2} != want_more:
            assert time.monotonic() < deadline, f"{len(got1) + len(got2)} of {len(want_more)} new records"
            poll_both()
        assert c1.assignment() == a1 and c2.assignment() == a2, "assignment changed while consuming"
        assert len(got1) + len(got2) == len(want_more), "a record was read twice"
        assert {TopicPartition(topic, r.partition) for r in got1} <= a1
        assert {TopicPartition(topic, r.partition) for r in got2} <= a2
        c1.commit()
        c2.commit()
    finally:
        c1.close()
        c2.close()

    # librdkafka continues from kafka-python's commits: nothing left to read
    offs = kutil.committed(adm, group, topic, list(range(PARTITIONS)))
    assert {q: offs[(topic, q)].offset for q in range(PARTITIONS)} == {q: PER_PARTITION + 5 for q in range(PARTITIONS)}
    last = kutil.produce(bs, topic, [{"value": b"last", "partition": 2}])[0]
    m = kutil.GroupMember("rdkafka", bs, group, [topic]).start()
    try:
        kutil.wait_until(lambda: m.offsets_seen(), 30, what="librdkafka member reads the new record")
        time.sleep(0.5)
        assert m.offsets_seen() == {(topic, 2, last.offset)}
    finally:
        m.stop()
