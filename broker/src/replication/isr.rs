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

use std::sync::Arc;

use crate::cluster::partition_writes::write_partition_state;
use crate::cluster::records::{encode, report_key, PartitionState, ReplicaReport};
use crate::cluster::store::{ClusterStore, Op, StoreError};
use crate::cluster::view::PartitionEntry;
use crate::log::PartitionLog;

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

/// A fenced quorum partition's replica (following no one at `epoch`, so
/// its log no longer changes) fsyncs its log and reports what it holds
/// for the controller's choice (docs/quorum-acks.md).
#[allow(clippy::too_many_arguments)]
pub async fn report_log(
    store: &dyn ClusterStore,
    topic: &str,
    partition: i32,
    me: i32,
    epoch: i32,
    broker_epoch: i64,
    topic_id: uuid::Uuid,
    log: Arc<PartitionLog>,
) -> Result<ReplicaReport, String> {
    let synced = log.clone();
    tokio::task::spawn_blocking(move || synced.flush())
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("fsync failed: {e}"))?;
    let led = log.led_epoch();
    let report = ReplicaReport {
        leader_epoch: epoch,
        broker_epoch,
        last_epoch: log.latest_epoch_in_log().unwrap_or(-1),
        log_end: log.durable_end_offset(),
        high_watermark: log.high_watermark(),
        led_epoch: led.map_or(-1, |(e, _)| e),
        epoch_start: led.map_or(0, |(_, s)| s),
        topic_id,
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
