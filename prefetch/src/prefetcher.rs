//! `Prefetcher`: the historical read path. Serves reads below the local
//! log start from segment objects, through a shared chunk cache, with
//! read-ahead per reading stream and a GET budget shared by priority
//! classes — all on its own runtime, so object-store latency and catch-up
//! traffic never occupy the broker's request tasks.
//!
//! A read finds the position of its offset in the segment's offset index,
//! then walks the chunks from there, cutting whole batches on their headers
//! (never decoding them) up to `max_bytes`. Each read also moves its
//! stream's read-ahead window: while a stream reads sequentially the window
//! doubles up to `readahead_max_chunks`, and chunks up to its end
//! (following into the next segments) are requested in the background; a
//! jump resets it (`readahead.rs`).

use std::collections::HashMap;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use strata_catalog::RemoteSegment;
use strata_format::batch::BatchHeader;
use strata_format::index;

use crate::budget::GetBudget;
use crate::cache_writeback::CacheWriteback;
use crate::chunk_cache::{self, ChunkCache, ChunkKey};
use crate::classes::{ClassPolicy, PriorityClass};
use crate::config::PrefetchConfig;
use crate::cursor::{ChunkCursor, ChunkSource};
use crate::error::{PrefetchError, SharedError};
use crate::index_cache::IndexCache;
use crate::quota::FetchQuota;
use crate::stats::PrefetchStats;

mod readahead;
use readahead::Stream;

pub use crate::stream_key::StreamKey;

/// One fetch of one partition below the local log start.
#[derive(Debug, Clone)]
pub struct ReadRequest {
    pub stream: StreamKey,
    pub class: PriorityClass,
    /// The segment holding `offset`, then the following remote segments
    /// (where read-ahead may continue).
    pub segments: Vec<RemoteSegment>,
    pub offset: i64,
    pub max_bytes: usize,
    pub min_one: bool,
}

/// A read of a stream, kept after it completes until the stream reads
/// elsewhere.
type ReadOutcome = Option<Result<Bytes, Arc<PrefetchError>>>;

#[derive(Debug)]
struct ParkedRead {
    offset: i64,
    max_bytes: usize,
    min_one: bool,
    started: Instant,
    result: tokio::sync::watch::Receiver<ReadOutcome>,
}

/// Holds the dedicated runtime; shut down without blocking when dropped.
#[derive(Debug)]
struct OwnedRuntime(Option<tokio::runtime::Runtime>);

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

#[derive(Debug)]
pub struct Prefetcher {
    store: Arc<dyn ObjectStore>,
    cfg: PrefetchConfig,
    cache: ChunkCache,
    budget: Arc<GetBudget>,
    indexes: IndexCache,
    streams: Mutex<HashMap<StreamKey, Stream>>,
    /// Bytes of read-ahead held by streams or on its way to them, at most
    /// half the memory cache. Room is reserved when the read-ahead is
    /// requested, not when it arrives: read-ahead that could not be held
    /// would live in the shared cache only, where it can be evicted before
    /// its reader arrives and be fetched twice. Beyond the limit, no
    /// read-ahead is requested and reads fetch the chunks they need.
    held_bytes: AtomicUsize,
    reads: Mutex<HashMap<StreamKey, ParkedRead>>,
    quota: FetchQuota,
    pub stats: Arc<PrefetchStats>,
    handle: tokio::runtime::Handle,
    /// Steady writeback of the disk cache's files (`cache_writeback`).
    _writeback: Option<CacheWriteback>,
    _runtime: OwnedRuntime,
}

impl Prefetcher {
    /// Builds the prefetcher with its own runtime of `cfg.threads` threads.
    pub async fn new(
        store: Arc<dyn ObjectStore>,
        cfg: PrefetchConfig,
        policy: ClassPolicy,
    ) -> Result<Arc<Self>, PrefetchError> {
        let nice = cfg.thread_nice.clamp(0, 19);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(cfg.threads.max(1))
            .thread_name("strata-prefetch")
            .on_thread_start(move || crate::threads::lower_thread_priority(nice))
            .enable_all()
            .build()
            .map_err(PrefetchError::Runtime)?;
        let handle = runtime.handle().clone();
        let (mem, disk, rate, dir) = (
            cfg.memory_cache_bytes,
            cfg.disk_cache_bytes,
            cfg.disk_write_bytes_per_sec,
            cfg.disk_cache_dir.clone(),
        );
        let cache = handle
            .spawn(async move { chunk_cache::build(mem, disk, rate, dir.as_deref()).await })
            .await??;
        let writeback = match (&cfg.disk_cache_dir, cfg.disk_writeback_interval) {
            (Some(dir), Some(every)) if cfg.disk_cache_bytes > 0 => {
                Some(CacheWriteback::start(dir, every, nice).map_err(PrefetchError::Runtime)?)
            }
            _ => None,
        };
        let fetch_rate = cfg.fetch_max_bytes_per_sec;
        Ok(Arc::new(Prefetcher {
            store,
            budget: GetBudget::new(cfg.max_concurrent_gets, cfg.max_bytes_in_flight, policy),
            indexes: IndexCache::new(cfg.index_cache_bytes),
            cfg,
            cache,
            streams: Mutex::new(HashMap::new()),
            held_bytes: AtomicUsize::new(0),
            reads: Mutex::new(HashMap::new()),
            quota: FetchQuota::new(fetch_rate),
            stats: Arc::new(PrefetchStats::default()),
            handle,
            _writeback: writeback,
            _runtime: OwnedRuntime(Some(runtime)),
        }))
    }

    pub fn config(&self) -> &PrefetchConfig {
        &self.cfg
    }

    /// The prefetch runtime (lower-priority threads): the broker also
    /// encodes and writes the responses that carry history there.
    pub fn runtime(&self) -> &tokio::runtime::Handle {
        &self.handle
    }

    pub fn budget(&self) -> &Arc<GetBudget> {
        &self.budget
    }

    /// The byte rate history may be served at.
    pub fn quota(&self) -> &FetchQuota {
        &self.quota
    }

    /// Whole batches from `req.offset` (or the first after it) within
    /// `req.max_bytes`, read on the prefetch runtime.
    ///
    /// A read whose caller stops waiting (the fetch's wait ended) runs to
    /// the end and stays parked for its stream: the client's retry of the
    /// same fetch joins it or takes its result, so progress never depends on
    /// the chunks surviving in the cache until the retry. Bulk reads wait
    /// while the bulk class is paused, and serve nothing, cached or not.
    pub async fn read(self: &Arc<Self>, req: ReadRequest) -> Result<Bytes, PrefetchError> {
        let mut rx = {
            let mut reads = self.reads.lock().unwrap_or_else(|e| e.into_inner());
            if reads.len() > 4096 {
                reads.retain(|_, r| r.started.elapsed() < Duration::from_secs(60));
            }
            match reads.get(&req.stream) {
                // The same fetch again (its earlier answer came too late):
                // join the read, or take its result — unless that failed.
                Some(r)
                    if r.offset == req.offset
                        && r.max_bytes == req.max_bytes
                        && r.min_one == req.min_one
                        && r.result.borrow().as_ref().is_none_or(|x| x.is_ok()) =>
                {
                    r.result.clone()
                }
                _ => {
                    // Everything the read needs is in memory (read-ahead did
                    // its job): answer in the caller's task (the broker's
                    // fetch task on this runtime), without handing the read
                    // to another task and waiting to be woken, which under
                    // load costs a few milliseconds of scheduling per fetch.
                    if !(req.class == PriorityClass::Bulk && self.budget.bulk_paused()) {
                        if let Some(b) = self.read_cached(&req) {
                            reads.remove(&req.stream);
                            return Ok(b);
                        }
                    }
                    let (tx, rx) = tokio::sync::watch::channel(None);
                    reads.insert(
                        req.stream.clone(),
                        ParkedRead {
                            offset: req.offset,
                            max_bytes: req.max_bytes,
                            min_one: req.min_one,
                            started: Instant::now(),
                            result: rx.clone(),
                        },
                    );
                    let me = self.clone();
                    self.handle.spawn(async move {
                        if req.class == PriorityClass::Bulk {
                            me.budget.wait_bulk_resumed().await;
                        }
                        let out = me.clone().read_here(req).await.map_err(Arc::new);
                        let _ = tx.send(Some(out));
                    });
                    rx
                }
            }
        };
        let result = rx
            .wait_for(|r| r.is_some())
            .await
            .map_err(|_| PrefetchError::Stopped)?
            .clone();
        match result {
            Some(Ok(b)) => Ok(b),
            Some(Err(e)) => Err(match e.not_found_key() {
                Some(key) => PrefetchError::NotFound(key.to_string()),
                None => PrefetchError::Shared(e),
            }),
            None => Err(PrefetchError::Stopped),
        }
    }

    /// Counts bytes a fetch actually delivered from remote segments, and how
    /// long it waited for them.
    pub fn delivered(&self, bytes: usize, waited: Duration) {
        self.quota.charge(bytes);
        PrefetchStats::add(&self.stats.reads, 1);
        PrefetchStats::add(&self.stats.bytes_read, bytes as u64);
        PrefetchStats::add(&self.stats.read_wait_micros, waited.as_micros() as u64);
    }

    /// The read, if every index and chunk it needs is in memory (held by the
    /// stream or in the memory cache); never waits. `None`: take the full path.
    fn read_cached(self: &Arc<Self>, req: &ReadRequest) -> Option<Bytes> {
        let seg = req.segments.first()?;
        let idx = self.indexes.get(&seg.index_key)?;
        let start = index::position_for_offset(&idx, req.offset - seg.base_offset);
        let mut cur = ChunkCursor::new(&**self, seg, req.class, start);
        cur.stream = Some(&req.stream);
        cur.cached_only = true;
        let out = futures_util::FutureExt::now_or_never(self.cut_batches(req, &mut cur))?.ok()?;
        let end_chunk = (cur.start + cur.at as u64).saturating_sub(1) / self.chunk_bytes();
        self.advance_stream(req, start / self.chunk_bytes());
        self.finish_stream(&req.stream, (seg.base_offset, end_chunk));
        PrefetchStats::add(&self.stats.memory_reads, 1);
        PrefetchStats::add(&self.stats.cache_hits, cur.hits);
        Some(out)
    }

    async fn read_here(self: Arc<Self>, req: ReadRequest) -> Result<Bytes, PrefetchError> {
        let Some(seg) = req.segments.first() else {
            return Ok(Bytes::new());
        };
        let idx = self.index_object(&seg.index_key).await?;
        let start = index::position_for_offset(&idx, req.offset - seg.base_offset);
        self.advance_stream(&req, start / self.chunk_bytes());
        let mut cur = ChunkCursor::new(&*self, seg, req.class, start);
        cur.stream = Some(&req.stream);
        let result = self.cut_batches(&req, &mut cur).await;
        let end_chunk = (cur.start + cur.at as u64).saturating_sub(1) / self.chunk_bytes();
        self.finish_stream(&req.stream, (seg.base_offset, end_chunk));
        result
    }

    async fn cut_batches(
        &self,
        req: &ReadRequest,
        cur: &mut ChunkCursor<'_, Prefetcher>,
    ) -> Result<Bytes, PrefetchError> {
        let mut total = 0usize;
        while let Some(f) = cur.next().await? {
            if f.last_offset() < req.offset {
                cur.skip(&f);
                continue;
            }
            let fits = total + f.size <= req.max_bytes;
            if !(fits || total == 0 && req.min_one) {
                break;
            }
            cur.keep(&f);
            total += f.size;
            if total >= req.max_bytes {
                break;
            }
        }
        // Batches that lie together in one chunk are served as a slice of
        // it; only a read that spans chunks is copied into one buffer.
        let mut runs = cur.kept();
        Ok(match runs.len() {
            0 => Bytes::new(),
            1 => runs.pop().unwrap_or_default(),
            _ => {
                let mut out = BytesMut::with_capacity(total);
                for r in runs {
                    out.extend_from_slice(&r);
                }
                out.freeze()
            }
        })
    }

    /// The first batch of `seg` whose max timestamp is at or after
    /// `timestamp`, with its bytes, if any.
    pub async fn batch_at_timestamp(
        self: &Arc<Self>,
        seg: RemoteSegment,
        timestamp: i64,
    ) -> Result<Option<(BatchHeader, Bytes)>, PrefetchError> {
        let me = self.clone();
        self.handle
            .spawn(async move {
                let tidx = me.index_object(&seg.time_index_key).await?;
                let rel = index::offset_for_timestamp(&tidx, timestamp);
                let idx = me.index_object(&seg.index_key).await?;
                let start = index::position_for_offset(&idx, rel);
                let mut cur = ChunkCursor::new(&*me, &seg, PriorityClass::Critical, start);
                while let Some(f) = cur.next().await? {
                    if f.max_timestamp >= timestamp {
                        return Ok(Some((f, cur.take(&f))));
                    }
                    cur.skip(&f);
                }
                Ok(None)
            })
            .await?
    }

    /// The bytes of `seg`'s `.txnindex` (its aborted transactions; empty
    /// when it has none), through the index cache.
    pub async fn txn_index(self: &Arc<Self>, seg: &RemoteSegment) -> Result<Bytes, PrefetchError> {
        let Some(key) = seg.txn_index_key.clone() else {
            return Ok(Bytes::new());
        };
        let me = self.clone();
        self.handle
            .spawn(async move { me.index_object(&key).await })
            .await?
    }

    async fn index_object(&self, key: &str) -> Result<Bytes, PrefetchError> {
        if let Some(b) = self.indexes.get(key) {
            return Ok(b);
        }
        let bytes = self.store.get(&Path::from(key)).await?.bytes().await?;
        self.indexes.put(key, bytes.clone());
        Ok(bytes)
    }
}

impl Prefetcher {
    /// Chunk `index` of `seg`: held by `stream`, cached, or one shared GET.
    /// For the read-ahead of stream `ahead_of`: `None` instead of a GET once
    /// that stream no longer waits for the chunk.
    async fn fetch_chunk(
        &self,
        seg: &RemoteSegment,
        index: u64,
        class: PriorityClass,
        stream: Option<&StreamKey>,
        ahead_of: Option<&StreamKey>,
    ) -> Result<Option<Bytes>, PrefetchError> {
        let cb = self.chunk_bytes();
        let start = index * cb;
        if start >= seg.size_bytes {
            return Ok(Some(Bytes::new()));
        }
        if let Some(held) = stream.and_then(|k| self.held(k, (seg.base_offset, index))) {
            PrefetchStats::add(&self.stats.cache_hits, 1);
            return Ok(Some(held));
        }
        let end = (start + cb).min(seg.size_bytes);
        let key = ChunkKey {
            object: seg.log_key.clone(),
            index,
        };
        if let Ok(Some(hit)) = self.cache.get(&key).await {
            PrefetchStats::add(&self.stats.cache_hits, 1);
            return Ok(Some(hit.value().clone()));
        }
        // The slot is taken in the reader's own class before joining (or
        // starting) the shared GET, so a paused or starved class never
        // holds up another class's reader of the same chunk.
        let permit = self.budget.acquire(class, (end - start) as usize).await;
        // Read-ahead that waited (to be polled at all, or for a slot) until
        // its stream read past the chunk: the reader fetched it itself, and
        // the cache may have evicted it since. A GET now would be a second
        // one, and `hold` would throw its bytes away.
        if ahead_of.is_some_and(|k| !self.still_ahead(k, (seg.base_offset, index))) {
            return Ok(None);
        }
        let (store, stats) = (self.store.clone(), self.stats.clone());
        let path = Path::from(seg.log_key.as_str());
        let missed = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let m = missed.clone();
        let entry = self
            .cache
            .get_or_fetch(&key, move || async move {
                m.store(true, std::sync::atomic::Ordering::Relaxed);
                let _permit = permit;
                let t0 = Instant::now();
                let got = store.get_range(&path, start..end).await;
                PrefetchStats::add(&stats.gets, 1);
                PrefetchStats::add(&stats.get_micros, t0.elapsed().as_micros() as u64);
                match got {
                    Ok(b) if b.len() as u64 == end - start => {
                        PrefetchStats::add(&stats.get_bytes, b.len() as u64);
                        Ok(b)
                    }
                    Ok(b) => {
                        PrefetchStats::add(&stats.get_errors, 1);
                        Err(SharedError(Arc::new(PrefetchError::Corrupt {
                            key: path.to_string(),
                            position: start,
                            message: format!("short read: {} of {} bytes", b.len(), end - start),
                        })))
                    }
                    Err(e) => {
                        PrefetchStats::add(&stats.get_errors, 1);
                        Err(SharedError(Arc::new(PrefetchError::from(e))))
                    }
                }
            })
            .await;
        if missed.load(std::sync::atomic::Ordering::Relaxed) {
            PrefetchStats::add(&self.stats.cache_misses, 1);
        } else {
            PrefetchStats::add(&self.stats.cache_hits, 1);
        }
        match entry {
            Ok(e) => Ok(Some(e.value().clone())),
            Err(e) => Err(match e.downcast_ref::<SharedError>() {
                Some(SharedError(shared)) => match &**shared {
                    PrefetchError::NotFound(k) => PrefetchError::NotFound(k.clone()),
                    _ => PrefetchError::Shared(shared.clone()),
                },
                None => PrefetchError::Cache(e),
            }),
        }
    }
}

impl ChunkSource for Prefetcher {
    fn chunk_bytes(&self) -> u64 {
        self.cfg.chunk_bytes.max(4096) as u64
    }

    /// One chunk of a segment object, from the cache or one shared GET.
    async fn chunk(
        &self,
        seg: &RemoteSegment,
        index: u64,
        class: PriorityClass,
        stream: Option<&StreamKey>,
    ) -> Result<Bytes, PrefetchError> {
        let got = self.fetch_chunk(seg, index, class, stream, None).await?;
        Ok(got.unwrap_or_default())
    }

    /// A chunk from the stream's held read-ahead or the memory cache, or
    /// nothing; never waits.
    fn chunk_cached(
        &self,
        seg: &RemoteSegment,
        index: u64,
        stream: Option<&StreamKey>,
    ) -> Option<Bytes> {
        if index * self.chunk_bytes() >= seg.size_bytes {
            return Some(Bytes::new());
        }
        if let Some(held) = stream.and_then(|k| self.held(k, (seg.base_offset, index))) {
            return Some(held);
        }
        let key = ChunkKey {
            object: seg.log_key.clone(),
            index,
        };
        Some(self.cache.memory().get(&key)?.value().clone())
    }
}
