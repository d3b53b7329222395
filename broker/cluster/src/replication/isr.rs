//! The leader's own writes to its partition key, each a compare-and-swap
//! (KRaft's `AlterPartition` without the round trip through the
//! controller): ISR changes, and a new leader epoch when a restarted
//! leader takes its partitions back. Written only if the key is unchanged
//! since the state the leader acted on, and only while that state names
//! this broker leader, so a deposed leader can never change a partition.
//! Also a quorum partition's report of this replica's log while fenced
//! (its own key, docs/quorum-acks.md).
//!
//! It writes the store; of a log it only fsyncs one to report it.

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::cluster::partition_writes::write_partition_state;
use crate::cluster::records::{encode, report_key, Fencing, PartitionState, ReplicaReport};
use crate::cluster::store::{ClusterStore, Op, StoreError};
use crate::cluster::view::PartitionEntry;
use strata_storage::partition::Partition;

/// Writes `isr` for `topic`/`partition` led by `me`. Ok(Some(revision))
/// when written, Ok(None) when the state moved on (the caller re-reads).
pub(crate) async fn alter_isr(
    store: &dyn ClusterStore,
    topic: &str,
    partition: i32,
    current: &PartitionEntry,
    me: i32,
    isr: Vec<i32>,
) -> Result<Option<i64>, StoreError> {
    if current.state.leader != me || isr.is_empty() || !isr.contains(&me) {
        return Ok(None);
    }
    let next = PartitionState {
        isr,
        ..current.state.clone()
    };
    write_if_unchanged(store, topic, partition, current, next).await
}

/// A leader that restarted (its log lost whatever it had not fsynced)
/// leads at a new epoch, as Kafka's leader does after re-registering, so
/// that followers truncate what it no longer has by epoch. Ok(true) when
/// written.
pub(crate) async fn bump_leader_epoch(
    store: &dyn ClusterStore,
    topic: &str,
    partition: i32,
    current: &PartitionEntry,
    me: i32,
) -> Result<bool, StoreError> {
    if current.state.leader != me {
        return Ok(false);
    }
    let next = PartitionState {
        leader_epoch: current.state.leader_epoch + 1,
        ..current.state.clone()
    };
    Ok(write_if_unchanged(store, topic, partition, current, next)
        .await?
        .is_some())
}

/// What a leader whose log is not hydrated (a replaced disk, a log that
/// restarted at the bucket's end) hands its partition to, at the next
/// epoch, instead of leading without what it acknowledged: on a quorum
/// topic a fence (its report abstains, the controller chooses from the
/// others' reports); otherwise the first live in-sync peer (it holds every
/// acknowledged record: the high watermark was the minimum over the ISR),
/// or no leader until one comes back, and this broker leaves the ISR.
/// None: it is the only in-sync replica, so it leads with what it has
/// (what the bucket holds).
pub fn step_down_state(
    state: &PartitionState,
    me: i32,
    quorum: bool,
    live: &BTreeSet<i32>,
    draining: &BTreeSet<i32>,
) -> Option<PartitionState> {
    if state.leader != me || !state.isr.iter().any(|id| *id != me) {
        return None;
    }
    let mut next = state.clone();
    next.leader_epoch = state.leader_epoch + 1;
    if quorum {
        next.leader = -1;
        next.fencing = Some(Fencing {
            previous_leader: me,
            previous_broker_epoch: None,
            preferred: None,
        });
        return Some(next);
    }
    let peer = |staying: bool| {
        state.replicas.iter().copied().find(|id| {
            *id != me
                && state.isr.contains(id)
                && live.contains(id)
                && (!staying || !draining.contains(id))
        })
    };
    // No live peer: offline, as the controller leaves a partition whose
    // in-sync replicas are all down; it elects the first to come back.
    next.leader = peer(true).or_else(|| peer(false)).unwrap_or(-1);
    next.isr.retain(|id| *id != me);
    Some(next)
}

/// Writes [`step_down_state`] if the key still holds `current`. Ok(true)
/// when written.
pub(crate) async fn step_down(
    store: &dyn ClusterStore,
    topic: &str,
    partition: i32,
    current: &PartitionEntry,
    next: PartitionState,
) -> Result<bool, StoreError> {
    Ok(write_if_unchanged(store, topic, partition, current, next)
        .await?
        .is_some())
}

/// A fenced quorum partition's replica (following no one at `epoch`, so
/// its log no longer changes) fsyncs its log and reports what it holds
/// for the controller's choice (docs/quorum-acks.md).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn report_log(
    store: &dyn ClusterStore,
    topic: &str,
    partition: i32,
    me: i32,
    epoch: i32,
    broker_epoch: i64,
    topic_id: uuid::Uuid,
    replica: Arc<Partition>,
) -> Result<ReplicaReport, String> {
    let log = replica.log().clone();
    let synced = log.clone();
    tokio::task::spawn_blocking(move || synced.flush())
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("fsync failed: {e}"))?;
    let led = replica.led_epoch();
    let report = ReplicaReport {
        leader_epoch: epoch,
        broker_epoch,
        last_epoch: log.latest_epoch_in_log().unwrap_or(-1),
        log_end: log.durable_end_offset(),
        high_watermark: log.high_watermark(),
        led_epoch: led.map_or(-1, |(e, _)| e),
        epoch_start: led.map_or(0, |(_, s)| s),
        topic_id,
        abstains: !log.hydrated(),
    };
    store
        .txn(
            Vec::new(),
            vec![Op::put(report_key(topic, partition, me), encode(&report))],
        )
        .await
        .map_err(|e| e.to_string())?;
    Ok(report)
}

/// Writes `next` (its partition epoch bumped) if the key still holds
/// `current`: Some(store revision) when written.
async fn write_if_unchanged(
    store: &dyn ClusterStore,
    topic: &str,
    partition: i32,
    current: &PartitionEntry,
    mut next: PartitionState,
) -> Result<Option<i64>, StoreError> {
    next.partition_epoch = current.state.partition_epoch + 1;
    write_partition_state(store, topic, partition, current.mod_revision, None, &next).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(leader: i32, isr: &[i32]) -> PartitionState {
        PartitionState {
            replicas: vec![1, 2, 3],
            leader,
            leader_epoch: 4,
            isr: isr.to_vec(),
            partition_epoch: 9,
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            fencing: None,
        }
    }

    fn set(ids: &[i32]) -> BTreeSet<i32> {
        ids.iter().copied().collect()
    }

    #[test]
    fn a_leader_without_its_log_hands_over_to_an_in_sync_peer_or_fences() {
        let s = state(1, &[1, 2, 3]);
        let next = step_down_state(&s, 1, false, &set(&[1, 2, 3]), &set(&[2])).unwrap();
        assert_eq!(
            (next.leader, next.leader_epoch, next.isr),
            (3, 5, vec![2, 3])
        );
        let next = step_down_state(&s, 1, false, &set(&[1, 2]), &set(&[2])).unwrap();
        assert_eq!(next.leader, 2, "a draining peer rather than none");
        assert_eq!(
            step_down_state(&state(1, &[1]), 1, false, &set(&[1, 2]), &set(&[])),
            None
        );
        assert_eq!(
            step_down_state(&s, 2, false, &set(&[1, 2, 3]), &set(&[])),
            None
        );
        assert_eq!(
            step_down_state(&state(1, &[1]), 1, true, &set(&[1, 2]), &set(&[])),
            None
        );
        // In-sync peers, none live: offline until one is back, without it.
        let offline = step_down_state(&s, 1, false, &set(&[1]), &set(&[])).unwrap();
        assert_eq!(
            (offline.leader, offline.leader_epoch, offline.isr),
            (-1, 5, vec![2, 3])
        );
        let fenced = step_down_state(&s, 1, true, &set(&[1, 2, 3]), &set(&[])).unwrap();
        assert_eq!(
            (fenced.leader, fenced.leader_epoch, fenced.isr),
            (-1, 5, vec![1, 2, 3])
        );
        assert_eq!(
            fenced.fencing,
            Some(Fencing {
                previous_leader: 1,
                previous_broker_epoch: None,
                preferred: None
            })
        );
    }
}
