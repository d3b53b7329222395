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

    /// The partition leads from `epoch` on: as Kafka's leader does on
    /// taking over, the epoch starts at the current log end in the cache
    /// (if newer than the cache's last).
    pub(crate) fn begin_leader_epoch(&self, epoch: i32) {
        let inner = self.lock();
        let leo = inner.log_end_offset();
        self.leader_epoch.fetch_max(epoch, Ordering::AcqRel);
        let mut cache = self.epochs.lock().unwrap_or_else(|e| e.into_inner());
        if cache.latest_epoch().is_none_or(|e| e < epoch) {
            if let Err(e) = cache.assign(epoch, leo) {
                tracing::warn!(topic = %self.topic(), partition = self.partition(), error = %e,
                    "cannot write the leader epoch checkpoint");
            }
        }
        drop(cache);
        drop(inner);
    }

    /// The partition follows the leadership at `epoch`: the log's epoch
    /// rises with it, the cache is left to the leader's batches.
    pub(crate) fn note_followed_epoch(&self, epoch: i32) {
        self.leader_epoch.fetch_max(epoch, Ordering::AcqRel);
    }

    /// Stamps `bytes` (one batch about to be written at `base_offset`)
    /// with the leader epoch `epoch` and records a new epoch's start.
    /// Called with the log's lock held.
    pub(super) fn stamp_epoch(&self, bytes: &mut [u8], base_offset: i64, epoch: i32) -> i32 {
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

    /// Where the current leader epoch began (0 for a log without epochs):
    /// a follower joins the ISR only once it holds that much.
    pub(crate) fn epoch_start_offset(&self) -> i64 {
        let cache = self.epochs.lock().unwrap_or_else(|e| e.into_inner());
        cache.entries().last().map_or(0, |e| e.start_offset)
    }

    /// The leader epoch of the batch holding `offset`, by the cache (0
    /// for a log without epochs).
    pub fn epoch_of_offset(&self, offset: i64) -> i32 {
        let cache = self.epochs.lock().unwrap_or_else(|e| e.into_inner());
        let entries = cache.entries();
        let i = entries.partition_point(|e| e.start_offset <= offset);
        match i {
            0 => entries.first().map_or(0, |e| e.epoch),
            _ => entries[i - 1].epoch,
        }
    }

    /// The newest epoch among the log's batches (what a follower asks the
    /// leader about), if any.
    pub fn latest_epoch_in_log(&self) -> Option<i32> {
        let cache = self.epochs.lock().unwrap_or_else(|e| e.into_inner());
        cache.latest_epoch()
    }
}
