//! `OffsetsLog`: persistence of the group coordinator in the internal
//! `__consumer_offsets` topic, partitioned by group as Kafka does, on a
//! [`CoordinatorLog`]. Offset commits of a transaction are written as
//! part of it (`TxnOffsetCommit`) and replayed pending until its marker.
//!
//! Knows records and logs, not group semantics.

use std::sync::Arc;

use bytes::Bytes;

use super::records::{partition_for, RecordKey};
use strata_cluster::coordinator_log::{CoordinatorLog, CoordinatorWriteError, Replayed};
use strata_storage::log::LogError;
use strata_storage::log_manager::{LogManager, TopicError};

pub use strata_cluster::coordinator_log::PendingWrite;

pub use strata_common::topic_name::OFFSETS_TOPIC;

#[derive(Debug)]
pub(crate) struct OffsetsLog {
    log: CoordinatorLog,
}

/// A record of `__consumer_offsets` as replay finds it.
#[derive(Debug)]
pub(crate) enum OffsetsRecord {
    /// (key, value; None = tombstone), and the producer whose open
    /// transaction wrote it, if any.
    Record(RecordKey, Option<Bytes>, Option<i64>),
    /// A transaction marker: the producer's pending offsets are
    /// committed or dropped.
    Marker { producer_id: i64, commit: bool },
}

impl OffsetsLog {
    /// Opens the internal topic (a single broker creates it on first
    /// start; in a cluster the controller does, in the store).
    pub fn open(
        logs: Arc<LogManager>,
        partitions: i32,
        clustered: bool,
    ) -> Result<Self, TopicError> {
        Ok(OffsetsLog {
            log: CoordinatorLog::open(logs, OFFSETS_TOPIC, partitions, clustered)?,
        })
    }

    /// Which partitions are coordinated here, and the loading protocol.
    pub(crate) fn coordination(&self) -> &CoordinatorLog {
        &self.log
    }

    pub(crate) fn partition_of(&self, group: &str) -> i32 {
        partition_for(group, self.log.partitions())
    }

    /// Appends `records` (key, value; None = tombstone) for one group.
    pub fn append(
        &self,
        group: &str,
        records: &[(RecordKey, Option<Bytes>)],
    ) -> Result<PendingWrite, CoordinatorWriteError> {
        self.append_for(group, records, None)
    }

    /// [`Self::append`] as part of a producer's transaction (id, epoch).
    pub(crate) fn append_for(
        &self,
        group: &str,
        records: &[(RecordKey, Option<Bytes>)],
        producer: Option<(i64, i16)>,
    ) -> Result<PendingWrite, CoordinatorWriteError> {
        let raw: Vec<_> = records
            .iter()
            .map(|(k, v)| (k.encode(), v.clone()))
            .collect();
        self.log.append(self.partition_of(group), &raw, producer)
    }

    /// Every record and marker of `partition`, in log order.
    pub fn replay_partition(
        &self,
        partition: i32,
        mut apply: impl FnMut(OffsetsRecord),
    ) -> Result<usize, LogError> {
        self.log.replay_partition(partition, |r| match r {
            Replayed::Record {
                partition,
                transactional_producer,
                key,
                value,
            } => match RecordKey::decode(key) {
                Ok(k) => apply(OffsetsRecord::Record(k, value, transactional_producer)),
                Err(e) => {
                    tracing::warn!(partition, error = %e, "skipping unknown record in __consumer_offsets")
                }
            },
            Replayed::Marker {
                producer_id,
                commit,
            } => apply(OffsetsRecord::Marker {
                producer_id,
                commit,
            }),
        })
    }
}
