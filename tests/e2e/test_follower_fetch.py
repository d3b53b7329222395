"""Fetch from the closest replica (KIP-392, docs/follower-fetching.md):
three brokers on etcd in three racks sharing a bucket on moto, consumers
with librdkafka's `client.rack`.

A consumer in a follower's rack is sent there by the leader and reads the
whole history from it, the bucket below the follower's disk and its hot
tail above; a consumer in the leader's rack, or with no rack, stays on the
leader; when the follower it reads from dies the consumer goes back to the
leader and loses nothing.
"""

from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import NewTopic

import kutil
import tierutil as tu
from test_cluster_tiering import produce as produce_records
from test_cluster_tiering import start as tiered_broker
from test_cluster_membership import SETTINGS, etcd, metric_values, wait_for  # noqa: F401
from test_replication import _fresh_admins, admin, partitions, store_partition  # noqa: F401

SEG = 64 * 1024
HOT = 2 * SEG
VALUE = 500
COUNT = 3000  # about 1.5 MB: most of it tiered, out of the followers' hot tails


def rack(node):
    return f"zone-{node}"


def start(broker_factory, etcd, bucket, prefix, node):
    return tiered_broker(broker_factory, etcd, bucket, prefix, node, extra={"broker.rack": rack(node)})


def produce(b, topic, start_at, n):
    produce_records(b, topic, start_at, n, value_bytes=VALUE)


def consumer(b, client_rack):
    conf = {"bootstrap.servers": b.bootstrap, "group.id": kutil.unique("g"),
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "fetch.wait.max.ms": 200}
    if client_rack is not None:
        conf["client.rack"] = client_rack
    return Consumer(conf)


def read(c, topic, n, timeout=120, on_each=None):
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        got.append((m.offset(), m.key()))
        if on_each:
            on_each(len(got))
    return got


def served(bs):
    """Per broker: (bytes read by consumers as a follower, redirects sent)."""
    out = {}
    for n, b in bs.items():
        m = metric_values(b)
        out[n] = (m["strata_follower_read_bytes_total"],
                  m["strata_preferred_read_replica_redirects_total"])
    return out


def three_in_rack_brokers(broker_factory, etcd, bucket):
    prefix = kutil.unique("kip392")
    bs = {n: start(broker_factory, etcd, bucket, prefix, n) for n in (1, 2, 3)}
    wait_for("three brokers", lambda: len(admin(bs[1]).list_topics(timeout=10).brokers) == 3)
    topic = kutil.unique("closest")
    admin(bs[1]).create_topics([NewTopic(topic, 1, 3, config={
        "segment.bytes": str(SEG), "local.retention.bytes": str(HOT),
        "min.insync.replicas": "2"})])[topic].result(timeout=30)
    wait_for("three replicas in sync", lambda: (lambda p: p and len(p[0][2]) == 3)(partitions(bs[1], topic)))
    return prefix, bs, topic


def expected(n):
    return [(i, b"k-%d" % i) for i in range(n)]


def test_a_consumer_reads_history_and_tail_from_the_replica_in_its_rack(broker_factory, etcd, s3_bucket):
    prefix, bs, topic = three_in_rack_brokers(broker_factory, etcd, s3_bucket)
    produce(bs[1], topic, 0, COUNT)
    leader = store_partition(etcd, prefix, topic)["leader"]
    follower = next(n for n in bs if n != leader)
    tu.wait_remote_end(s3_bucket, topic, 0, COUNT // 2, timeout=90)

    # The follower's disk holds only the hot tail: what it serves below
    # comes from the bucket.
    def follower_trimmed():
        d = bs[follower].data_dir / f"{topic}-0"
        starts = [int(p.name.split(".")[0]) for p in d.glob("*.log")]
        return starts and min(starts) >= COUNT // 4
    wait_for("the follower down to its hot tail", follower_trimmed, timeout=60)

    before = served(bs)
    c = consumer(bs[leader], rack(follower))
    got = read(c, topic, COUNT)
    c.close()
    after = served(bs)
    assert got == expected(COUNT), "records not read back once, in order"
    record_bytes = COUNT * VALUE
    from_follower = after[follower][0] - before[follower][0]
    print(f"follower {follower} served {from_follower:.0f} record bytes of ~{record_bytes}; "
          f"leader {leader} redirects {after[leader][1] - before[leader][1]:.0f}")
    assert after[leader][1] > before[leader][1], "the leader never named the follower"
    assert from_follower >= record_bytes * 0.9, (from_follower, record_bytes)
    for n in bs:
        if n != follower:
            assert after[n][0] == before[n][0], f"broker {n} served reads as a follower"

    # The tail, produced while the consumer waits on the follower, arrives
    # there too (the follower's high watermark moves with the leader's).
    c = consumer(bs[leader], rack(follower))
    tail_done = threading.Event()
    history_read = threading.Event()

    def produce_tail():
        # once the consumer has read the history it waits on the follower
        history_read.wait(120)
        produce(bs[leader], topic, COUNT, 200)
        tail_done.set()
    t = threading.Thread(target=produce_tail)
    t.start()
    got = read(c, topic, COUNT + 200, on_each=lambda n: n == COUNT and history_read.set())
    t.join()
    c.close()
    assert got == expected(COUNT + 200)
    assert served(bs)[follower][0] > after[follower][0]


def test_consumers_in_the_leaders_rack_or_without_a_rack_stay_on_the_leader(
        broker_factory, etcd, s3_bucket):
    prefix, bs, topic = three_in_rack_brokers(broker_factory, etcd, s3_bucket)
    produce(bs[1], topic, 0, 500)
    leader = store_partition(etcd, prefix, topic)["leader"]
    for client_rack in (rack(leader), None, "zone-elsewhere"):
        before = served(bs)
        c = consumer(bs[leader], client_rack)
        got = read(c, topic, 500)
        c.close()
        after = served(bs)
        assert got == expected(500), client_rack
        assert after == before, (client_rack, before, after)


def test_the_consumer_goes_back_to_the_leader_when_its_replica_dies(broker_factory, etcd, s3_bucket):
    prefix, bs, topic = three_in_rack_brokers(broker_factory, etcd, s3_bucket)
    produce(bs[1], topic, 0, COUNT)
    leader = store_partition(etcd, prefix, topic)["leader"]
    follower = next(n for n in bs if n != leader)
    c = consumer(bs[leader], rack(follower))
    killed = []

    def kill_midway(n):
        if n == COUNT // 3 and not killed:
            bs[follower].kill9()
            killed.append(time.monotonic())
    got = read(c, topic, COUNT, timeout=180, on_each=kill_midway)
    c.close()
    assert killed, "the consumer never got a third of the way"
    assert got == expected(COUNT), f"read {len(got)} of {COUNT} after the follower died"
    print(f"finished {time.monotonic() - killed[0]:.1f}s after the follower died")
