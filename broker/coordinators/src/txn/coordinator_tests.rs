//! The transaction coordinator against a real LogManager: a commit's
//! markers and LSO, fencing, a crash in PrepareCommit completed on
//! reopen, a timed-out transaction aborted with a bumped epoch, and
//! offsets committed with a transaction.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::BytesMut;
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::*;
use crate::group::OffsetCommit;
use strata_storage::log::batch;
use strata_storage::partition::Partition;

fn setup(dir: &std::path::Path) -> (Arc<LogManager>, Arc<TransactionCoordinator>) {
    setup_with_clock(dir, strata_common::clock::system())
}

fn setup_with_clock(
    dir: &std::path::Path,
    clock: strata_common::clock::SharedClock,
) -> (Arc<LogManager>, Arc<TransactionCoordinator>) {
    let cfg = BrokerConfig::load(
        None,
        &[
            "offsets.topic.num.partitions=3".into(),
            "transaction.state.log.num.partitions=3".into(),
            "group.initial.rebalance.delay.ms=0".into(),
        ],
    )
    .unwrap();
    let logs = LogManager::open(
        dir,
        Arc::new(cfg.clone()),
        None,
        strata_common::clock::system(),
    )
    .unwrap();
    if logs.topic("t").is_none() {
        logs.create_topic("t", 2, 1, BTreeMap::new(), false)
            .unwrap();
    }
    let groups = GroupCoordinator::open(logs.clone(), &cfg, false, clock.clone()).unwrap();
    groups.follow_leadership_now();
    let ids = Arc::new(ProducerIdManager::open(dir, 0).unwrap());
    let txns = TransactionCoordinator::open(logs.clone(), groups, ids, &cfg, false, clock).unwrap();
    txns.follow_leadership_now();
    (logs, txns)
}

/// Appends one transactional record of `pid`/`epoch` as a producer would.
async fn produce_txn(log: &Partition, pid: i64, epoch: i16, seq: i32) -> i64 {
    let r = Record {
        transactional: true,
        control: false,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id: pid,
        producer_epoch: epoch,
        timestamp_type: TimestampType::Creation,
        offset: 0,
        sequence: seq,
        timestamp: 1,
        key: None,
        value: Some(bytes::Bytes::from_static(b"v")),
        headers: IndexMap::new(),
    };
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(
        &mut buf,
        &[r],
        &RecordEncodeOptions {
            version: 2,
            compression: Compression::None,
        },
    )
    .unwrap();
    let headers = batch::validate_all(&buf).unwrap();
    let info = log.append(&buf, &headers).unwrap();
    assert!(
        log.log()
            .wait_durable(info.last_offset + 1, Duration::from_secs(5))
            .await
    );
    info.base_offset
}

async fn wait_state(t: &TransactionCoordinator, id: &str, state: TxnState) -> TxnMetadata {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if let Some(m) = t.describe(id).filter(|m| m.state == state) {
            return m;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{id} never reached {state:?}: {:?}", t.describe(id));
}

#[tokio::test]
async fn commit_writes_markers_and_releases_the_lso() {
    let dir = tempfile::tempdir().unwrap();
    let (logs, t) = setup(dir.path());
    let p = t.init_producer_id("a", 60_000, None).await.unwrap();
    assert_eq!(p.producer_epoch, 0);
    let parts = vec![("t".to_string(), 0), ("t".to_string(), 1)];
    t.add_partitions("a", p.producer_id, 0, parts.clone())
        .await
        .unwrap();
    let log = logs.partition("t", 0).unwrap();
    let first = produce_txn(&log, p.producer_id, 0, 0).await;
    produce_txn(&log, p.producer_id, 0, 1).await;
    assert_eq!(
        log.log().last_stable_offset(),
        first,
        "the open transaction holds the LSO"
    );
    assert_eq!(log.log().high_watermark(), first + 2);
    t.end_txn("a", p.producer_id, 0, true).await.unwrap();
    wait_state(&t, "a", TxnState::CompleteCommit).await;
    // One marker in each partition, committed: nothing aborted.
    assert_eq!(log.log().log_end_offset(), first + 3);
    assert_eq!(logs.partition("t", 1).unwrap().log().log_end_offset(), 1);
    assert!(
        log.log()
            .wait_durable(first + 3, Duration::from_secs(5))
            .await
    );
    assert_eq!(log.log().last_stable_offset(), first + 3);
    assert!(log.log().aborted_transactions(0, first + 3).is_empty());
    // A retried EndTxn is answered as the first; the other outcome is not.
    t.end_txn("a", p.producer_id, 0, true).await.unwrap();
    assert_eq!(
        t.end_txn("a", p.producer_id, 0, false).await,
        Err(ResponseError::InvalidTxnState)
    );
}

#[tokio::test]
async fn a_new_instance_fences_the_old_and_aborts_its_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (logs, t) = setup(dir.path());
    let old = t.init_producer_id("z", 60_000, None).await.unwrap();
    t.add_partitions("z", old.producer_id, 0, vec![("t".into(), 0)])
        .await
        .unwrap();
    let log = logs.partition("t", 0).unwrap();
    let first = produce_txn(&log, old.producer_id, 0, 0).await;
    // The open transaction is aborted first: CONCURRENT_TRANSACTIONS.
    assert_eq!(
        t.init_producer_id("z", 60_000, None).await,
        Err(ResponseError::ConcurrentTransactions)
    );
    wait_state(&t, "z", TxnState::CompleteAbort).await;
    let new = t.init_producer_id("z", 60_000, None).await.unwrap();
    assert_eq!(new.producer_id, old.producer_id);
    assert_eq!(
        new.producer_epoch, 2,
        "one bump to abort, one for the new instance"
    );
    assert_eq!(
        t.add_partitions("z", old.producer_id, 0, vec![("t".into(), 1)])
            .await,
        Err(ResponseError::ProducerFenced)
    );
    assert_eq!(
        t.end_txn("z", old.producer_id, 0, true).await,
        Err(ResponseError::ProducerFenced)
    );
    // The abort marker carries the bumped epoch: the zombie's writes to
    // the partition are refused, and its records are an aborted transaction.
    let aborted = log
        .log()
        .aborted_transactions(0, log.log().log_end_offset());
    assert_eq!(aborted.len(), 1);
    assert_eq!(
        (aborted[0].producer_id, aborted[0].first_offset),
        (old.producer_id, first)
    );
    assert_eq!(
        t.counters
            .aborts_fencing
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

#[tokio::test]
async fn prepare_commit_found_on_reopen_is_completed() {
    let dir = tempfile::tempdir().unwrap();
    let (pid, first) = {
        let (logs, t) = setup(dir.path());
        let p = t.init_producer_id("c", 60_000, None).await.unwrap();
        t.add_partitions("c", p.producer_id, 0, vec![("t".into(), 1)])
            .await
            .unwrap();
        let log = logs.partition("t", 1).unwrap();
        let first = produce_txn(&log, p.producer_id, 0, 0).await;
        // A crash right after PrepareCommit became durable, before any
        // marker: write the state as EndTxn does, and stop there.
        let mut v = t.describe("c").unwrap().value();
        v.state = TxnState::PrepareCommit;
        t.persist("c", Some(&v), t.check_coordinator("c").unwrap())
            .await
            .unwrap();
        logs.shutdown().unwrap();
        (p.producer_id, first)
    };
    let (logs, t) = setup(dir.path());
    let log = logs.partition("t", 1).unwrap();
    assert_eq!(t.describe("c").unwrap().state, TxnState::PrepareCommit);
    assert_eq!(
        log.log().last_stable_offset(),
        first,
        "still open after the restart"
    );
    // As main.rs: the logs' flushers, then the coordinator's work.
    logs.start_background(|_| {});
    t.start_background();
    wait_state(&t, "c", TxnState::CompleteCommit).await;
    assert!(
        log.log()
            .wait_durable(first + 2, Duration::from_secs(5))
            .await
    );
    assert_eq!(log.log().last_stable_offset(), first + 2);
    assert!(log.log().aborted_transactions(0, first + 2).is_empty());
    let producers = log.log().active_producers();
    assert_eq!(producers[0].producer_id, pid);
    assert_eq!(
        producers[0].current_txn_start_offset, -1,
        "no transaction open"
    );
}

#[tokio::test]
async fn a_timed_out_transaction_is_aborted_with_a_bumped_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let clock = strata_common::clock::ManualClock::new();
    let (logs, t) = setup_with_clock(dir.path(), clock.clone());
    let p = t.init_producer_id("slow", 1, None).await.unwrap();
    t.add_partitions("slow", p.producer_id, 0, vec![("t".into(), 0)])
        .await
        .unwrap();
    let log = logs.partition("t", 0).unwrap();
    produce_txn(&log, p.producer_id, 0, 0).await;
    t.clone().abort_timed_out().await;
    assert_eq!(
        t.describe("slow").map(|m| m.state),
        Some(TxnState::Ongoing),
        "within its 1 ms timeout"
    );
    clock.advance(Duration::from_millis(2));
    t.clone().abort_timed_out().await;
    let m = wait_state(&t, "slow", TxnState::CompleteAbort).await;
    assert_eq!(m.producer_epoch, 1);
    assert_eq!(
        t.counters
            .aborts_timeout
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    assert_eq!(
        log.log()
            .aborted_transactions(0, log.log().log_end_offset())
            .len(),
        1
    );
    assert_eq!(
        t.end_txn("slow", p.producer_id, 0, true).await,
        Err(ResponseError::ProducerFenced)
    );
}

#[tokio::test]
async fn offsets_of_a_transaction_commit_with_it_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_logs, t) = setup(dir.path());
        let p = t.init_producer_id("o", 60_000, None).await.unwrap();
        t.add_offsets("o", p.producer_id, 0, "g").await.unwrap();
        let commit = |offset| crate::group::txn_offsets::TxnOffsetCommitRequest {
            group_id: "g".into(),
            producer_id: p.producer_id,
            producer_epoch: 0,
            generation: -1,
            member_id: String::new(),
            instance_id: None,
            offsets: vec![OffsetCommit {
                topic: "t".into(),
                partition: 0,
                offset,
                leader_epoch: -1,
                metadata: String::new(),
            }],
        };
        assert_eq!(t.groups.txn_commit(commit(42)).await, vec![0]);
        assert!(t.groups.has_pending_txn_offset("g", "t", 0));
        assert_eq!(t.groups.fetch("g", None).len(), 0, "not visible while open");
        t.end_txn("o", p.producer_id, 0, true).await.unwrap();
        wait_state(&t, "o", TxnState::CompleteCommit).await;
        assert_eq!(t.groups.fetch("g", None)[0].offset, 42);
        // An aborted one after it never replaces it.
        t.add_offsets("o", p.producer_id, 0, "g").await.unwrap();
        assert_eq!(t.groups.txn_commit(commit(99)).await, vec![0]);
        t.end_txn("o", p.producer_id, 0, false).await.unwrap();
        wait_state(&t, "o", TxnState::CompleteAbort).await;
        assert_eq!(t.groups.fetch("g", None)[0].offset, 42);
        t.logs.shutdown().unwrap();
    }
    let (_logs, t) = setup(dir.path());
    assert_eq!(
        t.groups.fetch("g", None)[0].offset,
        42,
        "replayed with its markers"
    );
    assert!(!t.groups.has_pending_txn_offset("g", "t", 0));
}

#[tokio::test]
async fn a_kip_360_client_bumps_its_epoch_past_an_aborted_transaction() {
    let dir = tempfile::tempdir().unwrap();
    let (logs, t) = setup(dir.path());
    let p = t.init_producer_id("k", 60_000, None).await.unwrap();
    t.add_partitions("k", p.producer_id, 0, vec![("t".into(), 0)])
        .await
        .unwrap();
    produce_txn(&logs.partition("t", 0).unwrap(), p.producer_id, 0, 0).await;
    // librdkafka after an abortable error: InitProducerId with its id and
    // epoch while the transaction is open. It is aborted (epoch 1) first.
    let held = Some(p);
    assert_eq!(
        t.init_producer_id("k", 60_000, held).await,
        Err(ResponseError::ConcurrentTransactions)
    );
    wait_state(&t, "k", TxnState::CompleteAbort).await;
    let next = t.init_producer_id("k", 60_000, held).await.unwrap();
    assert_eq!((next.producer_id, next.producer_epoch), (p.producer_id, 2));
    // A retry of that request gets the same answer; an older epoch is fenced.
    assert_eq!(t.init_producer_id("k", 60_000, held).await, Ok(next));
    let stale = ProducerIdAndEpoch {
        producer_id: p.producer_id,
        producer_epoch: 7,
    };
    assert_eq!(
        t.init_producer_id("k", 60_000, Some(stale)).await,
        Err(ResponseError::ProducerFenced)
    );
}

#[tokio::test]
async fn transactional_ids_follow_the_leadership_of_their_state_partition() {
    let dir = tempfile::tempdir().unwrap();
    let (logs, t) = setup(dir.path());
    logs.start_background(|_| {});
    let p = t.init_producer_id("f", 60_000, None).await.unwrap();
    let part = t.partition_of("f");
    let log = logs.partition(TRANSACTION_STATE_TOPIC, part).unwrap();
    let epoch = t.check_coordinator("f").unwrap();

    // Followed elsewhere: the id leaves memory, requests go elsewhere.
    log.become_follower(0, epoch + 1, 7);
    t.follow_leadership_now();
    assert_eq!(t.check_coordinator("f"), Err(ResponseError::NotCoordinator));
    assert!(t.describe("f").is_none());
    assert_eq!(
        t.init_producer_id("f", 60_000, None).await,
        Err(ResponseError::NotCoordinator)
    );
    // A write begun under the old ownership never lands in a new one.
    let stale = t.persist("f", None, epoch).await;
    assert_eq!(stale, Err(ResponseError::NotCoordinator));

    // Led again at a newer epoch: reloaded from the log, at that epoch.
    log.become_leader(0, epoch + 2, &[0], 0);
    t.follow_leadership_now();
    assert_eq!(t.check_coordinator("f"), Ok(epoch + 2));
    let m = t.describe("f").unwrap();
    assert_eq!(
        (m.producer_id, m.producer_epoch),
        (p.producer_id, p.producer_epoch)
    );
    let again = t.init_producer_id("f", 60_000, Some(p)).await.unwrap();
    assert_eq!(again.producer_epoch, p.producer_epoch + 1);
}
