//! The log cleaner's state for one partition's log, kept beside the log
//! by the log manager (Kafka's `LogCleanerManager` keeps its own per
//! partition too): whether a cleaner thread holds the log, the counters
//! `/metrics` reads (`strata_log_cleaner_*`), and the bucket's part of a
//! tiered log, which a pass covers too. The log itself knows none of it:
//! a pass is handed the bucket's part (`cleaner.rs`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use super::tiered_part::TieredPart;

#[derive(Debug, Default)]
pub struct CleanerState {
    /// A cleaner thread holds this log (`cleaner_threads.rs`).
    cleaning: AtomicBool,
    /// What the passes did.
    pub stats: CleanerStats,
    /// The bucket's part, for compaction of a tiered log
    /// (`cleaner_remote.rs`); None until tiering attaches it.
    tiered_part: RwLock<Option<Arc<dyn TieredPart>>>,
}

impl CleanerState {
    /// Attaches the bucket's side of the log: from now on a cleaning pass
    /// covers the remote segments too.
    pub fn attach_tiered_part(&self, part: Arc<dyn TieredPart>) {
        *self.tiered_part.write().unwrap_or_else(|e| e.into_inner()) = Some(part);
    }

    pub fn tiered_part(&self) -> Option<Arc<dyn TieredPart>> {
        self.tiered_part
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Takes the log for one thread's pass: false if another holds it.
    pub(crate) fn try_hold(&self) -> bool {
        !self.cleaning.swap(true, Ordering::AcqRel)
    }

    pub(crate) fn release(&self) {
        self.cleaning.store(false, Ordering::Release);
    }
}

#[derive(Debug, Default)]
pub struct CleanerStats {
    /// Passes that rewrote something or found nothing to drop.
    pub passes: AtomicU64,
    /// Passes that failed (the log was left as it was).
    pub errors: AtomicU64,
    /// Bytes the passes read (the dirty section for the map, then every
    /// segment rewritten), and wrote.
    pub bytes_read: AtomicU64,
    pub bytes_written: AtomicU64,
    pub records_removed: AtomicU64,
    /// Remote segments replaced by a cleaned version or removed.
    pub remote_segments_replaced: AtomicU64,
}
