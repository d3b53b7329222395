//! Unit tests of `cleaner`: passes over a real partition log on disk.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_protocol::records::Compression;

use super::*;
use crate::log::batch::{encode_records, validate_all, BatchScanner};
use crate::log::SharedConfig;
use strata_common::config::{BrokerConfig, TopicConfig};

fn config(sets: &[&str]) -> Arc<SharedConfig> {
    let mut all = vec![
        "log.cleanup.policy=compact".to_string(),
        "log.cleaner.min.cleanable.ratio=0.01".to_string(),
    ];
    all.extend(sets.iter().map(|s| s.to_string()));
    let broker = BrokerConfig::load(None, &all).unwrap();
    SharedConfig::new(TopicConfig::resolve(&broker, &BTreeMap::new()))
}

/// One batch of `(key, value)` records (None value: a tombstone).
fn put(log: &PartitionLog, records: &[(String, Option<String>)], c: Compression) {
    put_at(log, records, c, strata_common::clock::now_ms());
}

/// [`put`] with every record at `timestamp`.
fn put_at(
    log: &PartitionLog,
    records: &[(String, Option<String>)],
    c: Compression,
    timestamp: i64,
) {
    let recs: Vec<_> = records
        .iter()
        .map(|(k, v)| {
            (
                Some(Bytes::from(k.clone())),
                v.clone().map(Bytes::from),
                timestamp,
            )
        })
        .collect();
    let b = encode_records(&recs, c).unwrap();
    let h = validate_all(&b).unwrap();
    log.append(&b, &h).unwrap();
}

/// Every record from offset 0: (offset, key, value).
fn read_all(log: &PartitionLog) -> Vec<(i64, String, Option<String>)> {
    let mut out = Vec::new();
    let mut offset = log.log_start_offset();
    let policy = CleanPolicy {
        now_ms: 0,
        delete_retention_ms: 0,
        max_inflated_bytes: 1 << 30,
        max_batch_bytes: 1 << 24,
    };
    loop {
        let r = log.read(offset, 1 << 20, true).unwrap();
        if r.records.is_empty() {
            return out;
        }
        for (at, h) in BatchScanner::new(&r.records, true) {
            for_each_record(&r.records[at..at + h.size], &policy, |rec| {
                if rec.offset >= offset {
                    out.push((
                        rec.offset,
                        String::from_utf8(rec.key.unwrap().to_vec()).unwrap(),
                        (!rec.is_tombstone).then(|| "?".to_string()),
                    ));
                }
                Ok(())
            })
            .unwrap();
            offset = offset.max(h.next_offset());
        }
    }
}

fn values(log: &PartitionLog) -> BTreeMap<String, i64> {
    read_all(log)
        .into_iter()
        .filter(|(_, _, v)| v.is_some())
        .map(|(o, k, _)| (k, o))
        .collect()
}

fn clean(log: &PartitionLog, now: i64) -> Option<CleanStats> {
    let mut map = OffsetMap::with_memory(1 << 20);
    let mut throttle = Throttle::new(f64::MAX);
    log.clean(None, now, &mut map, &mut throttle, true).unwrap()
}

/// 100 keys, each written 10 times over 10 segments, then a fresh segment.
fn updated_log(dir: &std::path::Path, c: Compression) -> Arc<PartitionLog> {
    let log = crate::log::test_logs::create(dir, config(&[]));
    for round in 0..10 {
        for chunk in 0..4 {
            let recs: Vec<_> = (chunk * 25..chunk * 25 + 25)
                .map(|k| (format!("key-{k}"), Some(format!("v{round}"))))
                .collect();
            put(&log, &recs, c);
        }
        log.roll().unwrap();
    }
    log.flush().unwrap();
    log
}

#[test]
fn a_pass_keeps_the_latest_record_of_each_key_at_its_offset() {
    for c in [Compression::None, Compression::Zstd, Compression::Snappy] {
        let dir = tempfile::tempdir().unwrap();
        let log = updated_log(dir.path(), c);
        let before = values(&log);
        assert_eq!(read_all(&log).len(), 1000);
        let stats = clean(&log, strata_common::clock::now_ms()).expect("a pass ran");
        assert_eq!(stats.records_removed, 900, "{c:?}");
        let after = read_all(&log);
        assert_eq!(after.len(), 100, "{c:?}");
        // The latest offset of every key, unchanged.
        assert_eq!(values(&log), before);
        assert!(after.iter().all(|(o, _, _)| *o >= 900));
        // The high watermark and the next offset do not move.
        assert_eq!(log.log_end_offset(), 1000);
        assert!(log.segment_count() < 11);
    }
}

#[test]
fn a_second_pass_with_nothing_new_changes_nothing_and_new_updates_are_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let log = updated_log(dir.path(), Compression::Lz4);
    clean(&log, strata_common::clock::now_ms()).unwrap();
    assert!(
        clean(&log, strata_common::clock::now_ms()).is_none(),
        "nothing dirty"
    );
    put(
        &log,
        &[("key-5".into(), Some("new".into()))],
        Compression::Lz4,
    );
    log.roll().unwrap();
    log.flush().unwrap();
    clean(&log, strata_common::clock::now_ms()).expect("the new segment is dirty");
    let v = values(&log);
    assert_eq!(v.len(), 100);
    assert_eq!(v["key-5"], 1000);
    assert_eq!(read_all(&log).len(), 100);
}

#[test]
fn tombstones_hide_a_key_and_go_after_delete_retention() {
    let dir = tempfile::tempdir().unwrap();
    let log = updated_log(dir.path(), Compression::None);
    put(
        &log,
        &[("key-1".into(), None), ("key-2".into(), None)],
        Compression::None,
    );
    log.roll().unwrap();
    log.flush().unwrap();
    let now = strata_common::clock::now_ms();
    clean(&log, now).unwrap();
    let all = read_all(&log);
    // 98 live keys and 2 tombstones still readable (delete.retention.ms).
    assert_eq!(all.len(), 100);
    assert_eq!(all.iter().filter(|r| r.2.is_none()).count(), 2);
    // A day later (the default delete.retention.ms), the tombstones go.
    put(
        &log,
        &[("key-3".into(), Some("x".into()))],
        Compression::None,
    );
    log.roll().unwrap();
    log.flush().unwrap();
    clean(&log, now + 86_400_000).unwrap();
    let all = read_all(&log);
    assert_eq!(all.len(), 98);
    assert!(all.iter().all(|r| r.2.is_some()));
    assert!(!values(&log).contains_key("key-1"));
}

#[test]
fn a_restart_reads_compaction_gaps_as_gaps_not_loss() {
    let dir = tempfile::tempdir().unwrap();
    let log = updated_log(dir.path(), Compression::None);
    clean(&log, strata_common::clock::now_ms()).unwrap();
    let before = read_all(&log);
    log.close().unwrap();
    drop(log);
    for clean_shutdown in [false, true] {
        let log = crate::log::test_logs::open(dir.path(), config(&[]), None, None, clean_shutdown);
        log.flush().unwrap();
        assert_eq!(read_all(&log), before, "clean_shutdown={clean_shutdown}");
        log.close().unwrap();
    }
}

#[test]
fn an_interrupted_pass_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = updated_log(dir.path(), Compression::None);
    let latest = values(&log);
    let pdir = log.dir().to_path_buf();
    log.close().unwrap();
    drop(log);
    // A crash after the cleaned files were written, before any was moved.
    let tmp = pdir.join(TMP_DIR);
    fs::create_dir_all(&tmp).unwrap();
    fs::write(tmp.join("00000000000000000000.log"), b"partial").unwrap();
    let log = crate::log::test_logs::open(dir.path(), config(&[]), None, None, true);
    log.flush().unwrap();
    assert!(!tmp.exists());
    assert_eq!(read_all(&log).len(), 1000);
    assert_eq!(values(&log), latest);
}

#[test]
fn the_active_segment_and_young_segments_are_not_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let log = crate::log::test_logs::create(
        dir.path(),
        config(&["log.cleaner.min.compaction.lag.ms=3600000"]),
    );
    for _ in 0..5 {
        put(&log, &[("k".into(), Some("v".into()))], Compression::None);
        log.roll().unwrap();
    }
    log.flush().unwrap();
    // Every segment is younger than an hour.
    assert!(clean(&log, strata_common::clock::now_ms()).is_none());
    assert_eq!(read_all(&log).len(), 5);
    // Two hours on, all sealed ones may be cleaned.
    clean(&log, strata_common::clock::now_ms() + 7_200_000).unwrap();
    assert_eq!(read_all(&log).len(), 1);

    // Records in the active segment stay, whatever their key.
    let log2 = crate::log::test_logs::create(&dir.path().join("b"), config(&[]));
    for _ in 0..5 {
        put(&log2, &[("k".into(), Some("v".into()))], Compression::None);
    }
    log2.flush().unwrap();
    assert!(clean(&log2, strata_common::clock::now_ms()).is_none());
    assert_eq!(read_all(&log2).len(), 5);
}

#[test]
fn max_compaction_lag_rolls_the_active_segment() {
    // Kafka's maxSegmentMs: a compacted topic's active segment is rolled
    // at max.compaction.lag.ms when that is below segment.ms, so its
    // records can be cleaned in time.
    let dir = tempfile::tempdir().unwrap();
    let log = crate::log::test_logs::create(
        dir.path(),
        config(&["log.cleaner.max.compaction.lag.ms=1000"]),
    );
    assert_eq!(log.config().max_segment_ms(), 1000);
    put(&log, &[("k".into(), Some("v".into()))], Compression::None);
    let now = strata_common::clock::now_ms();
    assert!(!log.roll_if_expired(now).unwrap(), "younger than the lag");
    assert!(
        log.roll_if_expired(now + 1_500).unwrap(),
        "rolled at the lag"
    );
    let plain = PartitionLog::create(
        &dir.path().join("plain"),
        "t",
        1,
        config(&[
            "log.cleanup.policy=delete",
            "log.cleaner.max.compaction.lag.ms=1000",
        ]),
        strata_common::clock::system(),
    )
    .unwrap();
    put(&plain, &[("k".into(), Some("v".into()))], Compression::None);
    assert!(
        !plain.roll_if_expired(now + 1_500).unwrap(),
        "only compacted topics"
    );
}

#[test]
fn compact_delete_keeps_the_latest_value_of_each_key_within_the_delete_window() {
    // Keys "old-*" were last written two minutes ago, keys "new-*" now;
    // retention.ms is one minute. compact,delete: retention removes the
    // segments past the window (whatever they hold), compaction keeps the
    // latest value of each key inside it.
    let dir = tempfile::tempdir().unwrap();
    let log = crate::log::test_logs::create(
        dir.path(),
        config(&[
            "log.cleanup.policy=compact,delete",
            "log.retention.ms=60000",
        ]),
    );
    let now = strata_common::clock::now_ms();
    let keys = |p: &str| -> Vec<(String, Option<String>)> {
        (0..20)
            .map(|k| (format!("{p}-{k}"), Some("v".to_string())))
            .collect()
    };
    for _ in 0..3 {
        put_at(&log, &keys("old"), Compression::None, now - 120_000);
        log.roll().unwrap();
    }
    for _ in 0..3 {
        put_at(&log, &keys("new"), Compression::None, now);
        log.roll().unwrap();
    }
    log.flush().unwrap();
    // As in Kafka, retention goes by segment (its newest record), so it
    // runs on the segments as they are; a pass then cleans what is left.
    assert_eq!(
        log.enforce_retention(now).unwrap(),
        3,
        "the old segments are past retention.ms"
    );
    assert!(clean(&log, now).is_some());
    let v = values(&log);
    assert!(v.keys().all(|k| k.starts_with("new-")), "{v:?}");
    assert_eq!(v.len(), 20);
    assert!(
        v.values().all(|o| (100..120).contains(o)),
        "the latest of each: {v:?}"
    );
    // `compact` alone: the same log keeps the old keys (no retention).
    let dir = tempfile::tempdir().unwrap();
    let log = crate::log::test_logs::create(
        dir.path(),
        config(&["log.cleanup.policy=compact", "log.retention.ms=60000"]),
    );
    put_at(&log, &keys("old"), Compression::None, now - 120_000);
    log.roll().unwrap();
    put_at(&log, &keys("new"), Compression::None, now);
    log.roll().unwrap();
    log.flush().unwrap();
    assert_eq!(log.enforce_retention(now).unwrap(), 0);
    assert_eq!(values(&log).len(), 40);
}

/// One transactional batch of producer `pid` (epoch 0), written as a
/// coordinator writes (no sequence check).
fn put_txn(log: &PartitionLog, pid: i64, records: &[(&str, &str)]) {
    let recs: Vec<_> = records
        .iter()
        .map(|(k, v)| {
            (
                Some(Bytes::from(k.to_string())),
                Some(Bytes::from(v.to_string())),
                1,
            )
        })
        .collect();
    let b =
        crate::log::batch::encode_records_for(&recs, Compression::None, Some((pid, 0))).unwrap();
    let h = validate_all(&b).unwrap();
    log.append_from(&b, &h, crate::log::AppendOrigin::Coordinator)
        .unwrap();
}

fn end(log: &PartitionLog, pid: i64, commit: bool) {
    use crate::log::control::{Marker, MarkerType};
    let kind = if commit {
        MarkerType::Commit
    } else {
        MarkerType::Abort
    };
    log.append_marker(
        pid,
        0,
        Marker {
            kind,
            coordinator_epoch: 0,
        },
    )
    .unwrap();
}

/// (offset, key, value) of every data record, and how many control batches.
fn data_and_markers(log: &PartitionLog) -> (Vec<(i64, String, String)>, usize) {
    let (mut data, mut markers) = (Vec::new(), 0);
    let mut offset = log.log_start_offset();
    loop {
        let r = log.read(offset, 1 << 20, true).unwrap();
        if r.records.is_empty() {
            return (data, markers);
        }
        for (at, h) in BatchScanner::new(&r.records, true) {
            offset = offset.max(h.next_offset());
            if h.is_control() {
                markers += 1;
                continue;
            }
            let mut one = r.records.slice(at..at + h.size);
            let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut one).unwrap();
            for rec in set.records {
                let s = |b: Option<Bytes>| String::from_utf8(b.unwrap().to_vec()).unwrap();
                data.push((rec.offset, s(rec.key), s(rec.value)));
            }
        }
    }
}

#[test]
fn aborted_records_are_removed_and_never_hide_a_committed_value() {
    let dir = tempfile::tempdir().unwrap();
    let log = crate::log::test_logs::create(dir.path(), config(&[]));
    put(
        &log,
        &[
            ("a".into(), Some("1".into())),
            ("b".into(), Some("1".into())),
        ],
        Compression::None,
    ); // 0, 1
    put_txn(&log, 7, &[("a", "aborted"), ("b", "aborted")]); // 2, 3
    end(&log, 7, false); // 4
    put_txn(&log, 8, &[("b", "2")]); // 5
    end(&log, 8, true); // 6
    log.roll().unwrap();
    // Open in the active segment: below it, everything is decided.
    put_txn(&log, 9, &[("a", "open")]); // 7
    log.flush().unwrap();
    assert_eq!(log.last_stable_offset(), 7);
    clean(&log, strata_common::clock::now_ms()).expect("a pass ran");
    let (data, markers) = data_and_markers(&log);
    assert_eq!(
        data,
        vec![
            (0, "a".to_string(), "1".to_string()),
            (5, "b".to_string(), "2".to_string()),
            (7, "a".to_string(), "open".to_string()),
        ],
        "the aborted records went and did not hide a@0; b@1 gave way to the committed b@5"
    );
    assert_eq!(markers, 2, "markers stay");
    // The cleaned segment kept its .txnindex entry.
    let aborted = log.aborted_transactions(0, 8);
    assert_eq!(aborted.len(), 1);
    assert_eq!((aborted[0].producer_id, aborted[0].first_offset), (7, 2));
}

#[test]
fn a_segment_holding_an_open_transaction_is_not_cleaned() {
    let dir = tempfile::tempdir().unwrap();
    let log = crate::log::test_logs::create(dir.path(), config(&[]));
    put_txn(&log, 9, &[("a", "open")]); // 0: open, may still abort
    put(
        &log,
        &[("a".into(), Some("later".into()))],
        Compression::None,
    ); // 1
    log.roll().unwrap();
    put(&log, &[("z".into(), Some("1".into()))], Compression::None);
    log.flush().unwrap();
    assert!(
        clean(&log, strata_common::clock::now_ms()).is_none(),
        "nothing cleanable below the LSO"
    );
    assert_eq!(data_and_markers(&log).0.len(), 3);
}
