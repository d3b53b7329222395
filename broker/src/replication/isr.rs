//! The leader's own writes to its partition key, each a compare-and-swap
//! (KRaft's `AlterPartition` without the round trip through the
//! controller): ISR changes, and a new leader epoch when a restarted
//! leader takes its partitions back. Written only if the key is unchanged
//! since the state the leader acted on, and only while that state names
//! this broker leader, so a deposed leader can never change a partition.
//!
//! It writes the store; it never touches logs.

use crate::cluster::partition_writes::write_partition_state;
use crate::cluster::records::PartitionState;
use crate::cluster::store::{ClusterStore, StoreError};
use crate::cluster::view::PartitionEntry;

/// Writes `isr` for `topic`/`partition` led by `me`. Ok(Some(revision))
/// when written, Ok(None) when the state moved on (the caller re-reads).
pub async fn alter_isr(
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
pub async fn bump_leader_epoch(
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
