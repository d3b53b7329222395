"""Consumer lag per group and partition, lag age and the catch-up estimate
(issue 19): read from /metrics with the Prometheus project's parser.

- A group stopped on one partition of eight shows that partition's lag and
  the age of its oldest unconsumed record, while the other partitions are
  at 0 (the group's average lag stays small).
- Against producers appending 200 records/s to each of two partitions, a
  group consuming at 50/s is "not catching up" (+Inf) and one consuming at
  400/s from a backlog has a finite estimate.

Groups commit with explicit offsets (confluent-kafka's commit(offsets=)),
so their consume rates are what the test sets.
"""

from __future__ import annotations

import math
import time

from confluent_kafka import Consumer, TopicPartition

import kutil
from test_metrics import families

SETTINGS = {"group.lag.sample.interval.ms": 200, "group.lag.window.ms": 4000}


def committer(b, group: str) -> Consumer:
    return Consumer({"bootstrap.servers": b.bootstrap, "group.id": group,
                     "enable.auto.commit": False, **kutil.COMMON})


def commit(c: Consumer, topic: str, offsets: dict[int, int]):
    c.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)


def by_partition(fams: dict, family: str, group: str, topic: str) -> dict[int, float]:
    if family not in fams:
        return {}
    return {int(s.labels["partition"]): s.value for s in fams[family].samples
            if s.labels.get("group") == group and s.labels.get("topic") == topic}


def test_one_stuck_partition_shows_its_lag_and_age(broker_factory):
    b = broker_factory(SETTINGS)
    topic = kutil.create_topic(kutil.admin(b.bootstrap), kutil.unique("lag"), partitions=8)
    p = kutil.producer(b.bootstrap)
    # The stuck partition's records are the oldest.
    for i in range(100):
        p.produce(topic, value=b"old-%d" % i, partition=7)
    assert p.flush(30) == 0
    time.sleep(2.0)
    for part in range(7):
        for i in range(100):
            p.produce(topic, value=b"v-%d" % i, partition=part)
    assert p.flush(30) == 0
    group = kutil.unique("stuck")
    c = committer(b, group)
    try:
        commit(c, topic, {**{part: 100 for part in range(7)}, 7: 10})

        def settled():
            fams = families(b)
            lag = by_partition(fams, "strata_consumer_group_lag_records", group, topic)
            return (fams, lag) if len(lag) == 8 else None
        fams, lag = kutil.wait_until(settled, 30, 0.2, "lag of all eight partitions")
        assert lag == {**{part: 0.0 for part in range(7)}, 7: 90.0}, lag
        assert sum(lag.values()) / len(lag) < 12  # the average hides it
        age = by_partition(fams, "strata_consumer_group_lag_seconds", group, topic)
        assert all(age[part] == 0.0 for part in range(7)), age
        assert 2.0 <= age[7] < 60, age
        # Caught-up partitions say so; the stuck one is not catching up once
        # measured (nobody consumes it).
        def measured():
            f = families(b)
            up = by_partition(f, "strata_consumer_group_catching_up", group, topic)
            return up if len(up) == 8 else None
        up = kutil.wait_until(measured, 30, 0.2, "catch-up state measured")
        assert up == {**{part: 1.0 for part in range(7)}, 7: 0.0}, up
        eta = by_partition(families(b), "strata_consumer_group_catch_up_seconds", group, topic)
        assert eta[7] == math.inf and all(eta[part] == 0.0 for part in range(7)), eta
    finally:
        c.close()


def test_a_slow_group_is_not_catching_up_and_a_fast_one_has_an_estimate(broker_factory):
    b = broker_factory(SETTINGS)
    topic = kutil.create_topic(kutil.admin(b.bootstrap), kutil.unique("eta"), partitions=2)
    p = kutil.producer(b.bootstrap)
    backlog = 3000
    for part in (0, 1):
        for i in range(backlog):
            p.produce(topic, value=b"b", partition=part)
    assert p.flush(30) == 0
    slow_group, fast_group = kutil.unique("slow"), kutil.unique("fast")
    slow, fast = committer(b, slow_group), committer(b, fast_group)
    slow_at, fast_at = 0, 0
    seen = None
    try:
        start = time.monotonic()
        tick = 0
        while time.monotonic() - start < 30:
            # 200 records/s appended to each partition; the slow group
            # consumes 50/s of partition 0, the fast one 400/s of partition 1.
            for part in (0, 1):
                for _ in range(20):
                    p.produce(topic, value=b"n", partition=part)
            p.flush(10)
            slow_at += 5
            fast_at += 40
            commit(slow, topic, {0: slow_at})
            commit(fast, topic, {1: fast_at})
            tick += 1
            if tick % 5 == 0:
                fams = families(b)
                s_up = by_partition(fams, "strata_consumer_group_catching_up", slow_group, topic)
                f_up = by_partition(fams, "strata_consumer_group_catching_up", fast_group, topic)
                s_eta = by_partition(fams, "strata_consumer_group_catch_up_seconds", slow_group, topic)
                f_eta = by_partition(fams, "strata_consumer_group_catch_up_seconds", fast_group, topic)
                seen = (s_up, f_up, s_eta, f_eta)
                if s_up.get(0) == 0.0 and f_up.get(1) == 1.0:
                    break
            time.sleep(0.1)
        assert seen is not None
        s_up, f_up, s_eta, f_eta = seen
        assert s_up == {0: 0.0} and s_eta == {0: math.inf}, seen
        assert f_up == {1: 1.0}, seen
        # Lag about backlog - 200/s of drain so far; at ~200/s net, tens of
        # seconds: finite and positive.
        assert 0 < f_eta[1] < 600, seen
        rate = by_partition(families(b), "strata_consumer_group_consume_rate_records_per_second",
                            fast_group, topic)
        assert rate[1] > 100, rate
    finally:
        slow.close()
        fast.close()
