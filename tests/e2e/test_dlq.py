"""Dead-letter queues (issue 19): `strata dlq inspect` and `strata dlq
replay` end to end against a real broker, records written and read back
with confluent-kafka; the broker's count of dead letters per reason
(/metrics, parsed with the Prometheus project's parser); and its warnings
(retention shorter than the source's, records nobody consumed) in the
log, /metrics, the admin API, the CLI and the console page (headless
Chromium).
"""

from __future__ import annotations

import json

from confluent_kafka import TopicPartition

import kutil
import tierutil as tu
from apiutil import AdminApi
from test_cli import cli, cli_json
from test_console import Dom, render
from test_metrics import families

DLQ_SETTINGS = {"dlq.check.interval.ms": 200, "dlq.unconsumed.warn.ms": 1500,
                "group.lag.sample.interval.ms": 200}


def dead_letters(b, dlq: str, source: str, n: int = 30):
    """n dead letters: 2/3 reason `schema` (dlq.reason), then `timeout`
    (an error.* header), then 3 with no reason and no source."""
    p = kutil.producer(b.bootstrap)
    for i in range(n):
        if i < n - 3:
            reason = ("dlq.reason", b"schema") if i % 3 != 2 else ("error.message", b"timeout")
            headers = [reason, ("dlq.source_topic", source.encode()),
                       ("dlq.source_partition", str(i % 3).encode()), ("dlq.source_offset", str(i).encode()),
                       ("trace", b"t%d" % i)]
        else:
            headers = [("trace", b"t%d" % i)]
        p.produce(dlq, key=b"k%d" % i, value=b"payload-%d" % i, headers=headers, partition=0)
    assert p.flush(30) == 0


def dlq_counts(b, topic: str) -> dict[str, float]:
    fams = families(b)
    if "strata_dlq_records" not in fams:
        return {}
    return {s.labels["reason"]: s.value for s in fams["strata_dlq_records"].samples
            if s.name == "strata_dlq_records_total" and s.labels["topic"] == topic}


def test_inspect_and_replay_end_to_end(broker_factory):
    b = broker_factory(DLQ_SETTINGS)
    adm = kutil.admin(b.bootstrap)
    source = kutil.create_topic(adm, kutil.unique("orders"), partitions=3)
    dlq = kutil.create_topic(adm, source + ".dlq", partitions=1)
    dead_letters(b, dlq, source)

    # The broker counts them per reason (a spike in one means an upstream change).
    want = {"schema": 18.0, "timeout": 9.0, "(no reason header)": 3.0}
    kutil.wait_until(lambda: dlq_counts(b, dlq) == want or None, 30, 0.2, f"dead letters counted {want}")

    out = cli_json(b, "dlq", "inspect", dlq)
    assert out["records"] == 30
    assert [(r["reason"], r["count"]) for r in out["reasons"]] == \
        [("schema", 18), ("timeout", 9), ("(no reason header)", 3)]
    schema = out["reasons"][0]
    assert schema["first"]["offset"] == 0 and schema["last"]["offset"] == 25
    assert schema["source_topics"] == {source: 18}
    assert schema["sample"]["key"] == "k0" and schema["sample"]["value"] == "payload-0"
    assert schema["sample"]["headers"]["trace"] == "t0"
    assert out["reasons"][2]["source_topics"] == {}
    text = cli(b, "dlq", "inspect", dlq).stdout.decode()
    row = next(line.split() for line in text.splitlines() if line.startswith("schema"))
    assert row[1:4] == ["18", "0:0", "0:25"] and source in row
    # A configured reason header.
    out = cli_json(b, "dlq", "inspect", dlq, "--reason-header", "trace", "--until-offset", "2")
    assert [(r["reason"], r["count"]) for r in out["reasons"]] == [("t0", 1), ("t1", 1)]

    # A dry run produces nothing.
    r = cli(b, "dlq", "replay", dlq, "--reason", "schema", "--dry-run")
    assert "Would replay 18 of 30 records" in r.stdout.decode()
    assert kutil.high_watermarks(b.bootstrap, source, 3) == {0: 0, 1: 0, 2: 0}

    # Replay offsets 0..11 of reason schema: 8 records, back to their
    # source partitions with key, value and headers, plus where they came from.
    out = cli_json(b, "dlq", "replay", dlq, "--reason", "schema", "--from-offset", "0", "--until-offset", "12")
    assert out == {"scanned": 12, "replayed": {source: 8}, "skipped_other_reason": 4, "skipped_no_target": 0,
                   "dry_run": False}
    got = kutil.consume(b.bootstrap, source, [0, 1, 2], expected=8).messages
    assert len(got) == 8
    for m in got:
        i = int(m.key.decode()[1:])
        assert i < 12 and i % 3 != 2 and m.value == b"payload-%d" % i
        assert m.partition == i % 3, (i, m.partition)
        h = dict(m.headers)
        assert h["dlq.reason"] == b"schema" and h["trace"] == b"t%d" % i
        assert h["dlq.replayed_from"] == f"{dlq}/0/{i}".encode()
    # Records without a source: skipped unless --to names a target.
    out = cli_json(b, "dlq", "replay", dlq, "--from-offset", "27")
    assert out["skipped_no_target"] == 3 and out["replayed"] == {}
    other = kutil.create_topic(adm, kutil.unique("retry"), partitions=1)
    out = cli_json(b, "dlq", "replay", dlq, "--from-offset", "27", "--to", other)
    assert out["replayed"] == {other: 3}

    # Replaying the same range twice shows, in the target, by the header.
    r = cli(b, "dlq", "replay", dlq, "--reason", "schema", "--until-offset", "12")
    assert "Replayed 8 of 12 records" in r.stdout.decode()
    again = cli_json(b, "dlq", "inspect", source)
    assert again["records"] == 16 and again["replayed_records"] == 8 and again["replayed_more_than_once"] == 8
    r = cli(b, "dlq", "inspect", source)
    assert b"8 dead letters were replayed here more than once" in r.stderr
    r = cli(b, "dlq", "replay", "no-such.dlq", expect=1)
    assert b"UNKNOWN_TOPIC_OR_PARTITION" in r.stderr


def test_warnings_for_a_dlq_that_loses_data(broker_factory, tmp_path):
    b = broker_factory(DLQ_SETTINGS)
    api = AdminApi(b)
    adm = kutil.admin(b.bootstrap)
    source = kutil.create_topic(adm, kutil.unique("payments"), partitions=1)  # 7 days
    short = kutil.create_topic(adm, source + ".dlq", partitions=1, config={"retention.ms": "3600000"})
    # Marked by config rather than by name, with its source named.
    marked = kutil.create_topic(adm, kutil.unique("bad-letters"), partitions=1,
                                config={"dlq.enable": "true", "dlq.source.topics": source})

    def dlq_status():
        _, v = api.get("/api/v1/dlq", expect=200)
        return {t["topic"]: t for t in v["topics"]}

    def retention_warned():
        s = dlq_status()
        w = [x for x in s.get(short, {}).get("warnings", []) if x["kind"] == "retention_shorter_than_source"]
        return (s, w) if w else None
    s, w = kutil.wait_until(retention_warned, 30, 0.2, "the retention warning")
    assert w[0]["source"] == source and "60 min" in w[0]["message"] and "7 days" in w[0]["message"]
    assert s[short]["sources"] == [source] and s[short]["retention_ms"] == 3600000
    assert s[marked]["sources"] == [source] and s[marked]["warnings"] == []
    fams = families(b)
    flags = [(x.labels["topic"], x.labels["source"], x.value)
             for x in fams["strata_dlq_retention_shorter_than_source"].samples]
    assert flags == [(short, source, 1.0)]

    # A dead letter nobody consumes: warned once it is older than the threshold.
    p = kutil.producer(b.bootstrap)
    p.produce(marked, key=b"k", value=b"v", headers=[("dlq.reason", b"poison")], partition=0)
    assert p.flush(30) == 0

    def unconsumed():
        w = [x for x in dlq_status()[marked]["warnings"] if x["kind"] == "unconsumed"]
        return w or None
    w = kutil.wait_until(unconsumed, 30, 0.2, "the unconsumed warning")
    assert w[0]["partition"] == 0 and w[0]["seconds"] >= 1.5 and "consumed by no group" in w[0]["message"]
    age = [x.value for x in families(b)["strata_dlq_unconsumed_seconds"].samples
           if x.labels["topic"] == marked]
    assert age and age[0] >= 1.5
    r = cli(b, "dlq", "inspect", marked)
    assert b"warning: dead-letter topic" in r.stderr and b"consumed by no group" in r.stderr
    assert "poison" in r.stdout.decode()

    # The console shows both warnings.
    dom = Dom(render(f"http://127.0.0.1:{b.http_port}/", tmp_path / "profile"))
    kinds = {(a["data-topic"], a["data-kind"]) for a in dom.with_class("dlq-warning")}
    assert {(short, "retention_shorter_than_source"), (marked, "unconsumed")} <= kinds, kinds
    reasons = {(a["data-topic"], a["data-reason"], a["data-count"]) for a in dom.with_class("dlq-reason")}
    assert (marked, "poison", "1") in reasons, reasons

    # Each warning is logged once, not every pass.
    log = b.log_text()
    assert log.count(f"dead-letter topic {short} keeps records for 60 min") == 1, log[-3000:]

    # A group that reads it clears the warning.
    c = kutil.group_consumer(b.bootstrap, kutil.unique("dlq-reader"))
    c.commit(offsets=[TopicPartition(marked, 0, 1)], asynchronous=False)
    c.close()
    kutil.wait_until(lambda: not [x for x in dlq_status()[marked]["warnings"] if x["kind"] == "unconsumed"]
                     or None, 30, 0.2, "the unconsumed warning cleared")
    # Raising the retention clears the other.
    tu.alter(adm, short, {"retention.ms": "-1"})
    kutil.wait_until(lambda: dlq_status()[short]["warnings"] == [] or None, 30, 0.2, "retention warning cleared")
