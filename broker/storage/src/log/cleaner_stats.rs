//! Counters of the log cleaner for one partition, for `/metrics`
//! (`strata_log_cleaner_*`). Only counts: the cleaner (`cleaner.rs`)
//! updates them, the admin HTTP server reads them.

use std::sync::atomic::AtomicU64;

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
