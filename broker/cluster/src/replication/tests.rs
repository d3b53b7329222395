//! Unit tests of the replication module's pure parts.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::fetcher::{divergence_point, write_fetched, Fetched};
use strata_common::config::{BrokerConfig, TopicConfig};
use strata_storage::log::batch::{self, testing};
use strata_storage::log::partition_log::{PartitionLog, SharedConfig};
use strata_storage::log::read::Isolation;
use strata_storage::partition::Partition;

fn two_logs() -> (tempfile::TempDir, Arc<Partition>, Arc<Partition>) {
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerConfig::load(None, &[]).unwrap();
    let cfg = SharedConfig::new(TopicConfig::resolve(&broker, &BTreeMap::new()));
    let leader = PartitionLog::create(
        &dir.path().join("a"),
        "t",
        0,
        cfg.clone(),
        strata_common::clock::system(),
    )
    .unwrap();
    let follower = PartitionLog::create(
        &dir.path().join("b"),
        "t",
        0,
        cfg,
        strata_common::clock::system(),
    )
    .unwrap();
    (dir, Partition::new(leader), Partition::new(follower))
}

fn append(log: &Partition, b: &[u8]) {
    let h = batch::validate_all(b).unwrap();
    log.append(b, &h).unwrap();
}

fn replica_read(log: &Partition, from: i64) -> Vec<u8> {
    log.log()
        .read_below(from, 1 << 20, true, Isolation::LogEnd)
        .unwrap()
        .records
        .to_vec()
}

#[test]
fn the_divergence_point_follows_kafkas_rule() {
    let (_d, leader, follower) = two_logs();
    leader.become_leader(1, 1, &[1, 2], 0);
    append(&leader, &testing::batch(5, 10, 1_000));
    leader.become_leader(1, 2, &[1, 2], 0);
    append(&leader, &testing::batch(5, 10, 1_000));
    follower.become_follower(2, 2, 1);
    follower
        .append_as_follower(&replica_read(&leader, 0), 2)
        .unwrap();
    // The leader says epoch 2 ended at 7: the follower keeps 7.
    assert_eq!(divergence_point(follower.log(), 2, 7), 7);
    // The leader knows only epoch 1, ending at 5: the follower's epoch 2
    // records are not the leader's.
    assert_eq!(divergence_point(follower.log(), 1, 5), 5);
    // Never past the follower's own end.
    assert_eq!(divergence_point(follower.log(), 2, 50), 10);
    // Unknown: back to the high watermark.
    assert_eq!(
        divergence_point(follower.log(), -1, -1),
        follower.log().high_watermark()
    );
}

#[test]
fn a_follower_without_the_leaders_epoch_goes_back_to_its_own_end_of_it() {
    // Follower epochs {0: 0, 2: 5}, log end 20; the leader never had
    // epoch 2 and answers for epoch 1 (ending at 30): the follower's
    // epoch-2 records are not the leader's, so it keeps only 0..5.
    let (_d, leader, follower) = two_logs();
    leader.become_leader(1, 0, &[1, 2], 0);
    append(&leader, &testing::batch(5, 10, 1_000));
    leader.become_leader(1, 2, &[1, 2], 0);
    append(&leader, &testing::batch(15, 10, 1_000));
    follower.become_follower(2, 2, 1);
    follower
        .append_as_follower(&replica_read(&leader, 0), 2)
        .unwrap();
    assert_eq!(follower.log().log_end_offset(), 20);
    assert_eq!(divergence_point(follower.log(), 1, 30), 5);
    // Nothing at or below the leader's epoch: back to the log start.
    let (_d2, _l2, empty_epochs) = two_logs();
    empty_epochs.become_follower(2, 3, 1);
    let (_d3, other, _f3) = two_logs();
    other.become_leader(1, 3, &[1], 0);
    append(&other, &testing::batch(4, 10, 1_000));
    empty_epochs
        .append_as_follower(&replica_read(&other, 0), 3)
        .unwrap();
    assert_eq!(divergence_point(empty_epochs.log(), 1, 30), 0);
}

#[test]
fn one_response_is_written_whole_and_made_durable_before_the_next_fetch() {
    // Two partitions of one leader in one response: both appended and
    // fsynced (the durable end is what the next fetch reports), both take
    // the leader's high watermark; a partition refused (stale epoch) does
    // not hold back the other.
    let (_d, leader0, follower0) = two_logs();
    let (_d1, leader1, follower1) = two_logs();
    for (l, f) in [(&leader0, &follower0), (&leader1, &follower1)] {
        l.become_leader(1, 4, &[1, 2], 0);
        append(l, &testing::batch(10, 10, 1_000));
        f.become_follower(2, 4, 1);
    }
    let part = |key: i32, log: &Arc<Partition>, leader: &Partition, epoch: i32| Fetched {
        key: ("t".to_string(), key),
        partition: log.clone(),
        epoch,
        records: bytes::Bytes::from(replica_read(leader, 0)),
        high_watermark: 6,
        log_start_offset: 0,
    };
    let written = write_fetched(
        vec![
            part(0, &follower0, &leader0, 4),
            part(1, &follower1, &leader1, 4),
        ],
        false,
    );
    assert!(written.iter().all(|(_, _, r)| r.is_ok()), "{written:?}");
    for f in [&follower0, &follower1] {
        assert_eq!(f.log().log_end_offset(), 10);
        assert_eq!(f.log().durable_end_offset(), 10);
        assert_eq!(f.log().high_watermark(), 6);
    }
    append(&leader0, &testing::batch(5, 10, 1_000));
    append(&leader1, &testing::batch(5, 10, 1_000));
    let stale = Fetched {
        epoch: 3,
        ..part(0, &follower0, &leader0, 3)
    };
    let written = write_fetched(vec![stale, part(1, &follower1, &leader1, 4)], false);
    assert!(
        written[0].2.is_err(),
        "an older leadership's records are refused"
    );
    assert!(written[1].2.is_ok());
    assert_eq!(follower0.log().durable_end_offset(), 10);
    assert_eq!(follower1.log().durable_end_offset(), 15);
    // The leader's log start moved (DeleteRecords): the follower follows,
    // as far as its own high watermark.
    let moved = Fetched {
        records: bytes::Bytes::new(),
        log_start_offset: 4,
        ..part(1, &follower1, &leader1, 4)
    };
    let written = write_fetched(vec![moved], false);
    assert!(written[0].2.is_ok());
    assert_eq!(follower1.log().log_start_offset(), 4);
}
