"""Tiered storage (issue 4): sealed segments are uploaded to the object store
(s3:// on moto, or the default file://<data-dir>/bucket), the local disk
keeps only the hot tail, and consumers and ListOffsets see one continuous
log from offset 0. Hot-window changes at run time, remote.storage.enable,
invalid local retention settings.

Restarts, disaster recovery, object-store outages and two brokers on one
bucket are in test_tiering_recovery.py.
"""

import json
import os
import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import ConfigSource, NewTopic, OffsetSpec

import kutil
import tierutil as tu
import wire
from tierutil import KiB, MiB


def check_tiered_log(b, bucket, topic, ds, n, hot_max, timeout, group_read=False):
    """Partition 0 of `topic` holds data-set records 0..n-1 (record i at
    offset i, timestamp ts0+i) and was produced with a small
    local.retention.ms. Asserts the split between bucket and local disk,
    the metrics, ListOffsets / offsets_for_times across the boundary and a
    byte-for-byte read of everything from offset 0."""
    tu.wait_hot_tail(b, bucket, topic, 0, hot_max, timeout)
    m = tu.wait_settled(b, bucket, topic, 0, timeout)
    end = tu.check_manifest(m)
    segs = m["segments"]
    local = tu.local_segments(b, topic)
    local_start = min(local)
    # the bucket holds 0..end-1, the disk local_start..n-1, together everything
    assert segs[0]["base_offset"] == 0, f"first remote segment starts at {segs[0]['base_offset']}, not 0"
    assert m["log_start_offset"] == 0
    assert 0 < local_start <= end <= n, f"local start {local_start}, remote end {end}, log end {n}"
    assert f"{0:020d}.log" not in os.listdir(b.partition_dir(topic, 0))
    assert sum(local.values()) <= hot_max, f"local log holds {sum(local.values())} bytes: {local}"
    for s in segs:
        assert s["max_timestamp"] == ds.timestamp(s["last_offset"]), \
            f"segment {s['base_offset']}..{s['last_offset']}: max_timestamp {s['max_timestamp']}, " \
            f"records say {ds.timestamp(s['last_offset'])}"
    tu.check_segment_objects(bucket, m)
    remote_bytes = sum(s["size_bytes"] for s in segs)
    payload = tu.payload_bytes(ds, 0, end)
    assert payload <= remote_bytes <= payload * 1.25 + 64 * KiB, \
        f"remote segments hold {remote_bytes} bytes for {payload} bytes of keys+values"

    # metrics agree with the bucket and the disk
    def metrics_agree():
        mt = tu.need_metrics(b, topic, 0, tu.PARTITION_METRICS + ("strata_object_store_available",))
        loc = tu.local_segments(b, topic)
        want = {
            "strata_remote_upload_segments_total": len(segs),
            "strata_remote_copy_lag_segments": 0,
            "strata_remote_copy_lag_seconds": 0,
            "strata_remote_fenced": 0,
            "strata_remote_log_size_bytes": remote_bytes,
            "strata_remote_log_start_offset": 0,
            "strata_local_log_start_offset": min(loc),
            "strata_local_log_size_bytes": sum(loc.values()),
            "strata_object_store_available": 1,
        }
        diff = {k: (mt[k], v) for k, v in want.items() if mt[k] != v}
        if mt["strata_remote_upload_bytes_total"] < remote_bytes:
            diff["strata_remote_upload_bytes_total"] = (mt["strata_remote_upload_bytes_total"], f">= {remote_bytes}")
        return (not diff), f"(metric, expected) that differ: {diff}"
    tu.wait_for(metrics_agree, 15, "metrics matching the bucket and the local log")
    # checked last, so that everything else is checked too when it fails
    upload_errors = tu.metric(b, "strata_remote_upload_errors_total", topic, 0)

    # ListOffsets: earliest is the global (remote) log start, latest the end
    assert tu.list_offset(kutil.admin(b.bootstrap), topic, 0, OffsetSpec.earliest()) == 0, \
        "ListOffsets EARLIEST must be the remote log start 0, not the local start"
    assert tu.list_offset(kutil.admin(b.bootstrap), topic, 0, OffsetSpec.latest()) == n
    assert kutil.watermarks(b.bootstrap, topic, 0) == (0, n)

    # offsets_for_times: record-precise in the remote part, at the boundary and locally
    mid_seg = segs[len(segs) // 2]
    probes = {
        ds.ts0 - 60_000: 0,
        ds.ts0: 0,
        ds.ts0 + 1: 1,
        ds.timestamp(mid_seg["base_offset"] + 3): mid_seg["base_offset"] + 3,
        ds.timestamp(end - 1): end - 1,                 # last remote record
        ds.timestamp(n - 1): n - 1,
        ds.timestamp(n - 1) + 60_000: -1,               # after the last record
    }
    if local_start < n:  # the local part holds records (the active segment is not empty)
        probes[ds.timestamp(local_start)] = local_start  # first local record
        probes[ds.timestamp((local_start + n) // 2)] = (local_start + n) // 2
    got = kutil.offsets_for_times(b.bootstrap, topic, 0, list(probes))
    wrong = {ts - ds.ts0: (o, want) for (ts, want), o in zip(probes.items(), got) if o != want}
    assert not wrong, f"offsets_for_times (ts - ts0: (got, expected)) wrong: {wrong} " \
                      f"(remote end {end}, local start {local_start})"

    # a raw Fetch at 0 is served from the bucket: the batches exactly as stored there
    with wire.KafkaConn.to(b.bootstrap) as c:
        f = c.fetch_v4(topic, 0, 0, max_wait_ms=100, max_bytes=256 * KiB)
    assert f.error_code == 0, f"raw Fetch at offset 0 (remote): error {f.error_code}"
    recs = wire.decode_batches(f.records or b"")
    assert recs and recs[0].offset == 0 and recs[0].key == ds.key(0) and recs[0].value == ds.value(0), \
        f"raw Fetch at 0 returned {len(recs)} records, first {recs[:1]}"
    obj = bucket.get(bucket.rel(segs[0]["log_key"]))
    whole = _complete_batches(f.records)
    assert whole and obj[:len(whole)] == whole, "fetched batches differ from the bytes of the remote .log object"

    # strict reads (auto.offset.reset=error) from the middle of a remote
    # segment, and across the remote/local boundary
    a = mid_seg["base_offset"] + 7
    tu.verify_range(b.bootstrap, topic, ds, a, min(n, a + 500))
    a = max(0, min(end, local_start) - 700)
    tu.verify_range(b.bootstrap, topic, ds, a, min(n, max(end, local_start) + 700))
    # everything from offset 0, byte for byte
    if group_read:
        tu.verify_range(b.bootstrap, topic, ds, 0, n, timeout=300, group=kutil.unique("tier-read"))
    else:
        tu.verify_range(b.bootstrap, topic, ds, 0, n, timeout=300)
    # The object store's request counters saw the uploads (segments, their
    # indexes, manifests: at least the segments' bytes) and the remote reads.
    store = {(n_, lab.get("kind")): v for n_, lab, v in tu.scrape(b)
             if n_ in ("strata_object_store_requests_total", "strata_object_store_bytes_total")}
    assert store[("strata_object_store_requests_total", "PUT")] >= len(segs), store
    assert store[("strata_object_store_bytes_total", "PUT")] >= remote_bytes, store
    assert store[("strata_object_store_requests_total", "GET")] >= 1, store
    assert store[("strata_object_store_bytes_total", "GET")] > 0, store
    assert upload_errors == 0, \
        f"strata_remote_upload_errors_total={upload_errors} with a healthy object store; warnings in the log: " \
        f"{[ln for ln in b.log_text().splitlines() if 'WARN' in ln][:5]}"
    return m


def _complete_batches(records: bytes | None) -> bytes:
    """The prefix of a Fetch response's records that consists of whole batches."""
    data = records or b""
    pos = 0
    while pos + 12 <= len(data):
        length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
        if pos + 12 + length > len(data):
            break
        pos += 12 + length
    return data[:pos]


def check_bucket_metadata(b, bucket, topic, partitions):
    """metadata/topics/<topic>.json and metadata/cluster.json are in the bucket."""
    raw = bucket.get(f"metadata/topics/{topic}.json")
    assert raw is not None, f"no metadata/topics/{topic}.json in the bucket; bucket has " \
                            f"{[k for k in bucket.keys('metadata/')][:20]}"
    meta = json.loads(raw)
    assert topic in json.dumps(meta), f"topic metadata does not name the topic: {meta}"
    counts = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if "partition" in k.lower():
                    counts.append(len(v) if isinstance(v, list) else v)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(meta)
    assert partitions in counts, f"topic metadata lacks the partition count {partitions}: {meta}"
    raw = bucket.get("metadata/cluster.json")
    assert raw is not None, "no metadata/cluster.json in the bucket"
    adm = kutil.admin(b.bootstrap)  # keep a reference until the future resolves
    cluster_id = adm.describe_cluster(request_timeout=30).result(timeout=60).cluster_id
    assert cluster_id and cluster_id in json.dumps(json.loads(raw)), \
        f"metadata/cluster.json {raw[:300]!r} does not hold the cluster id {cluster_id}"


# ---------------------------------------------------------------------------
# 1, 2: the round trip, on S3 and on the default file:// store
# ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_tiered_round_trip_s3(broker_factory, s3_bucket):
    """100 MiB through a 1 MiB-segment topic with local.retention.ms=1000 on
    s3:// (moto): the disk keeps the hot tail, the bucket the rest, and a
    fresh group reading from the earliest offset gets every record."""
    b = tu.s3_broker(broker_factory, s3_bucket)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("tier-s3")
    kutil.create_topic(adm, topic, 1, config={"segment.bytes": str(MiB), "local.retention.ms": "1000"})
    ds = tu.DataSet(seed=1, ts0=tu.ms_ago(60))
    n = 100 * MiB // 1000
    t0 = time.monotonic()
    tu.produce_range(b.bootstrap, topic, ds, 0, n)
    produced_s = time.monotonic() - t0
    m = check_tiered_log(b, s3_bucket, topic, ds, n, hot_max=4 * MiB, timeout=240, group_read=True)
    assert len(m["segments"]) >= 90, f"only {len(m['segments'])} remote segments for ~100 MiB of 1 MiB segments"
    check_bucket_metadata(b, s3_bucket, topic, 1)
    print(f"produced {n} records in {produced_s:.1f}s; {len(m['segments'])} remote segments")


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_tiered_round_trip_file(broker_factory):
    """20 MiB on the default object store file://<data-dir>/bucket; and the
    internal __consumer_offsets topic never tiers, even with sealed segments."""
    b, bucket = tu.file_broker(broker_factory, {"offsets.topic.segment.bytes": 16 * KiB,
                                             "offsets.topic.num.partitions": 1})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("tier-file")
    kutil.create_topic(adm, topic, 1, config={"segment.bytes": str(MiB), "local.retention.ms": "1000"})
    ds = tu.DataSet(seed=2, ts0=tu.ms_ago(30))
    n = 20 * MiB // 1000
    tu.produce_range(b.bootstrap, topic, ds, 0, n)

    # meanwhile, commits roll __consumer_offsets segments
    group = kutil.unique("tier-commits")
    c = kutil.group_consumer(b.bootstrap, group)
    try:
        for i in range(150):
            c.commit(offsets=[TopicPartition(topic, 0, i, metadata="m" * 200)], asynchronous=False)
    finally:
        c.close()
    offsets_segs = tu.local_segments(b, "__consumer_offsets", 0)
    assert len(offsets_segs) >= 2, f"expected sealed __consumer_offsets segments, have {offsets_segs}"

    check_tiered_log(b, bucket, topic, ds, n, hot_max=3 * MiB, timeout=120)
    check_bucket_metadata(b, bucket, topic, 1)

    tiered = [k for k in bucket.keys() if "__consumer_offsets" in k]
    assert not tiered, f"__consumer_offsets must never tier, bucket has {tiered[:5]} " \
                       f"(local __consumer_offsets segments were {list(offsets_segs)})"
    assert tu.manifest(bucket, "__consumer_offsets", 0) is None
    assert kutil.committed(adm, group, topic, [0])[(topic, 0)].offset == 149


# ---------------------------------------------------------------------------
# 7: the hot window changes at run time
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_hot_window_changes_at_run_time(broker_factory):
    """local.retention.ms large: everything stays local (and is uploaded
    too, byte-identical). Lowered to 1000 by IncrementalAlterConfigs: the
    disk shrinks to the hot tail without a restart. Back to -2: new
    segments stay local. local.retention.bytes: the disk keeps about that
    much."""
    seg = 256 * KiB
    b, bucket = tu.file_broker(broker_factory)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("hot-window")
    kutil.create_topic(adm, topic, 1, config={"segment.bytes": str(seg), "local.retention.ms": "3600000"})
    ds = tu.DataSet(seed=7, ts0=tu.ms_ago(10))
    n1 = 3000
    tu.produce_range(b.bootstrap, topic, ds, 0, n1)

    m = tu.wait_settled(b, bucket, topic, 0, 60)
    end1 = tu.check_manifest(m)
    assert end1 > 0 and len(m["segments"]) >= 8, f"expected ~11 uploaded segments, manifest ends at {end1}"
    # uploaded while kept: the objects are the local files, byte for byte
    for s in m["segments"][:2]:
        local_file = b.partition_dir(topic, 0) / f"{s['base_offset']:020d}.log"
        obj = bucket.get(bucket.rel(s["log_key"]))
        assert obj == local_file.read_bytes(), f"remote {s['log_key']} differs from {local_file}"
        assert wire.crc32c(obj) == s["crc32c"], f"crc32c in the manifest does not match {s['log_key']}"
    before = tu.local_segments(b, topic)
    time.sleep(2.0)  # ten task intervals and retention checks
    after = tu.local_segments(b, topic)
    assert min(after) == 0 and set(before) <= set(after), \
        f"local.retention.ms=3600000 must keep every local segment; before {list(before)}, after {list(after)}"

    # 1) lower the hot window at run time
    tu.alter(adm, topic, {"local.retention.ms": 1000})
    assert tu.describe(adm, topic)["local.retention.ms"].value == "1000"
    def trimmed():
        segs = tu.local_segments(b, topic)
        return (min(segs) if min(segs) >= end1 else None), f"local segments {list(segs)}"
    start1 = tu.wait_for(trimmed, 30, f"local segments below the remote end {end1} deleted "
                                      f"after local.retention.ms=1000")
    assert kutil.watermarks(b.bootstrap, topic, 0) == (0, n1)

    # 2) back to -2 (= retention.ms, 7 days): new segments are uploaded but stay local
    tu.alter(adm, topic, {"local.retention.ms": -2})
    n2 = n1 + 3000
    tu.produce_range(b.bootstrap, topic, ds, n1, n2)
    m = tu.wait_settled(b, bucket, topic, 0, 60)
    end2 = tu.check_manifest(m)
    assert end2 > n1, f"new segments were not uploaded (remote end {end2})"
    time.sleep(2.0)
    segs = tu.local_segments(b, topic)
    assert min(segs) == start1, \
        f"with local.retention.ms=-2 the new segments must stay local: local start moved {start1} -> {min(segs)}"
    assert sum(segs.values()) >= tu.payload_bytes(ds, start1, n2), "local log lost data"

    # 3) local.retention.bytes: about that much stays local
    keep = 4 * seg
    tu.alter(adm, topic, {"local.retention.bytes": keep})

    def shrunk():
        s = tu.local_segments(b, topic)
        size = sum(s.values())
        return (min(s) > start1 and size <= keep + seg + 8 * KiB), f"local start {min(s)}, {size} bytes in {len(s)} segments"
    tu.wait_for(shrunk, 30, f"local log trimmed to local.retention.bytes={keep} (+ one segment)")
    s = tu.local_segments(b, topic)
    assert sum(s.values()) >= keep - seg, f"local.retention.bytes={keep} deleted too much: {s}"
    assert min(s) <= end2, "a segment was deleted locally before it was uploaded"

    assert tu.list_offset(adm, topic, 0, OffsetSpec.earliest()) == 0
    tu.verify_range(b.bootstrap, topic, ds, 0, n2)


# ---------------------------------------------------------------------------
# 8: remote.storage.enable=false at run time
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_remote_storage_disabled_at_run_time(broker_factory):
    seg = 256 * KiB
    b, bucket = tu.file_broker(broker_factory)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("remote-off")
    kutil.create_topic(adm, topic, 1, config={"segment.bytes": str(seg), "local.retention.ms": "1000"})
    assert tu.describe(adm, topic)["remote.storage.enable"].value == "true"
    ds = tu.DataSet(seed=8, ts0=tu.ms_ago(10))
    n1 = 2000
    tu.produce_range(b.bootstrap, topic, ds, 0, n1)
    tu.wait_hot_tail(b, bucket, topic, 0, 2 * seg, 60)
    m1 = tu.wait_settled(b, bucket, topic, 0, 60)
    end1 = tu.check_manifest(m1)
    uploads1 = tu.wait_metric(b, "strata_remote_upload_segments_total", topic, 0, len(m1["segments"]))

    tu.alter(adm, topic, {"remote.storage.enable": "false"})
    assert tu.describe(adm, topic)["remote.storage.enable"].value == "false"
    n2 = n1 + 3000
    tu.produce_range(b.bootstrap, topic, ds, n1, n2)
    sealed_after = [o for o in tu.local_segments(b, topic) if o >= end1]
    assert len(sealed_after) >= 8, f"expected new sealed segments, local has {sealed_after}"

    time.sleep(3.0)  # fifteen task intervals
    m2 = tu.manifest(bucket, topic, 0)
    assert m2["segments"] == m1["segments"], \
        f"the catalog grew with remote.storage.enable=false: remote end {end1} -> {tu.check_manifest(m2)}"
    assert tu.metric(b, "strata_remote_upload_segments_total", topic, 0) == uploads1
    local = tu.local_segments(b, topic)
    assert min(local) <= end1, f"local segments above the remote end {end1} were deleted: local start {min(local)}"

    # the already-remote part stays readable, the log is continuous from 0
    assert tu.list_offset(adm, topic, 0, OffsetSpec.earliest()) == 0
    assert kutil.watermarks(b.bootstrap, topic, 0) == (0, n2)
    tu.verify_range(b.bootstrap, topic, ds, 0, n2)
    assert kutil.offsets_for_times(b.bootstrap, topic, 0, [ds.timestamp(10), ds.timestamp(n2 - 5)]) == [10, n2 - 5]


# ---------------------------------------------------------------------------
# broker-level settings: tiering off, default hot window
# ---------------------------------------------------------------------------


def test_tiering_disabled_on_broker(broker_factory):
    """remote.log.storage.system.enable=false: nothing goes to the bucket and
    local.retention.ms has no effect (ordinary retention keeps everything)."""
    b, bucket = tu.file_broker(broker_factory, {"remote.log.storage.system.enable": "false"})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("tier-off")
    kutil.create_topic(adm, topic, 1, config={"segment.bytes": str(256 * KiB), "local.retention.ms": "1000"})
    ds = tu.DataSet(seed=10, ts0=tu.ms_ago(10))
    n = 1500
    tu.produce_range(b.bootstrap, topic, ds, 0, n)
    segs = tu.local_segments(b, topic)
    assert len(segs) >= 4
    time.sleep(2.0)  # ten task intervals and retention checks
    assert tu.local_segments(b, topic) == segs, "local segments changed with tiering disabled on the broker"
    assert tu.manifest(bucket, topic, 0) is None, "a manifest was written with tiering disabled"
    assert not [k for k in bucket.keys("topics/") if k.startswith(f"topics/{topic}/")]
    assert kutil.watermarks(b.bootstrap, topic, 0) == (0, n)
    tu.verify_range(b.bootstrap, topic, ds, 0, n)


def test_broker_default_hot_window(broker_factory):
    """log.local.retention.ms on the broker is the default of topics without
    their own local.retention.ms."""
    b, bucket = tu.file_broker(broker_factory, {"log.local.retention.ms": 1000})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("tier-broker-default")
    kutil.create_topic(adm, topic, 1, config={"segment.bytes": str(256 * KiB)})
    assert tu.describe(adm, topic)["local.retention.ms"].value == "1000"
    ds = tu.DataSet(seed=11, ts0=tu.ms_ago(10))
    n = 1500
    tu.produce_range(b.bootstrap, topic, ds, 0, n)
    tu.wait_hot_tail(b, bucket, topic, 0, 512 * KiB, 60)
    assert tu.list_offset(adm, topic, 0, OffsetSpec.earliest()) == 0
    tu.verify_range(b.bootstrap, topic, ds, 0, n)


# ---------------------------------------------------------------------------
# 9: invalid local retention settings
# ---------------------------------------------------------------------------


def _create_fails(adm, topic, config) -> KafkaException:
    fut = adm.create_topics([NewTopic(topic, 1, 1, config=config)], request_timeout=30)[topic]
    with pytest.raises(KafkaException) as ei:
        fut.result(timeout=60)
    return ei.value


@pytest.mark.parametrize("config,named", [
    ({"retention.ms": "1000", "local.retention.ms": "2000"}, "local.retention.ms"),
    ({"retention.bytes": str(MiB), "local.retention.bytes": str(2 * MiB)}, "local.retention.bytes"),
    ({"local.retention.ms": "abc"}, "local.retention.ms"),
    ({"local.retention.ms": "-3"}, "local.retention.ms"),
    ({"remote.storage.enable": "maybe"}, "remote.storage.enable"),
], ids=["local.retention.ms>retention.ms", "local.retention.bytes>retention.bytes", "local.retention.ms=abc",
        "local.retention.ms=-3", "remote.storage.enable=maybe"])
def test_invalid_local_retention_on_create(broker, admin, topic_name, config, named):
    e = _create_fails(admin, topic_name, config)
    assert kutil.error_code(e) == KafkaError.INVALID_CONFIG, kutil.error_str(e)
    assert named in kutil.error_str(e), f"INVALID_CONFIG message does not name {named}: {kutil.error_str(e)!r}"
    assert topic_name not in kutil.topic_names(admin)


def test_invalid_local_retention_on_alter(broker, admin, topic_name):
    kutil.create_topic(admin, topic_name, 1, config={"retention.ms": "3600000", "retention.bytes": str(8 * MiB)})
    entries = tu.describe(admin, topic_name)
    for name, default in (("remote.storage.enable", "true"), ("local.retention.ms", "-2"),
                          ("local.retention.bytes", "-2")):
        assert name in entries, f"DescribeConfigs lacks {name}"
        assert entries[name].value == default, f"{name} default {entries[name].value!r}, want {default!r}"
        src = tu.config_source(entries[name])
        assert src == ConfigSource.DEFAULT_CONFIG, f"{name}: source {src!r}"

    for name, value in (("local.retention.ms", "7200000"), ("local.retention.bytes", str(16 * MiB))):
        with pytest.raises(KafkaException) as ei:
            tu.alter(admin, topic_name, {name: value})
        assert kutil.error_code(ei.value) == KafkaError.INVALID_CONFIG, kutil.error_str(ei.value)
        assert name in kutil.error_str(ei.value), \
            f"INVALID_CONFIG message does not name {name}: {kutil.error_str(ei.value)!r}"
        assert tu.describe(admin, topic_name)[name].value == "-2", "a rejected alter must change nothing"

    # limits that fit are accepted, and then lowering the total below them is rejected
    tu.alter(admin, topic_name, {"local.retention.ms": 3600000, "local.retention.bytes": MiB})
    e = tu.describe(admin, topic_name)
    assert (e["local.retention.ms"].value, e["local.retention.bytes"].value) == ("3600000", str(MiB))
    with pytest.raises(KafkaException) as ei:
        tu.alter(admin, topic_name, {"retention.ms": 1000})
    assert kutil.error_code(ei.value) == KafkaError.INVALID_CONFIG, kutil.error_str(ei.value)
    assert "retention.ms" in kutil.error_str(ei.value), kutil.error_str(ei.value)
    assert tu.describe(admin, topic_name)["retention.ms"].value == "3600000"
