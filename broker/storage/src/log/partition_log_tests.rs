//! Unit tests of `partition_log`.

use super::*;
use crate::log::batch::{testing, BatchScanner};
use std::time::Duration;
use strata_common::clock::now_ms;
use strata_common::config::BrokerConfig;

fn config(sets: &[&str]) -> Arc<SharedConfig> {
    let broker = BrokerConfig::load(
        None,
        &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
    )
    .unwrap();
    SharedConfig::new(TopicConfig::resolve(&broker, &BTreeMap::new()))
}

fn append_n(log: &PartitionLog, batches: usize, ts: i64) -> Vec<AppendInfo> {
    (0..batches)
        .map(|i| {
            let b = testing::batch(4, 100, ts + i as i64 * 10);
            let h = batch::validate_all(&b).unwrap();
            log.append(&b, &h).unwrap()
        })
        .collect()
}

#[test]
fn offsets_are_assigned_and_reads_stop_at_high_watermark() {
    let dir = tempfile::tempdir().unwrap();
    let log = crate::log::test_logs::create(dir.path(), config(&[]));
    let infos = append_n(&log, 3, 1_000);
    assert_eq!(infos[0].base_offset, 0);
    assert_eq!(infos[2].last_offset, 11);
    // Nothing is visible before it is durable.
    assert_eq!(log.high_watermark(), 0);
    assert!(log.read(0, 1 << 20, true).unwrap().records.is_empty());
    log.flush().unwrap();
    assert_eq!(log.high_watermark(), 12);
    let r = log.read(5, 1 << 20, true).unwrap();
    // The batch holding offset 5 starts at 4.
    let first = BatchHeader::parse(&r.records).unwrap();
    assert_eq!(first.base_offset, 4);
    assert_eq!(BatchScanner::new(&r.records, true).count(), 2);
    assert!(matches!(
        log.read(13, 100, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    assert!(log.read(12, 100, true).unwrap().records.is_empty());
}

#[test]
fn max_bytes_returns_whole_batches_and_min_one() {
    let dir = tempfile::tempdir().unwrap();
    let log = crate::log::test_logs::create(dir.path(), config(&[]));
    append_n(&log, 3, 0);
    log.flush().unwrap();
    let size = BatchHeader::parse(&log.read(0, 1 << 20, true).unwrap().records)
        .unwrap()
        .size;
    let r = log.read(0, size + size / 2, true).unwrap();
    assert_eq!(r.records.len(), size);
    assert!(log.read(0, 10, false).unwrap().records.is_empty());
    assert_eq!(log.read(0, 10, true).unwrap().records.len(), size);
}

#[test]
fn rolls_segments_and_reads_across_them() {
    let dir = tempfile::tempdir().unwrap();
    let log = crate::log::test_logs::create(dir.path(), config(&["log.segment.bytes=1000"]));
    append_n(&log, 20, 0);
    log.flush().unwrap();
    assert!(log.segment_count() >= 5);
    let mut offset = 0;
    let mut seen = 0;
    while offset < log.high_watermark() {
        let r = log.read(offset, 1 << 20, true).unwrap();
        for (_, h) in BatchScanner::new(&r.records, true) {
            assert_eq!(h.base_offset, offset);
            offset = h.next_offset();
            seen += 1;
        }
    }
    assert_eq!(seen, 20);
}

#[test]
fn timestamp_lookups_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let log = crate::log::test_logs::create(dir.path(), config(&["log.segment.bytes=1000"]));
    // Batch i holds timestamps 10_000 + i*10 + 0..3.
    append_n(&log, 20, 10_000);
    log.flush().unwrap();
    assert_eq!(log.offset_for_timestamp(0).unwrap(), Some((0, 10_000)));
    assert_eq!(
        log.offset_for_timestamp(10_052).unwrap(),
        Some((22, 10_052))
    );
    // Between records: the next one.
    assert_eq!(
        log.offset_for_timestamp(10_055).unwrap(),
        Some((24, 10_060))
    );
    assert_eq!(log.offset_for_timestamp(99_999).unwrap(), None);
    assert_eq!(log.max_timestamp_offset().unwrap(), Some((79, 10_193)));
    // The batch holding an offset gives its first timestamp, across
    // segments; nothing at or above the high watermark.
    assert_eq!(log.batch_timestamp_at(0).unwrap(), Some(10_000));
    assert_eq!(log.batch_timestamp_at(23).unwrap(), Some(10_050));
    assert_eq!(log.batch_timestamp_at(79).unwrap(), Some(10_190));
    assert_eq!(log.batch_timestamp_at(80).unwrap(), None);
}

#[test]
fn retention_by_bytes_and_time_advances_log_start() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&["log.segment.bytes=1000"]);
    let log = crate::log::test_logs::create(dir.path(), cfg.clone());
    let now = now_ms();
    append_n(&log, 20, now - 10_000);
    log.flush().unwrap();
    let before = log.segment_count();
    let mut c = (*cfg.get()).clone();
    c.retention_bytes = 2_000;
    cfg.set(c.clone());
    let deleted = log.enforce_retention(now).unwrap();
    assert!(deleted > 0 && log.segment_count() == before - deleted);
    assert!(log.size_bytes() <= 3_000);
    let start = log.log_start_offset();
    assert!(start > 0);
    assert!(matches!(
        log.read(0, 100, true),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    assert!(!log.read(start, 1 << 20, true).unwrap().records.is_empty());
    // Everything is older than 5 s: time retention empties the log,
    // rolling the active segment, and the log keeps its offsets.
    c.retention_bytes = -1;
    c.retention_ms = 5_000;
    cfg.set(c);
    log.enforce_retention(now).unwrap();
    assert_eq!(log.segment_count(), 1);
    assert_eq!(log.log_start_offset(), 80);
    assert_eq!(log.log_end_offset(), 80);
    let info = append_n(&log, 1, now)[0];
    assert_eq!(info.base_offset, 80);
}

#[test]
fn unclean_reopen_truncates_torn_tail_and_keeps_durable_data() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&["log.segment.bytes=1000"]);
    let log = crate::log::test_logs::create(dir.path(), cfg.clone());
    append_n(&log, 10, 0);
    log.flush().unwrap();
    let hw = log.high_watermark();
    let active = log.lock().active().log_path();
    drop(log);
    // A torn write: half a batch at the end of the active segment.
    let half = testing::batch(4, 100, 0);
    let mut f = fs::OpenOptions::new().append(true).open(&active).unwrap();
    std::io::Write::write_all(&mut f, &half[..half.len() / 2]).unwrap();
    let log = crate::log::test_logs::open(dir.path(), cfg, Some(0), None, false);
    assert_eq!(log.log_end_offset(), hw);
    assert_eq!(log.high_watermark(), hw);
    let mut offset = 0;
    while offset < hw {
        let r = log.read(offset, 1 << 20, true).unwrap();
        let (_, last) = BatchScanner::new(&r.records, true).last().unwrap();
        offset = last.next_offset();
    }
    assert_eq!(offset, hw);
}

#[test]
fn a_sealed_segment_cut_short_keeps_its_successors_and_fails_reads_in_the_cut() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&["log.segment.bytes=2500"]);
    let log = crate::log::test_logs::create(dir.path(), cfg.clone());
    append_n(&log, 20, 0);
    log.flush().unwrap();
    let hw = log.high_watermark();
    let (first, second, first_end) = {
        let inner = log.lock();
        let mut it = inner.segments.values();
        let a = it.next().unwrap();
        let b = it.next().unwrap();
        (a.log_path(), b.base_offset(), a.next_offset())
    };
    log.close().unwrap();
    drop(log);
    // Damage, not a torn write: the first of several segments loses its
    // second half.
    let len = fs::metadata(&first).unwrap().len();
    fs::OpenOptions::new()
        .write(true)
        .open(&first)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let log = crate::log::test_logs::open(dir.path(), cfg, Some(0), None, false);
    assert_eq!(log.log_end_offset(), hw, "later segments are kept");
    assert_eq!(first_end, second);
    let kept = BatchScanner::new(&log.read(0, 1 << 20, true).unwrap().records, true)
        .last()
        .unwrap()
        .1
        .next_offset();
    assert!(kept > 0 && kept < second);
    match log.read(kept, 1 << 20, true) {
        Err(LogError::LostLocally { from, to, .. }) => assert_eq!((from, to), (kept, second - 1)),
        other => panic!("read in the cut: {other:?}"),
    }
    let r = log.read(second, 1 << 20, true).unwrap();
    assert_eq!(BatchHeader::parse(&r.records).unwrap().base_offset, second);
}

#[tokio::test]
async fn acks_all_waits_for_flusher_group_commit() {
    let dir = tempfile::tempdir().unwrap();
    let log = crate::log::test_logs::create(dir.path(), config(&[]));
    /// Counts the rounds reported and keeps the longest latency.
    #[derive(Debug, Default)]
    struct Rounds(std::sync::Mutex<Vec<Duration>>);
    impl crate::log::group_commit::CommitLatencySink for Rounds {
        fn record(&self, latency: Duration) {
            self.0.lock().unwrap().push(latency);
        }
    }
    let commit_latency = Arc::new(Rounds::default());
    let sink: Arc<dyn crate::log::group_commit::CommitLatencySink> = commit_latency.clone();
    tokio::spawn(log.clone().run_flusher(Some(sink)));
    let infos = append_n(&log, 50, 0);
    let end = infos.last().unwrap().last_offset + 1;
    assert!(log.wait_durable(end, Duration::from_secs(10)).await);
    assert_eq!(log.high_watermark(), end);
    // The round that made them durable counts its commit latency (just
    // after it advanced the high watermark).
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while commit_latency.0.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let rounds = commit_latency.0.lock().unwrap().clone();
    assert!(!rounds.is_empty(), "no flush round recorded");
    assert!(rounds.iter().all(|l| *l < Duration::from_secs(10)));
}

fn idempotent_batch(pid: i64, epoch: i16, seq: i32, n: usize) -> Vec<u8> {
    let mut b = testing::batch(n, 10, 1_000).to_vec();
    b[43..51].copy_from_slice(&pid.to_be_bytes());
    b[51..53].copy_from_slice(&epoch.to_be_bytes());
    b[53..57].copy_from_slice(&seq.to_be_bytes());
    let crc = batch::compute_crc(&b);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

fn append_raw(log: &PartitionLog, b: &[u8]) -> Result<AppendInfo, LogError> {
    let h = batch::validate_all(b).unwrap();
    log.append(b, &h)
}

#[test]
fn idempotent_retries_are_deduplicated_across_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&["log.segment.bytes=600"]);
    let log = crate::log::test_logs::create(dir.path(), cfg.clone());
    append_n(&log, 1, 0); // offsets 0..3 from a plain producer
    let first = append_raw(&log, &idempotent_batch(7, 0, 0, 3)).unwrap();
    assert_eq!(
        (first.base_offset, first.last_offset, first.duplicate),
        (4, 6, false)
    );
    let retry = append_raw(&log, &idempotent_batch(7, 0, 0, 3)).unwrap();
    assert_eq!(
        (retry.base_offset, retry.last_offset, retry.duplicate),
        (4, 6, true)
    );
    assert_eq!(log.log_end_offset(), 7, "a duplicate appends nothing");
    assert!(matches!(
        append_raw(&log, &idempotent_batch(7, 0, 5, 1)),
        Err(LogError::Sequence(SequenceError::OutOfOrder {
            expected: 3,
            got: 5
        }))
    ));
    for seq in [3, 4, 5, 6, 7] {
        append_raw(&log, &idempotent_batch(7, 0, seq, 1)).unwrap();
    }
    log.flush().unwrap();
    let leo = log.log_end_offset();
    drop(log);
    // Unclean reopen without snapshots: state comes from batch headers.
    for f in fs::read_dir(dir.path().join("t-0")).unwrap() {
        let p = f.unwrap().path();
        if p.extension().is_some_and(|e| e == "snapshot") {
            fs::remove_file(p).unwrap();
        }
    }
    let log = crate::log::test_logs::open(dir.path(), cfg.clone(), None, None, false);
    let retry = append_raw(&log, &idempotent_batch(7, 0, 7, 1)).unwrap();
    assert!(retry.duplicate);
    assert_eq!(retry.base_offset, leo - 1);
    assert!(
        matches!(
            append_raw(&log, &idempotent_batch(7, 0, 0, 3)),
            Err(LogError::Sequence(SequenceError::OutOfOrder { .. }))
        ),
        "only the last five batches are remembered"
    );
    // A clean close writes a snapshot that the next open uses.
    log.close().unwrap();
    drop(log);
    let log = crate::log::test_logs::open(dir.path(), cfg, None, None, true);
    assert!(
        append_raw(&log, &idempotent_batch(7, 0, 7, 1))
            .unwrap()
            .duplicate
    );
    assert!(matches!(
        append_raw(&log, &idempotent_batch(7, -1, 8, 1)),
        Err(LogError::Sequence(
            SequenceError::InvalidProducerEpoch { .. }
        ))
    ));
    assert_eq!(
        append_raw(&log, &idempotent_batch(7, 1, 0, 1))
            .unwrap()
            .base_offset,
        leo
    );
}

#[test]
fn a_reader_holding_a_segment_finishes_after_tiering_deletes_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = crate::log::test_logs::create(dir.path(), config(&["log.segment.bytes=600"]));
    append_n(&log, 6, 1_000);
    log.flush().unwrap();
    let sealed = log.sealed_segment_files();
    assert!(sealed.len() >= 2, "small segments rolled: {sealed:?}");
    assert!(sealed.iter().all(|s| s.last_offset < log.high_watermark()));
    // A fetch took its handle on the first segment...
    let slice = log
        .lock()
        .segments
        .values()
        .next()
        .unwrap()
        .slice()
        .unwrap();
    let before = slice.read(0, 1 << 20).unwrap();
    // ...then the hot window deleted it (it is in the bucket).
    let first_end = sealed[0].last_offset + 1;
    assert_eq!(log.delete_segments_before(first_end).unwrap(), 1);
    assert!(!sealed[0].log.exists(), "the file is unlinked");
    assert_eq!(log.local_log_start_offset(), first_end);
    // The read that started on it still finishes, byte for byte.
    assert_eq!(slice.read(0, 1 << 20).unwrap(), before);
    assert!(!before.is_empty());
    // The active segment is never handed to the tiering manager.
    let active = log.lock().active().base_offset();
    assert!(log
        .sealed_segment_files()
        .iter()
        .all(|s| s.base_offset != active));
}

#[test]
fn offsets_before_answers_list_offsets_v0_as_kafka() {
    let dir = tempfile::tempdir().unwrap();
    // Each 4-record batch (~500 bytes) fills a 600-byte segment.
    let log = crate::log::test_logs::create(dir.path(), config(&["log.segment.bytes=600"]));
    assert_eq!(
        log.offsets_before(-1, 10),
        vec![0],
        "an empty log: its start"
    );
    append_n(&log, 3, 1_000);
    // Not yet durable: the log end (12) gives way to the high watermark (0).
    assert_eq!(log.offsets_before(-1, 1), vec![0]);
    log.flush().unwrap();
    assert_eq!(log.segment_count(), 3);
    // Latest: the log end, then each segment's start, newest first.
    assert_eq!(log.offsets_before(-1, 10), vec![12, 8, 4, 0]);
    assert_eq!(log.offsets_before(-1, 2), vec![12, 8]);
    // Earliest: the log start only.
    assert_eq!(log.offsets_before(-2, 10), vec![0]);
    // By time (the segments' newest records: 1003, 1013, 1023).
    assert_eq!(log.offsets_before(1_013, 10), vec![4, 0]);
    assert_eq!(log.offsets_before(999, 10), Vec::<i64>::new());
    assert_eq!(log.offsets_before(-1, 0), Vec::<i64>::new());
}

fn transactional_batch(pid: i64, epoch: i16, seq: i32) -> Vec<u8> {
    let mut b = idempotent_batch(pid, epoch, seq, 1);
    b[21..23].copy_from_slice(&0x10i16.to_be_bytes());
    let crc = batch::compute_crc(&b);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

/// KIP-890: a producer's first transactional batch in a partition needs
/// the guard of a verification that no marker overtook; later batches of
/// the open transaction need none.
#[test]
fn a_transaction_opens_only_under_a_current_verification_guard() {
    use crate::log::control::{Marker, MarkerType};
    let dir = tempfile::tempdir().unwrap();
    let log = crate::log::test_logs::create(dir.path(), config(&[]));
    let verified = |b: &[u8], token: Option<u64>| {
        let h = batch::validate_all(b).unwrap();
        log.append_from(b, &h, AppendOrigin::VerifiedClient(token))
    };
    let not_in_txn = |r: Result<AppendInfo, LogError>| {
        matches!(r, Err(LogError::Sequence(SequenceError::NotInTransaction)))
    };
    assert!(not_in_txn(verified(&transactional_batch(9, 0, 0), None)));
    // A marker for the producer (its transaction ended) revokes the guard.
    let stale = log.begin_txn_verification(9, 0).unwrap();
    let abort = Marker {
        kind: MarkerType::Abort,
        coordinator_epoch: 0,
    };
    log.append_marker(9, 0, abort).unwrap();
    assert!(not_in_txn(verified(
        &transactional_batch(9, 0, 0),
        Some(stale)
    )));
    // A guard for another epoch does not do either.
    let other = log.begin_txn_verification(9, 1).unwrap();
    assert!(not_in_txn(verified(
        &transactional_batch(9, 0, 0),
        Some(other)
    )));
    let end = log.log_end_offset();

    let token = log.begin_txn_verification(9, 0).unwrap();
    // A second verification of the producer (a retry, another
    // connection) shares the pending guard rather than revoking it.
    assert_eq!(log.begin_txn_verification(9, 0), Some(token));
    assert_eq!(
        verified(&transactional_batch(9, 0, 0), Some(token))
            .unwrap()
            .base_offset,
        end
    );
    assert_eq!(
        log.begin_txn_verification(9, 0),
        None,
        "the transaction is open"
    );
    assert!(verified(&transactional_batch(9, 0, 1), None).is_ok());
    // Non-transactional and plain client appends are not affected.
    assert!(append_raw(&log, &idempotent_batch(10, 0, 0, 1)).is_ok());
}
