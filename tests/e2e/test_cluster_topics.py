"""Topics in a cluster of three brokers on a real etcd (issue 18, step 2):
topics and partition state live in etcd; partitions are spread over the
brokers (rack-aware), each broker creates logs only for its replicas;
Metadata on every broker names each partition's leader; a produce or fetch
sent to a broker that does not lead the partition gets
NOT_LEADER_OR_FOLLOWER and real clients route to the leaders; CreateTopics,
CreatePartitions, config changes and DeleteTopics on any broker change the
cluster; a broker that was down while a topic was deleted removes its logs.
"""

from __future__ import annotations

import json
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

import kutil
import wire
from test_cluster_membership import SETTINGS, etcd, start_cluster, wait_for  # noqa: F401


_admins: dict[str, AdminClient] = {}


@pytest.fixture(autouse=True)
def _fresh_admins():
    """Ports are reused between tests: never talk to a new broker through a
    client that cached an old one's metadata."""
    _admins.clear()
    yield
    _admins.clear()


def admin(b):
    """One AdminClient per broker address, kept alive: a client destroyed
    while a request is in flight fails its futures with _DESTROY."""
    if b.bootstrap not in _admins:
        _admins[b.bootstrap] = AdminClient({"bootstrap.servers": b.bootstrap})
    return _admins[b.bootstrap]


def leaders(b, topic):
    md = admin(b).list_topics(topic=topic, timeout=10)
    t = md.topics[topic]
    if t.error:
        return None
    return {p: (pm.leader, list(pm.replicas), list(pm.isrs)) for p, pm in t.partitions.items()}


def store_partitions(etcd, prefix, topic):
    keys = etcd.get_prefix(f"/{prefix}/partitions/{topic}/")
    return {int(k.rsplit("/", 1)[1]): json.loads(v) for k, v in keys.items()}


def test_partitions_spread_and_clients_find_leaders(broker_factory, etcd):
    prefix = kutil.unique("topics")
    bs = start_cluster(broker_factory, etcd, prefix)
    wait_for("three brokers", lambda: len(admin(bs[1]).list_topics(timeout=10).brokers) == 3)
    topic = kutil.unique("spread")
    fs = admin(bs[2]).create_topics([NewTopic(topic, num_partitions=6, replication_factor=1)])
    fs[topic].result(timeout=30)

    # Every broker tells the same leaders, two partitions each.
    views = [wait_for("metadata", lambda b=b: leaders(b, topic)) for b in bs.values()]
    assert all(v == views[0] for v in views), views
    by_leader = {}
    for p, (leader, replicas, isr) in views[0].items():
        assert replicas == [leader] and isr == [leader]
        by_leader.setdefault(leader, []).append(p)
    assert sorted(len(v) for v in by_leader.values()) == [2, 2, 2], by_leader
    stored = store_partitions(etcd, prefix, topic)
    assert {p: s["leader"] for p, s in stored.items()} == {p: v[0] for p, v in views[0].items()}

    # Each broker has the logs of its own partitions only. As in KRaft,
    # CreateTopics answers once the store has the topic; each broker's
    # reconciler creates its logs when its watch sees it (within a second).
    def local_logs(b):
        return sorted(int(d.name.rsplit("-", 1)[1]) for d in b.data_dir.iterdir()
                      if d.is_dir() and d.name.startswith(topic + "-"))

    for node, b in bs.items():
        want = sorted(by_leader.get(node, []))
        wait_for(f"broker {node}'s logs", lambda b=b, want=want: local_logs(b) == want, timeout=10)
        assert local_logs(b) == want, (node, local_logs(b))

    # librdkafka routes each partition's records to its leader.
    p = Producer({"bootstrap.servers": bs[1].bootstrap, "enable.idempotence": True, "acks": "all"})
    n = 600
    for i in range(n):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=i % 6)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": bs[3].bootstrap, "group.id": kutil.unique("g"),
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, i, 0) for i in range(6)])
    got = {}
    deadline = time.monotonic() + 30
    while len(got) < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        got[m.value()] = (m.partition(), m.offset())
    c.close()
    assert len(got) == n
    for i in range(n):
        assert got[b"v%d" % i] == (i % 6, i // 6)

    # A broker that does not lead a partition refuses it, naming the error.
    part, (leader, _, _) = next(iter(views[0].items()))
    other = next(b for node, b in bs.items() if node != leader)
    with wire.KafkaConn.to(other.bootstrap) as conn:
        batch = wire.encode_batch([wire.Rec(key=b"k", value=b"v", timestamp=int(time.time() * 1000))])
        res = conn.produce_v8(topic, part, batch)
        assert res.error_code == 6, f"NOT_LEADER_OR_FOLLOWER expected: {res}"
        assert f"not the leader of {topic}-{part}" in (res.error_message or "")
        assert conn.fetch_v4(topic, part, 0).error_code == 6
    with wire.KafkaConn.to(bs[leader].bootstrap) as conn:
        assert conn.fetch_v4(topic, part, 0).error_code == 0

    # Also on a broker that hosts no replica of the topic at all.
    single = kutil.unique("single")
    admin(bs[1]).create_topics([NewTopic(single, 1, 1)])[single].result(timeout=30)
    (only, _, _), = wait_for("metadata", lambda: leaders(bs[1], single)).values()
    stranger = next(b for node, b in bs.items() if node != only)
    assert not [d for d in stranger.data_dir.iterdir() if d.name.startswith(single + "-")]
    with wire.KafkaConn.to(stranger.bootstrap) as conn:
        assert conn.fetch_v4(single, 0, 0).error_code == 6
        batch = wire.encode_batch([wire.Rec(key=b"k", value=b"v", timestamp=int(time.time() * 1000))])
        assert conn.produce_v8(single, 0, batch).error_code == 6


def test_admin_changes_from_any_broker(broker_factory, etcd):
    prefix = kutil.unique("admin")
    bs = start_cluster(broker_factory, etcd, prefix)
    wait_for("three brokers", lambda: len(admin(bs[1]).list_topics(timeout=10).brokers) == 3)
    topic = kutil.unique("grow")
    admin(bs[1]).create_topics([NewTopic(topic, 3, 1)])[topic].result(timeout=30)
    # Creating it again on another broker: TOPIC_ALREADY_EXISTS.
    again = admin(bs[3]).create_topics([NewTopic(topic, 3, 1)])[topic]
    try:
        again.result(timeout=30)
        raise AssertionError("created twice")
    except Exception as e:  # noqa: BLE001
        assert e.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS, e

    # More partitions from a second broker, configs from a third.
    admin(bs[2]).create_partitions([NewPartitions(topic, 7)])[topic].result(timeout=30)
    wait_for("seven partitions everywhere",
             lambda: all(len(leaders(b, topic) or {}) == 7 for b in bs.values()))
    res = ConfigResource(ConfigResource.Type.TOPIC, topic, set_config={"retention.ms": "123456"})
    admin(bs[3]).alter_configs([res])[res].result(timeout=30)
    for b in bs.values():
        d = admin(b).describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
        cfg = list(d.values())[0].result(timeout=30)
        assert cfg["retention.ms"].value == "123456"
    stored = etcd.get_prefix(f"/{prefix}/topics/{topic}")
    assert json.loads(stored[f"/{prefix}/topics/{topic}"])["configs"] == {"retention.ms": "123456"}

    # No more replicas than live brokers.
    rf4 = kutil.unique("rf4")
    f = admin(bs[1]).create_topics([NewTopic(rf4, 1, 4)])[rf4]
    try:
        f.result(timeout=30)
        raise AssertionError("rf 4 accepted on three brokers")
    except Exception as e:  # noqa: BLE001
        assert e.args[0].code() == KafkaError.INVALID_REPLICATION_FACTOR, e

    # Deleted while broker 3 is down: it removes its logs when it returns.
    hosted3 = [d for d in bs[3].data_dir.iterdir() if d.is_dir() and d.name.startswith(topic + "-")]
    bs[3].stop()
    admin(bs[1]).delete_topics([topic])[topic].result(timeout=30)
    for b in (bs[1], bs[2]):
        wait_for("topic gone", lambda b=b: topic not in admin(b).list_topics(timeout=10).topics)
        # A broker's metadata drops the topic before its reconciler has
        # deleted the last partition directory (as Kafka deletes logs
        # after the metadata): wait for the directories, do not race them.
        wait_for("the deleted topic's logs removed",
                 lambda b=b: not [d for d in b.data_dir.iterdir() if d.name.startswith(topic + "-")])
    assert etcd.get_prefix(f"/{prefix}/partitions/{topic}/") == {}
    bs[3].start()
    wait_for("broker 3 removed the deleted topic's logs",
             lambda: not [d for d in bs[3].data_dir.iterdir() if d.name.startswith(topic + "-")])
    assert hosted3, "broker 3 hosted some of the topic"


def test_a_single_brokers_topics_found_a_cluster(broker_factory, etcd, tmp_path):
    """A data directory that founds a cluster brings its topics along."""
    from strata_broker import Broker
    alone = Broker(data_dir=tmp_path / "alone", settings=SETTINGS, name="alone")
    alone.start()
    topic = kutil.unique("old")
    admin(alone).create_topics([NewTopic(topic, 2, 1)])[topic].result(timeout=30)
    p = Producer({"bootstrap.servers": alone.bootstrap})
    for i in range(10):
        p.produce(topic, value=b"%d" % i, partition=i % 2)
    assert p.flush(10) == 0
    # A group's committed offsets come along too (the broker publishes its
    # __consumer_offsets copy, which holds them: docs/coordinators.md).
    group = kutil.unique("kept")
    committer = Consumer({"bootstrap.servers": alone.bootstrap, "group.id": group})
    committer.commit(offsets=[TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 4)],
                     asynchronous=False)
    committer.close()
    alone.stop()
    prefix = kutil.unique("founded")
    alone.extra_args = ["--metadata", etcd.url(prefix), "--node-id", "1"]
    alone.start()
    try:
        assert set(wait_for("the old topic in the cluster", lambda: leaders(alone, topic))) == {0, 1}
        assert f"/{prefix}/topics/{topic}" in etcd.get_prefix(f"/{prefix}/topics/")
        c = Consumer({"bootstrap.servers": alone.bootstrap, "group.id": kutil.unique("g"),
                      "auto.offset.reset": "earliest"})
        c.assign([TopicPartition(topic, 0, 0), TopicPartition(topic, 1, 0)])
        got, errors = set(), []
        deadline = time.monotonic() + 20
        while len(got) < 10 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.add(m.value())
            elif m is not None:
                errors.append(str(m.error()))
        c.close()
        assert len(got) == 10, errors[:5]
        check = Consumer({"bootstrap.servers": alone.bootstrap, "group.id": group})
        kept = wait_for("the group's offsets", lambda: (lambda r: r if all(
            tp.error is None for tp in r) else None)(check.committed(
                [TopicPartition(topic, 0), TopicPartition(topic, 1)], timeout=10)))
        check.close()
        assert [tp.offset for tp in kept] == [3, 4]
    finally:
        alone.close()


def fetch_v9(b, topic, partition, offset, current_epoch):
    """Fetch v9 (KIP-320: with current_leader_epoch): (error code, records)."""
    import struct
    body = struct.pack(">iiiibii", -1, 100, 0, 1 << 20, 0, 0, -1)
    body += struct.pack(">i", 1) + wire.kstring(topic) + struct.pack(">i", 1)
    body += struct.pack(">iiqqi", partition, current_epoch, offset, -1, 1 << 20)
    body += struct.pack(">i", 0)  # forgotten topics
    with wire.KafkaConn.to(b.bootstrap) as conn:
        r = wire.Reader(conn.request(wire.API_FETCH, 9, body))
    r.i32(), r.i16(), r.i32()  # throttle, error, session id
    out = []

    def part(rr):
        p_, err = rr.i32(), rr.i16()
        rr.i64(), rr.i64(), rr.i64()  # high watermark, LSO, log start
        rr.array(lambda a: (a.i64(), a.i64()))
        out.append((err, rr.bytes_() or b""))

    r.array(lambda t: (t.string(), t.array(part)))
    return out[0]


def batch_epochs(records):
    epochs, pos = [], 0
    while pos + wire.BATCH_HEADER_SIZE <= len(records):
        h = wire.parse_batch_header(records, pos)
        epochs.append(h.partition_leader_epoch)
        pos += 12 + h.batch_length
    return epochs


def test_a_dead_brokers_partitions_go_offline_and_return_at_a_new_epoch(broker_factory, etcd):
    prefix = kutil.unique("offline")
    bs = start_cluster(broker_factory, etcd, prefix)
    wait_for("three brokers", lambda: len(admin(bs[1]).list_topics(timeout=10).brokers) == 3)
    topic = kutil.unique("epochs")
    admin(bs[1]).create_topics([NewTopic(topic, 3, 1)])[topic].result(timeout=30)
    views = wait_for("metadata", lambda: leaders(bs[1], topic))
    victim = views[0][0]
    mine = sorted(p for p, v in views.items() if v[0] == victim)
    p = Producer({"bootstrap.servers": bs[1].bootstrap, "enable.idempotence": True})
    for i in range(30):
        p.produce(topic, value=b"a%d" % i, partition=i % 3)
    assert p.flush(30) == 0
    before = store_partitions(etcd, prefix, topic)
    assert all(s["leader_epoch"] == 0 for s in before.values())

    bs[victim].kill9()
    survivor = next(b for n, b in bs.items() if n != victim)
    offline = wait_for("the dead broker's partitions offline", lambda: (lambda s: s if all(
        s[q]["leader"] == -1 for q in mine) else None)(store_partitions(etcd, prefix, topic)),
        timeout=SETTINGS["broker.session.timeout.ms"] / 1000 + 10)
    assert all(offline[q]["leader_epoch"] == 1 and offline[q]["isr"] == [victim] for q in mine)
    from test_cluster_membership import metric_values

    def offline_counted():
        counts = [metric_values(b)["strata_cluster_offline_partitions"]
                  for n, b in bs.items() if n != victim]
        assert counts == [len(mine)] * 2, counts
        return True

    wait_for("offline partitions counted in /metrics", offline_counted)
    md = admin(survivor).list_topics(topic=topic, timeout=10).topics[topic]
    for q in mine:
        assert md.partitions[q].leader == -1
        assert md.partitions[q].error is not None and \
            md.partitions[q].error.code() == KafkaError.LEADER_NOT_AVAILABLE

    bs[victim].start()
    back = wait_for("leaders back", lambda: (lambda s: s if all(
        s[q]["leader"] == victim for q in mine) else None)(store_partitions(etcd, prefix, topic)),
        timeout=20)
    assert all(back[q]["leader_epoch"] == 2 for q in mine), back

    # New records carry the new epoch; a fetch naming an old or a future
    # current leader epoch is refused (KIP-320).
    for i in range(30):
        p.produce(topic, value=b"b%d" % i, partition=i % 3)
    assert p.flush(30) == 0
    err, records = fetch_v9(bs[victim], topic, mine[0], 0, current_epoch=2)
    assert err == 0
    epochs = batch_epochs(records)
    assert epochs[0] == 0 and epochs[-1] == 2, epochs
    assert fetch_v9(bs[victim], topic, mine[0], 0, current_epoch=1)[0] == 74  # FENCED_LEADER_EPOCH
    assert fetch_v9(bs[victim], topic, mine[0], 0, current_epoch=3)[0] == 75  # UNKNOWN_LEADER_EPOCH

    # librdkafka reads everything across the epoch change (it validates
    # its position with OffsetForLeaderEpoch when the epoch moves).
    c = Consumer({"bootstrap.servers": survivor.bootstrap, "group.id": kutil.unique("g"),
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = set()
    deadline = time.monotonic() + 30
    while len(got) < 60 and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.add(m.value())
    c.close()
    assert len(got) == 60
