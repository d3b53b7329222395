"""The admin API (issue 19): every request and answer is checked against
the OpenAPI document the broker serves (apiutil.AdminApi, with closed
objects), and what the API says or does is checked with a real Kafka
client (confluent-kafka) wherever a Kafka client can see it.

- topics: create with configs, list, describe (configs with their source,
  per partition offsets, local bytes and tiering status), alter the hot
  window, delete; Kafka's error names for the errors;
- tiering status: remote bytes and offsets once sealed segments are in
  the bucket;
- groups: list and describe with per-partition lag, lag age and catch-up
  state (the one stuck partition shows, the group's total stays small);
  offset resets as kafka-consumer-groups.sh does them (a dry run unless
  execute; refused while the group has members);
- the historical read path's priority classes and pausing bulk;
- the bearer token: required with one configured, never logged; without
  one the API refuses to bind beyond loopback.
"""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from confluent_kafka.admin import ConfigResource, ResourceType

import kutil
import tierutil as tu
from apiutil import AdminApi
from strata_broker import free_port, strata_bin

LAG_SETTINGS = {"group.lag.sample.interval.ms": 200, "group.lag.window.ms": 2000,
                "group.initial.rebalance.delay.ms": 0}


def topic_configs(adm, topic: str) -> dict:
    res = ConfigResource(ResourceType.TOPIC, topic)
    return adm.describe_configs([res], request_timeout=30)[res].result(timeout=60)


def config(detail: dict, name: str) -> dict:
    found = [c for c in detail["configs"] if c["name"] == name]
    assert len(found) == 1, (name, detail["configs"])
    return found[0]


def test_topics_created_described_altered_and_deleted(broker_factory):
    b = broker_factory()
    api = AdminApi(b)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("api-topic")

    _, d = api.call("POST", "/api/v1/topics", {
        "name": topic, "partitions": 3,
        "configs": {"local.retention.ms": "60000", "retention.ms": "86400000"}}, expect=201)
    assert d["name"] == topic and [p["partition"] for p in d["partitions"]] == [0, 1, 2]
    assert config(d, "local.retention.ms") == {"name": "local.retention.ms", "value": "60000",
                                               "source": "topic", "read_only": False,
                                               "sensitive": False}
    assert config(d, "retention.bytes")["source"] == "default"
    # A Kafka client sees the same topic and the same override.
    assert kutil.partition_count(adm, topic) == 3
    assert topic_configs(adm, topic)["local.retention.ms"].value == "60000"

    # Records produced show in the partitions' offsets and bytes.
    p = kutil.producer(b.bootstrap)
    for i in range(30):
        p.produce(topic, value=b"v%d" % i, partition=i % 3)
    assert p.flush(30) == 0
    # The tiering manager takes new partitions up within a sync pass.
    def registered():
        _, d = api.get(f"/api/v1/topics/{topic}", expect=200)
        return d if all(p["local"]["tiering"] for p in d["partitions"]) else None
    d = kutil.wait_until(registered, 10, 0.1, "partitions registered for tiering")
    for part in d["partitions"]:
        local = part["local"]
        assert local["log_end_offset"] == 10 and local["high_watermark"] == 10, part
        assert local["log_start_offset"] == 0 and local["local_bytes"] > 0, part
        assert part["leader"] == part["replicas"][0] and part["isr"] == part["replicas"], part
        # The embedded default tiers: the partition has a tiering status.
        assert local["tiering"] is not None and local["tiering"]["fenced"] is False, part

    _, listing = api.get("/api/v1/topics", expect=200)
    mine = [t for t in listing["topics"] if t["name"] == topic]
    assert len(mine) == 1 and mine[0]["partitions"] == 3 and mine[0]["local_bytes"] > 0, mine
    assert mine[0]["remote_storage_enable"] is True

    # The hot window changes at run time; a delete puts the default back.
    _, d = api.call("PATCH", f"/api/v1/topics/{topic}/configs",
                    {"set": {"local.retention.bytes": "1048576"}, "delete": ["local.retention.ms"]},
                    expect=200)
    assert config(d, "local.retention.bytes")["value"] == "1048576"
    assert config(d, "local.retention.ms")["source"] != "topic"
    seen = topic_configs(adm, topic)
    assert seen["local.retention.bytes"].value == "1048576"
    assert seen["local.retention.ms"].value == "-2"
    # validate_only changes nothing.
    api.call("PATCH", f"/api/v1/topics/{topic}/configs",
             {"set": {"local.retention.bytes": "2048"}, "validate_only": True}, expect=200)
    assert topic_configs(adm, topic)["local.retention.bytes"].value == "1048576"

    # Errors carry Kafka's names and a message an operator can act on.
    msg = api.error("POST", "/api/v1/topics", {"name": topic, "partitions": 1},
                    status=409, code="TOPIC_ALREADY_EXISTS")
    assert topic in msg
    api.error("POST", "/api/v1/topics", {"name": "bad/name"}, status=400, code="INVALID_TOPIC_EXCEPTION")
    msg = api.error("POST", "/api/v1/topics",
                    {"name": kutil.unique("api-bad-config"), "configs": {"retention.ms": "soon"}},
                    status=400, code="INVALID_CONFIG")
    assert "retention.ms" in msg
    api.error("PATCH", f"/api/v1/topics/{topic}/configs", {"set": {"no.such.config": "1"}},
              status=400, code="INVALID_CONFIG")
    api.error("PATCH", f"/api/v1/topics/{topic}/configs", {}, status=400, code="INVALID_REQUEST")
    api.error("GET", "/api/v1/topics/no-such-topic", status=404, code="UNKNOWN_TOPIC_OR_PARTITION")
    api.error("PATCH", "/api/v1/topics/no-such-topic/configs", {"set": {"retention.ms": "1000"}},
              status=404, code="UNKNOWN_TOPIC_OR_PARTITION")
    # Bodies that are not what the document says: the API's JSON error.
    api.error("POST", "/api/v1/topics", raw=b'{"name": ', status=400, code="INVALID_REQUEST", check=False)
    api.error("POST", "/api/v1/topics", {"name": "x", "partitionz": 3}, status=400,
              code="INVALID_REQUEST", check=False)
    api.error("GET", "/api/v1/no-such-path", status=404, code="NOT_FOUND", documented=False)

    api.call("DELETE", f"/api/v1/topics/{topic}", expect=204)
    kutil.wait_until(lambda: topic not in kutil.topic_names(adm), 30, 0.2, "topic gone for Kafka clients")
    api.error("GET", f"/api/v1/topics/{topic}", status=404, code="UNKNOWN_TOPIC_OR_PARTITION")
    api.error("DELETE", f"/api/v1/topics/{topic}", status=404, code="UNKNOWN_TOPIC_OR_PARTITION")
    assert b.alive()


def test_tiering_status_shows_remote_bytes_and_offsets(broker_factory):
    b, bucket = tu.file_broker(broker_factory)
    api = AdminApi(b)
    topic = kutil.unique("api-tiering")
    api.call("POST", "/api/v1/topics", {"name": topic, "partitions": 1, "configs": {
        "segment.bytes": str(256 * 1024), "local.retention.ms": "1000"}}, expect=201)
    ds = tu.DataSet(seed=3, ts0=tu.ms_ago(10))
    tu.produce_range(b.bootstrap, topic, ds, 0, 2000)
    m = tu.wait_settled(b, bucket, topic, 0, 60)
    manifest_end = tu.check_manifest(m)
    remote_bytes = sum(s["size_bytes"] for s in m["segments"])

    def tiered():
        _, d = api.get(f"/api/v1/topics/{topic}", expect=200)
        local = d["partitions"][0]["local"]
        t = local["tiering"]
        return (local, t) if t["remote_log_end_offset"] == manifest_end \
            and local["local_log_start_offset"] > 0 else None
    local, t = kutil.wait_until(tiered, 30, 0.3, "tiering status caught up with the manifest")
    assert t["remote_log_start_offset"] == 0 and t["remote_segments"] == len(m["segments"]), t
    assert t["remote_bytes"] == remote_bytes, (t, remote_bytes)
    assert t["copy_lag_segments"] == 0 and t["copy_lag_bytes"] == 0 and t["upload_errors"] == 0, t
    # The hot window: local segments before the manifest's end are gone.
    assert local["log_start_offset"] == 0 and local["local_log_start_offset"] <= manifest_end, local
    assert local["log_end_offset"] == 2000

    _, listing = api.get("/api/v1/topics", expect=200)
    mine = next(x for x in listing["topics"] if x["name"] == topic)
    assert mine["remote_bytes"] == remote_bytes
    _, status = api.get("/api/v1/broker", expect=200)
    assert status["ready"] is True and status["object_store"] == {"enabled": True, "available": True}
    assert status["tiering"]["remote_bytes"] >= remote_bytes
    assert status["tiering"]["copy_lag_segments"] == 0
    assert status["topics"] >= 1 and status["brokers"][0]["port"] == b.port


def lag_rows(detail: dict, topic: str) -> dict[int, dict]:
    return {p["partition"]: p for p in detail["partitions"] if p["topic"] == topic}


def test_group_lag_per_partition_and_offset_resets(broker_factory):
    b = broker_factory(LAG_SETTINGS)
    api = AdminApi(b)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("api-lag"), partitions=4)
    group = kutil.group_with_offsets(b.bootstrap, topic, 50, {0: 50, 1: 50, 2: 50, 3: 10}, "api-group")

    # One stuck partition shows by itself; once measured, it is not
    # catching up (nobody consumes it) while the others are caught up.
    def measured():
        _, d = api.get(f"/api/v1/groups/{group}", expect=200)
        rows = lag_rows(d, topic)
        states = {k: r["catch_up"]["state"] for k, r in rows.items()}
        return (d, rows) if len(rows) == 4 and states[3] == "not_catching_up" else None
    d, rows = kutil.wait_until(measured, 30, 0.3, "the stuck partition measured")
    assert {k: r["lag_records"] for k, r in rows.items()} == {0: 0, 1: 0, 2: 0, 3: 40}
    assert all(rows[k]["catch_up"] == {"state": "caught_up", "seconds": 0.0} for k in range(3)), rows
    assert rows[3]["catch_up"]["seconds"] is None
    assert rows[3]["lag_seconds"] is not None and rows[3]["lag_seconds"] >= 0, rows[3]
    assert rows[3]["high_watermark"] == 50 and rows[3]["committed_offset"] == 10
    assert d["lag_records"] == 40 and d["state"] == "Empty" and d["members"] == []
    _, listing = api.get("/api/v1/groups", expect=200)
    mine = next(g for g in listing["groups"] if g["group_id"] == group)
    assert mine["lag_records"] == 40 and mine["partitions_not_catching_up"] == 1, mine
    assert mine["priority_class"] == "standard"

    def committed():
        return {p: tp.offset for (t, p), tp in kutil.committed(adm, group, topic, [0, 1, 2, 3]).items()}

    reset = f"/api/v1/groups/{group}/offsets/reset"
    # A dry run shows the plan and commits nothing.
    _, plan = api.call("POST", reset, {"to": "earliest", "topics": [topic]}, expect=200)
    assert plan["executed"] is False
    assert [(x["partition"], x["current_offset"], x["new_offset"]) for x in plan["partitions"]] == \
        [(0, 50, 0), (1, 50, 0), (2, 50, 0), (3, 10, 0)]
    assert committed() == {0: 50, 1: 50, 2: 50, 3: 10}
    # Executed, each kind of reset as kafka-consumer-groups.sh does it.
    api.call("POST", reset, {"to": "offset", "offset": 20, "execute": True}, expect=200)
    assert committed() == {0: 20, 1: 20, 2: 20, 3: 20}
    api.call("POST", reset, {"to": "shift", "shift": -5, "partitions": [1, 2], "topics": [topic],
                             "execute": True}, expect=200)
    assert committed() == {0: 20, 1: 15, 2: 15, 3: 20}
    # Out of the log's range: clamped to it.
    _, plan = api.call("POST", reset, {"to": "offset", "offset": 1000}, expect=200)
    assert {x["new_offset"] for x in plan["partitions"]} == {50}
    api.call("POST", reset, {"to": "datetime", "datetime": "2000-01-01T00:00:00Z", "execute": True},
             expect=200)
    assert committed() == {0: 0, 1: 0, 2: 0, 3: 0}
    api.call("POST", reset, {"to": "latest", "partitions": [3], "execute": True}, expect=200)
    assert committed() == {0: 0, 1: 0, 2: 0, 3: 50}

    api.error("POST", reset, {"to": "offset"}, status=400, code="INVALID_REQUEST")
    api.error("POST", reset, {"to": "datetime", "datetime": "yesterday"}, status=400, code="INVALID_REQUEST")
    api.error("POST", reset, {"to": "someday"}, status=400, code="INVALID_REQUEST", check=False)
    api.error("POST", reset, {"to": "earliest", "partitions": [9]}, status=404,
              code="UNKNOWN_TOPIC_OR_PARTITION")
    api.error("GET", "/api/v1/groups/no-such-group", status=404, code="GROUP_ID_NOT_FOUND")

    # A live member would overwrite a reset: refused while it has one.
    c = kutil.group_consumer(b.bootstrap, group)
    c.subscribe([topic])
    try:
        kutil.wait_until(lambda: (c.poll(0.2), c.assignment())[1], 30, 0, "assignment")
        _, d = api.get(f"/api/v1/groups/{group}", expect=200)
        assert d["state"] == "Stable" and len(d["members"]) == 1, d
        assigned = d["members"][0]["assignment"]
        assert assigned == [{"topic": topic, "partitions": [0, 1, 2, 3]}], assigned
        msg = api.error("POST", reset, {"to": "earliest", "execute": True}, status=409, code="NON_EMPTY_GROUP")
        assert "stop its consumers" in msg
    finally:
        c.close()
    assert committed()[3] == 50


def test_priority_classes_and_bulk_pause(broker_factory):
    b = broker_factory()
    api = AdminApi(b)
    adm = kutil.admin(b.bootstrap)
    _, v = api.get("/api/v1/priority-classes", expect=200)
    assert v["bulk_paused"] is False and v["groups"] == {}
    assert v["shares"]["critical"] > v["shares"]["standard"] > v["shares"]["bulk"] > 0, v
    _, v = api.call("PUT", "/api/v1/priority-classes/groups/backfill", {"class": "bulk"}, expect=200)
    _, v = api.call("PUT", "/api/v1/priority-classes/groups/billing", {"class": "critical"}, expect=200)
    assert v["groups"] == {"backfill": "bulk", "billing": "critical"}
    _, v = api.call("POST", "/api/v1/priority-classes/bulk/pause", expect=200)
    assert v["bulk_paused"] is True
    # The settings a Kafka client sees on the broker.
    res = ConfigResource(ResourceType.BROKER, "0")
    seen = adm.describe_configs([res], request_timeout=30)[res].result(timeout=60)
    assert seen["remote.fetch.priority.groups"].value == "backfill=bulk,billing=critical"
    assert seen["remote.fetch.bulk.paused"].value == "true"
    _, v = api.call("POST", "/api/v1/priority-classes/bulk/resume", expect=200)
    assert v["bulk_paused"] is False
    _, v = api.call("DELETE", "/api/v1/priority-classes/groups/backfill", expect=200)
    assert v["groups"] == {"billing": "critical"}
    api.error("PUT", "/api/v1/priority-classes/groups/x", {"class": "urgent"}, status=400,
              code="INVALID_REQUEST", check=False)
    api.error("PUT", "/api/v1/priority-classes/groups/a=b", {"class": "bulk"}, status=400,
              code="INVALID_REQUEST")
    # Survives a restart (persisted as a dynamic broker setting).
    b.restart()
    api = AdminApi(b)
    _, v = api.get("/api/v1/priority-classes", expect=200)
    assert v["groups"] == {"billing": "critical"} and v["bulk_paused"] is False


TOKEN = "s3cr3t-t0ken-for-the-admin-api"


def test_bearer_token_required_when_configured_and_never_logged(broker_factory):
    b = broker_factory(env={"STRATA_HTTP_TOKEN": TOKEN})
    api = AdminApi(b, token=TOKEN)
    api.get("/api/v1/broker", expect=200)
    msg = api.error("GET", "/api/v1/topics", status=401, code="UNAUTHORIZED", token=None, check=False)
    assert "Bearer" in msg
    api.error("GET", "/api/v1/topics", status=401, code="UNAUTHORIZED", token=TOKEN[:-1] + "X")
    api.error("POST", "/api/v1/priority-classes/bulk/pause", status=401, code="UNAUTHORIZED",
              token=None, check=False)
    import requests
    base = f"http://127.0.0.1:{b.http_port}"
    r = requests.get(f"{base}/metrics", timeout=10)
    assert r.status_code == 401 and r.headers["www-authenticate"].startswith("Bearer")
    assert requests.get(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"},
                        timeout=10).status_code == 200
    # Probes and the (empty) console page need no token.
    assert requests.get(f"{base}/healthz", timeout=10).status_code == 200
    assert requests.get(f"{base}/readyz", timeout=10).status_code == 200
    assert requests.get(f"{base}/", timeout=10).status_code == 200
    b.stop()
    assert TOKEN not in b.log_text(), "the token was logged"


def test_api_refuses_to_bind_beyond_loopback_without_a_token(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("STRATA_")}
    cmd = [str(strata_bin()), "broker", "--data-dir", str(tmp_path / "data"),
           "--listen", f"127.0.0.1:{free_port()}", "--http-listen", f"0.0.0.0:{free_port()}"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0
    assert "not a loopback address" in r.stderr and "token" in r.stderr, r.stderr
    # A token that is too short is refused too, with its reason.
    r = subprocess.run(cmd, env={**env, "STRATA_HTTP_TOKEN": "short"}, capture_output=True, text=True,
                       timeout=60)
    assert r.returncode != 0 and "at least 16 characters" in r.stderr, r.stderr
    assert "short" not in r.stderr
