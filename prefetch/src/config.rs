//! Settings of the historical read path (broker names in parentheses; see
//! `docs/prefetch.md` for how the defaults were chosen).

use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct PrefetchConfig {
    /// Size of one ranged GET and one cache entry (`remote.fetch.chunk.bytes`).
    pub chunk_bytes: usize,
    /// GETs in flight at once, all streams together
    /// (`remote.fetch.max.concurrent.gets`).
    pub max_concurrent_gets: usize,
    /// Bytes of GETs in flight at once (`remote.fetch.max.bytes.in.flight`).
    pub max_bytes_in_flight: usize,
    /// Read-ahead window of a stream that just turned sequential, in chunks.
    pub readahead_min_chunks: usize,
    /// Largest read-ahead window (`remote.fetch.readahead.max.chunks`; 0:
    /// no read-ahead).
    pub readahead_max_chunks: usize,
    /// Memory for cached chunks (`remote.fetch.cache.memory.bytes`).
    pub memory_cache_bytes: usize,
    /// Local disk for cached chunks (`remote.fetch.cache.disk.bytes`; 0: none).
    pub disk_cache_bytes: usize,
    /// Most bytes per second written into the disk cache
    /// (`remote.fetch.cache.disk.write.bytes.per.second`; 0: no limit).
    /// Chunks evicted from memory beyond it are dropped, not written: a
    /// catch-up must not load the disk the log's fsyncs need.
    pub disk_write_bytes_per_sec: usize,
    /// How often the disk cache's dirty pages are sent to disk
    /// (`remote.fetch.cache.disk.writeback.ms`; `None`: left to the kernel's
    /// flusher, which lets them pile up for 30 s and then writes them in
    /// one burst the log's fsyncs queue behind).
    pub disk_writeback_interval: Option<std::time::Duration>,
    /// Directory of the disk cache (`remote.fetch.cache.dir`; by default
    /// `<data-dir>/remote-cache`).
    pub disk_cache_dir: Option<PathBuf>,
    /// Threads of the prefetch runtime (`remote.fetch.threads`).
    pub threads: usize,
    /// Scheduling niceness of those threads, 0 to 19
    /// (`remote.fetch.threads.nice`): when CPU runs short, the broker's
    /// request threads (producers, tail readers) go first.
    pub thread_nice: i32,
    /// Memory for cached segment indexes (`remote.log.index.cache.total.size.bytes`).
    pub index_cache_bytes: usize,
    /// Most bytes per second served from history to all clients together
    /// (`remote.log.manager.fetch.max.bytes.per.second`; 0: no limit).
    pub fetch_max_bytes_per_sec: u64,
}

impl Default for PrefetchConfig {
    fn default() -> Self {
        PrefetchConfig {
            chunk_bytes: 4 << 20,
            max_concurrent_gets: 32,
            max_bytes_in_flight: 256 << 20,
            readahead_min_chunks: 2,
            readahead_max_chunks: 16,
            memory_cache_bytes: 256 << 20,
            disk_cache_bytes: 0,
            disk_write_bytes_per_sec: 32 << 20,
            disk_writeback_interval: Some(std::time::Duration::from_millis(100)),
            disk_cache_dir: None,
            threads: 2,
            thread_nice: 10,
            index_cache_bytes: 64 << 20,
            fetch_max_bytes_per_sec: 0,
        }
    }
}
