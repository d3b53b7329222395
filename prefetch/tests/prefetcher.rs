//! The prefetcher against an in-memory object store that counts GETs and
//! can fail them on demand: byte-for-byte reads across chunk and segment
//! boundaries with the cache cold, warm and evicting; one GET per chunk for
//! two readers; read-ahead; injected GET failures.

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::stream::BoxStream;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use strata_catalog::RemoteSegment;
use strata_prefetch::{
    ClassPolicy, PrefetchConfig, PrefetchError, Prefetcher, PriorityClass, ReadRequest, StreamKey,
};

/// Counts ranged GETs of `.log` objects; fails the next `fail` of them.
#[derive(Debug, Default)]
struct CountingStore {
    inner: InMemory,
    log_gets: AtomicU64,
    fail: AtomicUsize,
}

impl fmt::Display for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CountingStore")
    }
}

#[async_trait]
impl ObjectStore for CountingStore {
    async fn put_opts(
        &self,
        l: &Path,
        p: PutPayload,
        o: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.inner.put_opts(l, p, o).await
    }
    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.inner.put_multipart_opts(l, o).await
    }
    async fn get_opts(&self, l: &Path, o: GetOptions) -> object_store::Result<GetResult> {
        if l.as_ref().ends_with(".log") {
            self.log_gets.fetch_add(1, Ordering::SeqCst);
            let failing = self
                .fail
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            if failing {
                return Err(object_store::Error::Generic {
                    store: "counting",
                    source: "injected GET failure".into(),
                });
            }
        }
        self.inner.get_opts(l, o).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(&self, from: &Path, to: &Path, o: CopyOptions) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, o).await
    }
}

/// A syntactically valid v2 batch header (61 bytes) plus a body.
fn batch(base: i64, records: i32, max_ts: i64, body: usize) -> Vec<u8> {
    let mut b = vec![0u8; 61 + body];
    b[0..8].copy_from_slice(&base.to_be_bytes());
    b[8..12].copy_from_slice(&((61 + body - 12) as i32).to_be_bytes());
    b[16] = 2;
    b[23..27].copy_from_slice(&(records - 1).to_be_bytes());
    b[35..43].copy_from_slice(&max_ts.to_be_bytes());
    for (i, x) in b[61..].iter_mut().enumerate() {
        *x = (base as usize + i) as u8;
    }
    b
}

/// Segments of 50 batches of 10 records (bodies of varying size), indexed
/// every 8 KiB. Returns the catalog entries and every batch in order.
async fn segments(
    store: &Arc<dyn ObjectStore>,
    count: i64,
) -> (Vec<RemoteSegment>, Vec<(i64, Vec<u8>)>) {
    let mut segs = Vec::new();
    let mut all = Vec::new();
    for s in 0..count {
        let base = 1000 + s * 500;
        let (mut log, mut idx, mut tidx) = (Vec::new(), Vec::new(), Vec::new());
        let mut last_indexed: Option<usize> = None;
        for i in 0..50i64 {
            let off = base + i * 10;
            let b = batch(off, 10, off, 700 + (i as usize * 37) % 900);
            if last_indexed.is_none_or(|l| log.len() - l >= 8192) {
                idx.extend_from_slice(&((off - base) as u32).to_be_bytes());
                idx.extend_from_slice(&(log.len() as u32).to_be_bytes());
                tidx.extend_from_slice(&off.to_be_bytes());
                tidx.extend_from_slice(&((off - base) as u32).to_be_bytes());
                last_indexed = Some(log.len());
            }
            log.extend_from_slice(&b);
            all.push((off, b));
        }
        let key = |k: &str| format!("t/0/{base:020}.{k}");
        for (k, v) in [("log", &log), ("index", &idx), ("timeindex", &tidx)] {
            store
                .put(&Path::from(key(k)), PutPayload::from(v.clone()))
                .await
                .unwrap();
        }
        segs.push(RemoteSegment {
            base_offset: base,
            last_offset: base + 499,
            max_timestamp: base + 490,
            size_bytes: log.len() as u64,
            crc32c: 0,
            leader_epoch: 0,
            writer_epoch: 1,
            log_key: key("log"),
            index_key: key("index"),
            time_index_key: key("timeindex"),
            producer_snapshot_key: None,
            txn_index_key: None,
        });
    }
    (segs, all)
}

fn config(chunk: usize, memory: usize) -> PrefetchConfig {
    PrefetchConfig {
        chunk_bytes: chunk,
        memory_cache_bytes: memory,
        readahead_min_chunks: 1,
        readahead_max_chunks: 4,
        ..Default::default()
    }
}

fn request(reader: &str, segs: &[RemoteSegment], offset: i64, max_bytes: usize) -> ReadRequest {
    let i = segs.iter().position(|s| s.last_offset >= offset).unwrap();
    ReadRequest {
        stream: StreamKey {
            reader: reader.into(),
            topic: "t".into(),
            partition: 0,
        },
        class: PriorityClass::Standard,
        segments: segs[i..].to_vec(),
        offset,
        max_bytes,
        min_one: true,
    }
}

/// Reads everything from `from` like a consumer: fetch, advance, repeat.
async fn drain(
    p: &Arc<Prefetcher>,
    reader: &str,
    segs: &[RemoteSegment],
    from: i64,
    max_bytes: usize,
) -> Vec<u8> {
    let mut out = Vec::new();
    let mut next = from;
    let end = segs.last().unwrap().last_offset + 1;
    while next < end {
        let got = p
            .read(request(reader, segs, next, max_bytes))
            .await
            .unwrap();
        assert!(!got.is_empty(), "no progress at offset {next}");
        next = next_offset(&got);
        out.extend_from_slice(&got);
    }
    out
}

/// The offset after the last batch in `got`.
fn next_offset(got: &[u8]) -> i64 {
    let mut at = 0;
    let mut next = -1;
    while at < got.len() {
        let base = i64::from_be_bytes(got[at..at + 8].try_into().unwrap());
        let len = i32::from_be_bytes(got[at + 8..at + 12].try_into().unwrap()) as usize + 12;
        next = base + i32::from_be_bytes(got[at + 23..at + 27].try_into().unwrap()) as i64 + 1;
        at += len;
    }
    next
}

fn expected(all: &[(i64, Vec<u8>)], from: i64) -> Vec<u8> {
    all.iter()
        .filter(|(o, _)| o + 9 >= from)
        .flat_map(|(_, b)| b.clone())
        .collect()
}

#[tokio::test]
async fn reads_are_byte_exact_across_chunks_and_segments_cold_warm_and_evicting() {
    let counting = Arc::new(CountingStore::default());
    let store: Arc<dyn ObjectStore> = counting.clone();
    let (segs, all) = segments(&store, 3).await;
    // 5000-byte chunks: batches straddle chunk boundaries all the time.
    let p = Prefetcher::new(
        store.clone(),
        config(5000, 64 << 20),
        ClassPolicy::default(),
    )
    .await
    .unwrap();
    for (from, max) in [(1000, 3000), (1234, 10_000), (1999, 1 << 20)] {
        assert_eq!(
            drain(&p, "cold", &segs, from, max).await,
            expected(&all, from),
            "from {from}"
        );
    }
    let gets_cold = counting.log_gets.load(Ordering::SeqCst);
    assert_eq!(
        drain(&p, "warm", &segs, 1000, 7000).await,
        expected(&all, 1000)
    );
    assert_eq!(
        counting.log_gets.load(Ordering::SeqCst),
        gets_cold,
        "a warm cache issues no GET"
    );
    // A cache far smaller than the data keeps evicting; reads stay exact.
    let small = Prefetcher::new(store.clone(), config(5000, 12_000), ClassPolicy::default())
        .await
        .unwrap();
    assert_eq!(
        drain(&small, "evicting", &segs, 1000, 4000).await,
        expected(&all, 1000)
    );
    // max_bytes without min_one: a batch that does not fit is not returned.
    let mut r = request("x", &segs, 1000, 10);
    r.min_one = false;
    assert!(p.read(r).await.unwrap().is_empty());
}

#[tokio::test]
async fn two_readers_of_the_same_history_fetch_each_chunk_once() {
    let counting = Arc::new(CountingStore::default());
    let store: Arc<dyn ObjectStore> = counting.clone();
    let (segs, all) = segments(&store, 3).await;
    let p = Prefetcher::new(
        store.clone(),
        config(8192, 64 << 20),
        ClassPolicy::default(),
    )
    .await
    .unwrap();
    let (a, b) = tokio::join!(
        drain(&p, "group-a", &segs, 1000, 20_000),
        drain(&p, "group-b", &segs, 1000, 20_000)
    );
    assert_eq!(a, expected(&all, 1000));
    assert_eq!(b, a);
    tokio::time::sleep(Duration::from_millis(100)).await; // read-ahead settles
    let chunks: u64 = segs.iter().map(|s| s.size_bytes.div_ceil(8192)).sum();
    assert_eq!(
        counting.log_gets.load(Ordering::SeqCst),
        chunks,
        "every chunk fetched exactly once for both readers"
    );
    assert!(p.stats.readahead_chunks.load(Ordering::Relaxed) > 0);
    assert!(p.stats.cache_hits.load(Ordering::Relaxed) > 0);
}

#[tokio::test]
async fn read_ahead_makes_sequential_reads_hit_the_cache() {
    let counting = Arc::new(CountingStore::default());
    let store: Arc<dyn ObjectStore> = counting.clone();
    let (segs, _) = segments(&store, 2).await;
    let p = Prefetcher::new(
        store.clone(),
        config(4096, 64 << 20),
        ClassPolicy::default(),
    )
    .await
    .unwrap();
    // Three small sequential reads open the window...
    let mut next = 1000;
    for _ in 0..3 {
        let got = p.read(request("r", &segs, next, 2000)).await.unwrap();
        next = next_offset(&got);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        p.readahead_depth() >= 2,
        "window grew: {}",
        p.readahead_depth()
    );
    let ahead = counting.log_gets.load(Ordering::SeqCst);
    assert!(
        ahead >= 3,
        "chunks were fetched ahead of the reader ({ahead} GETs)"
    );
    // The next sequential read finds its chunks already cached: it
    // succeeds even with every GET failing, and starts where it asked.
    counting.fail.store(usize::MAX, Ordering::SeqCst);
    let hits = p.stats.cache_hits.load(Ordering::Relaxed);
    let got = p.read(request("r", &segs, next, 2000)).await.unwrap();
    counting.fail.store(0, Ordering::SeqCst);
    assert_eq!(i64::from_be_bytes(got[..8].try_into().unwrap()), next);
    assert!(p.stats.cache_hits.load(Ordering::Relaxed) > hits);
}

#[tokio::test]
async fn a_failed_get_is_an_error_and_the_next_read_succeeds() {
    let counting = Arc::new(CountingStore::default());
    let store: Arc<dyn ObjectStore> = counting.clone();
    let (segs, all) = segments(&store, 1).await;
    let p = Prefetcher::new(
        store.clone(),
        config(16_384, 64 << 20),
        ClassPolicy::default(),
    )
    .await
    .unwrap();
    counting.fail.store(100, Ordering::SeqCst);
    let err = p
        .read(request("r", &segs, 1000, 1 << 20))
        .await
        .unwrap_err();
    // The store's own error, kept as the source through the shared GET.
    assert!(
        matches!(err.root(), PrefetchError::ObjectStore(_)),
        "{err:?}"
    );
    assert!(err.is_retriable(), "{err}");
    counting.fail.store(0, Ordering::SeqCst);
    // Failures are not cached.
    assert_eq!(
        drain(&p, "r", &segs, 1000, 1 << 20).await,
        expected(&all, 1000)
    );
    // A deleted object reads as NotFound (retention raced the reader).
    store
        .delete(&Path::from(segs[0].log_key.as_str()))
        .await
        .unwrap();
    let fresh = Prefetcher::new(
        store.clone(),
        config(16_384, 64 << 20),
        ClassPolicy::default(),
    )
    .await
    .unwrap();
    assert!(matches!(
        fresh.read(request("r", &segs, 1000, 100)).await,
        Err(PrefetchError::NotFound(_))
    ));
}

#[tokio::test]
async fn timestamp_lookup_finds_the_first_batch_at_or_after() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let (segs, _) = segments(&store, 1).await;
    let p = Prefetcher::new(store, config(4096, 1 << 20), ClassPolicy::default())
        .await
        .unwrap();
    for (ts, base) in [(0, 1000), (1001, 1010), (1255, 1260), (1490, 1490)] {
        let (f, bytes) = p
            .batch_at_timestamp(segs[0].clone(), ts)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(f.base_offset, base, "timestamp {ts}");
        assert_eq!(bytes.len(), f.size);
    }
    assert!(p
        .batch_at_timestamp(segs[0].clone(), 1491)
        .await
        .unwrap()
        .is_none());
}

#[tokio::test]
async fn a_paused_bulk_reader_gets_nothing_and_blocks_no_one() {
    let counting = Arc::new(CountingStore::default());
    let store: Arc<dyn ObjectStore> = counting.clone();
    let (segs, all) = segments(&store, 1).await;
    let policy = ClassPolicy {
        bulk_paused: true,
        ..Default::default()
    };
    let p = Prefetcher::new(store, config(8192, 64 << 20), policy)
        .await
        .unwrap();
    let mut bulk = request("backfill", &segs, 1000, 1 << 20);
    bulk.class = PriorityClass::Bulk;
    let waiting = tokio::spawn({
        let p = p.clone();
        let bulk = bulk.clone();
        async move { p.read(bulk).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    // A standard reader of the very same chunks is not held up by it.
    let got = tokio::time::timeout(
        Duration::from_secs(5),
        drain(&p, "payments", &segs, 1000, 1 << 20),
    )
    .await
    .expect("standard reader finished while bulk is paused");
    assert_eq!(got, expected(&all, 1000));
    // Everything is cached now, yet the paused bulk reader still gets nothing.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        !waiting.is_finished(),
        "a paused bulk read must not be served"
    );
    let mut policy = p.budget().policy();
    policy.bulk_paused = false;
    p.budget().set_policy(policy);
    let served = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(served.as_ref(), &expected(&all, 1000)[..served.len()]);
}

#[tokio::test]
async fn a_read_the_caller_gave_up_on_is_kept_for_its_retry() {
    let counting = Arc::new(CountingStore::default());
    let store: Arc<dyn ObjectStore> = counting.clone();
    let (segs, all) = segments(&store, 2).await;
    // A cache too small to keep anything between two reads.
    let p = Prefetcher::new(store, config(4096, 4096), ClassPolicy::default())
        .await
        .unwrap();
    let req = request("r", &segs, 1000, 1 << 20);
    // The first attempt is abandoned at once (a fetch whose wait ran out).
    let _ = tokio::time::timeout(Duration::from_millis(1), p.read(req.clone())).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let gets = counting.log_gets.load(Ordering::SeqCst);
    // The retry takes the parked result: no new GET, same bytes.
    let got = p.read(req).await.unwrap();
    assert_eq!(counting.log_gets.load(Ordering::SeqCst), gets);
    assert_eq!(got.as_ref(), &expected(&all, 1000)[..got.len()]);
    assert!(!got.is_empty());
}

/// Like a consumer of several partitions: one read per stream in turn.
async fn drain_interleaved(
    p: &Arc<Prefetcher>,
    streams: &[(&str, &[RemoteSegment])],
    max_bytes: usize,
) -> Vec<Vec<u8>> {
    let mut next: Vec<i64> = streams.iter().map(|(_, s)| s[0].base_offset).collect();
    let mut out = vec![Vec::new(); streams.len()];
    loop {
        let mut progressed = false;
        for (i, (name, segs)) in streams.iter().enumerate() {
            if next[i] > segs.last().unwrap().last_offset {
                continue;
            }
            let got = p
                .read(request(name, segs, next[i], max_bytes))
                .await
                .unwrap();
            assert!(!got.is_empty(), "{name}: no progress at {}", next[i]);
            next[i] = next_offset(&got);
            out[i].extend_from_slice(&got);
            progressed = true;
        }
        if !progressed {
            return out;
        }
    }
}

#[tokio::test]
async fn read_ahead_held_by_its_stream_is_fetched_once_though_the_cache_is_small() {
    let counting = Arc::new(CountingStore::default());
    let store: Arc<dyn ObjectStore> = counting.clone();
    let (segs, all) = segments(&store, 4).await;
    // Four streams (partitions) read in turn through a cache of 16 chunks:
    // chunks every stream consumed keep arriving, and under LRU they are
    // newer than read-ahead fetched a while ago.
    let mut cfg = config(4096, 16 * 4096);
    cfg.readahead_max_chunks = 8;
    let p = Prefetcher::new(store.clone(), cfg, ClassPolicy::default())
        .await
        .unwrap();
    // Each stream (partition) has objects of its own, as partitions do.
    let mut streams: Vec<(String, Vec<RemoteSegment>)> = Vec::new();
    for i in 0..4 {
        let mut own = Vec::new();
        for s in &segs {
            let mut c = s.clone();
            for (from, to) in [
                (&s.log_key, &mut c.log_key),
                (&s.index_key, &mut c.index_key),
                (&s.time_index_key, &mut c.time_index_key),
            ] {
                *to = format!("p{i}/{from}");
                store
                    .copy(&Path::from(from.as_str()), &Path::from(to.as_str()))
                    .await
                    .unwrap();
            }
            own.push(c);
        }
        streams.push((format!("p{i}"), own));
    }
    let refs: Vec<(&str, &[RemoteSegment])> = streams
        .iter()
        .map(|(n, s)| (n.as_str(), s.as_slice()))
        .collect();
    let got = drain_interleaved(&p, &refs, 3000).await;
    for g in &got {
        assert_eq!(g, &expected(&all, 1000));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let held = p.readahead_held_bytes();
    assert!(
        held <= 8 * 4096,
        "held read-ahead {held} B is over half the memory cache"
    );
    let chunks: u64 = segs.iter().map(|s| s.size_bytes.div_ceil(4096)).sum();
    let gets = counting.log_gets.load(Ordering::SeqCst);
    assert_eq!(
        gets,
        4 * chunks,
        "4 streams x {chunks} chunks: read-ahead evicted before use is fetched twice"
    );
    assert!(
        p.stats.memory_reads.load(Ordering::Relaxed) > 0,
        "reads whose chunks were held were answered from memory"
    );
}

#[tokio::test]
async fn without_read_ahead_a_read_fetches_only_the_chunks_it_needs() {
    let counting = Arc::new(CountingStore::default());
    let store: Arc<dyn ObjectStore> = counting.clone();
    let (segs, all) = segments(&store, 2).await;
    let mut cfg = config(4096, 64 << 20);
    cfg.readahead_max_chunks = 0;
    cfg.max_concurrent_gets = 1;
    let p = Prefetcher::new(store.clone(), cfg, ClassPolicy::default())
        .await
        .unwrap();
    assert_eq!(
        drain(&p, "seq", &segs, 1000, 3000).await,
        expected(&all, 1000)
    );
    let chunks: u64 = segs.iter().map(|s| s.size_bytes.div_ceil(4096)).sum();
    assert_eq!(p.stats.readahead_chunks.load(Ordering::Relaxed), 0);
    assert_eq!(p.readahead_depth(), 0);
    assert_eq!(
        counting.log_gets.load(Ordering::SeqCst),
        chunks,
        "each chunk fetched once, when a read reached it"
    );
}
