"""The operator CLI (issue 19): `strata topic|group|tiering|produce|consume`
run as a user runs them, against a real broker, in tables and in JSON;
what they do is checked with a real Kafka client (confluent-kafka) and
what they show against the admin API.

- topics: create, list, describe, alter (the hot window), delete; errors
  name Kafka's error and exit 1, usage errors exit 2;
- produce/consume interoperate with confluent-kafka: keys land where
  Kafka's murmur2 partitioner puts them, headers and binary values
  survive, --from-datetime and --max-messages;
- groups: list, describe with per-partition lag and the catch-up state
  from Strata's admin API (and without that API, a note), reset-offsets
  as kafka-consumer-groups.sh (a dry run unless --execute, refused while
  the group has members);
- tiering status matches the bucket's manifest; the admin API's token is
  taken from STRATA_HTTP_TOKEN.
"""

from __future__ import annotations

import json
import os
import subprocess
import time

from confluent_kafka import Producer

import kutil
import tierutil as tu
from strata_broker import free_port, strata_bin

LAG_SETTINGS = {"group.lag.sample.interval.ms": 200, "group.lag.window.ms": 2000,
                "group.initial.rebalance.delay.ms": 0}


def cli(b, *args, input: bytes | None = None, env: dict | None = None, expect: int | None = 0,
        admin_url: str | None = None):
    """Runs `strata ARGS` against broker b; returns the CompletedProcess."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    e["STRATA_BOOTSTRAP_SERVER"] = b.bootstrap
    e["STRATA_ADMIN_URL"] = admin_url or f"http://127.0.0.1:{b.http_port}"
    e.update(env or {})
    r = subprocess.run([str(strata_bin()), *args], input=input, capture_output=True, env=e, timeout=120)
    if expect is not None:
        assert r.returncode == expect, (args, r.returncode, r.stdout.decode()[-2000:], r.stderr.decode()[-2000:])
    return r


def cli_json(b, *args, **kw):
    r = cli(b, *args, "--output", "json", **kw)
    return json.loads(r.stdout)


def table(stdout: bytes) -> list[list[str]]:
    return [line.split() for line in stdout.decode().splitlines() if line.strip()]


def test_topic_commands(broker_factory):
    b = broker_factory()
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("cli-topic")
    r = cli(b, "topic", "create", topic, "--partitions", "4", "--config", "local.retention.ms=60000",
            "--config", "retention.ms=86400000")
    assert f"Created topic {topic} (4 partitions" in r.stdout.decode()
    assert kutil.partition_count(adm, topic) == 4

    rows = table(cli(b, "topic", "list").stdout)
    assert rows[0] == ["TOPIC", "PARTITIONS", "REPLICATION-FACTOR"]
    assert [topic, "4", "1"] in rows
    assert not any(r[0] == "__consumer_offsets" for r in rows)
    listed = cli_json(b, "topic", "list", "--all")
    assert {"name": topic, "partitions": 4, "replication_factor": 1, "internal": False} in listed
    assert any(t["name"] == "__consumer_offsets" and t["internal"] for t in listed)

    p = kutil.producer(b.bootstrap)
    for i in range(20):
        p.produce(topic, value=b"v", partition=i % 4)
    assert p.flush(30) == 0
    d = cli_json(b, "topic", "describe", topic)
    assert [(x["partition"], x["log_start_offset"], x["log_end_offset"]) for x in d["partitions"]] == \
        [(0, 0, 5), (1, 0, 5), (2, 0, 5), (3, 0, 5)]
    assert {c["name"]: (c["value"], c["source"]) for c in d["configs"]} == {
        "local.retention.ms": ("60000", "topic"), "retention.ms": ("86400000", "topic")}
    text = cli(b, "topic", "describe", topic).stdout.decode()
    assert f"Topic: {topic}" in text and "LOG-END-OFFSET" in text and "local.retention.ms  60000" in text

    cli(b, "topic", "alter", topic, "--set", "local.retention.bytes=1048576", "--delete", "local.retention.ms")
    seen = tu.describe(adm, topic)
    assert seen["local.retention.bytes"].value == "1048576" and seen["local.retention.ms"].value == "-2"

    # Errors: Kafka's error name, exit 1; usage errors exit 2.
    r = cli(b, "topic", "create", topic, "--partitions", "1", expect=1)
    assert b"TOPIC_ALREADY_EXISTS" in r.stderr and topic.encode() in r.stderr
    r = cli(b, "topic", "describe", "no-such-topic", expect=1)
    assert b"UNKNOWN_TOPIC_OR_PARTITION" in r.stderr
    r = cli(b, "topic", "alter", topic, "--set", "retention.ms=soon", expect=1)
    assert b"INVALID_CONFIG" in r.stderr
    cli(b, "topic", "create", "x", "--config", "novalue", expect=2)
    cli(b, "topic", "alter", topic, expect=2)
    r = cli(b, "topic", "list", env={"STRATA_BOOTSTRAP_SERVER": f"127.0.0.1:{free_port()}"}, expect=1)
    assert b"cannot connect" in r.stderr

    cli(b, "topic", "delete", topic)
    kutil.wait_until(lambda: topic not in kutil.topic_names(adm), 30, 0.2, "topic deleted")


def test_produce_and_consume_interoperate_with_kafka_clients(broker_factory):
    b = broker_factory()
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("cli-data"), partitions=6)
    lines = "".join(f"customer-{i % 17}|order {i}\n" for i in range(600)).encode()
    r = cli(b, "produce", topic, "--key-separator", "|", "--header", "source=cli", input=lines)
    assert "Produced 600 records" in r.stdout.decode()

    # Where Kafka's murmur2 partitioner (the Java client's default) puts
    # each key: the CLI put it there too.
    where = {}
    jp = Producer({"bootstrap.servers": b.bootstrap, "partitioner": "murmur2_random", **kutil.COMMON})
    probe = kutil.create_topic(adm, kutil.unique("cli-probe"), partitions=6)
    for i in range(17):
        jp.produce(probe, key=f"customer-{i}", value=b"x",
                   on_delivery=lambda err, m: where.__setitem__(m.key().decode(), m.partition()))
    assert jp.flush(30) == 0 and len(where) == 17

    got = kutil.consume(b.bootstrap, topic, list(range(6)), expected=600).messages
    assert len(got) == 600
    for m in got:
        key = m.key.decode()
        assert m.partition == where[key], (key, m.partition, where[key])
        assert m.headers == [("source", b"cli")]
    # Per key, in the order produced.
    by_key: dict[str, list[int]] = {}
    for m in sorted(got, key=lambda m: (m.partition, m.offset)):
        by_key.setdefault(m.key.decode(), []).append(int(m.value.decode().split()[1]))
    assert all(v == sorted(v) for v in by_key.values())

    # Records a Kafka client produced, read back by the CLI: binary values
    # and headers survive, as base64 where they are not text.
    other = kutil.create_topic(adm, kutil.unique("cli-read"), partitions=2)
    p = kutil.producer(b.bootstrap)
    t0 = int(time.time() * 1000)
    for i in range(10):
        p.produce(other, key=b"k%d" % i, value=b"text-%d" % i, partition=0, timestamp=t0 + i * 1000,
                  headers=[("h", b"v%d" % i)])
    p.produce(other, key=None, value=bytes([0xff, 0x00, 0xfe]), partition=1, timestamp=t0)
    assert p.flush(30) == 0
    recs = [json.loads(x) for x in cli(b, "consume", other, "--output", "json").stdout.splitlines()]
    assert len(recs) == 11
    p0 = [r for r in recs if r["partition"] == 0]
    assert [r["offset"] for r in p0] == list(range(10))
    assert p0[3] == {"topic": other, "partition": 0, "offset": 3, "timestamp": t0 + 3000, "key": "k3",
                     "value": "text-3", "headers": {"h": "v3"}}
    binary = next(r for r in recs if r["partition"] == 1)
    assert binary["value_base64"] == "/wD+" and "key" not in binary and "value" not in binary
    # Table output: values one per line; --print-key; --max-messages.
    out = cli(b, "consume", other, "--partition", "0", "--print-key", "--max-messages", "4").stdout.decode()
    assert out.splitlines() == ["k0\ttext-0", "k1\ttext-1", "k2\ttext-2", "k3\ttext-3"]
    # From a time: the first record at or after it.
    at = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime((t0 + 6500) / 1000)) + \
        ".%03dZ" % ((t0 + 6500) % 1000)
    out = cli(b, "consume", other, "--partition", "0", "--from-datetime", at).stdout.decode()
    assert out.splitlines() == ["text-7", "text-8", "text-9"]
    out = cli(b, "consume", other, "--partition", "0", "--offset", "8").stdout.decode()
    assert out.splitlines() == ["text-8", "text-9"]
    r = cli(b, "consume", other, "--partition", "5", expect=1)
    assert b"UNKNOWN_TOPIC_OR_PARTITION" in r.stderr
    r = cli(b, "produce", other, "--value", "x", "--partition", "9", expect=1)
    assert b"no partition 9" in r.stderr


def test_group_describe_and_reset_offsets(broker_factory):
    b = broker_factory(LAG_SETTINGS)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("cli-lag"), partitions=3)
    group = kutil.group_with_offsets(b.bootstrap, topic, 30, {0: 30, 1: 30, 2: 4}, "cli-group")

    assert {"group_id": group, "state": "Empty", "protocol_type": "consumer", "coordinator": 0} in \
        cli_json(b, "group", "list")

    def measured():
        d = cli_json(b, "group", "describe", group)
        states = {x["partition"]: x["catch_up"] for x in d["partitions"]}
        return d if states.get(2) == "not_catching_up" else None
    d = kutil.wait_until(measured, 30, 0.3, "the stuck partition measured")
    rows = {x["partition"]: x for x in d["partitions"]}
    assert {k: (v["committed_offset"], v["log_end_offset"], v["lag"]) for k, v in rows.items()} == \
        {0: (30, 30, 0), 1: (30, 30, 0), 2: (4, 30, 26)}
    assert rows[0]["catch_up"] == "caught_up" and rows[2]["lag_seconds"] is not None
    assert d["lag"] == 26 and d["state"] == "Empty" and d["strata_note"] is None
    r = cli(b, "group", "describe", group)
    text = r.stdout.decode()
    assert f"Group: {group}  State: Empty" in text and "Lag: 26" in text
    stuck = next(line for line in text.splitlines() if line.startswith(topic) and line.split()[1] == "2")
    assert "NOT CATCHING UP" in stuck and " 26 " in stuck
    # Without Strata's admin API: the Kafka-protocol columns, and a note.
    r = cli(b, "group", "describe", group, admin_url=f"http://127.0.0.1:{free_port()}")
    assert b"lag age and catch-up estimates are not shown" in r.stderr
    assert " 26 " in next(l for l in r.stdout.decode().splitlines() if l.startswith(topic) and l.split()[1] == "2")

    def committed():
        return {p: tp.offset for (t, p), tp in kutil.committed(adm, group, topic, [0, 1, 2]).items()}

    # A dry run shows the plan and commits nothing.
    r = cli(b, "group", "reset-offsets", group, "--topic", topic, "--to-earliest")
    assert b"Dry run" in r.stderr
    plan = [row for row in table(r.stdout)[1:]]
    assert [(row[2], row[3], row[4]) for row in plan] == [("0", "30", "0"), ("1", "30", "0"), ("2", "4", "0")]
    assert committed() == {0: 30, 1: 30, 2: 4}
    out = cli_json(b, "group", "reset-offsets", group, "--all-topics", "--to-offset", "10", "--execute")
    assert out["executed"] is True and {x["new_offset"] for x in out["partitions"]} == {10}
    assert committed() == {0: 10, 1: 10, 2: 10}
    cli(b, "group", "reset-offsets", group, "--topic", f"{topic}:1,2", "--shift-by", "-3", "--execute")
    assert committed() == {0: 10, 1: 7, 2: 7}
    cli(b, "group", "reset-offsets", group, "--topic", topic, "--to-datetime", "2000-01-01T00:00:00Z",
        "--execute")
    assert committed() == {0: 0, 1: 0, 2: 0}
    cli(b, "group", "reset-offsets", group, "--topic", f"{topic}:2", "--to-latest", "--execute")
    assert committed() == {0: 0, 1: 0, 2: 30}
    cli(b, "group", "reset-offsets", group, "--topic", topic, expect=2)  # no --to-*
    r = cli(b, "group", "reset-offsets", group, "--topic", f"{topic}:7", "--to-earliest", expect=1)
    assert b"no partition 7" in r.stderr

    # Refused while the group has a member.
    c = kutil.group_consumer(b.bootstrap, group)
    c.subscribe([topic])
    try:
        kutil.wait_until(lambda: (c.poll(0.2), c.assignment())[1], 30, 0, "assignment")
        r = cli(b, "group", "reset-offsets", group, "--all-topics", "--to-earliest", "--execute", expect=1)
        assert b"NON_EMPTY_GROUP" in r.stderr and b"stop its consumers" in r.stderr
        d = cli_json(b, "group", "describe", group)
        assert d["state"] == "Stable" and len(d["members"]) == 1
        assert {x["member_id"] for x in d["partitions"]} == {d["members"][0]["member_id"]}
    finally:
        c.close()
    assert committed()[2] == 30
    r = cli(b, "group", "describe", "no-such-group", expect=1)
    assert b"GROUP_ID_NOT_FOUND" in r.stderr


def test_tiering_status_and_the_admin_token(broker_factory):
    token = "cli-test-token-0123456789"
    b, bucket = tu.file_broker(broker_factory, env={"STRATA_HTTP_TOKEN": token})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("cli-tiered")
    kutil.create_topic(adm, topic, 1, config={"segment.bytes": str(256 * 1024), "local.retention.ms": "1000"})
    tu.produce_range(b.bootstrap, topic, tu.DataSet(seed=9, ts0=tu.ms_ago(10)), 0, 1500)
    m = tu.wait_settled(b, bucket, topic, 0, 60)
    end = tu.check_manifest(m)
    env = {"STRATA_HTTP_TOKEN": token}

    def settled():
        s = cli_json(b, "tiering", "status", topic, env=env)
        p = s["partitions"][0]
        return s if p["remote_log_end_offset"] == end and p["local_log_start_offset"] > 0 else None
    s = kutil.wait_until(settled, 30, 0.3, "tiering status caught up with the manifest")
    p = s["partitions"][0]
    assert p["remote_bytes"] == sum(x["size_bytes"] for x in m["segments"])
    assert p["remote_segments"] == len(m["segments"]) and p["copy_lag_segments"] == 0
    assert p["log_start_offset"] == 0 and p["log_end_offset"] == 1500
    assert s["broker"]["object_store"]["available"] is True
    text = cli(b, "tiering", "status", env=env).stdout.decode()
    assert "in the object store (available)" in text
    row = next(l.split() for l in text.splitlines() if l.startswith(topic))
    assert row[1] == "0" and row[4] == "1500"
    # Without the token the admin API refuses, and the CLI says what to do.
    r = cli(b, "tiering", "status", expect=1)
    assert b"STRATA_HTTP_TOKEN" in r.stderr
