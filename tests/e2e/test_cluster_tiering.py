"""Tiering in a cluster (issue 18, docs/tiering-in-a-cluster.md): three
brokers on etcd sharing one bucket on a real S3-protocol server (moto).

Only the leader uploads, claiming the catalog at its leader epoch;
followers keep only the hot tail; a broker replaced by an empty one starts
at the bucket's end (KIP-1023) and copies only what is not tiered, then
serves the whole history as leader (the bucket below, its disk above).
"""

from __future__ import annotations

import shutil
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import NewTopic

import kutil
import tierutil as tu
from test_cluster_membership import SETTINGS, etcd, metric_values, wait_for  # noqa: F401
from test_replication import _fresh_admins, admin, partitions, store_partition  # noqa: F401

SEG = 64 * 1024
HOT = 2 * SEG
VALUE = 1000
COUNT = 4000  # about 4 MB of records: some 60 segments


def start(broker_factory, etcd, bucket, prefix, node, extra=None):
    settings = dict(SETTINGS)
    settings.update(tu.TIER_SETTINGS)
    settings.update({"replica.lag.time.max.ms": 3000,
                     "offsets.topic.replication.factor": 3,
                     "transaction.state.log.replication.factor": 3})
    settings.update(extra or {})
    return broker_factory(settings=settings, label=f"{prefix}-b{node}", env=bucket.env,
                          extra_args=["--metadata", etcd.url(prefix), "--node-id", str(node),
                                      "--object-store", bucket.url])


def produce(b, topic, start_at, n, value_bytes=VALUE):
    errors = []
    # Small batches: segments roll at batch boundaries.
    p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5, "batch.size": 16384, "message.timeout.ms": 60000})
    for i in range(start_at, start_at + n):
        p.produce(topic, key=b"k-%d" % i, value=(b"v-%d-" % i).ljust(value_bytes, b"x"), partition=0,
                  on_delivery=lambda err, m: err and errors.append(err))
    assert p.flush(120) == 0
    assert not errors, errors[:5]


def read_all(b, topic, n):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": kutil.unique("g"),
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.monotonic() + 120
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        got.append((m.offset(), m.key()))
    c.close()
    return got


def local_bytes(b, topic):
    d = b.data_dir / f"{topic}-0"
    return sum(f.stat().st_size for f in d.glob("*.log")) if d.exists() else 0


def test_followers_hold_the_hot_tail_and_a_replaced_broker_starts_at_the_bucket_end(
        broker_factory, etcd, s3_bucket):
    prefix = kutil.unique("ctier")
    bs = {n: start(broker_factory, etcd, s3_bucket, prefix, n) for n in (1, 2, 3)}
    wait_for("three brokers", lambda: len(admin(bs[1]).list_topics(timeout=10).brokers) == 3)
    topic = kutil.unique("tiered")
    admin(bs[1]).create_topics([NewTopic(topic, 1, 3, config={
        "segment.bytes": str(SEG), "local.retention.bytes": str(HOT),
        "min.insync.replicas": "2"})])[topic].result(timeout=30)
    wait_for("three replicas in sync", lambda: (lambda p: p and len(p[0][2]) == 3)(partitions(bs[1], topic)))
    produce(bs[1], topic, 0, COUNT)

    # Only the leader writes the catalog, claimed at its leader epoch.
    state = store_partition(etcd, prefix, topic)
    leader, epoch = state["leader"], state["leader_epoch"]
    m = tu.wait_remote_end(s3_bucket, topic, 0, COUNT // 2, timeout=90)
    assert m.get("leader_epoch") == epoch, m
    assert m["owner"].startswith(f"node {leader} "), m["owner"]

    # Every replica, followers included, keeps only about the hot window.
    def hot_tails():
        sizes = {n: local_bytes(b, topic) for n, b in bs.items()}
        return sizes if all(s <= HOT + 2 * SEG for s in sizes.values()) else None
    sizes = wait_for("every replica down to the hot tail", hot_tails, timeout=60)
    full = tu.remote_end(s3_bucket, topic)
    total_bytes = sum(s["size_bytes"] for s in tu.manifest(s3_bucket, topic, 0)["segments"])
    print(f"local bytes per replica {sizes}; bucket {total_bytes} bytes up to offset {full}")

    # Replace a follower by an empty broker with the same node id.
    victim = next(n for n in bs if n != leader)
    bs[victim].kill9()
    shutil.rmtree(bs[victim].data_dir)
    bs[victim].data_dir.mkdir(parents=True)
    produce(bs[leader], topic, COUNT, 200)  # the tail moves on meanwhile (2 of 3 in sync)
    began = time.monotonic()
    bs[victim].start()
    wait_for("the replaced broker back in the ISR",
             lambda: victim in partitions(bs[leader], topic)[0][2], timeout=90)
    rejoin_s = time.monotonic() - began
    metrics = metric_values(bs[victim])
    fetched = metrics["strata_replica_fetched_bytes_total"]
    assert metrics["strata_replica_tiered_starts_total"] >= 1, metrics
    log_start = min(int(p.name.split(".")[0]) for p in (bs[victim].data_dir / f"{topic}-0").glob("*.log"))
    print(f"replaced broker rejoined in {rejoin_s:.1f}s having fetched {fetched:.0f} bytes "
          f"(a full copy: {total_bytes + local_bytes(bs[leader], topic)} bytes); its log starts at {log_start}")
    assert log_start >= full, (log_start, full)
    assert fetched < (total_bytes + local_bytes(bs[leader], topic)) / 4, fetched

    # The replaced broker leads: the whole history reads back through it,
    # once and in order, the bucket below its disk, and it tiers at its epoch.
    for n in bs:
        if n != victim:
            bs[n].kill9()
    wait_for("the replaced broker leading", lambda: store_partition(etcd, prefix, topic)["leader"] == victim,
             timeout=30)
    for n in bs:
        if n != victim:
            bs[n].start()
    wait_for("three replicas in sync again",
             lambda: (lambda p: p and len(p[0][2]) == 3 and p[0][0] == victim)(partitions(bs[victim], topic)),
             timeout=90)
    new_epoch = store_partition(etcd, prefix, topic)["leader_epoch"]
    produce(bs[victim], topic, COUNT + 200, 400)
    total = COUNT + 600
    got = read_all(bs[victim], topic, total)
    assert [o for o, _ in got] == list(range(total)), "offsets not unique and gap-free"
    assert [k for _, k in got] == [b"k-%d" % i for i in range(total)]
    m = tu.wait_remote_end(s3_bucket, topic, 0, COUNT + 200, timeout=90)
    assert m.get("leader_epoch") == new_epoch and m["owner"].startswith(f"node {victim} "), m
