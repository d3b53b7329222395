//! The log's ends and its high watermark: the log end (every append),
//! the durable end (every flush round) and the high watermark, which is
//! the least of the durable end and a bound the partition above sets
//! (docs/durability.md, docs/partition-layer.md).
//!
//! The log knows nothing of replicas. The partition (`crate::partition`)
//! works out from the ISR and its followers' progress how far the high
//! watermark may go, and hands that bound down; the log moves the high
//! watermark when either its durable end or the bound rises, under one
//! lock, and never backwards except on a truncation. A single broker's
//! partition sets no bound, so its high watermark is its durable end.

use tokio::sync::watch;

use super::partition_log::{Ends, LogInner, PartitionLog};

impl PartitionLog {
    pub(super) fn ends(&self) -> std::sync::MutexGuard<'_, Ends> {
        self.ends.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The end of the fsynced prefix: what a follower fetches from.
    pub fn durable_end_offset(&self) -> i64 {
        self.ends().durable_end
    }

    /// Wakes on every append (replica fetches wait for the log end, not
    /// the high watermark).
    pub fn subscribe_log_end(&self) -> watch::Receiver<i64> {
        self.log_end.subscribe()
    }

    /// Everything up to `end` is fsynced. Called with the log's lock held
    /// (so a truncation cannot slip between the flush and this).
    pub(super) fn set_durable_end(&self, inner: &LogInner, end: i64) {
        let mut ends = self.ends();
        ends.durable_end = ends.durable_end.max(end.min(inner.log_end_offset()));
        self.advance_high_watermark(&ends);
    }

    /// The partition above lets the high watermark go as far as `bound`
    /// (its in-sync replicas' ends, or its leader's high watermark). The
    /// high watermark still never goes back.
    pub(crate) fn bound_high_watermark(&self, bound: i64) {
        let mut ends = self.ends();
        ends.bound = bound;
        self.advance_high_watermark(&ends);
    }

    /// Moves the high watermark to the least of the durable end and the
    /// bound; it never goes back (truncation lowers it explicitly, under
    /// the same lock).
    fn advance_high_watermark(&self, ends: &Ends) {
        let target = ends.durable_end.min(ends.bound);
        self.high_watermark.send_if_modified(|hw| {
            if target > *hw {
                *hw = target;
                true
            } else {
                false
            }
        });
    }

    /// In a cluster, before the store assigns a role: the high watermark
    /// falls back to the log start and stays there until a role bounds it
    /// again (what the replicas hold is learnt again from the leader, so a
    /// restarted broker never shows records no follower has).
    pub(crate) fn reset_high_watermark_to_start(&self) {
        let inner = self.lock();
        let start = inner.log_start_offset;
        let mut ends = self.ends();
        ends.bound = start;
        self.high_watermark.send_replace(start);
        drop(ends);
        drop(inner);
    }

    /// After a truncation to `end` (the log's lock held): the durable end
    /// and high watermark go back with the log.
    pub(super) fn reset_ends_after_truncation(&self, _inner: &LogInner, end: i64) {
        let mut ends = self.ends();
        // The truncation fsynced what it kept (the cut segment, the
        // directory; earlier segments were sealed): the log is durable to
        // its new end, also when an emptied log now starts above it.
        ends.durable_end = end;
        ends.bound = ends.bound.min(end);
        self.high_watermark.send_if_modified(|hw| {
            if *hw > end {
                *hw = end;
                true
            } else {
                false
            }
        });
        drop(ends);
        self.log_end.send_replace(end);
    }
}
