//! A partition log's leader epochs: the epoch its appends are stamped
//! with (set by the cluster layer when this broker leads), the cache of
//! where each epoch began, and OffsetsForLeaderEpoch's answer from it.
//! The cache is updated under the log's lock, in the append that first
//! writes a batch of a new epoch.

use std::sync::atomic::Ordering;

use super::batch;
use super::partition_log::PartitionLog;

impl PartitionLog {
    /// The epoch this broker's appends carry.
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch.load(Ordering::Acquire)
    }

    /// This broker leads the partition at `epoch` (never goes back): as
    /// Kafka's leader does on taking over, the epoch starts at the current
    /// log end, so OffsetForLeaderEpoch answers for it before any append.
    pub fn set_leader_epoch(&self, epoch: i32) {
        if self.leader_epoch.fetch_max(epoch, Ordering::AcqRel) >= epoch {
            return;
        }
        let Ok(inner) = self.lock_open() else { return };
        let leo = inner.log_end_offset();
        let mut cache = self.epochs.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = cache.assign(epoch, leo) {
            tracing::warn!(topic = %self.topic(), partition = self.partition(), error = %e,
                "cannot write the leader epoch checkpoint");
        }
    }

    /// Stamps `bytes` (one batch about to be written at `base_offset`)
    /// with the current leader epoch and records a new epoch's start.
    /// Called with the log's lock held.
    pub(super) fn stamp_epoch(&self, bytes: &mut [u8], base_offset: i64) -> i32 {
        let epoch = self.leader_epoch();
        batch::set_partition_leader_epoch(bytes, epoch);
        let mut cache = self.epochs.lock().unwrap_or_else(|e| e.into_inner());
        if cache.latest_epoch().is_none_or(|e| e < epoch) {
            if let Err(e) = cache.assign(epoch, base_offset) {
                tracing::warn!(topic = %self.topic(), partition = self.partition(), error = %e,
                    "cannot write the leader epoch checkpoint");
            }
        }
        epoch
    }

    /// Where `requested` ended in this log: (epoch, end offset), Kafka's
    /// (-1, -1) when the log holds no epoch at or below it.
    pub fn end_offset_for_epoch(&self, requested: i32) -> (i32, i64) {
        let leo = self.log_end_offset();
        let cache = self.epochs.lock().unwrap_or_else(|e| e.into_inner());
        match cache.latest_epoch() {
            // A log never written and never handed an epoch: the epoch it
            // appends at ends at its end.
            None if requested == self.leader_epoch() => (requested, leo),
            _ => cache.end_offset_for(requested, leo),
        }
    }
}
