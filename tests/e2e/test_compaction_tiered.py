"""Compaction of tiered topics (issue 16, docs/compaction.md "Tiered
compaction"): a compacted topic with a one-second hot window keeps its
cleaned segments in the bucket (s3:// on moto), cleaning passes rewrite
the bucket's segments and swap them into the catalog, a consumer from
offset 0 reads the latest value of every live key through the remote read
path, a broker that lost its disk rebuilds the compacted log from the
bucket alone and compacts on, and kill -9 during passes loses nothing.
Real clients: confluent-kafka (librdkafka) produces and consumes.
"""

import re
import shutil
import time

import pytest

import kutil
import tierutil as tu
from test_compaction import _cdc, _read, _roll, _wait_compacted

CLEANER = {"log.cleaner.backoff.ms": 100}
TOPIC = {"cleanup.policy": "compact", "segment.bytes": "65536", "min.cleanable.dirty.ratio": "0.01",
         "delete.retention.ms": "3000", "local.retention.ms": "1000", "file.delete.delay.ms": "1000",
         "max.message.bytes": "200000"}
CLEANED_KEY = re.compile(r"-c[0-9a-f-]+\.log$")


def _by_key(got: list) -> dict:
    return {key: (offset, value) for offset, key, value in got}


def _check_latest(got: list, latest: dict, live: range):
    """Every live key reads back with its latest value at its offset."""
    by_key = _by_key(got)
    for k in live:
        key = b"key-%d" % k
        assert by_key.get(key) == latest[key], f"{key}: read {by_key.get(key)}, latest {latest[key]}"


def _bucket_matches_manifest(bucket, topic: str, timeout: float = 30):
    """The manifest's objects are all there, and (once file.delete.delay.ms
    passed) nothing else: replaced objects are gone."""
    def state():
        m = tu.manifest(bucket, topic, 0)
        tu.check_segment_objects(bucket, m)
        want = {bucket.rel(s[f]) for s in m["segments"]
                for f in ("log_key", "index_key", "time_index_key", "producer_snapshot_key")}
        root = tu.topic_root(bucket, topic)
        have = set(bucket.keys(f"{root}/0/segments/"))
        return m if have == want else None
    return kutil.wait_until(state, timeout, 0.5, f"{topic}: the bucket holds exactly the manifest's objects")


def test_tiered_cdc_topic_is_compacted_in_the_bucket(broker_factory, s3_bucket):
    """10,000 keys x 5 updates and 500 tombstones through a compacted topic
    with local.retention.ms=1000: the bucket receives cleaned segments,
    passes rewrite them there, a consumer from offset 0 (the remote path)
    gets exactly the latest value of each live key at its original offset,
    no deleted key after delete.retention.ms, and the replaced objects
    leave the bucket."""
    b = tu.s3_broker(broker_factory, s3_bucket, CLEANER)
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("tier-cdc"), 1, config=TOPIC)
    keys, rounds = 10_000, 5
    t0 = int(time.time() * 1000) - 1_000
    # Rounds 0-3 are cleaned and tiered before round 4 supersedes them, so
    # a later pass must rewrite the bucket's segments (whether a pass also
    # ran while rounds were produced depends on timing).
    latest = _cdc(b, topic, keys, rounds - 1, range(0), **{"compression.type": "lz4"})
    _roll(b, topic)
    _wait_compacted(b, topic, at_most=keys + 1 + 2_000, timeout=120)
    kutil.wait_until(lambda: tu.local_start(b, topic) > 0, 60, 0.5, f"{topic}: the hot window left the disk")
    latest.update(_cdc(b, topic, keys, 1, range(0, 500), **{"compression.type": "lz4"}))
    # Live records right after the tombstones, so the segment holding them
    # keeps live records when the tombstones go (checked below). Without
    # them that depended on batching: once the tombstones' batch did not
    # fit in the segment before (segment.bytes) and began one of its own,
    # which then emptied and left the manifest instead of being replaced
    # by a cleaned version (failed once, 2026-12-07, on a loaded machine).
    for d in kutil.produce(b.bootstrap, topic, [{"key": b"key-%d" % k, "value": b"after-tombstones-%d" % k}
                                                for k in range(500, 600)], **{"compression.type": "lz4"}):
        assert d.error is None, d.error
        latest[d.key] = (d.offset, d.value)
    total = keys * rounds + 500 + 100 + 1
    _roll(b, topic)
    got = _wait_compacted(b, topic, at_most=keys + 2 + 2_000, timeout=120)
    assert len(got) < total / 2
    _check_latest(got, latest, range(500, keys))

    # The disk keeps the hot tail; the bucket the cleaned rest, and passes
    # replaced segments there (rounds 0-3 were superseded by round 4: their
    # segments emptied and left the manifest).
    kutil.wait_until(lambda: tu.local_start(b, topic) > 0, 60, 0.5, f"{topic}: the hot window left the disk")
    kutil.wait_until(lambda: (tu.metric(b, "strata_log_cleaner_remote_segments_replaced_total", topic, 0) or 0) > 0,
                     60, 0.5, f"{topic}: a pass replaced remote segments")
    mt = tu.metrics_of(b, topic, 0)
    assert mt["strata_log_cleaner_errors_total"] == 0
    assert mt["strata_log_cleaner_passes_total"] >= 1
    assert mt["strata_log_cleaner_read_bytes_total"] > mt["strata_log_cleaner_written_bytes_total"] > 0
    assert mt["strata_log_cleaner_removed_records_total"] >= total - keys - 2_000
    assert 0 <= mt["strata_log_cleaner_dirty_ratio"] <= 1
    assert mt["strata_log_cleaner_lag_seconds"] >= 0
    # A time before every record finds the first one left, across the gap
    # compaction made at the start of the bucket's part.
    first = _read(b, topic)[0][0]
    assert first > 0
    assert kutil.offsets_for_times(b.bootstrap, topic, 0, [t0]) == [first]

    # After delete.retention.ms a pass drops the tombstones, in the bucket too.
    time.sleep(3.5)
    kutil.produce(b.bootstrap, topic, [{"key": b"key-600", "value": b"again"}])
    latest[b"key-600"] = None
    _roll(b, topic)
    deleted = {b"key-%d" % i for i in range(500)}
    got = kutil.wait_until(
        lambda: (lambda g: g if not any(k in deleted for _, k, _ in g) else None)(_read(b, topic)),
        120, interval=1.0, what="tombstones removed from the bucket's segments")
    assert tu.local_start(b, topic) > 0, "the read went through the bucket"
    # The segment that held the tombstones kept its live records: it was
    # rewritten and uploaded under new keys.
    kutil.wait_until(lambda: (lambda m: m if m and any(CLEANED_KEY.search(s["log_key"]) for s in m["segments"])
                              else None)(tu.manifest(s3_bucket, topic, 0)),
                     60, 0.5, f"{topic}: a remote segment replaced by its cleaned version")
    by_key = _by_key(got)
    assert by_key[b"key-600"][1] == b"again"
    _check_latest(got, latest, range(601, keys))
    _bucket_matches_manifest(s3_bucket, topic)


def test_disaster_recovery_of_a_compacted_tiered_topic(broker_factory, s3_bucket):
    """The data directory of a broker with a compacted tiered topic is
    deleted; a broker on the same bucket serves the compacted log from the
    bucket alone, and new updates are compacted against it."""
    b = tu.s3_broker(broker_factory, s3_bucket, CLEANER)
    adm = kutil.admin(b.bootstrap)
    cfg = {**TOPIC, "segment.ms": "2000"}
    topic = kutil.create_topic(adm, kutil.unique("tier-cdc-dr"), 1, config=cfg)
    latest = _cdc(b, topic, 2_000, 4, range(0, 100), **{"compression.type": "zstd"})
    _roll(b, topic)
    _wait_compacted(b, topic, at_most=2_001 + 1_000, timeout=120)
    # segment.ms seals the last segment; once cleaned it goes up too, so
    # the bucket has the whole log.
    end = kutil.watermarks(b.bootstrap, topic, 0)[1]
    tu.wait_remote_end(s3_bucket, topic, 0, end, timeout=90, compacted=True)
    before = _read(b, topic)

    assert b.stop() == 0
    shutil.rmtree(b.data_dir)
    b.data_dir.mkdir()
    b.start()
    kutil.wait_topic_ready(kutil.admin(b.bootstrap), topic, 1, timeout=60)
    after = _read(b, topic)
    # Tombstones may have expired meanwhile (delete.retention.ms is 3 s):
    # every live record reads as it did.
    live = lambda g: [r for r in g if r[2] is not None]  # noqa: E731
    assert live(after) == live(before), "the recovered log reads as the compacted one did"
    _check_latest(after, latest, range(100, 2_000))

    # Compaction goes on from the bucket: each key updated once more.
    newer = _cdc(b, topic, 2_000, 1, range(0), **{"compression.type": "zstd"})
    _roll(b, topic)
    got = kutil.wait_until(
        lambda: (lambda g: g if all(_by_key(g).get(b"key-%d" % k) == newer[b"key-%d" % k] for k in range(2_000))
                 and len(g) <= 2_000 + 1 + 700 else None)(_read(b, topic)),
        120, interval=1.0, what="the recovered log compacted against the new updates")
    assert len(got) <= 2_701


@pytest.mark.timeout(600)
def test_kill9_during_cleaning_passes_loses_nothing(broker_factory, s3_bucket):
    """The cleaner is throttled so that passes take seconds; the broker is
    killed -9 while a pass has its work directory (a local rewrite or a
    remote swap under way), five times, with an idempotent producer
    updating keys in between. After each restart every key reads back with
    its latest acknowledged value at its offset: no record lost, no hole."""
    b = tu.s3_broker(broker_factory, s3_bucket, {**CLEANER, "log.cleaner.io.max.bytes.per.second": 400_000})
    adm = kutil.admin(b.bootstrap)
    topic = kutil.create_topic(adm, kutil.unique("tier-cdc-kill"), 1, config=TOPIC)
    keys = 1_500
    idem = {"enable.idempotence": True, "acks": "all", "compression.type": "lz4"}
    latest = _cdc(b, topic, keys, 3, range(0), **idem)
    part = b.partition_dir(topic, 0)
    killed_during = []
    for cycle in range(5):
        latest.update(_cdc(b, topic, keys, 1, range(0), **idem))
        _roll(b, topic, **idem)

        def in_pass():
            return [d for d in ("cleaner.tmp", "cleaner.remote") if (part / d).exists()]
        work = kutil.wait_until(in_pass, 60, 0.02, f"cycle {cycle}: a cleaning pass under way")
        b.kill9()
        killed_during.append(work)
        b.start()
        got = _read(b, topic)
        _check_latest(got, latest, range(keys))
    assert any("cleaner.remote" in w for w in killed_during), \
        f"no kill landed in a pass over the bucket's part: {killed_during}"
    _wait_compacted(b, topic, at_most=keys + 1 + 1_000, timeout=120)
    _check_latest(_read(b, topic), latest, range(keys))
