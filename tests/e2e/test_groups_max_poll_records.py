"""The rebalance storm of a slow consumer, with a client that has
`max.poll.records` (kafka-python): a batch that takes longer than
`max.poll.interval.ms` to process gets the member removed and its partitions
moved; lowering `max.poll.records` so each batch fits keeps it in the group."""

import threading
import time

from kafka import KafkaConsumer

import kutil


def _run_kafka_python_member(bootstrap, group, topic, max_poll_records, per_record_s, stop, seen):
    c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                      auto_offset_reset="earliest", max_poll_records=max_poll_records,
                      max_poll_interval_ms=6000, session_timeout_ms=6000, heartbeat_interval_ms=500,
                      request_timeout_ms=30000)
    try:
        while not stop.is_set():
            for recs in c.poll(timeout_ms=200).values():
                for r in recs:
                    if stop.is_set():
                        break
                    time.sleep(per_record_s)  # "processing"
                    seen.append((r.partition, r.offset))
            c.commit() if seen else None
    except Exception as e:  # a removed member's commit fails; that is the point
        seen.append(("error", type(e).__name__))
    finally:
        c.close(autocommit=False)


def _members(adm, group):
    return kutil.member_assignments(kutil.describe_group(adm, group))


def _scenario(b, max_poll_records):
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("slow")
    group = kutil.unique("slow-g")
    kutil.create_topic(adm, topic, 2)
    kutil.produce(b.bootstrap, topic, [{"value": b"x" * 10, "partition": i % 2} for i in range(4000)])
    stop = threading.Event()
    seen: list = []
    t = threading.Thread(target=_run_kafka_python_member,
                         args=(b.bootstrap, group, topic, max_poll_records, 0.02, stop, seen), daemon=True)
    t.start()
    other = kutil.group_consumer(b.bootstrap, group, **{"session.timeout.ms": 6000})
    other.subscribe([topic])
    try:
        # Both members hold a partition.
        def two_members():
            other.poll(0.1)
            m = _members(adm, group)
            return len(m) == 2 and all(len(a) == 1 for a in m.values())
        kutil.wait_until(two_members, 60, what="two members with one partition each")
        # Watch for 20 s: does the slow member stay?
        counts = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            other.poll(0.2)
            counts.append(len(_members(adm, group)))
        return counts, seen
    finally:
        stop.set()
        t.join(30)
        other.close()


def test_batch_longer_than_max_poll_interval_removes_member(broker_factory):
    b = broker_factory({"group.initial.rebalance.delay.ms": 0})
    # 500 records x 20 ms = 10 s per poll > max.poll.interval.ms 6 s.
    counts, _ = _scenario(b, max_poll_records=500)
    assert 1 in counts, f"the slow member was never removed from the group: member counts {counts}"


def test_lower_max_poll_records_keeps_member(broker_factory):
    b = broker_factory({"group.initial.rebalance.delay.ms": 0})
    # 50 records x 20 ms = 1 s per poll, well inside max.poll.interval.ms.
    counts, seen = _scenario(b, max_poll_records=50)
    assert set(counts) == {2}, f"the member left or the group rebalanced: member counts {counts}"
    assert len([s for s in seen if s[0] != "error"]) > 100, "the member made no progress"
