//! Unit tests of the partition: a follower's writes through it (the log's
//! `follower.rs`), roles, the high watermark's bound, the ISR review
//! (`replica_state.rs`) and hydration.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::replica_state::IsrReview;
use super::Partition;
use crate::log::batch::{self, testing, BatchHeader};
use crate::log::partition_log::{LogError, PartitionLog, SharedConfig};
use crate::log::read::Isolation;
use strata_common::clock::{ManualClock, SharedClock};
use strata_common::config::{BrokerConfig, TopicConfig};

fn config(sets: &[&str]) -> Arc<SharedConfig> {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let broker = BrokerConfig::load(None, &sets).unwrap();
    SharedConfig::new(TopicConfig::resolve(&broker, &BTreeMap::new()))
}

fn idempotent_batch(pid: i64, seq: i32, n: usize) -> Vec<u8> {
    let mut b = testing::batch(n, 10, 1_000).to_vec();
    b[43..51].copy_from_slice(&pid.to_be_bytes());
    b[51..53].copy_from_slice(&0i16.to_be_bytes());
    b[53..57].copy_from_slice(&seq.to_be_bytes());
    let crc = batch::compute_crc(&b);
    b[17..21].copy_from_slice(&crc.to_be_bytes());
    b
}

fn append(log: &Partition, b: &[u8]) -> i64 {
    let h = batch::validate_all(b).unwrap();
    log.append(b, &h).unwrap().last_offset
}

/// Everything `log` holds from `from`, as the leader serves a follower.
fn replica_read(log: &PartitionLog, from: i64) -> Vec<u8> {
    log.read_below(from, 1 << 20, true, Isolation::LogEnd)
        .unwrap()
        .records
        .to_vec()
}

/// Copies everything `leader` has to `follower` (following at `epoch`),
/// a fetch at a time.
fn copy_all(leader: &Partition, follower: &Partition, epoch: i32) -> i64 {
    let (from, to) = (leader.log(), follower.log());
    while to.log_end_offset() < from.log_end_offset() {
        follower
            .append_as_follower(&replica_read(from, to.log_end_offset()), epoch)
            .unwrap();
    }
    to.flush().unwrap();
    to.log_end_offset()
}

/// The whole log's bytes, segment after segment.
fn all_bytes(log: &PartitionLog) -> Vec<u8> {
    let mut out = Vec::new();
    let mut next = 0;
    while next < log.log_end_offset() {
        let chunk = replica_read(log, next);
        let last = batch::BatchScanner::new(&chunk, false).last().unwrap().1;
        next = last.next_offset();
        out.extend_from_slice(&chunk);
    }
    out
}

fn two_logs(sets: &[&str]) -> (tempfile::TempDir, Arc<Partition>, Arc<Partition>) {
    two_logs_on(sets, strata_common::clock::system())
}

/// As `two_logs`, both logs reading `clock`.
fn two_logs_on(
    sets: &[&str],
    clock: SharedClock,
) -> (tempfile::TempDir, Arc<Partition>, Arc<Partition>) {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(sets);
    let leader =
        PartitionLog::create(&dir.path().join("a"), "t", 0, cfg.clone(), clock.clone()).unwrap();
    let follower = PartitionLog::create(&dir.path().join("b"), "t", 0, cfg, clock.clone()).unwrap();
    (dir, Partition::new(leader), Partition::new(follower))
}

#[test]
fn a_follower_stores_the_leaders_batches_byte_for_byte() {
    let (_d, leader, follower) = two_logs(&["log.segment.bytes=200"]);
    leader.become_leader(1, 3, &[1, 2], 0);
    follower.become_follower(2, 3, 1);
    append(&leader, &idempotent_batch(9, 0, 3));
    append(&leader, &testing::batch(2, 50, 2_000));
    leader.become_leader(1, 5, &[1, 2], 0);
    append(&leader, &idempotent_batch(9, 3, 2));
    // Served before the leader's own fsync: the follower copies in parallel.
    assert_eq!(copy_all(&leader, &follower, 3), 7);
    let bytes = all_bytes(leader.log());
    assert_eq!(all_bytes(follower.log()), bytes);
    assert_eq!(follower.log().end_offset_for_epoch(3), (3, 5));
    assert_eq!(follower.log().latest_epoch_in_log(), Some(5));
    assert!(
        follower.log().segment_count() > 1,
        "rolled as the leader did"
    );
    // Appending what it already has changes nothing.
    assert_eq!(
        follower
            .append_as_follower(&replica_read(leader.log(), 0), 3)
            .unwrap(),
        7
    );
    // Producer state came with the batches: once it leads, a retry of the
    // last batch is a duplicate.
    follower.become_leader(2, 6, &[2], 0);
    let retry = idempotent_batch(9, 3, 2);
    let h = batch::validate_all(&retry).unwrap();
    let info = follower.append(&retry, &h).unwrap();
    assert!(info.duplicate);
    assert_eq!(info.base_offset, 5);
}

#[test]
fn a_batch_that_does_not_continue_the_log_is_refused() {
    let (_d, leader, follower) = two_logs(&[]);
    follower.become_follower(2, 0, 1);
    append(&leader, &testing::batch(3, 10, 1_000));
    append(&leader, &testing::batch(3, 10, 1_000));
    let all = replica_read(leader.log(), 0);
    let second = &all[BatchHeader::parse(&all).unwrap().size..];
    assert!(matches!(follower.append_as_follower(&all, 0), Ok(6)));
    // A batch starting inside what the log holds overlaps: diverged.
    let mut overlapping = second.to_vec();
    batch::set_base_offset(&mut overlapping, 4);
    let crc = batch::compute_crc(&overlapping);
    overlapping[17..21].copy_from_slice(&crc.to_be_bytes());
    assert!(matches!(
        follower.append_as_follower(&overlapping, 0),
        Err(LogError::NotContiguous {
            log_end_offset: 6,
            base_offset: 4
        })
    ));
    follower.truncate_fully_and_start_at(0, 0).unwrap();
    let mut damaged = all.clone();
    let last = damaged.len() - 1;
    damaged[last] ^= 0xff;
    assert!(matches!(
        follower.append_as_follower(&damaged, 0),
        Err(LogError::Corrupt(_))
    ));
    // The intact first batch went in before the damaged one was found.
    assert_eq!(follower.log().log_end_offset(), 3);
    // A gap the leader's compaction left is no divergence.
    follower.truncate_fully_and_start_at(0, 0).unwrap();
    assert_eq!(follower.append_as_follower(second, 0).unwrap(), 6);
}

#[test]
fn truncation_cuts_the_divergent_tail_and_the_log_goes_on() {
    let (_d, leader, follower) = two_logs(&["log.segment.bytes=200"]);
    follower.become_follower(2, 1, 1);
    leader.become_leader(1, 1, &[1, 2], 0);
    for seq in 0..6 {
        append(&leader, &idempotent_batch(4, seq * 2, 2));
    }
    copy_all(&leader, &follower, 1);
    let segments = follower.log().segment_count();
    assert!(segments >= 3, "several segments: {segments}");
    // A fetcher of an older leadership is too late to truncate.
    assert!(matches!(
        follower.truncate_to(5, 0),
        Err(LogError::StaleLeaderEpoch { epoch: 0 })
    ));
    follower.truncate_to(5, 1).unwrap();
    // Cut at the start of the batch holding offset 5.
    assert_eq!(follower.log().log_end_offset(), 4);
    assert!(follower.log().high_watermark() <= 4);
    assert!(follower.log().segment_count() < segments);
    let kept = all_bytes(follower.log());
    assert_eq!(kept, all_bytes(leader.log())[..kept.len()]);
    // Copying again from the cut reproduces the leader's log.
    copy_all(&leader, &follower, 1);
    assert_eq!(all_bytes(follower.log()), all_bytes(leader.log()));
    // The rebuilt producer state accepts the leader's next sequence.
    follower.become_leader(2, 2, &[2], 0);
    let next = idempotent_batch(4, 12, 1);
    let h = batch::validate_all(&next).unwrap();
    assert_eq!(follower.append(&next, &h).unwrap().base_offset, 12);
    // And the truncated log reopens as it is.
    follower.log().flush().unwrap();
    follower.log().close().unwrap();
    let dir = follower.log().dir().parent().unwrap().to_path_buf();
    let reopened =
        crate::log::test_logs::open(&dir, config(&["log.segment.bytes=200"]), None, None, false);
    assert_eq!(reopened.log_end_offset(), 13);
}

#[test]
fn truncating_below_the_start_empties_the_log_there() {
    let (_d, leader, follower) = two_logs(&[]);
    follower.become_follower(2, 0, 1);
    append(&leader, &testing::batch(3, 10, 1_000));
    follower
        .append_as_follower(&replica_read(leader.log(), 0), 0)
        .unwrap();
    follower.truncate_fully_and_start_at(40, 0).unwrap();
    assert_eq!(follower.log().log_start_offset(), 40);
    assert_eq!(follower.log().log_end_offset(), 40);
    assert!(follower.log().latest_epoch_in_log().is_none_or(|e| e == 0));
}

#[test]
fn the_high_watermark_is_the_minimum_over_the_isr() {
    let (_d, leader, _f) = two_logs(&[]);
    leader.become_leader(1, 1, &[1, 2, 3], 0);
    append(&leader, &testing::batch(10, 10, 1_000));
    leader.log().flush().unwrap();
    // Durable here, but no follower has it.
    assert_eq!(leader.log().high_watermark(), 0);
    assert_eq!(leader.in_sync_replicas(), 3);
    leader.record_follower_fetch(2, 10);
    assert_eq!(
        leader.log().high_watermark(),
        0,
        "follower 3 is in sync and has nothing"
    );
    leader.record_follower_fetch(3, 6);
    assert_eq!(leader.log().high_watermark(), 6);
    leader.record_follower_fetch(3, 10);
    assert_eq!(leader.log().high_watermark(), 10);
    // Alone in the ISR, the leader's durable end is the high watermark.
    append(&leader, &testing::batch(5, 10, 1_000));
    leader.become_leader(1, 1, &[1], 0);
    assert_eq!(leader.log().high_watermark(), 10, "not flushed yet");
    leader.log().flush().unwrap();
    assert_eq!(leader.log().high_watermark(), 15);
}

#[test]
fn a_follower_high_watermark_is_capped_by_its_own_durable_end() {
    let (_d, leader, follower) = two_logs(&[]);
    follower.become_follower(2, 1, 1);
    append(&leader, &testing::batch(10, 10, 1_000));
    follower
        .append_as_follower(&replica_read(leader.log(), 0), 1)
        .unwrap();
    follower.set_leader_high_watermark(8, 0);
    assert_eq!(follower.log().high_watermark(), 0, "another leadership's");
    follower.set_leader_high_watermark(8, 1);
    assert_eq!(follower.log().high_watermark(), 0, "not fsynced yet");
    follower.log().flush().unwrap();
    assert_eq!(follower.log().high_watermark(), 8);
    assert!(!follower.is_leader());
    assert_eq!(follower.following(), Some(1));
}

#[test]
fn the_isr_review_finds_laggards_and_caught_up_followers() {
    let clock = ManualClock::new();
    let (_d, leader, _f) = two_logs_on(&[], clock.clone());
    let live: std::collections::BTreeSet<i32> = [1, 2, 3].into();
    leader.become_leader(1, 1, &[1, 2], 10);
    append(&leader, &testing::batch(10, 10, 1_000));
    leader.log().flush().unwrap();
    leader.record_follower_fetch(2, 10);
    leader.record_follower_fetch(3, 10);
    // A caught-up broker that is not live (the controller saw its lease
    // go) is not taken back.
    let dead: std::collections::BTreeSet<i32> = [1, 2].into();
    assert!(leader
        .isr_review(&[1, 2, 3], &dead, Duration::from_secs(30), None)
        .caught_up
        .is_empty());
    let review = leader.isr_review(&[1, 2, 3], &live, Duration::from_secs(30), None);
    assert_eq!(review.out_of_sync, Vec::<i32>::new());
    assert_eq!(review.caught_up, vec![3]);
    // Counted as in sync from the review on: it holds back the high
    // watermark, and is not proposed twice.
    append(&leader, &testing::batch(5, 10, 1_000));
    leader.log().flush().unwrap();
    leader.record_follower_fetch(2, 15);
    assert_eq!(
        leader.log().high_watermark(),
        10,
        "pending member 3 has only 10"
    );
    assert!(leader
        .isr_review(&[1, 2, 3], &live, Duration::from_secs(30), None)
        .caught_up
        .is_empty());
    // Written at revision 12: an older view keeps it pending, a view that
    // new without it drops it.
    leader.isr_addition_written(3, 12);
    leader.become_leader(1, 1, &[1, 2], 11);
    assert_eq!(leader.log().high_watermark(), 10);
    leader.become_leader(1, 1, &[1, 2], 12);
    assert_eq!(leader.log().high_watermark(), 15);
    // A follower that stops fetching falls out after the lag limit.
    append(&leader, &testing::batch(10, 10, 1_000));
    clock.advance(Duration::from_millis(30));
    let review = leader.isr_review(&[1, 2, 3], &live, Duration::from_millis(20), None);
    assert_eq!(review.out_of_sync, vec![2]);
}

#[test]
fn only_the_role_at_hand_may_write() {
    let (_d, leader, follower) = two_logs(&[]);
    // In a cluster, a log waits for the store before it appends.
    leader.await_assignment();
    let b = testing::batch(2, 10, 1_000);
    let h = batch::validate_all(&b).unwrap();
    assert!(matches!(leader.append(&b, &h), Err(LogError::NotLeader)));
    leader.become_leader(1, 4, &[1], 1);
    let info = leader.append(&b, &h).unwrap();
    assert_eq!(info.leader_epoch, 4);
    // A follower refuses appends and markers, and copies only for the
    // leadership it follows.
    follower.become_follower(2, 4, 1);
    assert!(matches!(follower.append(&b, &h), Err(LogError::NotLeader)));
    let marker = crate::log::control::Marker {
        kind: crate::log::control::MarkerType::Commit,
        coordinator_epoch: 0,
    };
    assert!(matches!(
        follower.append_marker(1, 0, marker),
        Err(LogError::NotLeader)
    ));
    assert!(matches!(
        follower.append_as_follower(&replica_read(leader.log(), 0), 3),
        Err(LogError::StaleLeaderEpoch { epoch: 3 })
    ));
    follower
        .append_as_follower(&replica_read(leader.log(), 0), 4)
        .unwrap();
    // A deposed leader's acks=all waits end as not leader.
    leader.become_follower(1, 5, 2);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let outcome = rt.block_on(leader.wait_committed(2, 4, Duration::from_secs(5)));
    assert_eq!(outcome, crate::partition::CommitWait::NotLeader);
}

#[test]
fn a_replica_started_at_the_tiered_end_keeps_producer_state_and_epochs() {
    let (_d, leader, follower) = two_logs(&["log.segment.bytes=200"]);
    leader.become_leader(1, 3, &[1], 0);
    for seq in [0, 3, 6] {
        append(&leader, &idempotent_batch(9, seq, 3));
    }
    leader.log().flush().unwrap();
    // The last sealed segment and its producer snapshot stand in for the
    // bucket's last tiered segment.
    let sealed = leader.log().sealed_segment_files();
    let last = sealed.last().expect("a sealed segment");
    let snapshot = std::fs::read(last.producer_snapshot.as_ref().unwrap()).unwrap();
    let tiered_end = last.last_offset + 1;
    follower.become_follower(2, 3, 1);
    follower
        .start_at_tiered_end(tiered_end, 3, Some(&snapshot), 3)
        .unwrap();
    assert_eq!(follower.log().log_start_offset(), tiered_end);
    assert_eq!(follower.log().log_end_offset(), tiered_end);
    assert_eq!(follower.log().latest_epoch_in_log(), Some(3));
    assert_eq!(follower.log().end_offset_for_epoch(3), (3, tiered_end));
    // It copies only the leader's untiered tail...
    copy_all(&leader, &follower, 3);
    assert_eq!(
        follower.log().log_end_offset(),
        leader.log().log_end_offset()
    );
    // ...and, leading, continues the producer's sequence: the next batch
    // goes in, a gap is refused as out of order (not an unknown producer).
    follower.become_leader(2, 4, &[2], 0);
    let next = leader.log().log_end_offset();
    assert_eq!(append(&follower, &idempotent_batch(9, 9, 2)), next + 1);
    let gap = idempotent_batch(9, 20, 1);
    let h = batch::validate_all(&gap).unwrap();
    assert!(matches!(
        follower.append(&gap, &h),
        Err(LogError::Sequence(
            crate::log::producer_state::SequenceError::OutOfOrder { .. }
        ))
    ));
}

#[test]
fn the_tail_of_a_sealed_segment_is_copied_from_a_batch_boundary() {
    let (d, leader, _f) = two_logs(&["log.segment.bytes=100000"]);
    leader.become_leader(1, 0, &[1], 0);
    for _ in 0..4 {
        append(&leader, &testing::batch(5, 10, 1_000));
    }
    leader.log().roll_if_expired(i64::MAX).unwrap();
    append(&leader, &testing::batch(1, 10, 1_000));
    leader.log().flush().unwrap();
    let sealed = leader.log().sealed_segment_files();
    assert_eq!((sealed[0].base_offset, sealed[0].last_offset), (0, 19));
    let scratch = d.path().join("scratch");
    assert!(
        leader.log().copy_segment_tail(0, 7, &scratch).is_err(),
        "inside a batch"
    );
    let copy = leader.log().copy_segment_tail(0, 10, &scratch).unwrap();
    assert_eq!((copy.base_offset, copy.last_offset), (10, 19));
    let original = std::fs::read(&sealed[0].log).unwrap();
    let copied = std::fs::read(&copy.log).unwrap();
    assert_eq!(
        copied,
        original[original.len() / 2..],
        "the last two of four equal batches"
    );
    assert!(copy.index.exists() && copy.time_index.exists());
    assert_eq!(copy.producer_snapshot, sealed[0].producer_snapshot);
}

/// A leader of a quorum topic (`quorum.ack.enable`, min.insync.replicas=2).
fn quorum_leader(clock: SharedClock) -> (tempfile::TempDir, Arc<Partition>) {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerConfig::load(None, &[]).unwrap();
    let overrides: BTreeMap<String, String> = [
        ("quorum.ack.enable".to_string(), "true".to_string()),
        ("min.insync.replicas".to_string(), "2".to_string()),
    ]
    .into();
    let cfg = SharedConfig::new(TopicConfig::resolve(&broker, &overrides));
    let log = PartitionLog::create(&dir.path().join("q"), "q", 0, cfg, clock).unwrap();
    (dir, Partition::new(log))
}

/// `leader` leads 1, 2, 3 with ten records fsynced that 2 holds and 3
/// lacks; then neither fetches while one more record comes: the review of
/// the ISR after that (lag limit 20 ms), `clock` (the log's) moved 30 ms.
fn review_after_followers_stall(leader: &Arc<Partition>, clock: &ManualClock) -> IsrReview {
    let live: std::collections::BTreeSet<i32> = [1, 2, 3].into();
    leader.become_leader(1, 1, &[1, 2, 3], 10);
    append(leader, &testing::batch(10, 10, 1_000));
    leader.log().flush().unwrap();
    leader.record_follower_fetch(2, 10);
    leader.record_follower_fetch(3, 0);
    clock.advance(Duration::from_millis(30));
    append(leader, &testing::batch(1, 10, 1_000));
    leader.isr_review(&[1, 2, 3], &live, Duration::from_millis(20), None)
}

#[test]
fn a_quorum_leaders_high_watermark_is_the_kth_greatest_end() {
    let (_d, leader) = quorum_leader(strata_common::clock::system());
    leader.become_leader(1, 1, &[1, 2, 3], 10);
    append(&leader, &testing::batch(10, 10, 1_000));
    leader.log().flush().unwrap();
    leader.record_follower_fetch(2, 0);
    leader.record_follower_fetch(3, 0);
    assert_eq!(leader.log().high_watermark(), 0);
    // One follower has it: with the leader, two of three hold it.
    leader.record_follower_fetch(3, 10);
    assert_eq!(
        leader.log().high_watermark(),
        10,
        "follower 2 does not hold it back"
    );
    // With the ISR smaller than k, every member must hold it.
    leader.become_leader(1, 1, &[1], 11);
    append(&leader, &testing::batch(5, 10, 1_000));
    leader.log().flush().unwrap();
    assert_eq!(leader.log().high_watermark(), 15);
}

#[test]
fn a_quorum_leader_keeps_k_holders_of_the_high_watermark_in_the_isr() {
    let clock = ManualClock::new();
    let (_d, leader) = quorum_leader(clock.clone());
    // Both stop fetching: 3 (lacking the high watermark) may leave, 2
    // (the only other holder) may not.
    let review = review_after_followers_stall(&leader, &clock);
    assert_eq!(review.out_of_sync, vec![3]);
    assert_eq!(
        leader.log().high_watermark(),
        10,
        "the leader and 2 hold it"
    );
    // In an ISR-mode topic both would go.
    let (_d2, isr_leader, _f) = two_logs_on(&[], clock.clone());
    let review = review_after_followers_stall(&isr_leader, &clock);
    assert_eq!(review.out_of_sync, vec![2, 3]);
}

#[test]
fn a_quorum_high_watermark_never_passes_the_leaders_own_fsynced_end() {
    let (_d, leader) = quorum_leader(strata_common::clock::system());
    leader.become_leader(1, 1, &[1, 2, 3], 10);
    append(&leader, &testing::batch(10, 10, 1_000));
    leader.record_follower_fetch(2, 10);
    leader.record_follower_fetch(3, 10);
    assert_eq!(
        leader.log().high_watermark(),
        0,
        "the leader has not fsynced it"
    );
    leader.log().flush().unwrap();
    assert_eq!(leader.log().high_watermark(), 10);
}

#[test]
fn a_quorum_removal_under_way_already_bounds_the_high_watermark() {
    let clock = ManualClock::new();
    let (_d, leader) = quorum_leader(clock.clone());
    let review = review_after_followers_stall(&leader, &clock);
    assert_eq!(review.out_of_sync, vec![3]);
    // While the removal is written, 3 catches up and 2 stalls: what only
    // the leader and 3 hold is not acknowledged (the ISR may become
    // {1, 2}).
    leader.log().flush().unwrap();
    leader.record_follower_fetch(3, 11);
    assert_eq!(leader.log().high_watermark(), 10);
    // The removal failed: 3 counts again.
    leader.isr_removal_failed(3);
    leader.record_follower_fetch(3, 11);
    assert_eq!(leader.log().high_watermark(), 11);
}

#[test]
fn a_log_created_empty_is_hydrated_only_once_caught_up() {
    let (_d, leader, follower) = two_logs_one_unhydrated();
    assert!(!follower.log().hydrated(), "created empty");
    follower.become_follower(2, 1, 1);
    leader.become_leader(1, 1, &[1, 2], 10);
    assert!(
        leader.log().hydrated(),
        "a leader holds what it acknowledged"
    );
    // A high watermark it reaches without a batch of the leader's epoch
    // proves nothing (a restarted leader's starts at its log start).
    follower.set_leader_high_watermark(0, 1);
    assert!(!follower.log().hydrated());
    append(&leader, &testing::batch(10, 10, 1_000));
    follower.set_leader_high_watermark(10, 1);
    assert!(
        !follower.log().hydrated(),
        "behind the leader's high watermark"
    );
    copy_all(&leader, &follower, 1);
    follower.set_leader_high_watermark(10, 1);
    assert!(follower.log().hydrated());
}

/// A leader's log, and a follower's created for a partition it may have
/// held before (a replaced disk).
fn two_logs_one_unhydrated() -> (tempfile::TempDir, Arc<Partition>, Arc<Partition>) {
    let dir = tempfile::tempdir().unwrap();
    let leader = crate::log::test_logs::create(&dir.path().join("a"), config(&[]));
    let follower = PartitionLog::create_unhydrated(
        &dir.path().join("b"),
        "t",
        0,
        config(&[]),
        strata_common::clock::system(),
    )
    .unwrap();
    assert!(leader.hydrated(), "a new partition's log lost nothing");
    (dir, Partition::new(leader), Partition::new(follower))
}

/// Closes `log` and opens its directory again, as a restart does.
fn reopen(partition: &Arc<Partition>) -> Arc<Partition> {
    let log = partition.log();
    log.flush().unwrap();
    log.close().unwrap();
    let dir = log.dir().parent().unwrap().to_path_buf();
    Partition::new(crate::log::test_logs::open(
        &dir,
        config(&[]),
        None,
        None,
        false,
    ))
}

#[test]
fn an_unhydrated_log_stays_so_across_a_restart_until_it_caught_up() {
    let (_d, leader, follower) = two_logs_one_unhydrated();
    leader.become_leader(1, 1, &[1, 2], 10);
    assert!(reopen(&leader).log().hydrated(), "a log that led");
    let follower = reopen(&follower);
    assert!(
        !follower.log().hydrated(),
        "created empty, restarted before catching up"
    );
    follower.become_follower(2, 1, 1);
    // Nothing returned past its end by the leader of another epoch: no
    // proof. By the leader of its epoch, with all of it fsynced: caught up.
    follower.caught_up_with_leader(0);
    assert!(!follower.log().hydrated());
    follower.caught_up_with_leader(1);
    assert!(follower.log().hydrated());
    assert!(reopen(&follower).log().hydrated(), "the marker is gone");
}

#[test]
fn a_follower_emptied_for_the_buckets_end_is_unhydrated_across_a_restart() {
    let (_d, leader, follower) = two_logs(&[]);
    leader.become_leader(1, 1, &[1, 2], 10);
    follower.become_follower(2, 1, 1);
    append(&leader, &testing::batch(10, 10, 1_000));
    copy_all(&leader, &follower, 1);
    follower.set_leader_high_watermark(10, 1);
    assert!(follower.log().hydrated());
    follower.truncate_fully_and_start_at(40, 1).unwrap();
    assert!(!follower.log().hydrated());
    assert!(!reopen(&follower).log().hydrated());
}

/// The high watermark as the replication state alone decided it before
/// the log took the durable end apart (`d`: the leader's durable end): the
/// least of `d` and the k-th greatest end over every ISR under way.
fn target_with_durable_end(st: &super::replica_state::ReplicaState, d: i64, current: i64) -> i64 {
    use super::replica_state::Role;
    match &st.role {
        Role::Leader {
            isr,
            pending,
            followers,
            quorum,
            removing,
            ..
        } => {
            let end_of = |id: &i32| {
                followers
                    .get(id)
                    .filter(|f| f.end >= 0)
                    .map_or(current, |f| f.end)
            };
            match quorum {
                Some(k) => {
                    let mut least = d;
                    for with_removals in [false, true] {
                        for with_additions in [false, true] {
                            let mut ends: Vec<i64> = isr
                                .iter()
                                .filter(|id| !(with_removals && removing.contains_key(id)))
                                .chain(pending.keys().filter(|_| with_additions))
                                .map(end_of)
                                .collect();
                            ends.push(d);
                            ends.sort_unstable_by(|a, b| b.cmp(a));
                            least = least.min(ends[(*k).clamp(1, ends.len()) - 1]);
                        }
                    }
                    least
                }
                None => isr
                    .iter()
                    .chain(pending.keys())
                    .map(end_of)
                    .fold(d, i64::min),
            }
        }
        Role::Follower {
            leader_high_watermark,
            ..
        } => d.min(*leader_high_watermark),
    }
}

#[test]
fn the_bound_and_the_durable_end_give_the_high_watermark_the_isr_allows() {
    use super::ack_latency::AckLatency;
    use super::replica_state::{FollowerProgress, ReplicaState, Role};
    // A small deterministic generator: every ISR shape up to five
    // followers, quorum or not, with removals and additions under way.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for _ in 0..20_000 {
        let mut st = ReplicaState::new();
        let members = next(6) as i32;
        let mut isr = std::collections::BTreeSet::new();
        let mut pending = BTreeMap::new();
        let mut removing = BTreeMap::new();
        let mut followers = std::collections::HashMap::new();
        for id in 2..2 + members {
            match next(4) {
                0 => {
                    pending.insert(id, 7);
                }
                1 => {
                    isr.insert(id);
                    removing.insert(id, 7);
                }
                _ => {
                    isr.insert(id);
                }
            }
            if next(5) > 0 {
                let mut f = FollowerProgress::unknown(None);
                f.end = next(100) as i64;
                followers.insert(id, f);
            }
        }
        let quorum = match next(3) {
            0 => None,
            _ => Some(next(5) as usize),
        };
        st.role = Role::Leader {
            epoch: 1,
            isr,
            pending,
            followers,
            acks: AckLatency::default(),
            quorum,
            removing,
        };
        let (d, current) = (next(100) as i64, next(100) as i64);
        assert_eq!(
            d.min(st.high_watermark_bound(current)),
            target_with_durable_end(&st, d, current),
            "{:?}, durable end {d}, high watermark {current}",
            st.role
        );
    }
}
