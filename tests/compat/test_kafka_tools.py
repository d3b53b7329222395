# Owns: Apache Kafka's own command-line tools (issue 34) run against Strata as
# an operator types them, with what they print asserted: kafka-topics,
# kafka-configs, kafka-consumer-groups, kafka-get-offsets,
# kafka-delete-records, kafka-transactions, the perf tests and the
# verifiable producer/consumer on one broker; kafka-reassign-partitions and
# kafka-leader-election on three brokers on etcd. Helpers in kafka_tools/
# (toolkit.py), findings and how to run it in kafka_tools/README.md.
# KAFKA_TOOLS_TARGET=kafka runs the same tests against Apache Kafka itself.
"""Kafka's command-line tools against Strata (tests/compat/kafka_tools/README.md)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "kafka_tools"))

import toolkit  # noqa: E402
from toolkit import describe_configs, describe_topics, json_after, json_lines, table, tool, wait_for  # noqa: E402

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic  # noqa: E402

STRATA_SINGLE = {
    "group.initial.rebalance.delay.ms": 0,
    "log.retention.check.interval.ms": 500,
}
STRATA_CLUSTER = {
    "group.initial.rebalance.delay.ms": 0,
    "broker.session.timeout.ms": 3000,
    "broker.heartbeat.interval.ms": 500,
    "replica.lag.time.max.ms": 3000,
    "offsets.topic.replication.factor": 3,
    "transaction.state.log.replication.factor": 3,
    # The elections are the tool's doing, not the controller's.
    "auto.leader.rebalance.enable": "false",
}
KAFKA_CLUSTER = {
    "broker.session.timeout.ms": 3000,
    "broker.heartbeat.interval.ms": 500,
    "replica.lag.time.max.ms": 3000,
    "auto.leader.rebalance.enable": "false",
}

_view = toolkit.LogView()


def _register_logs():
    """tests/compat/conftest.py attaches the broker log of a failed test."""
    conftest = sys.modules.get("conftest")
    if conftest is not None and hasattr(conftest, "_brokers"):
        conftest._brokers[__name__] = _view


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    base = tmp_path_factory.mktemp("kafka-tools")
    if toolkit.TARGET == "kafka":
        t = toolkit.KafkaTarget(base, {}, nodes=1)
    else:
        from strata_broker import BrokerError, check_binary
        try:
            check_binary()
        except BrokerError as e:
            pytest.fail(str(e), pytrace=False)
        t = toolkit.StrataSingle(base, STRATA_SINGLE)
    _view.targets.append(t)
    _register_logs()
    toolkit.prepare_jvm(t.bootstrap)
    yield t
    _view.targets.remove(t)
    t.close()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    base = tmp_path_factory.mktemp("kafka-tools-cluster")
    if toolkit.TARGET == "kafka":
        t = toolkit.KafkaTarget(base, KAFKA_CLUSTER, nodes=3)
    else:
        t = toolkit.StrataCluster(base, STRATA_CLUSTER)
    _view.targets.append(t)
    _register_logs()
    toolkit.prepare_jvm(t.bootstrap)
    wait_for("three brokers", lambda: len(admin(t).list_topics(timeout=10).brokers) == 3)
    yield t
    _view.targets.remove(t)
    t.close()


# ----------------------------------------------------------------------------
# Client-side helpers (confluent-kafka: an independent check of what the
# tools did).

def admin(t) -> AdminClient:
    return AdminClient({"bootstrap.servers": t.bootstrap})


def produce(t, topic: str, records: list[tuple[int, bytes, int | None]], acks="all") -> dict:
    """records: (partition, value, timestamp ms or None). Returns
    {partition: [offsets]} as acknowledged."""
    acked: dict[int, list[int]] = {}
    errors = []
    p = Producer({"bootstrap.servers": t.bootstrap, "acks": acks, "linger.ms": 5})

    def cb(err, msg):
        if err:
            errors.append(err)
        else:
            acked.setdefault(msg.partition(), []).append(msg.offset())

    for part, value, ts in records:
        kw = {"timestamp": ts} if ts is not None else {}
        p.produce(topic, value=value, partition=part, on_delivery=cb, **kw)
    assert p.flush(30) == 0 and not errors, errors
    return acked


def consume_all(t, topic: str, partitions: int, expect: int, timeout: float = 30,
                isolation="read_uncommitted") -> dict[int, list[tuple[int, bytes]]]:
    """Reads every partition from the beginning by assignment until
    `expect` records came: {partition: [(offset, value)]}."""
    c = Consumer({"bootstrap.servers": t.bootstrap, "group.id": "kafka-tools-reader",
                  "enable.auto.commit": False, "isolation.level": isolation})
    c.assign([TopicPartition(topic, p, -2) for p in range(partitions)])
    got: dict[int, list] = {}
    n = 0
    deadline = time.monotonic() + timeout
    try:
        while n < expect and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None or m.error():
                continue
            got.setdefault(m.partition(), []).append((m.offset(), m.value()))
            n += 1
    finally:
        c.close()
    assert n == expect, f"read {n} of {expect} records of {topic}"
    return got


def create(t, topic: str, partitions: int, rf: int = 1, config: dict | None = None):
    a = admin(t)   # kept alive until the topic exists
    a.create_topics([NewTopic(topic, partitions, rf, config=config or {})])[topic].result(30)
    wait_for(f"{topic} in metadata", lambda: topic in admin(t).list_topics(timeout=10).topics
             and len(admin(t).list_topics(timeout=10).topics[topic].partitions) == partitions)


def committed(t, group: str, topic: str, partitions: int) -> dict[int, int]:
    c = Consumer({"bootstrap.servers": t.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=15)
    finally:
        c.close()
    return {tp.partition: tp.offset for tp in got}


def topic_configs(t, topic: str) -> dict[str, str]:
    res = ConfigResource("topic", topic)
    a = admin(t)
    cfg = a.describe_configs([res])[res].result(30)
    return {k: v.value for k, v in cfg.items()}


def broker_ids(t) -> list[int]:
    return sorted(admin(t).list_topics(timeout=10).brokers)


def iso(ms: int) -> str:
    """A time as kafka-consumer-groups --to-datetime takes it (UTC, 'Z')."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + \
        f"{ms % 1000:03d}Z"


BASE_TS = (int(time.time() * 1000) // 1000 - 3600) * 1000   # an hour ago, whole second


# ----------------------------------------------------------------------------
# kafka-topics

def test_topics_create_list_describe(single):
    B = single.bootstrap
    r = tool("kafka-topics.sh", "--bootstrap-server", B, "--create", "--topic", "tools-orders",
             "--partitions", "3", "--replication-factor", "1",
             "--config", "retention.ms=3600000", "--config", "local.retention.ms=600000")
    assert r.out.strip() == "Created topic tools-orders.", r
    listed = tool("kafka-topics.sh", "--bootstrap-server", B, "--list")
    assert "tools-orders" in listed.out.split(), listed
    d = tool("kafka-topics.sh", "--bootstrap-server", B, "--describe", "--topic", "tools-orders")
    topics = describe_topics(d.out)
    assert set(topics) == {"tools-orders"}, d
    t = topics["tools-orders"]
    assert t["PartitionCount"] == "3" and t["ReplicationFactor"] == "1", d
    assert t.get("TopicId") and t["TopicId"] != "AAAAAAAAAAAAAAAAAAAAAA", d
    assert t["configs"].get("retention.ms") == "3600000", d
    assert t["configs"].get("local.retention.ms") == "600000", d
    [node] = broker_ids(single)
    assert sorted(t["partitions"]) == [0, 1, 2], d
    for p in t["partitions"].values():
        assert p["Leader"] == node and p["Replicas"] == [node] and p["Isr"] == [node], d
    # And through the AdminClient.
    md = admin(single).list_topics("tools-orders", timeout=10).topics["tools-orders"]
    assert len(md.partitions) == 3
    # Creating it again: Kafka's error, exit 1.
    again = tool("kafka-topics.sh", "--bootstrap-server", B, "--create", "--topic", "tools-orders",
                 "--partitions", "1", ok=False)
    assert again.rc == 1 and "TopicExistsException" in again.out + again.err, again
    assert "Topic 'tools-orders' already exists." in again.out + again.err, again


def test_topics_alter_partitions(single):
    B = single.bootstrap
    create(single, "tools-grow", 2)
    r = tool("kafka-topics.sh", "--bootstrap-server", B, "--alter", "--topic", "tools-grow", "--partitions", "5")
    assert "Error" not in r.out + r.err, r
    d = describe_topics(tool("kafka-topics.sh", "--bootstrap-server", B, "--describe",
                             "--topic", "tools-grow").out)
    assert d["tools-grow"]["PartitionCount"] == "5" and sorted(d["tools-grow"]["partitions"]) == list(range(5)), d
    assert len(admin(single).list_topics("tools-grow", timeout=10).topics["tools-grow"].partitions) == 5
    # Shrinking is refused, as by Kafka.
    bad = tool("kafka-topics.sh", "--bootstrap-server", B, "--alter", "--topic", "tools-grow",
               "--partitions", "3", ok=False)
    assert bad.rc == 1 and "InvalidPartitionsException" in bad.out + bad.err, bad


def test_topics_delete(single):
    B = single.bootstrap
    create(single, "tools-doomed", 1)
    r = tool("kafka-topics.sh", "--bootstrap-server", B, "--delete", "--topic", "tools-doomed")
    assert r.out.strip() == "", r
    wait_for("topic gone", lambda: "tools-doomed" not in admin(single).list_topics(timeout=10).topics)
    listed = tool("kafka-topics.sh", "--bootstrap-server", B, "--list")
    assert "tools-doomed" not in listed.out.split(), listed
    gone = tool("kafka-topics.sh", "--bootstrap-server", B, "--describe", "--topic", "tools-doomed", ok=False)
    assert gone.rc == 1 and "Topic 'tools-doomed' does not exist" in gone.out + gone.err, gone


# ----------------------------------------------------------------------------
# kafka-configs

def test_configs_topic_alter_and_describe(single):
    B = single.bootstrap
    create(single, "tools-cfg", 1, config={"retention.ms": "3600000"})
    d0 = tool("kafka-configs.sh", "--bootstrap-server", B, "--describe", "--entity-type", "topics",
              "--entity-name", "tools-cfg")
    assert d0.out.splitlines()[0] == "Dynamic configs for topic tools-cfg are:", d0
    cfg = describe_configs(d0.out)
    assert cfg["retention.ms"]["value"] == "3600000", d0
    assert ("DYNAMIC_TOPIC_CONFIG", "retention.ms", "3600000") in cfg["retention.ms"]["synonyms"], d0
    a = tool("kafka-configs.sh", "--bootstrap-server", B, "--alter", "--entity-type", "topics",
             "--entity-name", "tools-cfg", "--add-config", "local.retention.ms=120000,retention.ms=7200000")
    assert a.out.strip() == "Completed updating config for topic tools-cfg.", a
    d1 = tool("kafka-configs.sh", "--bootstrap-server", B, "--describe", "--entity-type", "topics",
              "--entity-name", "tools-cfg")
    cfg = describe_configs(d1.out)
    assert cfg["retention.ms"]["value"] == "7200000", d1
    assert cfg["local.retention.ms"]["value"] == "120000", d1
    assert cfg["local.retention.ms"]["synonyms"][0] == ("DYNAMIC_TOPIC_CONFIG", "local.retention.ms", "120000"), d1
    # Only the overrides are "dynamic": nothing left at its default.
    assert set(cfg) == {"retention.ms", "local.retention.ms"}, d1
    # The AdminClient reads the same.
    ac = topic_configs(single, "tools-cfg")
    assert ac["retention.ms"] == "7200000" and ac["local.retention.ms"] == "120000", ac
    # --all lists every topic config, defaults included.
    al = tool("kafka-configs.sh", "--bootstrap-server", B, "--describe", "--entity-type", "topics",
              "--entity-name", "tools-cfg", "--all")
    assert al.out.splitlines()[0] == "All configs for topic tools-cfg are:", al
    every = describe_configs(al.out)
    for name in ("cleanup.policy", "segment.bytes", "max.message.bytes", "retention.bytes",
                 "remote.storage.enable", "local.retention.bytes"):
        assert name in every, f"{name} missing from --all:\n{al}"
    assert every["retention.ms"]["value"] == "7200000", al
    assert every["cleanup.policy"]["synonyms"][-1][0] == "DEFAULT_CONFIG", al


def test_configs_delete_config(single):
    B = single.bootstrap
    create(single, "tools-cfg-del", 1, config={"retention.ms": "3600000", "local.retention.ms": "60000"})
    r = tool("kafka-configs.sh", "--bootstrap-server", B, "--alter", "--entity-type", "topics",
             "--entity-name", "tools-cfg-del", "--delete-config", "local.retention.ms")
    assert r.out.strip() == "Completed updating config for topic tools-cfg-del.", r
    d = tool("kafka-configs.sh", "--bootstrap-server", B, "--describe", "--entity-type", "topics",
             "--entity-name", "tools-cfg-del")
    cfg = describe_configs(d.out)
    assert set(cfg) == {"retention.ms"}, d
    ac = topic_configs(single, "tools-cfg-del")
    assert ac["local.retention.ms"] == "-2" and ac["retention.ms"] == "3600000", ac
    # Deleting a config that is not set is no error (as in Kafka 4.4).
    again = tool("kafka-configs.sh", "--bootstrap-server", B, "--alter", "--entity-type", "topics",
                 "--entity-name", "tools-cfg-del", "--delete-config", "segment.ms")
    assert again.out.strip() == "Completed updating config for topic tools-cfg-del.", again
    assert topic_configs(single, "tools-cfg-del")["retention.ms"] == "3600000"


def test_configs_describe_broker(single):
    B = single.bootstrap
    [node] = broker_ids(single)
    d = tool("kafka-configs.sh", "--bootstrap-server", B, "--describe", "--entity-type", "brokers",
             "--entity-name", str(node))
    assert d.out.splitlines()[0] == f"Dynamic configs for broker {node} are:", d
    al = tool("kafka-configs.sh", "--bootstrap-server", B, "--describe", "--entity-type", "brokers",
              "--entity-name", str(node), "--all")
    assert al.out.splitlines()[0] == f"All configs for broker {node} are:", al
    every = describe_configs(al.out)
    assert len(every) > 20, al
    assert every["group.initial.rebalance.delay.ms"]["value"] == "0", al
    assert every["group.initial.rebalance.delay.ms"]["synonyms"][0][0] == "STATIC_BROKER_CONFIG", al
    assert every["log.retention.hours"]["value"] == "168", al
    assert every["log.retention.hours"]["synonyms"][-1][0] == "DEFAULT_CONFIG", al
    assert "num.partitions" in every, al


# ----------------------------------------------------------------------------
# kafka-consumer-groups

GROUP_TOPIC = "tools-groups"


@pytest.fixture(scope="module")
def group_topic(single):
    """2 partitions, 10 records each; record i at BASE_TS + i s."""
    create(single, GROUP_TOPIC, 2)
    produce(single, GROUP_TOPIC, [(p, b"g%d-%d" % (p, i), BASE_TS + i * 1000) for p in (0, 1) for i in range(10)])
    return GROUP_TOPIC


def live_member(t, group: str, topic: str, commit: dict[int, int], client_id: str) -> Consumer:
    """A subscribed confluent-kafka consumer that owns both partitions and
    committed `commit` ({partition: offset})."""
    c = Consumer({"bootstrap.servers": t.bootstrap, "group.id": group, "client.id": client_id,
                  "enable.auto.commit": False, "auto.offset.reset": "earliest",
                  "partition.assignment.strategy": "range"})
    c.subscribe([topic])
    wait_for("partitions assigned", lambda: (c.poll(0.2), len(c.assignment()) == 2)[1], timeout=30, interval=0)
    c.commit(offsets=[TopicPartition(topic, p, o) for p, o in commit.items()], asynchronous=False)
    return c


def test_consumer_groups_list_and_describe(single, group_topic):
    B, g = single.bootstrap, "tools-g-describe"
    c = live_member(single, g, group_topic, {0: 4, 1: 6}, "tools-describer")
    try:
        listed = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--list")
        assert g in listed.out.split(), listed
        d = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--describe", "--group", g)
        rows = {int(r["PARTITION"]): r for r in table(d.out, "GROUP") if r["TOPIC"] == group_topic}
        assert sorted(rows) == [0, 1], d
        for p, cur in ((0, 4), (1, 6)):
            r = rows[p]
            assert (r["GROUP"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) == (g, str(cur), "10", str(10 - cur)), d
            assert r["CONSUMER-ID"].startswith("tools-describer-"), d
            assert r["HOST"] == "/127.0.0.1" and r["CLIENT-ID"] == "tools-describer", d
        # --offsets is the default view: the same table.
        o = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--describe", "--group", g, "--offsets")
        assert table(o.out, "GROUP") == table(d.out, "GROUP"), o
        m = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--describe", "--group", g, "--members")
        [mem] = table(m.out, "GROUP")
        assert mem["CONSUMER-ID"] == rows[0]["CONSUMER-ID"] and mem["#PARTITIONS"] == "2", m
        assert mem["HOST"] == "/127.0.0.1" and mem["CLIENT-ID"] == "tools-describer", m
        mv = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--describe", "--group", g,
                  "--members", "--verbose")
        [vm] = table(mv.out, "GROUP")
        assert f"{group_topic}:0,1" in vm.values(), mv
        s = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--describe", "--group", g, "--state")
        st = state_row(s.out)
        assert st["GROUP"] == g and st["STATE"] == "Stable" and st["#MEMBERS"] == "1", s
        assert st["ASSIGNMENT-STRATEGY"] == "range", s
        assert st["COORDINATOR"].endswith(")") and "127.0.0.1:" in st["COORDINATOR"], s
    finally:
        c.close()
    # The member left: no active members, the committed offsets stay.
    d = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--describe", "--group", g)
    assert f"Consumer group '{g}' has no active members." in d.out + d.err, d
    rows = {int(r["PARTITION"]): r for r in table(d.out, "GROUP")}
    assert rows[0]["CURRENT-OFFSET"] == "4" and rows[1]["CURRENT-OFFSET"] == "6", d
    assert rows[0]["CONSUMER-ID"] == "-" and rows[0]["HOST"] == "-", d
    s = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--describe", "--group", g, "--state")
    st = state_row(s.out)
    assert st["STATE"] == "Empty" and st["#MEMBERS"] == "0", s


def test_consumer_groups_describe_unknown_group(single):
    # Kafka 4.4 prints this (and exits 0) since DescribeGroups v6 answers
    # GROUP_ID_NOT_FOUND for an unknown group (KIP-1043); through v5 the
    # group came back Dead and the tool said "does not exist". Strata
    # serves v6 since 2026-12-06 (it printed the v5 text before).
    missing = tool("kafka-consumer-groups.sh", "--bootstrap-server", single.bootstrap, "--describe",
                   "--group", "tools-no-such-group", ok=False)
    assert ("Error: Executing consumer group command failed due to org.apache.kafka.common.errors."
            "GroupIdNotFoundException: Group tools-no-such-group not found.") in missing.out + missing.err, missing


def state_row(text: str) -> dict:
    """--describe --state: `GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE
    #MEMBERS`, where COORDINATOR (ID) is `host:port  (id)`."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    hi = next(i for i, ln in enumerate(lines) if ln.split()[:1] == ["GROUP"])
    cols = lines[hi + 1].split()
    # GROUP, host:port, (id), strategy, state, members
    return {"GROUP": cols[0], "COORDINATOR": f"{cols[1]} {cols[2]}", "ASSIGNMENT-STRATEGY": cols[3],
            "STATE": cols[4], "#MEMBERS": cols[5]}


def reset(B, g, *args):
    r = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--group", g, "--reset-offsets", *args)
    return r, {(row["TOPIC"], int(row["PARTITION"])): int(row["NEW-OFFSET"]) for row in table(r.out, "GROUP")}


def test_consumer_groups_reset_offsets(single, group_topic):
    B, g, t = single.bootstrap, "tools-g-reset", group_topic
    live_member(single, g, t, {0: 5, 1: 5}, "tools-resetter").close()
    # A live group cannot be reset.
    c = live_member(single, g, t, {0: 5, 1: 5}, "tools-resetter")
    try:
        busy = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--group", g, "--reset-offsets",
                    "--to-earliest", "--topic", t, "--execute", ok=False)
        assert "Assignments can only be reset if the group 'tools-g-reset' is inactive, but the current state is Stable." \
            in busy.out + busy.err, busy
    finally:
        c.close()
    r, new = reset(B, g, "--to-earliest", "--topic", t, "--dry-run")
    assert new == {(t, 0): 0, (t, 1): 0}, r
    assert committed(single, g, t, 2) == {0: 5, 1: 5}, "--dry-run changed the committed offsets"
    r, new = reset(B, g, "--to-earliest", "--topic", t, "--execute")
    assert new == {(t, 0): 0, (t, 1): 0}, r
    assert committed(single, g, t, 2) == {0: 0, 1: 0}
    r, new = reset(B, g, "--to-latest", "--all-topics", "--execute")
    assert new == {(t, 0): 10, (t, 1): 10}, r
    assert committed(single, g, t, 2) == {0: 10, 1: 10}
    r, new = reset(B, g, "--to-offset", "3", "--topic", f"{t}:1", "--execute")
    assert new == {(t, 1): 3}, r
    assert committed(single, g, t, 2) == {0: 10, 1: 3}
    r, new = reset(B, g, "--shift-by", "-2", "--topic", t, "--execute")
    assert new == {(t, 0): 8, (t, 1): 1}, r
    assert committed(single, g, t, 2) == {0: 8, 1: 1}
    # The first record at or after the time: record 6 of each partition.
    r, new = reset(B, g, "--to-datetime", iso(BASE_TS + 5500), "--topic", t, "--execute")
    assert new == {(t, 0): 6, (t, 1): 6}, r
    assert committed(single, g, t, 2) == {0: 6, 1: 6}
    # Without --dry-run or --execute: a dry run, saying so.
    r, new = reset(B, g, "--to-earliest", "--topic", t)
    assert "WARN: No action will be performed as the --execute option is missing." in r.out + r.err, r
    assert new == {(t, 0): 0, (t, 1): 0}, r
    assert committed(single, g, t, 2) == {0: 6, 1: 6}


def test_consumer_groups_delete_offsets(single, group_topic):
    B, g, t = single.bootstrap, "tools-g-deloffsets", group_topic
    create(single, "tools-groups-other", 1)
    c = Consumer({"bootstrap.servers": B, "group.id": g, "enable.auto.commit": False})
    c.commit(offsets=[TopicPartition(t, 0, 3), TopicPartition(t, 1, 4),
                      TopicPartition("tools-groups-other", 0, 0)], asynchronous=False)
    c.close()
    r = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--delete-offsets", "--group", g, "--topic", t)
    assert r.out.splitlines()[0] == f"Request succeeded for deleting offsets from group {g}.", r
    rows = {int(x["PARTITION"]): x["STATUS"] for x in table(r.out, "TOPIC")}
    assert rows == {0: "Successful", 1: "Successful"}, r
    assert committed(single, g, t, 2) == {0: -1001, 1: -1001}
    assert committed(single, g, "tools-groups-other", 1) == {0: 0}
    d = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--describe", "--group", g)
    assert {x["TOPIC"] for x in table(d.out, "GROUP")} == {"tools-groups-other"}, d


def test_consumer_groups_delete(single, group_topic):
    B, g = single.bootstrap, "tools-g-delete"
    live_member(single, g, group_topic, {0: 1, 1: 1}, "tools-deleter").close()
    wait_for("group listed", lambda: g in tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--list").out.split(),
             timeout=10)
    r = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--delete", "--group", g)
    assert f"Deletion of requested consumer groups ('{g}') was successful." in r.out, r
    listed = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--list")
    assert g not in listed.out.split(), listed
    assert committed(single, g, group_topic, 2) == {0: -1001, 1: -1001}
    again = tool("kafka-consumer-groups.sh", "--bootstrap-server", B, "--delete", "--group", g, ok=False)
    assert f"Group '{g}' could not be deleted due to:" in again.out + again.err, again
    assert "GroupIdNotFoundException" in again.out + again.err, again


# ----------------------------------------------------------------------------
# kafka-get-offsets, kafka-delete-records

def test_get_offsets(single):
    B, t = single.bootstrap, "tools-offsets"
    create(single, t, 2)
    # Partition 0: timestamps rise except offset 5, the newest; partition 1 rises.
    ts0 = [BASE_TS + i * 1000 for i in range(10)]
    ts0[5] = BASE_TS + 20_000
    produce(single, t, [(0, b"a%d" % i, ts0[i]) for i in range(10)] +
            [(1, b"b%d" % i, BASE_TS + i * 1000) for i in range(6)])

    def offsets(*args):
        r = tool("kafka-get-offsets.sh", "--bootstrap-server", B, "--topic", t, *args)
        out = {}
        for line in r.out.split():
            topic, part, off = line.rsplit(":", 2)
            assert topic == t, r
            out[int(part)] = int(off)
        return r, out

    r, o = offsets("--time", "-1")
    assert o == {0: 10, 1: 6}, r
    r, o = offsets("--time", "-2")
    assert o == {0: 0, 1: 0}, r
    r, o = offsets("--time", "-3")
    assert o == {0: 5, 1: 5}, r
    r, o = offsets("--time", str(BASE_TS + 3500))
    assert o == {0: 4, 1: 4}, r
    # After every record: no offset, so Kafka prints no line for the partition.
    r, o = offsets("--time", str(BASE_TS + 60_000), "--partitions", "1")
    assert o == {}, r


def test_delete_records(single, tmp_path):
    B, t = single.bootstrap, "tools-delete-records"
    create(single, t, 2)
    produce(single, t, [(p, b"d%d" % i, None) for p in (0, 1) for i in range(10)])
    plan = tmp_path / "delete.json"
    plan.write_text(json.dumps({"partitions": [{"topic": t, "partition": 0, "offset": 4},
                                               {"topic": t, "partition": 1, "offset": -1}], "version": 1}))
    r = tool("kafka-delete-records.sh", "--bootstrap-server", B, "--offset-json-file", str(plan))
    assert r.out.splitlines()[0] == "Executing records delete operation", r
    assert "Records delete operation completed:" in r.out, r
    assert f"partition: {t}-0\tlow_watermark: 4" in r.out, r
    assert f"partition: {t}-1\tlow_watermark: 10" in r.out, r
    lo = tool("kafka-get-offsets.sh", "--bootstrap-server", B, "--topic", t, "--time", "-2")
    assert sorted(lo.out.split()) == [f"{t}:0:4", f"{t}:1:10"], lo
    got = consume_all(single, t, 2, 6)
    assert [o for o, _ in got[0]] == list(range(4, 10)) and 1 not in got, got
    # Beyond the high watermark: Kafka's OffsetOutOfRange, per partition.
    plan.write_text(json.dumps({"partitions": [{"topic": t, "partition": 0, "offset": 99}], "version": 1}))
    bad = tool("kafka-delete-records.sh", "--bootstrap-server", B, "--offset-json-file", str(plan))
    assert f"partition: {t}-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException" in bad.out, bad


# ----------------------------------------------------------------------------
# kafka-producer-perf-test, kafka-consumer-perf-test

PERF_RECORDS = 5000


def test_producer_perf_test(single):
    B, t = single.bootstrap, "tools-perf"
    create(single, t, 3)
    r = tool("kafka-producer-perf-test.sh", "--topic", t, "--num-records", str(PERF_RECORDS), "--record-size", "100",
             "--throughput", "-1", "--producer-props", f"bootstrap.servers={B}", "acks=all", "linger.ms=5")
    final = [ln for ln in r.out.splitlines() if ln.startswith(f"{PERF_RECORDS} records sent,")]
    assert len(final) == 1, r
    assert "records/sec" in final[0] and "ms avg latency" in final[0] and "99.9th" in final[0], r
    ends = tool("kafka-get-offsets.sh", "--bootstrap-server", B, "--topic", t, "--time", "-1")
    assert sum(int(ln.rsplit(":", 1)[1]) for ln in ends.out.split()) == PERF_RECORDS, ends
    got = consume_all(single, t, 3, PERF_RECORDS)
    assert all(len(v) == 100 for recs in got.values() for _, v in recs)


def test_consumer_perf_test(single):
    B, t = single.bootstrap, "tools-perf-read"
    create(single, t, 3)
    produce(single, t, [(i % 3, b"x" * 100, None) for i in range(PERF_RECORDS)])
    r = tool("kafka-consumer-perf-test.sh", "--bootstrap-server", B, "--topic", t,
             "--num-records", str(PERF_RECORDS), "--timeout", "30000", "--group", "tools-perf-group")
    lines = [ln for ln in r.out.splitlines() if ln.strip() and not ln.startswith("WARNING")]
    header = [h.strip() for h in lines[0].split(",")]
    assert header[:6] == ["start.time", "end.time", "data.consumed.in.MB", "MB.sec", "data.consumed.in.nMsg",
                          "nMsg.sec"], r
    values = dict(zip(header, (v.strip() for v in lines[1].split(","))))
    assert int(values["data.consumed.in.nMsg"]) == PERF_RECORDS, r
    assert abs(float(values["data.consumed.in.MB"]) - PERF_RECORDS * 100 / 1024 / 1024) < 0.01, r


# ----------------------------------------------------------------------------
# kafka-verifiable-producer, kafka-verifiable-consumer

def test_verifiable_producer_and_consumer(single):
    B, t, n = single.bootstrap, "tools-verifiable", 600
    create(single, t, 3)
    pr = tool("kafka-verifiable-producer.sh", "--bootstrap-server", B, "--topic", t, "--max-messages", str(n),
              "--acks", "-1")
    events = json_lines(pr.out)
    names = [e["name"] for e in events]
    assert names[0] == "startup_complete" and "shutdown_complete" in names, pr
    acked = [e for e in events if e["name"] == "producer_send_success"]
    assert not [e for e in events if e["name"] == "producer_send_error"], pr
    assert len(acked) == n, pr
    [data] = [e for e in events if e["name"] == "tool_data"]
    assert data["sent"] == n and data["acked"] == n, data
    by_part: dict[int, list[tuple[int, str]]] = {}
    for e in acked:
        by_part.setdefault(e["partition"], []).append((e["offset"], e["value"]))
    for p, recs in by_part.items():
        assert [o for o, _ in recs] == list(range(len(recs))), f"partition {p}: acked offsets not 0..n-1"

    co = tool("kafka-verifiable-consumer.sh", "--bootstrap-server", B, "--topic", t, "--group-id", "tools-verifiable",
              "--max-messages", str(n), "--reset-policy", "earliest", "--verbose", timeout=120)
    events = json_lines(co.out)
    names = [e["name"] for e in events]
    assert names[0] == "startup_complete" and "partitions_assigned" in names and "shutdown_complete" in names, co
    records = [e for e in events if e["name"] == "record_data"]
    seen: dict[int, list[tuple[int, str]]] = {}
    for e in records:
        seen.setdefault(e["partition"], []).append((e["offset"], e["value"]))
    assert seen == by_part, "the consumer did not read exactly the acknowledged records, in order"
    batches = [e for e in events if e["name"] == "records_consumed"]
    assert sum(b["count"] for b in batches) == n, co
    commits = [e for e in events if e["name"] == "offsets_committed"]
    assert commits and all(c["success"] for c in commits), co
    last = {(o["topic"], o["partition"]): o["offset"] for c in commits for o in c["offsets"]}
    assert last == {(t, p): len(v) for p, v in by_part.items()}, commits[-1]
    c = committed(single, "tools-verifiable", t, 3)
    assert {p: c[p] for p in by_part} == {p: len(v) for p, v in by_part.items()}, c


# ----------------------------------------------------------------------------
# kafka-transactions

@pytest.fixture(scope="module")
def open_txn(single):
    """A transaction left open by a transactional producer killed with
    SIGKILL: 5 records on tools-txn partition 1 after 3 committed-free
    plain records."""
    t = "tools-txn"
    create(single, t, 2)
    produce(single, t, [(1, b"plain-%d" % i, None) for i in range(3)])
    p = subprocess.Popen([sys.executable, str(HERE / "kafka_tools" / "open_txn.py"), single.bootstrap, t, "1",
                          "tools-txn-id", "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if '"ready"' not in line:
        p.kill()
        pytest.fail(f"transactional producer did not start: {line}{p.stderr.read()}")
    p.send_signal(signal.SIGKILL)
    p.wait(10)
    return {"topic": t, "partition": 1, "start": 3, "txn_id": "tools-txn-id"}


def test_transactions_list_describe(single, open_txn):
    B, t = single.bootstrap, open_txn["topic"]
    ls = tool("kafka-transactions.sh", "--bootstrap-server", B, "list")
    rows = {r["TransactionalId"]: r for r in table(ls.out, "TransactionalId")}
    assert "tools-txn-id" in rows, ls
    assert rows["tools-txn-id"]["TransactionState"] == "Ongoing", ls
    pid = rows["tools-txn-id"]["ProducerId"]
    d = tool("kafka-transactions.sh", "--bootstrap-server", B, "describe", "--transactional-id", "tools-txn-id")
    [row] = table(d.out, "CoordinatorId")
    assert row["TransactionalId"] == "tools-txn-id" and row["ProducerId"] == pid, d
    assert row["TransactionState"] == "Ongoing" and row["TransactionTimeoutMs"] == "600000", d
    assert row["TopicPartitions"] == f"{t}-1", d
    dp = tool("kafka-transactions.sh", "--bootstrap-server", B, "describe-producers", "--topic", t, "--partition", "1")
    [prow] = [r for r in table(dp.out, "ProducerId") if r["ProducerId"] == pid]
    assert prow["CurrentTransactionStartOffset"] == "3" and prow["LastSequence"] == "4", dp
    missing = tool("kafka-transactions.sh", "--bootstrap-server", B, "describe", "--transactional-id",
                   "tools-no-such-txn", ok=False)
    assert missing.rc == 1, missing
    assert ("Failed to describe transaction state of transactional-id `tools-no-such-txn`: DescribeTransactions "
            "request for transactionalId `tools-no-such-txn` failed because the ID could not be found.") \
        in missing.out + missing.err, missing


def test_transactions_find_hanging_and_abort(single, open_txn):
    B, t, part, start = single.bootstrap, open_txn["topic"], open_txn["partition"], open_txn["start"]
    # Open for less than a minute and known to its coordinator: not hanging.
    fh = tool("kafka-transactions.sh", "--bootstrap-server", B, "find-hanging", "--topic", t, "--max-transaction-timeout", "1")
    assert table(fh.out, "Topic") == [], fh
    assert fh.out.split()[:8] == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch",
                                  "StartOffset", "LastTimestamp", "Duration(min)"], fh
    # The open transaction holds back read_committed readers.
    hold = lso(single, t, part)
    assert hold == start, f"last stable offset {hold}, expected {start}"
    ab = tool("kafka-transactions.sh", "--bootstrap-server", B, "abort", "--topic", t, "--partition", str(part),
              "--start-offset", str(start))
    assert "Error" not in ab.out + ab.err, ab
    wait_for("last stable offset past the aborted transaction", lambda: lso(single, t, part) > start + 5, timeout=15)
    dp = tool("kafka-transactions.sh", "--bootstrap-server", B, "describe-producers", "--topic", t, "--partition", str(part))
    assert all(r["CurrentTransactionStartOffset"] == "None" for r in table(dp.out, "ProducerId")), dp
    got = consume_all(single, t, 2, 3, isolation="read_committed")
    assert [v for _, v in got[1]] == [b"plain-0", b"plain-1", b"plain-2"], got


def lso(t, topic, part) -> int:
    c = Consumer({"bootstrap.servers": t.bootstrap, "group.id": "tools-lso", "isolation.level": "read_committed"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, part), timeout=10)[1]
    finally:
        c.close()


# ----------------------------------------------------------------------------
# Three brokers: kafka-reassign-partitions, kafka-leader-election

def cluster_describe(t, topic):
    d = tool("kafka-topics.sh", "--bootstrap-server", t.bootstrap, "--describe", "--topic", topic)
    return d, describe_topics(d.out)[topic]["partitions"]


def md_partitions(t, topic):
    """{partition: (leader, replicas, isr)} from confluent-kafka's metadata."""
    md = admin(t).list_topics(topic, timeout=10).topics[topic]
    return {p: (m.leader, list(m.replicas), sorted(m.isrs)) for p, m in md.partitions.items()}


def test_reassign_partitions_generate(cluster, tmp_path):
    B, t = cluster.bootstrap, "tools-moving-gen"
    r = tool("kafka-topics.sh", "--bootstrap-server", B, "--create", "--topic", t, "--replica-assignment", "1:2,2:3,3:1")
    assert r.out.strip() == f"Created topic {t}.", r
    topics_json = tmp_path / "topics.json"
    topics_json.write_text(json.dumps({"topics": [{"topic": t}], "version": 1}))
    g = tool("kafka-reassign-partitions.sh", "--bootstrap-server", B, "--generate",
             "--topics-to-move-json-file", str(topics_json), "--broker-list", "1,2,3")
    current = json_after(g.out, "Current partition replica assignment")
    assert current["version"] == 1, g
    assert {p["partition"]: p["replicas"] for p in current["partitions"]} == {0: [1, 2], 1: [2, 3], 2: [3, 1]}, g
    proposed = json_after(g.out, "Proposed partition reassignment configuration")
    assert sorted(p["partition"] for p in proposed["partitions"]) == [0, 1, 2], g
    for p in proposed["partitions"]:
        assert p["topic"] == t and len(set(p["replicas"])) == 2 and set(p["replicas"]) <= {1, 2, 3}, g
        assert p["log_dirs"] == ["any", "any"], g


def test_reassign_partitions_execute_verify(cluster, tmp_path):
    B, t = cluster.bootstrap, "tools-moving"
    r = tool("kafka-topics.sh", "--bootstrap-server", B, "--create", "--topic", t, "--replica-assignment", "1:2,2:3,3:1")
    assert r.out.strip() == f"Created topic {t}.", r
    wait_for("replicas in sync", lambda: all(len(isr) == 2 for _, _, isr in md_partitions(cluster, t).values()))
    acked = produce(cluster, t, [(p, b"m%d-%d" % (p, i), None) for p in range(3) for i in range(50)])
    assert {p: len(o) for p, o in acked.items()} == {0: 50, 1: 50, 2: 50}

    target = {0: [3, 2], 1: [2, 1], 2: [1, 2]}
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": t, "partition": p, "replicas": r, "log_dirs": ["any", "any"]} for p, r in target.items()]}))
    e = tool("kafka-reassign-partitions.sh", "--bootstrap-server", B, "--execute", "--reassignment-json-file", str(plan))
    rollback = json_after(e.out, "Current partition replica assignment")
    assert {p["partition"]: p["replicas"] for p in rollback["partitions"]} == {0: [1, 2], 1: [2, 3], 2: [3, 1]}, e
    assert "Save this to use as the --reassignment-json-file option during rollback" in e.out, e
    assert f"Successfully started partition reassignments for {t}-0,{t}-1,{t}-2" in e.out, e

    def verified():
        v = tool("kafka-reassign-partitions.sh", "--bootstrap-server", B, "--verify", "--reassignment-json-file", str(plan))
        done = all(f"Reassignment of partition {t}-{p} is completed." in v.out for p in target)
        return v if done else None

    v = wait_for("--verify says every reassignment completed", verified, timeout=60, interval=0.5)
    assert "Status of partition reassignment:" in v.out, v
    assert "Clearing broker-level throttles on brokers 1,2,3" in v.out, v
    assert f"Clearing topic-level throttles on topic {t}" in v.out, v
    d, parts = cluster_describe(cluster, t)
    for p, r in target.items():
        assert parts[p]["Replicas"] == r and sorted(parts[p]["Isr"]) == sorted(r), d
        assert parts[p]["Leader"] in r, d
    got = consume_all(cluster, t, 3, 150)
    for p in range(3):
        assert got[p] == [(i, b"m%d-%d" % (p, i)) for i in range(50)], f"partition {p} data changed"
    # Nothing left under way.
    lst = tool("kafka-reassign-partitions.sh", "--bootstrap-server", B, "--list")
    assert "No partition reassignments found." in lst.out, lst


def wait_isr(cluster, topic, partition, isr):
    wait_for(f"{topic}-{partition} ISR {isr}", lambda: md_partitions(cluster, topic)[partition][2] == sorted(isr),
             timeout=60)


def wait_leader(cluster, topic, partition, leader):
    wait_for(f"{topic}-{partition} led by {leader}",
             lambda: md_partitions(cluster, topic)[partition][0] == leader, timeout=60)


def test_leader_election_preferred(cluster):
    t = "tools-elect"
    r = tool("kafka-topics.sh", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", t,
             "--replica-assignment", "1:2:3,2:3:1,3:1:2")
    assert r.rc == 0, r
    for p in range(3):
        wait_isr(cluster, t, p, [1, 2, 3])
        wait_leader(cluster, t, p, p + 1)
    produce(cluster, t, [(p, b"e%d" % p, None) for p in range(3)])
    # Broker 1 goes away and comes back: partition 0 is led elsewhere.
    cluster.stop(1)
    wait_for("partition 0 led by another broker", lambda: md_partitions(cluster, t)[0][0] in (2, 3), timeout=30)
    cluster.start(1)
    wait_isr(cluster, t, 0, [1, 2, 3])
    d, parts = cluster_describe(cluster, t)
    assert parts[0]["Leader"] in (2, 3) and parts[0]["Replicas"] == [1, 2, 3], d
    # One partition named: back on its preferred replica.
    e = tool("kafka-leader-election.sh", "--bootstrap-server", cluster.bootstrap, "--election-type", "PREFERRED",
             "--topic", t, "--partition", "0")
    assert e.out.strip() == f"Successfully completed leader election (PREFERRED) for partitions {t}-0", e
    wait_leader(cluster, t, 0, 1)
    d, parts = cluster_describe(cluster, t)
    assert parts[0]["Leader"] == 1, d
    # Already there: Kafka says so, exit code 0.
    again = tool("kafka-leader-election.sh", "--bootstrap-server", cluster.bootstrap, "--election-type", "PREFERRED",
                 "--topic", t, "--partition", "0")
    assert again.out.strip() == f"Valid replica already elected for partitions {t}-0", again

    # Broker 2 bounces; --all-topic-partitions brings its leaderships back.
    cluster.stop(2)
    wait_for("partition 1 led by another broker", lambda: md_partitions(cluster, t)[1][0] in (1, 3), timeout=30)
    cluster.start(2)
    wait_isr(cluster, t, 1, [1, 2, 3])
    a = tool("kafka-leader-election.sh", "--bootstrap-server", cluster.bootstrap, "--election-type", "PREFERRED",
             "--all-topic-partitions")
    first = a.out.strip().splitlines()[0]
    assert first.startswith("Successfully completed leader election (PREFERRED) for partitions "), a
    assert f"{t}-1" in first.split("partitions ", 1)[1].split(", "), a
    wait_leader(cluster, t, 1, 2)
    d, parts = cluster_describe(cluster, t)
    assert [parts[p]["Leader"] for p in range(3)] == [1, 2, 3], d


def test_leader_election_unclean(cluster):
    t = "tools-unclean"
    r = tool("kafka-topics.sh", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", t,
             "--replica-assignment", "2:3")
    assert r.rc == 0, r
    wait_isr(cluster, t, 0, [2, 3])
    produce(cluster, t, [(0, b"u%d" % i, None) for i in range(5)])
    try:
        # The follower dies and leaves the ISR; the leader writes on alone, then dies.
        cluster.kill9(3)
        wait_isr(cluster, t, 0, [2])
        produce(cluster, t, [(0, b"u%d" % i, None) for i in range(5, 8)])
        cluster.kill9(2)
        # Broker 3 is back but out of sync: nobody may lead cleanly.
        cluster.start(3)
        d = wait_for("partition without a leader", lambda: (lambda d: d if d[1][0]["Leader"] is None else None)(
            cluster_describe(cluster, t)), timeout=60, interval=0.5)[0]
        assert "Leader: none" in d.out, d
        pref = tool("kafka-leader-election.sh", "--bootstrap-server", cluster.bootstrap, "--election-type", "PREFERRED",
                    "--topic", t, "--partition", "0", ok=False)
        assert pref.rc == 1 and "PreferredLeaderNotAvailableException" in pref.out + pref.err, pref
        e = tool("kafka-leader-election.sh", "--bootstrap-server", cluster.bootstrap, "--election-type", "UNCLEAN",
                 "--topic", t, "--partition", "0")
        assert e.out.strip() == f"Successfully completed leader election (UNCLEAN) for partitions {t}-0", e
        wait_leader(cluster, t, 0, 3)
        d, parts = cluster_describe(cluster, t)
        assert parts[0]["Leader"] == 3 and parts[0]["Isr"] == [3], d
        # What broker 3 had: the records written before it died.
        got = consume_all(cluster, t, 1, 5)
        assert [v for _, v in got[0]] == [b"u%d" % i for i in range(5)], got
    finally:
        for n in (2, 3):
            if n in getattr(cluster, "brokers", {}) and not cluster.brokers[n].alive():
                cluster.start(n)
            elif toolkit.TARGET == "kafka" and not cluster.k.node(n).alive():
                cluster.start(n)
