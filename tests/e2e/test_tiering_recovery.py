"""Tiered storage (issue 4) across failures: SIGTERM and kill -9 restarts
never upload a segment twice; a broker that lost its disk rebuilds from the
bucket; an object-store outage costs nothing; a second broker on the same
bucket fences the first."""

import re
import shutil
import time

import pytest
from confluent_kafka.admin import ConfigResource, ConfigSource, OffsetSpec, ResourceType

import kutil
import tierutil as tu
from tierutil import KiB

SEG = 256 * KiB


def _segment_keys(m) -> list:
    return [(s["base_offset"], s["last_offset"], s["log_key"]) for s in m["segments"]]


def _uploads(b, topic) -> float:
    v = tu.metric(b, "strata_remote_upload_segments_total", topic, 0)
    assert v is not None, f"/metrics lacks strata_remote_upload_segments_total for {topic}/0"
    return v


def _wait_claimed(bucket, topic, above_epoch, partition=0, timeout=30.0) -> dict:
    def claimed():
        m = tu.manifest(bucket, topic, partition)
        e = m["writer_epoch"] if m else None
        return (m if e is not None and e > above_epoch else None), f"writer epoch {e}"
    return tu.wait_for(claimed, timeout, f"{topic}/{partition}: catalog claimed with a writer epoch > {above_epoch}")


# ---------------------------------------------------------------------------
# 3: restarts
# ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sigterm", "kill9"])
def test_restart_never_uploads_twice(broker_factory, s3_bucket, mode):
    """After tiering, a restart (SIGTERM or kill -9) claims the catalog
    again and uploads only segments the catalog does not have; then a kill
    -9 while uploads are in flight (moto makes them slow enough); every
    record stays readable."""
    bucket = s3_bucket
    b = tu.s3_broker(broker_factory, bucket)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique(f"tier-restart-{mode}")
    kutil.create_topic(adm, topic, 1, config={"segment.bytes": str(SEG), "local.retention.ms": "1000"})
    ds = tu.DataSet(seed=3, ts0=tu.ms_ago(10))
    n1 = 2000
    tu.produce_range(b.bootstrap, topic, ds, 0, n1)
    tu.wait_hot_tail(b, bucket, topic, 0, 2 * SEG, 60)
    m1 = tu.wait_settled(b, bucket, topic, 0, 60)
    assert len(m1["segments"]) >= 5
    tu.wait_metric(b, "strata_remote_upload_segments_total", topic, 0, len(m1["segments"]))

    # --- restart with everything sealed already tiered
    if mode == "sigterm":
        assert b.stop() == 0, "broker exited non-zero on SIGTERM"
    else:
        b.kill9()
    m_down = tu.manifest(bucket, topic, 0)
    tu.check_manifest(m_down)
    b.start()
    kutil.wait_topic_ready(kutil.admin(b.bootstrap), topic, 1)
    _wait_claimed(bucket, topic, m_down["writer_epoch"])
    m2 = tu.wait_settled(b, bucket, topic, 0, 60)
    assert _segment_keys(m2)[:len(m_down["segments"])] == _segment_keys(m_down), \
        "segments tiered before the restart were replaced or re-uploaded"
    tu.wait_metric(b, "strata_remote_upload_segments_total", topic, 0,
                   len(m2["segments"]) - len(m_down["segments"]),
                   what="upload counter after the restart == segments new in the catalog")
    objs = [o for o in tu.segment_objects(bucket, topic, 0) if o[2] == "log"]
    bases = [o[0] for o in objs]
    assert len(bases) == len(set(bases)), f"a segment was uploaded twice: {objs}"
    assert sorted(bases) == [s["base_offset"] for s in m2["segments"]], \
        "the bucket holds .log objects the catalog does not reference"

    # --- more data after the restart: only the new segments go up
    n2 = n1 + 2000
    tu.produce_range(b.bootstrap, topic, ds, n1, n2)
    m3 = tu.wait_settled(b, bucket, topic, 0, 60)
    assert _segment_keys(m3)[:len(m2["segments"])] == _segment_keys(m2)
    assert len(m3["segments"]) > len(m2["segments"])
    tu.wait_metric(b, "strata_remote_upload_segments_total", topic, 0,
                   len(m3["segments"]) - len(m_down["segments"]),
                   what="upload counter == segments added to the catalog since the restart")

    # --- kill -9 right after producing, uploads in flight
    n3 = n2 + 2000
    tu.produce_range(b.bootstrap, topic, ds, n2, n3)
    b.kill9()
    m_kill = tu.manifest(bucket, topic, 0)
    end_kill = tu.check_manifest(m_kill)
    sealed_kill = max(tu.local_segments(b, topic))
    print(f"kill -9 with the catalog at {end_kill}, sealed local segments up to {sealed_kill}")
    b.start()
    kutil.wait_topic_ready(kutil.admin(b.bootstrap), topic, 1)
    _wait_claimed(bucket, topic, m_kill["writer_epoch"])
    m4 = tu.wait_settled(b, bucket, topic, 0, 60)
    tu.check_segment_objects(bucket, m4)
    assert _segment_keys(m4)[:len(m_kill["segments"])] == _segment_keys(m_kill)
    tu.wait_metric(b, "strata_remote_upload_segments_total", topic, 0,
                   len(m4["segments"]) - len(m_kill["segments"]),
                   what="upload counter after kill -9 == segments new in the catalog (none uploaded twice)")
    tu.wait_hot_tail(b, bucket, topic, 0, 2 * SEG, 60)

    assert kutil.watermarks(b.bootstrap, topic, 0) == (0, n3)
    tu.verify_range(b.bootstrap, topic, ds, 0, n3)
    tu.produce_range(b.bootstrap, topic, ds, n3, n3 + 100)  # appends continue at n3
    tu.verify_range(b.bootstrap, topic, ds, n3 - 50, n3 + 100)


# ---------------------------------------------------------------------------
# 4: disaster recovery
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_disaster_recovery_from_bucket(broker_factory, s3_bucket):
    """segment.ms seals the last segment of an idle topic, so the bucket has
    everything; the data dir is deleted; a broker with an empty data dir on
    the same bucket recreates the topic (partitions, configs, cluster id) and
    serves every record from offset 0, and appends continue."""
    b = tu.s3_broker(broker_factory, s3_bucket)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.unique("tier-dr")
    cfg = {"segment.bytes": str(SEG), "segment.ms": "2000", "local.retention.ms": "1000",
           "retention.ms": str(30 * 86_400_000), "max.message.bytes": "2000000"}
    kutil.create_topic(adm, topic, 2, config=cfg)
    dss = [tu.DataSet(seed=40, ts0=tu.ms_ago(10)), tu.DataSet(seed=41, ts0=tu.ms_ago(9))]
    ns = [1500, 700]
    for p in (0, 1):
        tu.produce_range(b.bootstrap, topic, dss[p], 0, ns[p], partition=p)
    cluster_id = adm.describe_cluster(request_timeout=30).result(timeout=60).cluster_id
    before = {p: tu.wait_remote_end(s3_bucket, topic, p, ns[p], timeout=60) for p in (0, 1)}
    for p in (0, 1):
        tu.check_segment_objects(s3_bucket, before[p])
    probes = {p: [dss[p].timestamp(i) for i in (0, 5, ns[p] // 2, ns[p] - 1)] for p in (0, 1)}

    assert b.stop() == 0
    shutil.rmtree(b.data_dir)
    b.data_dir.mkdir()
    b.start()

    adm = kutil.admin(b.bootstrap)
    kutil.wait_topic_ready(adm, topic, 2, timeout=60)
    assert kutil.partition_count(adm, topic) == 2
    res = ConfigResource(ResourceType.TOPIC, topic)
    entries = adm.describe_configs([res], request_timeout=30)[res].result(timeout=60)
    for name, value in cfg.items():
        src = tu.config_source(entries[name])
        assert (entries[name].value, src) == (value, ConfigSource.DYNAMIC_TOPIC_CONFIG), \
            f"{name} after recovery: {entries[name].value!r} ({src!r}), want {value!r} (DYNAMIC_TOPIC_CONFIG)"
    assert adm.describe_cluster(request_timeout=30).result(timeout=60).cluster_id == cluster_id, \
        "the recovered broker has another cluster id than the bucket's"

    for p in (0, 1):
        assert kutil.watermarks(b.bootstrap, topic, p) == (0, ns[p]), f"partition {p}"
        assert tu.list_offset(adm, topic, p, OffsetSpec.earliest()) == 0
        tu.verify_range(b.bootstrap, topic, dss[p], 0, ns[p], partition=p)
        assert kutil.offsets_for_times(b.bootstrap, topic, p, probes[p]) == [0, 5, ns[p] // 2, ns[p] - 1]
        m = tu.manifest(s3_bucket, topic, p)
        assert _segment_keys(m) == _segment_keys(before[p]), "recovery changed the catalog's segments"

    # appends continue at the old end; the new records are readable with the old ones
    for p in (0, 1):
        tu.produce_range(b.bootstrap, topic, dss[p], ns[p], ns[p] + 200, partition=p)
        tu.verify_range(b.bootstrap, topic, dss[p], ns[p] - 100, ns[p] + 200, partition=p)
    # and they are tiered in turn, after the recovered part
    m = tu.wait_remote_end(s3_bucket, topic, 0, ns[0] + 200, timeout=60)
    assert m["writer_epoch"] > before[0]["writer_epoch"]
    assert _segment_keys(m)[:len(before[0]["segments"])] == _segment_keys(before[0])


# ---------------------------------------------------------------------------
# 5: object store outage
# ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(420)
def test_object_store_outage(broker_factory, moto, s3_bucket):
    """The broker reaches moto through a proxy that goes down for 30 s while
    records are produced continuously: producers see no error, nothing
    not yet uploaded is deleted locally, the metrics show the outage, and
    afterwards uploads catch up and every record is readable."""
    proxy = tu.TcpProxy(moto.port)
    try:
        b = tu.s3_broker(broker_factory, s3_bucket, env=moto.env(proxy.endpoint))
        adm = kutil.admin(b.bootstrap)
        topic = kutil.unique("tier-outage")
        kutil.create_topic(adm, topic, 1, config={"segment.bytes": str(SEG), "local.retention.ms": "1000"})
        ds = tu.DataSet(seed=5, ts0=tu.ms_ago(10))
        prod = tu.SeqProducer(b.bootstrap, topic, ds, rate=400)
        prod.start()
        try:
            tu.wait_for(lambda: (tu.remote_end(s3_bucket, topic) >= 1000 and tu.local_start(b, topic) > 0,
                                 f"remote end {tu.remote_end(s3_bucket, topic)}, local start {tu.local_start(b, topic)}"),
                        60, "tiering through the proxy before the outage")
            mark = b.log_size()
            proxy.down()
            t_down = time.monotonic()
            samples, violations = [], []
            while time.monotonic() - t_down < 30:
                # metrics, then the disk, then the catalog (read from moto
                # directly): the catalog only grows, so local start <= remote
                # end must hold between these reads
                mt = tu.metrics_of(b, topic, 0)
                segs = tu.local_segments(b, topic)
                end = tu.remote_end(s3_bucket, topic)
                samples.append((round(time.monotonic() - t_down, 1), min(segs), len(segs), end, mt))
                if min(segs) > end:
                    violations.append(f"t={samples[-1][0]}s: local start {min(segs)} > remote end {end}")
                if mt.get("strata_local_log_start_offset", 0) > end:
                    violations.append(f"t={samples[-1][0]}s: metric local start "
                                      f"{mt['strata_local_log_start_offset']} > remote end {end}")
                time.sleep(0.5)
            segs_at_end = tu.local_segments(b, topic)
            end_at_end = tu.remote_end(s3_bucket, topic)
        finally:
            proxy.up()
        time.sleep(3)  # keep producing a little after the store is back
        n = prod.stop()

        assert not violations, f"segments not in the bucket were deleted locally during the outage: {violations[:5]}"
        first_end = samples[0][3]
        assert end_at_end <= first_end + 2 * (SEG // 1000 + 1), \
            f"the catalog grew during the outage ({first_end} -> {end_at_end}): was the proxy really down?"
        kept = [o for o in segs_at_end if o >= end_at_end]
        assert len(kept) >= 10, f"expected the segments sealed during the outage to stay local, have {list(segs_at_end)}"
        avail = [s[4].get("strata_object_store_available") for s in samples]
        errors = [s[4].get("strata_remote_upload_errors_total") for s in samples]
        lag = [s[4].get("strata_remote_copy_lag_segments") for s in samples]
        assert 0 in avail, f"strata_object_store_available never 0 during the outage: {avail}"
        assert max(e or 0 for e in errors) > 0, f"strata_remote_upload_errors_total stayed {errors[-1]}"
        assert max(x or 0 for x in lag) >= 10, f"copy lag during the outage: {lag}"
        # In time too: the oldest segment waiting grows older while the
        # store is down (records are produced as the outage goes on).
        ages = [s[4].get("strata_remote_copy_lag_seconds") or 0 for s in samples]
        assert max(ages) >= 1.0, f"copy lag in seconds during the outage: {ages}"
        warn = [ln for ln in b.log_text(mark).splitlines()
                if "WARN" in ln.upper() and "upload" in ln.lower()]
        assert warn, f"no warning mentioning 'upload' in the broker log during the outage:\n{b.log_text(mark)[-3000:]}"

        # back up: the backlog is uploaded, then trimmed locally
        m = tu.wait_settled(b, s3_bucket, topic, 0, 180)
        tu.check_segment_objects(s3_bucket, m)  # the backlog went up complete
        tu.wait_hot_tail(b, s3_bucket, topic, 0, 2 * SEG, 60)
        mt = tu.need_metrics(b, topic, 0, ("strata_object_store_available", "strata_remote_copy_lag_segments",
                                        "strata_remote_upload_errors_total"))
        assert mt["strata_object_store_available"] == 1 and mt["strata_remote_copy_lag_segments"] == 0, mt
        assert tu.metric(b, "strata_remote_copy_lag_seconds", topic, 0) == 0
        assert mt["strata_remote_upload_errors_total"] > 0, "the error counter must not reset"
        assert m["segments"][0]["base_offset"] == 0
        assert kutil.watermarks(b.bootstrap, topic, 0) == (0, n)
        tu.verify_range(b.bootstrap, topic, ds, 0, n)
    finally:
        proxy.close()


# ---------------------------------------------------------------------------
# 6: two brokers on one bucket
# ---------------------------------------------------------------------------


@pytest.mark.slow
def test_second_broker_fences_the_first(broker_factory, s3_bucket, tmp_path):
    """Broker B starts on a copy of broker A's data dir and the same bucket
    prefix: B claims the partitions' catalogs; A's next uploads are refused
    (A logs 'fenced', strata_remote_fenced=1, uploads stop), A keeps every
    local segment the catalog does not have, and the catalog stays B's,
    contiguous."""
    a = tu.s3_broker(broker_factory, s3_bucket, label="broker-a")
    adm = kutil.admin(a.bootstrap)
    topic = kutil.unique("tier-fence")
    kutil.create_topic(adm, topic, 1, config={"segment.bytes": str(SEG), "local.retention.ms": "1000"})
    ds = tu.DataSet(seed=6, ts0=tu.ms_ago(10))
    n1 = 1500
    tu.produce_range(a.bootstrap, topic, ds, 0, n1)
    m0 = tu.wait_settled(a, s3_bucket, topic, 0, 60)

    assert a.stop() == 0
    copy = tmp_path / "broker-b-data"
    shutil.copytree(a.data_dir, copy)
    a.start()
    m_a = _wait_claimed(s3_bucket, topic, m0["writer_epoch"])
    b = tu.s3_broker(broker_factory, s3_bucket, label="broker-b", data_dir=copy)
    m_b = _wait_claimed(s3_bucket, topic, m_a["writer_epoch"])
    epoch_b = m_b["writer_epoch"]
    end_claim = tu.check_manifest(m_b)
    assert end_claim == tu.check_manifest(m0)

    mark = a.log_size()
    n2 = n1 + 2000
    tu.produce_range(a.bootstrap, topic, ds, n1, n2)
    tu.wait_for(lambda: (tu.metric(a, "strata_remote_fenced", topic, 0) == 1,
                         f"strata_remote_fenced={tu.metric(a, 'strata_remote_fenced', topic, 0)}"),
                30, "broker A reporting strata_remote_fenced=1")
    tu.wait_for(lambda: (re.search("fenced", a.log_text(mark), re.I), "no line yet"), 10,
                "broker A logging that it is fenced")
    fenced_lines = [ln for ln in a.log_text(mark).splitlines() if "fenced" in ln.lower()]
    assert any("ERROR" in ln.upper() for ln in fenced_lines), f"'fenced' is not logged as an error: {fenced_lines[:3]}"

    uploads = _uploads(a, topic)
    time.sleep(3.0)  # fifteen task intervals with sealed segments waiting
    assert _uploads(a, topic) == uploads, "a fenced broker kept uploading"

    m = tu.manifest(s3_bucket, topic, 0)
    tu.check_manifest(m)
    assert m["writer_epoch"] == epoch_b, f"catalog writer epoch {m['writer_epoch']}, B claimed {epoch_b}"
    assert _segment_keys(m) == _segment_keys(m_b), \
        "the catalog changed after B claimed it although only the fenced broker A had new segments"
    local_a = tu.local_segments(a, topic)
    assert min(local_a) <= end_claim, \
        f"fenced broker A deleted local segments the catalog does not have: local start {min(local_a)}, " \
        f"catalog ends at {end_claim}"
    assert tu.metric(a, "strata_local_log_start_offset", topic, 0) <= end_claim
    assert tu.metric(b, "strata_remote_fenced", topic, 0) == 0, "the new owner B must not be fenced"

    # A still serves its whole log (the tiered part from the bucket)
    assert kutil.watermarks(a.bootstrap, topic, 0) == (0, n2)
    tu.verify_range(a.bootstrap, topic, ds, 0, n2)
