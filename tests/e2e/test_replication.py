"""Replication between brokers (issue 18, step 3), on a real etcd with
three brokers and real clients: topics at replication factor 3 and
min.insync.replicas=2; followers copy their leaders' logs byte for byte;
acks=all completes once every in-sync replica holds the batch; a killed
leader is replaced by an in-sync follower that has every acknowledged
record; below min.insync.replicas acks=all is refused with
NOT_ENOUGH_REPLICAS while acks=1 goes on; returning brokers truncate,
catch up and rejoin the ISR.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kutil
import wire
from test_cluster_membership import SETTINGS, etcd, metric_values, wait_for  # noqa: F401

REPLICATION = dict(SETTINGS)
REPLICATION.update({"replica.lag.time.max.ms": 2000})
NOT_ENOUGH_REPLICAS = 19

_admins: dict[str, AdminClient] = {}


@pytest.fixture(autouse=True)
def _fresh_admins():
    _admins.clear()
    yield
    _admins.clear()


def admin(b):
    if b.bootstrap not in _admins:
        _admins[b.bootstrap] = AdminClient({"bootstrap.servers": b.bootstrap})
    return _admins[b.bootstrap]


def start_brokers(broker_factory, etcd, prefix, n=3):
    return {
        node: broker_factory(settings=dict(REPLICATION), label=f"{prefix}-b{node}",
                             extra_args=["--metadata", etcd.url(prefix), "--node-id", str(node)])
        for node in range(1, n + 1)
    }


def partitions(b, topic):
    """{partition: (leader, replicas, isr)} as broker `b` tells it."""
    t = admin(b).list_topics(topic=topic, timeout=10).topics[topic]
    if t.error:
        return None
    return {p: (pm.leader, sorted(pm.replicas), sorted(pm.isrs)) for p, pm in t.partitions.items()}


def log_bytes(b, topic, p) -> bytes:
    d = Path(b.data_dir) / f"{topic}-{p}"
    return b"".join(f.read_bytes() for f in sorted(d.glob("*.log")))


def all_copies_equal(bs, topic, count):
    for p in range(count):
        copies = [log_bytes(b, topic, p) for b in bs]
        if not copies[0] or any(c != copies[0] for c in copies):
            return False
    return True


def labelled(b, name: str, topic: str) -> dict[str, float]:
    """`name`'s samples for `topic` on broker `b`: {label text: value}
    (once it is ready: /metrics answers 503 before)."""
    import urllib.request
    b.wait_ready()
    with urllib.request.urlopen(f"http://127.0.0.1:{b.http_port}/metrics", timeout=10) as r:
        text = r.read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{") and f'topic="{topic}"' in line:
            labels, value = line[len(name) + 1:].rsplit("} ", 1)
            out[labels] = float(value)
    return out


def produce(b, topic, values, partitions_count):
    errors = []
    p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5, "message.timeout.ms": 60000})
    for v in values:
        p.produce(topic, key=v, value=v, partition=int(v.split(b"-")[1]) % partitions_count,
                  on_delivery=lambda err, m: err and errors.append(err))
    assert p.flush(90) == 0
    assert not errors, errors[:5]


def consume_all(b, topic, count, expected):
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": kutil.unique("g"),
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in range(count)])
    got: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(count)}
    deadline = time.monotonic() + 60
    n = 0
    while n < expected and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        got[m.partition()].append((m.offset(), m.value()))
        n += 1
    c.close()
    return got


def test_rf3_replicates_fails_over_and_enforces_min_isr(broker_factory, etcd):
    prefix = kutil.unique("repl")
    bs = start_brokers(broker_factory, etcd, prefix)
    wait_for("three brokers", lambda: len(admin(bs[1]).list_topics(timeout=10).brokers) == 3)
    topic = kutil.unique("rf3")
    count = 3
    new = NewTopic(topic, count, 3, config={"min.insync.replicas": "2"})
    admin(bs[2]).create_topics([new])[topic].result(timeout=30)
    view = wait_for("metadata", lambda: partitions(bs[1], topic))
    assert all(r == [1, 2, 3] and isr == [1, 2, 3] for _, r, isr in view.values()), view
    assert sorted(leader for leader, _, _ in view.values()) == [1, 2, 3], "leaders spread"

    # Every record acknowledged with acks=all is on all three brokers, byte
    # for byte (offsets, epochs and producer ids as the leader wrote them).
    first = [b"v-%d" % i for i in range(3000)]
    produce(bs[1], topic, first, count)
    wait_for("identical copies", lambda: all_copies_equal(bs.values(), topic, count), timeout=30)
    leader0 = bs[view[0][0]]
    assert set(labelled(leader0, "strata_partition_in_sync_replicas", topic).values()) == {3.0}
    lags = labelled(leader0, "strata_partition_follower_lag_records", topic)
    assert len(lags) == 2 and all(v == 0 for v in lags.values()), lags

    # Kill the leader of partition 0: an in-sync follower takes over.
    victim = view[0][0]
    led = [p for p, (leader, _, _) in view.items() if leader == victim]
    survivor = bs[next(n for n in bs if n != victim)]
    killed_at = time.monotonic()
    bs[victim].kill9()

    def new_leaders():
        v = partitions(survivor, topic)
        if v and all(v[p][0] not in (victim, -1) for p in led):
            return v
        return None
    wait_for("new leaders", new_leaders, timeout=30)
    failover_s = time.monotonic() - killed_at
    assert failover_s < 15, failover_s
    # The controller also takes the dead broker out of the ISR of the
    # partitions it followed (one write per partition).
    wait_for("the dead broker out of every ISR", lambda: all(
        victim not in isr for _, _, isr in partitions(survivor, topic).values()), timeout=15)

    # Producing goes on at two in-sync replicas, and nothing acknowledged
    # before the kill is missing or doubled.
    second = [b"v-%d" % i for i in range(3000, 4000)]
    produce(survivor, topic, second, count)
    got = consume_all(survivor, topic, count, 4000)
    values = [v for p in got.values() for _, v in p]
    assert len(values) == 4000 and set(values) == set(first + second), len(values)
    for p, recs in got.items():
        assert [o for o, _ in recs] == list(range(len(recs))), f"gap or duplicate in {p}"

    # Below min.insync.replicas: acks=all refused before append, acks=1 goes on.
    second_victim = next(n for n in bs if n != victim and bs[n] is not survivor)
    bs[second_victim].kill9()

    def alone():
        v = partitions(survivor, topic)
        return v if v and all(isr == [leader] for leader, _, isr in v.values()) else None
    alone_view = wait_for("ISR of one", alone, timeout=30)
    leader_port = bs[alone_view[0][0]].bootstrap
    batch = wire.encode_batch([wire.Rec(key=b"k", value=b"lonely",
                                        timestamp=int(time.time() * 1000))])
    with wire.KafkaConn.to(leader_port) as conn:
        res = conn.produce_v8(topic, 0, batch, acks=-1)
        assert res.error_code == NOT_ENOUGH_REPLICAS, res
        assert "min.insync.replicas is 2" in (res.error_message or "")
        assert conn.produce_v8(topic, 0, batch, acks=1).error_code == 0

    # Both return: they truncate what diverged, catch up and rejoin.
    bs[victim].start()
    bs[second_victim].start()

    def full_isr():
        v = partitions(bs[victim], topic)
        return v if v and all(isr == [1, 2, 3] for _, _, isr in v.values()) else None
    wait_for("ISR back to three", full_isr, timeout=60)
    wait_for("identical copies again",
             lambda: all_copies_equal(bs.values(), topic, count), timeout=60)
    # The lone leader wrote both returns into the ISR, and says so.
    lone = bs[alone_view[0][0]]
    expands = labelled(lone, "strata_partition_isr_expands_total", topic)
    assert expands and all(v >= 1 for v in expands.values()), expands
    assert metric_values(lone)["strata_cluster_under_replicated_partitions"] == 0
    print(f"failover: {failover_s:.2f}s")


def test_unclean_election_truncates_the_old_leaders_tail(broker_factory, etcd):
    """The old leader's records no replica copied are cut by leader epoch
    when it returns under a leader elected uncleanly."""
    import os
    import signal
    prefix = kutil.unique("unclean")
    bs = {
        node: broker_factory(
            settings={**REPLICATION, "unclean.leader.election.enable": "true"},
            label=f"{prefix}-b{node}",
            extra_args=["--metadata", etcd.url(prefix), "--node-id", str(node)])
        for node in (1, 2, 3)
    }
    wait_for("three brokers", lambda: len(admin(bs[1]).list_topics(timeout=10).brokers) == 3)
    topic = kutil.unique("tail")
    admin(bs[1]).create_topics([NewTopic(topic, 1, 3)])[topic].result(timeout=30)
    (leader, _, _), = wait_for("metadata", lambda: partitions(bs[1], topic)).values()
    produce(bs[leader], topic, [b"v-%d" % i for i in range(100)], 1)
    wait_for("identical copies", lambda: all_copies_equal(bs.values(), topic, 1), timeout=30)

    # The followers stop (their leases expire); the leader goes on alone.
    followers = [n for n in bs if n != leader]
    for n in followers:
        os.kill(bs[n].proc.pid, signal.SIGSTOP)
    try:
        # From the store: a client would also ask the stopped brokers.
        wait_for("ISR of the leader alone",
                 lambda: store_partition(etcd, prefix, topic)["isr"] == [leader], timeout=30)
        batch = wire.encode_batch([wire.Rec(key=b"k", value=b"unreplicated-%d" % i,
                                            timestamp=int(time.time() * 1000)) for i in range(50)])
        with wire.KafkaConn.to(bs[leader].bootstrap) as conn:
            assert conn.produce_v8(topic, 0, batch, acks=1).error_code == 0
        bs[leader].kill9()
    finally:
        for n in followers:
            os.kill(bs[n].proc.pid, signal.SIGCONT)

    # A follower is elected uncleanly at a new epoch, without the 50.
    def new_leader():
        v = partitions(bs[followers[0]], topic)
        return v if v and v[0][0] in followers else None
    (new, _, _), = wait_for("unclean leader", new_leader, timeout=60).values()
    produce(bs[new], topic, [b"v-%d" % i for i in range(100, 120)], 1)

    # The old leader returns: it truncates its 50 and copies the new tail.
    bs[leader].start()
    wait_for("identical copies after truncation",
             lambda: all_copies_equal(bs.values(), topic, 1), timeout=60)
    assert "truncated the log" in bs[leader].log_text()
    got = consume_all(bs[new], topic, 1, 120)
    values = [v for _, v in got[0]]
    assert values == [b"v-%d" % i for i in range(120)], values[95:105]


def store_partition(etcd, prefix, topic, p=0):
    import json
    return json.loads(etcd.get_prefix(f"/{prefix}/partitions/{topic}/{p}")[f"/{prefix}/partitions/{topic}/{p}"])


def test_a_restarted_leader_leads_again_at_a_new_epoch(broker_factory, etcd):
    """A broker the store still names leader after its restart (nobody else
    was there to elect) may have lost an unfsynced tail: it leads again
    only at a new leader epoch, and serves what it had."""
    prefix = kutil.unique("restart")
    b = broker_factory(settings=dict(REPLICATION), label=f"{prefix}-b1",
                       extra_args=["--metadata", etcd.url(prefix), "--node-id", "1"])
    topic = kutil.unique("again")
    admin(b).create_topics([NewTopic(topic, 1, 1)])[topic].result(timeout=30)
    wait_for("metadata", lambda: partitions(b, topic))
    produce(b, topic, [b"v-%d" % i for i in range(50)], 1)
    assert store_partition(etcd, prefix, topic)["leader_epoch"] == 0
    b.kill9()
    _admins.clear()
    b.start()
    wait_for("leading at epoch 1",
             lambda: store_partition(etcd, prefix, topic)["leader_epoch"] == 1, timeout=30)
    assert "leading again after a restart at a new epoch" in b.log_text()
    produce(b, topic, [b"v-%d" % i for i in range(50, 60)], 1)
    got = consume_all(b, topic, 1, 60)
    assert [v for _, v in got[0]] == [b"v-%d" % i for i in range(60)]
