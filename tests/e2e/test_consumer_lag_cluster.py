"""Consumer lag in a cluster (issue 19): a group's coordinator need not
hold the partitions the group reads. For those, the coordinator asks the
partitions' leaders for their high watermarks and for the batch at the
committed offset, so lag in records and in seconds, and the catch-up
state, show for every partition on the coordinator's /metrics, its
admin API and `strata group describe`.

Two brokers on a real etcd; a topic whose only replica is on broker 2; a
group coordinated by broker 1.
"""

from __future__ import annotations

import time

from confluent_kafka import TopicPartition
from confluent_kafka.admin import NewTopic

import kutil
from apiutil import AdminApi
from test_cli import cli_json
from test_cluster_membership import etcd, start_cluster  # noqa: F401
from test_consumer_lag import by_partition
from test_metrics import families

LAG = {"group.lag.sample.interval.ms": 200, "group.lag.window.ms": 2000, "group.initial.rebalance.delay.ms": 0}


def coordinator_of(adm, group: str) -> int:
    d = adm.describe_consumer_groups([group], request_timeout=30)[group].result(timeout=60)
    return d.coordinator.id


def test_lag_of_partitions_led_by_another_broker(broker_factory, etcd):  # noqa: F811
    brokers = start_cluster(broker_factory, etcd, kutil.unique("lagc")[:12], n=2, racks=False, extra=LAG)
    b1, b2 = brokers[1], brokers[2]
    adm = kutil.admin(b1.bootstrap)
    topic = kutil.unique("far")
    fs = adm.create_topics([NewTopic(topic, num_partitions=2, replica_assignment=[[2], [2]])])
    fs[topic].result(timeout=30)
    kutil.wait_until(lambda: kutil.partition_count(adm, topic) == 2 or None, 30, 0.2, "topic visible")
    p = kutil.producer(b1.bootstrap)
    for part in range(2):
        for i in range(50):
            p.produce(topic, value=b"v%d" % i, partition=part)
    assert p.flush(30) == 0
    assert not (b1.data_dir / f"{topic}-0").exists()  # broker 1 holds no replica

    # A group that broker 1 coordinates.
    group = None
    for i in range(40):
        g = kutil.unique(f"far-group-{i}")
        c = kutil.group_consumer(b1.bootstrap, g)
        c.commit(offsets=[TopicPartition(topic, 0, 50), TopicPartition(topic, 1, 10)], asynchronous=False)
        c.close()
        if coordinator_of(adm, g) == 1:
            group = g
            break
    assert group, "no group landed on broker 1"
    time.sleep(1.0)  # the unconsumed records are a second old

    def lag():
        fams = families(b1)
        lag = by_partition(fams, "strata_consumer_group_lag_records", group, topic)
        age = by_partition(fams, "strata_consumer_group_lag_seconds", group, topic)
        up = by_partition(fams, "strata_consumer_group_catching_up", group, topic)
        return (lag, age, up) if len(lag) == 2 and len(up) == 2 else None
    lag, age, up = kutil.wait_until(lag, 30, 0.2, "lag of partitions led by broker 2 on broker 1")
    assert lag == {0: 0.0, 1: 40.0}, lag
    assert age[0] == 0.0 and 1.0 <= age[1] < 60, age
    assert up == {0: 1.0, 1: 0.0}, up  # nobody consumes partition 1

    _, d = AdminApi(b1).get(f"/api/v1/groups/{group}", expect=200)
    rows = {x["partition"]: x for x in d["partitions"]}
    assert rows[1]["high_watermark"] == 50 and rows[1]["lag_records"] == 40
    assert rows[1]["catch_up"]["state"] == "not_catching_up"
    out = cli_json(b1, "group", "describe", group)
    assert {x["partition"]: (x["lag"], x["catch_up"]) for x in out["partitions"]} == \
        {0: (0, "caught_up"), 1: (40, "not_catching_up")}

    # The leader's appends move the lag on the coordinator.
    for i in range(25):
        p.produce(topic, value=b"w", partition=1)
    assert p.flush(30) == 0
    kutil.wait_until(lambda: by_partition(families(b1), "strata_consumer_group_lag_records", group, topic)
                     .get(1) == 65.0 or None, 30, 0.2, "lag 65 after more appends")
