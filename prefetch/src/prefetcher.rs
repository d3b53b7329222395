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
//! jump resets it.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use strata_catalog::RemoteSegment;

use crate::batch_frame::Frame;
use crate::budget::GetBudget;
use crate::chunk_cache::{self, ChunkCache, ChunkKey};
use crate::classes::{ClassPolicy, PriorityClass};
use crate::config::PrefetchConfig;
use crate::cursor::ChunkCursor;
use crate::error::PrefetchError;
use crate::index;
use crate::index_cache::IndexCache;
use crate::quota::FetchQuota;
use crate::stats::PrefetchStats;

/// Who reads: consumer group (or client), topic, partition.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StreamKey {
    pub reader: String,
    pub topic: String,
    pub partition: i32,
}

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
/// elsewhere: (`true`, key) is a NotFound.
type ReadOutcome = Option<Result<Bytes, (bool, String)>>;

#[derive(Debug)]
struct ParkedRead {
    offset: i64,
    max_bytes: usize,
    min_one: bool,
    started: Instant,
    result: tokio::sync::watch::Receiver<ReadOutcome>,
}

#[derive(Debug)]
struct Stream {
    /// First and last (segment base offset, chunk) of the previous read.
    last_start: (i64, u64),
    last_end: (i64, u64),
    window: usize,
    /// Read-ahead was requested up to here (inclusive).
    ahead_to: Option<(i64, u64)>,
    /// Read-ahead chunks that arrived, held until the stream reads past
    /// them: under LRU, the chunks every stream consumed meanwhile are newer
    /// than read-ahead fetched a while ago, so the shared cache alone would
    /// evict read-ahead before its reader arrives (and fetch it twice).
    held: BTreeMap<(i64, u64), Bytes>,
    used: Instant,
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
            .on_thread_start(move || lower_thread_priority(nice))
            .enable_all()
            .build()
            .map_err(|e| PrefetchError::Runtime(e.to_string()))?;
        let handle = runtime.handle().clone();
        let (mem, disk, rate, dir) = (
            cfg.memory_cache_bytes,
            cfg.disk_cache_bytes,
            cfg.disk_write_bytes_per_sec,
            cfg.disk_cache_dir.clone(),
        );
        let cache = handle
            .spawn(async move { chunk_cache::build(mem, disk, rate, dir.as_deref()).await })
            .await
            .map_err(|e| PrefetchError::Runtime(e.to_string()))??;
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
            _runtime: OwnedRuntime(Some(runtime)),
        }))
    }

    pub fn config(&self) -> &PrefetchConfig {
        &self.cfg
    }

    pub fn budget(&self) -> &Arc<GetBudget> {
        &self.budget
    }

    /// The byte rate history may be served at.
    pub fn quota(&self) -> &FetchQuota {
        &self.quota
    }

    /// Sum of the read-ahead windows of streams active in the last minute.
    pub fn readahead_depth(&self) -> usize {
        let streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        streams
            .values()
            .filter(|s| s.used.elapsed() < Duration::from_secs(60))
            .map(|s| s.window)
            .sum()
    }

    /// Bytes of read-ahead held by streams or on its way to them.
    pub fn readahead_held_bytes(&self) -> usize {
        self.held_bytes.load(Ordering::Relaxed)
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
                    // its job): answer here, without a trip through the
                    // prefetch runtime and back, which under load costs a
                    // few milliseconds of scheduling per fetch.
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
                        let out = me.clone().read_here(req).await.map_err(|e| match e {
                            PrefetchError::NotFound(k) => (true, k),
                            other => (false, other.to_string()),
                        });
                        let _ = tx.send(Some(out));
                    });
                    rx
                }
            }
        };
        let result = rx
            .wait_for(|r| r.is_some())
            .await
            .map_err(|e| PrefetchError::Runtime(e.to_string()))?
            .clone();
        match result {
            Some(Ok(b)) => Ok(b),
            Some(Err((true, key))) => Err(PrefetchError::NotFound(key)),
            Some(Err((false, msg))) => Err(PrefetchError::Fetch(msg)),
            None => Err(PrefetchError::Runtime("read ended without a result".into())),
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
        let mut cur = ChunkCursor::new(self, seg, req.class, start);
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
        let mut cur = ChunkCursor::new(&self, seg, req.class, start);
        cur.stream = Some(&req.stream);
        let result = self.cut_batches(&req, &mut cur).await;
        let end_chunk = (cur.start + cur.at as u64).saturating_sub(1) / self.chunk_bytes();
        self.finish_stream(&req.stream, (seg.base_offset, end_chunk));
        result
    }

    async fn cut_batches(
        &self,
        req: &ReadRequest,
        cur: &mut ChunkCursor<'_>,
    ) -> Result<Bytes, PrefetchError> {
        let mut total = 0usize;
        while let Some(f) = cur.next().await? {
            if f.last_offset < req.offset {
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
    ) -> Result<Option<(Frame, Bytes)>, PrefetchError> {
        let me = self.clone();
        self.handle
            .spawn(async move {
                let tidx = me.index_object(&seg.time_index_key).await?;
                let rel = index::offset_for_timestamp(&tidx, timestamp);
                let idx = me.index_object(&seg.index_key).await?;
                let start = index::position_for_offset(&idx, rel);
                let mut cur = ChunkCursor::new(&me, &seg, PriorityClass::Critical, start);
                while let Some(f) = cur.next().await? {
                    if f.max_timestamp >= timestamp {
                        return Ok(Some((f, cur.take(&f))));
                    }
                    cur.skip(&f);
                }
                Ok(None)
            })
            .await
            .map_err(|e| PrefetchError::Runtime(e.to_string()))?
    }

    pub(crate) fn chunk_bytes(&self) -> u64 {
        self.cfg.chunk_bytes.max(4096) as u64
    }

    async fn index_object(&self, key: &str) -> Result<Bytes, PrefetchError> {
        if let Some(b) = self.indexes.get(key) {
            return Ok(b);
        }
        let bytes = self.store.get(&Path::from(key)).await?.bytes().await?;
        self.indexes.put(key, bytes.clone());
        Ok(bytes)
    }

    /// One chunk of a segment object, from the cache or one shared GET.
    pub(crate) async fn chunk(
        &self,
        seg: &RemoteSegment,
        index: u64,
        class: PriorityClass,
        stream: Option<&StreamKey>,
    ) -> Result<Bytes, PrefetchError> {
        let cb = self.chunk_bytes();
        let start = index * cb;
        if start >= seg.size_bytes {
            return Ok(Bytes::new());
        }
        if let Some(held) = stream.and_then(|k| self.held(k, (seg.base_offset, index))) {
            PrefetchStats::add(&self.stats.cache_hits, 1);
            return Ok(held);
        }
        let end = (start + cb).min(seg.size_bytes);
        let key = ChunkKey {
            object: seg.log_key.clone(),
            index,
        };
        if let Ok(Some(hit)) = self.cache.get(&key).await {
            PrefetchStats::add(&self.stats.cache_hits, 1);
            return Ok(hit.value().clone());
        }
        // The slot is taken in the reader's own class before joining (or
        // starting) the shared GET, so a paused or starved class never
        // holds up another class's reader of the same chunk.
        let permit = self.budget.acquire(class, (end - start) as usize).await;
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
                        Err(anyhow::Error::new(PrefetchError::Corrupt {
                            key: path.to_string(),
                            position: start,
                            message: format!("short read: {} of {} bytes", b.len(), end - start),
                        }))
                    }
                    Err(e) => {
                        PrefetchStats::add(&stats.get_errors, 1);
                        Err(anyhow::Error::new(PrefetchError::from(e)))
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
            Ok(e) => Ok(e.value().clone()),
            Err(e) => Err(match e.downcast_ref::<PrefetchError>() {
                Some(PrefetchError::NotFound(k)) => PrefetchError::NotFound(k.clone()),
                Some(other) => PrefetchError::Fetch(other.to_string()),
                None => PrefetchError::Fetch(e.to_string()),
            }),
        }
    }

    /// Moves the stream's read-ahead window and requests the chunks it now
    /// covers in the background: this read's own chunks (so they arrive in
    /// parallel) and `window` more. A read is sequential when it starts
    /// where the stream's previous read was (between its first and one past
    /// its last chunk); then the window doubles, else it resets.
    fn advance_stream(self: &Arc<Self>, req: &ReadRequest, chunk: u64) {
        let Some(seg) = req.segments.first() else {
            return;
        };
        if self.cfg.readahead_max_chunks == 0 {
            return; // read-ahead off: the read's cursor fetches what it needs
        }
        let here = (seg.base_offset, chunk);
        let span = (req.max_bytes as u64)
            .div_ceil(self.chunk_bytes())
            .clamp(1, 64) as usize;
        let mut wanted = Vec::new();
        {
            let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
            if streams.len() > 4096 {
                streams.retain(|_, s| {
                    let keep = s.used.elapsed() < Duration::from_secs(60);
                    if !keep {
                        self.release(std::mem::take(&mut s.held));
                    }
                    keep
                });
            }
            let min = self.cfg.readahead_min_chunks.max(1);
            // All windows together may fill at most half the memory cache:
            // deeper read-ahead would evict chunks before their readers
            // arrive and fetch them twice.
            let active = streams
                .values()
                .filter(|s| s.used.elapsed() < Duration::from_secs(10))
                .count()
                .max(1);
            // A stream holds from the chunk it reads to the end of its
            // window: the read's own `span` chunks, then `window` more.
            let cache_chunks = self.cfg.memory_cache_bytes / 2 / self.chunk_bytes() as usize;
            let max = self
                .cfg
                .readahead_max_chunks
                .min((cache_chunks / active).saturating_sub(span + 1))
                .max(min);
            // Idle streams give back what they hold.
            for s in streams.values_mut() {
                if !s.held.is_empty() && s.used.elapsed() >= Duration::from_secs(10) {
                    self.release(std::mem::take(&mut s.held));
                }
            }
            let s = streams.entry(req.stream.clone()).or_insert(Stream {
                last_start: (i64::MIN, 0),
                last_end: (i64::MIN, 0),
                window: 0,
                ahead_to: None,
                held: BTreeMap::new(),
                used: Instant::now(),
            });
            let after_end = self.successor(&req.segments, s.last_end);
            // Reads stop at segment ends, so the start of a later segment
            // continues a sequential stream too.
            let sequential = (here >= s.last_start && here <= s.last_end)
                || after_end == Some(here)
                || (here.1 == 0 && here.0 > s.last_end.0 && s.last_end.0 != i64::MIN);
            if sequential {
                s.window = (s.window * 2).clamp(min, max);
            } else {
                s.window = min;
                s.ahead_to = None;
                self.release(std::mem::take(&mut s.held));
            }
            // What it read past goes.
            let ahead = s.held.split_off(&here);
            self.release(std::mem::replace(&mut s.held, ahead));
            s.last_start = here;
            s.last_end = here;
            s.used = Instant::now();
            // Request (ahead_to, here + span + window], and `here` itself,
            // as far as there is room to hold them.
            let mut pos = match s.ahead_to {
                Some(a) if a >= here => a,
                _ => {
                    if !self.reserve(&req.segments, here) {
                        return;
                    }
                    wanted.push(here);
                    s.ahead_to = Some(here);
                    here
                }
            };
            let to = self.nth_after(&req.segments, here, span + s.window);
            while let Some(next) = self.successor(&req.segments, pos) {
                if to.is_none_or(|t| next > t) || !self.reserve(&req.segments, next) {
                    break;
                }
                wanted.push(next);
                s.ahead_to = Some(next);
                pos = next;
            }
        }
        for (base, c) in wanted {
            let Some(seg) = req.segments.iter().find(|s| s.base_offset == base).cloned() else {
                self.unreserve(&req.segments, (base, c));
                continue;
            };
            let me = self.clone();
            let class = req.class;
            let stream = req.stream.clone();
            PrefetchStats::add(&self.stats.readahead_chunks, 1);
            self.handle.spawn(async move {
                match me.chunk(&seg, c, class, None).await {
                    Ok(chunk) => me.hold(&stream, &seg, (base, c), chunk),
                    Err(e) => {
                        me.unreserve(std::slice::from_ref(&seg), (base, c));
                        tracing::debug!(object = %seg.log_key, chunk = c, error = %e, "read-ahead failed")
                    }
                }
            });
        }
    }

    /// A chunk from the stream's held read-ahead or the memory cache, or
    /// nothing; never waits.
    pub(crate) fn chunk_cached(
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

    fn held(&self, stream: &StreamKey, at: (i64, u64)) -> Option<Bytes> {
        let streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        streams.get(stream)?.held.get(&at).cloned()
    }

    /// Bytes of chunk `at` of `segs`: what holding it takes.
    fn chunk_len(&self, segs: &[RemoteSegment], at: (i64, u64)) -> usize {
        let cb = self.chunk_bytes();
        segs.iter().find(|s| s.base_offset == at.0).map_or(0, |s| {
            s.size_bytes.saturating_sub(at.1 * cb).min(cb) as usize
        })
    }

    /// Takes room for holding chunk `at`, if the limit allows.
    fn reserve(&self, segs: &[RemoteSegment], at: (i64, u64)) -> bool {
        let len = self.chunk_len(segs, at);
        let limit = self.cfg.memory_cache_bytes / 2;
        self.held_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |held| {
                (held + len <= limit).then_some(held + len)
            })
            .is_ok()
    }

    fn unreserve(&self, segs: &[RemoteSegment], at: (i64, u64)) {
        self.held_bytes
            .fetch_sub(self.chunk_len(segs, at), Ordering::Relaxed);
    }

    /// Keeps an arrived read-ahead chunk for its stream in the room reserved
    /// for it, unless the stream read past it or jumped elsewhere meanwhile
    /// (then the room goes back).
    fn hold(&self, stream: &StreamKey, seg: &RemoteSegment, at: (i64, u64), chunk: Bytes) {
        let reserved = self.chunk_len(std::slice::from_ref(seg), at);
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        match streams.get_mut(stream) {
            Some(s) if at >= s.last_start && s.ahead_to.is_some_and(|a| at <= a) => {
                // Accounted as its actual length from here on.
                self.held_bytes.fetch_add(chunk.len(), Ordering::Relaxed);
                self.held_bytes.fetch_sub(reserved, Ordering::Relaxed);
                if let Some(old) = s.held.insert(at, chunk) {
                    self.held_bytes.fetch_sub(old.len(), Ordering::Relaxed);
                }
            }
            _ => {
                self.held_bytes.fetch_sub(reserved, Ordering::Relaxed);
            }
        }
    }

    /// Forgets held chunks (the cache may still have them).
    fn release(&self, held: BTreeMap<(i64, u64), Bytes>) {
        let bytes: usize = held.values().map(Bytes::len).sum();
        self.held_bytes.fetch_sub(bytes, Ordering::Relaxed);
    }

    /// Records where a stream's read ended (its next read starts there).
    fn finish_stream(&self, stream: &StreamKey, end: (i64, u64)) {
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = streams.get_mut(stream) {
            if end > s.last_end {
                s.last_end = end;
            }
        }
    }

    fn chunks_in(&self, seg: &RemoteSegment) -> u64 {
        seg.size_bytes.div_ceil(self.chunk_bytes())
    }

    /// The chunk after `at`, continuing into the next segment.
    fn successor(&self, segs: &[RemoteSegment], at: (i64, u64)) -> Option<(i64, u64)> {
        let i = segs.iter().position(|s| s.base_offset == at.0)?;
        if at.1 + 1 < self.chunks_in(&segs[i]) {
            return Some((at.0, at.1 + 1));
        }
        segs.get(i + 1).map(|s| (s.base_offset, 0))
    }

    /// The chunk `n` after `at` (or the last one there is).
    fn nth_after(&self, segs: &[RemoteSegment], at: (i64, u64), n: usize) -> Option<(i64, u64)> {
        let mut pos = at;
        let mut moved = false;
        for _ in 0..n {
            match self.successor(segs, pos) {
                Some(p) => {
                    pos = p;
                    moved = true;
                }
                None => break,
            }
        }
        moved.then_some(pos)
    }
}

/// Makes the calling thread `nice` steps nicer (Linux threads have a
/// niceness each). Failure only costs the priority, so it is logged.
fn lower_thread_priority(nice: i32) {
    if nice == 0 {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        // SAFETY: plain syscalls on the calling thread, no memory involved.
        let r = unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, nice)
        };
        if r != 0 {
            tracing::debug!(error = %std::io::Error::last_os_error(), "cannot lower the prefetch threads' priority");
        }
    }
}
