//! Counters of the historical read path, for `/metrics`.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct PrefetchStats {
    /// Record bytes returned to fetches from remote segments.
    pub bytes_read: AtomicU64,
    /// GETs issued to the object store, their bytes and total latency.
    pub gets: AtomicU64,
    pub get_bytes: AtomicU64,
    pub get_micros: AtomicU64,
    pub get_errors: AtomicU64,
    /// Chunk lookups answered by the cache / needing a GET.
    pub cache_hits: AtomicU64,
    pub cache_misses: AtomicU64,
    /// Chunks requested ahead of readers.
    pub readahead_chunks: AtomicU64,
    /// Fetches served from remote segments, and how long they waited.
    pub reads: AtomicU64,
    pub read_wait_micros: AtomicU64,
    /// Reads answered from memory on the caller's thread (no GET, no wait).
    pub memory_reads: AtomicU64,
}

impl PrefetchStats {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }
    pub fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}
