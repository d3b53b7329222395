//! Crash points inside the upload sequence. A broker "dies" at a chosen
//! store call: that call and every later one of its store fail, and its
//! partition log neither deletes nor reports open any more (a dead process
//! does nothing). A second manager then starts on the same bucket and the
//! same local files, as the restarted broker would. Whatever the point:
//! nothing the log held is lost, the catalog never names a missing object,
//! no segment is recorded twice, and orphaned objects are cleaned up.
//!
//! Points: after the segment's objects are PUT and before the catalog
//! commit; after the commit and before the local deletion; inside a
//! multipart upload (after its second part); and the manifest write itself
//! (before it, and after it with the answer lost).
//!
//! Faults the broker lives through, with the same checks: a multipart part
//! that fails once, a conditional manifest write that loses the race once,
//! and a manifest write whose answer is lost once.

mod common;

use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures_util::stream::{self, BoxStream, StreamExt, TryStreamExt};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult, UploadPart,
};
use strata_catalog::{PartitionCatalog, PartitionPath};
use strata_tiering::{
    LocalLog, LocalSegmentInfo, ManagerOptions, RemoteLogManager, TieringPolicy, UploadOptions,
};

use common::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CrashPoint {
    /// The first manifest write after a segment object was PUT: not done.
    BeforeCommit,
    /// The same write, done, and the broker dies before it hears back.
    AfterCommit,
    /// The second part of a multipart upload: not done.
    MultipartPart,
    /// Never: the restarted broker.
    None,
    /// Faults the broker lives through (no restart):
    /// the second multipart part fails once;
    FailPartOnce,
    /// the first conditional manifest write loses the race once (412
    /// Precondition Failed, nothing written);
    LoseRaceOnce,
    /// the first manifest write is done but its answer is lost once.
    AnswerLostOnce,
}

/// The store as one broker process sees it.
#[derive(Debug)]
struct CrashStore {
    inner: Arc<InMemory>,
    point: CrashPoint,
    segment_puts: AtomicUsize,
    parts: Arc<AtomicUsize>,
    /// Set when the process died; shared with its log.
    dead: Arc<AtomicBool>,
    /// A one-time fault already happened.
    faulted: Arc<AtomicBool>,
}

impl fmt::Display for CrashStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CrashStore({:?})", self.point)
    }
}

fn died() -> object_store::Error {
    object_store::Error::Generic {
        store: "crash",
        source: "the broker process died here".into(),
    }
}

impl CrashStore {
    fn new(inner: Arc<InMemory>, point: CrashPoint, dead: Arc<AtomicBool>) -> Self {
        CrashStore {
            inner,
            point,
            segment_puts: AtomicUsize::new(0),
            parts: Arc::new(AtomicUsize::new(0)),
            dead,
            faulted: Arc::new(AtomicBool::new(false)),
        }
    }
    fn alive(&self) -> object_store::Result<()> {
        if self.dead.load(Ordering::SeqCst) {
            return Err(died());
        }
        Ok(())
    }
    fn die(&self) -> object_store::Error {
        self.dead.store(true, Ordering::SeqCst);
        died()
    }
}

#[async_trait]
impl ObjectStore for CrashStore {
    async fn put_opts(
        &self,
        l: &Path,
        p: PutPayload,
        o: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.alive()?;
        let key = l.as_ref();
        if key.contains("/segments/") {
            self.segment_puts.fetch_add(1, Ordering::SeqCst);
        }
        let commit = key.contains("/manifest/") && self.segment_puts.load(Ordering::SeqCst) > 0;
        match self.point {
            CrashPoint::BeforeCommit if commit => return Err(self.die()),
            CrashPoint::AfterCommit if commit => {
                self.inner.put_opts(l, p, o).await?;
                return Err(self.die());
            }
            CrashPoint::LoseRaceOnce if commit && !self.faulted.swap(true, Ordering::SeqCst) => {
                return Err(object_store::Error::Precondition {
                    path: key.to_string(),
                    source: "injected: another writer won".into(),
                });
            }
            CrashPoint::AnswerLostOnce if commit && !self.faulted.swap(true, Ordering::SeqCst) => {
                self.inner.put_opts(l, p, o).await?;
                return Err(object_store::Error::Generic {
                    store: "fault",
                    source: "injected: connection reset before the answer".into(),
                });
            }
            _ => {}
        }
        self.inner.put_opts(l, p, o).await
    }
    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.alive()?;
        self.segment_puts.fetch_add(1, Ordering::SeqCst);
        let inner = self.inner.put_multipart_opts(l, o).await?;
        Ok(Box::new(CrashUpload {
            inner,
            crash: self.point == CrashPoint::MultipartPart,
            fail_once: self.point == CrashPoint::FailPartOnce,
            faulted: self.faulted.clone(),
            parts: self.parts.clone(),
            dead: self.dead.clone(),
        }))
    }
    async fn get_opts(&self, l: &Path, o: GetOptions) -> object_store::Result<GetResult> {
        self.alive()?;
        self.inner.get_opts(l, o).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        if let Err(e) = self.alive() {
            return stream::once(async move { Err(e) }).boxed();
        }
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        if let Err(e) = self.alive() {
            return stream::once(async move { Err(e) }).boxed();
        }
        self.inner.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.alive()?;
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(&self, from: &Path, to: &Path, o: CopyOptions) -> object_store::Result<()> {
        self.alive()?;
        self.inner.copy_opts(from, to, o).await
    }
}

#[derive(Debug)]
struct CrashUpload {
    inner: Box<dyn MultipartUpload>,
    crash: bool,
    fail_once: bool,
    faulted: Arc<AtomicBool>,
    parts: Arc<AtomicUsize>,
    dead: Arc<AtomicBool>,
}

#[async_trait]
impl MultipartUpload for CrashUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let n = self.parts.fetch_add(1, Ordering::SeqCst) + 1;
        if self.dead.load(Ordering::SeqCst) || (self.crash && n == 2) {
            self.dead.store(true, Ordering::SeqCst);
            return Box::pin(async { Err(died()) });
        }
        if self.fail_once && n == 2 {
            self.faulted.store(true, Ordering::SeqCst);
            return Box::pin(async {
                Err(object_store::Error::Generic {
                    store: "fault",
                    source: "injected: 500 on an upload part".into(),
                })
            });
        }
        self.inner.put_part(data)
    }
    async fn complete(&mut self) -> object_store::Result<PutResult> {
        if self.dead.load(Ordering::SeqCst) {
            return Err(died());
        }
        self.inner.complete().await
    }
    async fn abort(&mut self) -> object_store::Result<()> {
        if self.dead.load(Ordering::SeqCst) {
            return Err(died());
        }
        self.inner.abort().await
    }
}

/// The partition log as one broker process sees it: the files stay, a dead
/// process deletes nothing and its partition counts as closed.
struct ProcessLog {
    log: Arc<FakeLog>,
    dead: Arc<AtomicBool>,
    /// Offsets below which this process deleted local segments.
    deleted_below: std::sync::Mutex<Vec<i64>>,
}

impl LocalLog for ProcessLog {
    fn topic(&self) -> &str {
        self.log.topic()
    }
    fn partition(&self) -> i32 {
        self.log.partition()
    }
    fn policy(&self) -> TieringPolicy {
        self.log.policy()
    }
    fn sealed_segments(&self) -> Vec<LocalSegmentInfo> {
        self.log.sealed_segments()
    }
    fn local_size_bytes(&self) -> u64 {
        self.log.local_size_bytes()
    }
    fn roll_if_expired(&self, now_ms: i64) {
        self.log.roll_if_expired(now_ms)
    }
    fn delete_local_before(&self, offset: i64) -> Result<usize, String> {
        if self.dead.load(Ordering::SeqCst) {
            return Err("the broker process died".into());
        }
        self.deleted_below.lock().unwrap().push(offset);
        self.log.delete_local_before(offset)
    }
    fn set_remote_log_start(&self, offset: Option<i64>) {
        self.log.set_remote_log_start(offset)
    }
    fn is_closed(&self) -> bool {
        self.dead.load(Ordering::SeqCst)
    }
}

struct Process {
    manager: Arc<RemoteLogManager>,
    partition: Arc<strata_tiering::RemotePartition>,
    log: Arc<ProcessLog>,
    dead: Arc<AtomicBool>,
    store: Arc<CrashStore>,
}

async fn start(
    inner: &Arc<InMemory>,
    log: &Arc<FakeLog>,
    point: CrashPoint,
    owner: &str,
) -> Process {
    let dead = Arc::new(AtomicBool::new(false));
    let crash_store = Arc::new(CrashStore::new(inner.clone(), point, dead.clone()));
    let store: Arc<dyn ObjectStore> = crash_store.clone();
    let manager = RemoteLogManager::new(
        store,
        "",
        owner,
        ManagerOptions {
            interval: Duration::from_millis(20),
            max_concurrent_uploads: 1,
            upload: UploadOptions {
                // 4 KiB segments go up in 1 KiB parts.
                multipart_threshold: 2048,
                part_size: 1024,
                part_concurrency: 1,
                attempts: 1,
                initial_backoff: Duration::from_millis(1),
                ..Default::default()
            },
            manifest_versions_kept: 3,
            ..Default::default()
        },
    );
    let plog = Arc::new(ProcessLog {
        log: log.clone(),
        dead: dead.clone(),
        deleted_below: Default::default(),
    });
    let partition = manager.add_partition("tid", plog.clone()).await;
    Process {
        manager,
        partition,
        log: plog,
        dead,
        store: crash_store,
    }
}

async fn segment_objects(inner: &Arc<InMemory>) -> HashSet<String> {
    let path = PartitionPath::new("", "t", "tid", 0);
    inner
        .list(Some(&path.segments_dir()))
        .map_ok(|o| o.location.to_string())
        .try_collect()
        .await
        .unwrap()
}

/// Dies at `point` while tiering three sealed segments, restarts, and
/// checks the bucket and the local log afterwards.
async fn crash_and_restart(point: CrashPoint) {
    let inner = Arc::new(InMemory::new());
    let log = FakeLog::new(policy(0)); // no hot window: delete once committed
    for base in [0, 10, 20] {
        log.seal(base, 4096, 10_000);
    }
    let first = start(&inner, &log, point, "a").await;
    eventually("the first process died at its crash point", || {
        first.dead.load(Ordering::SeqCst)
    })
    .await;
    let committed_before = first.partition.manifest().segments.len();
    // Nothing deleted locally that the bucket's catalog does not hold.
    let catalog = PartitionCatalog::open(
        Arc::new(InMemoryView(inner.clone())) as Arc<dyn ObjectStore>,
        PartitionPath::new("", "t", "tid", 0),
    )
    .await
    .unwrap();
    let durable_end = catalog.manifest().next_offset().unwrap_or(0);
    for below in first.log.deleted_below.lock().unwrap().iter() {
        assert!(
            *below <= durable_end,
            "{point:?}: deleted local segments below {below}, catalog ends at {durable_end}"
        );
    }
    // The dying process never heard a commit back; the bucket holds the
    // first segment only where the crash came after its manifest write.
    assert_eq!(committed_before, 0, "{point:?}");
    let expected_end = if point == CrashPoint::AfterCommit {
        10
    } else {
        0
    };
    assert_eq!(
        durable_end, expected_end,
        "{point:?}: catalog end after the crash"
    );
    drop(first.manager);

    let second = start(&inner, &log, CrashPoint::None, "a").await;
    finishes(&inner, &log, &second, point, true).await;
}

/// The process tiers everything, once, with every object in place and no
/// orphan left; `restarted`: after another one died.
async fn finishes(
    inner: &Arc<InMemory>,
    log: &Arc<FakeLog>,
    second: &Process,
    point: CrashPoint,
    restarted: bool,
) {
    eventually("every segment in the catalog after the restart", || {
        second.partition.manifest().segments.len() == 3
    })
    .await;
    eventually("and deleted locally", || log.local_bases().is_empty()).await;
    let m = second.partition.manifest();
    let bases: Vec<i64> = m.segments.iter().map(|s| s.base_offset).collect();
    assert_eq!(
        bases,
        vec![0, 10, 20],
        "{point:?}: each segment once, in order"
    );
    // Only what was not committed before the crash is uploaded again.
    let earlier = m
        .segments
        .iter()
        .filter(|s| s.writer_epoch < m.writer_epoch)
        .count();
    assert!(restarted || earlier == 0, "{point:?}");
    assert_eq!(
        second
            .partition
            .stats
            .uploaded_segments
            .load(Ordering::Relaxed) as usize,
        3 - earlier,
        "{point:?}"
    );
    // The catalog names only objects that exist, with the bytes sealed.
    let objects = segment_objects(inner).await;
    for s in &m.segments {
        for key in [&s.log_key, &s.index_key, &s.time_index_key] {
            assert!(
                objects.contains(key),
                "{point:?}: catalog names missing {key}"
            );
        }
        let body = inner
            .get(&Path::from(s.log_key.as_str()))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(body.len(), 4096, "{point:?}");
        assert!(body.iter().all(|b| *b == s.base_offset as u8), "{point:?}");
    }
    // Orphans of the dead process are gone (its restart claimed the
    // partition and cleaned up what no catalog version references).
    let referenced: HashSet<String> = m
        .segments
        .iter()
        .flat_map(|s| {
            [
                s.log_key.clone(),
                s.index_key.clone(),
                s.time_index_key.clone(),
            ]
        })
        .collect();
    let orphans: Vec<_> = objects.difference(&referenced).collect();
    assert!(
        orphans.is_empty(),
        "{point:?}: orphaned objects left: {orphans:?}"
    );
    assert!(!second.dead.load(Ordering::SeqCst));
}

/// Lives through a fault at `point` while tiering three segments.
async fn fault_and_finish(point: CrashPoint) {
    let inner = Arc::new(InMemory::new());
    let log = FakeLog::new(policy(0));
    for base in [0, 10, 20] {
        log.seal(base, 4096, 10_000);
    }
    let p = start(&inner, &log, point, "a").await;
    eventually("the fault was met", || {
        p.store.faulted.load(Ordering::SeqCst)
    })
    .await;
    finishes(&inner, &log, &p, point, false).await;
}

/// A read-only view of the bucket for checks made between the two runs.
#[derive(Debug)]
struct InMemoryView(Arc<InMemory>);

impl fmt::Display for InMemoryView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InMemoryView")
    }
}

#[async_trait]
impl ObjectStore for InMemoryView {
    async fn put_opts(
        &self,
        _: &Path,
        _: PutPayload,
        _: PutOptions,
    ) -> object_store::Result<PutResult> {
        Err(object_store::Error::NotImplemented {
            operation: "put".into(),
            implementer: "InMemoryView".into(),
        })
    }
    async fn put_multipart_opts(
        &self,
        _: &Path,
        _: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        Err(object_store::Error::NotImplemented {
            operation: "put".into(),
            implementer: "InMemoryView".into(),
        })
    }
    async fn get_opts(&self, l: &Path, o: GetOptions) -> object_store::Result<GetResult> {
        self.0.get_opts(l, o).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        locations
            .map(|_| {
                Err(object_store::Error::NotImplemented {
                    operation: "delete".into(),
                    implementer: "InMemoryView".into(),
                })
            })
            .boxed()
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.0.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.0.list_with_delimiter(prefix).await
    }
    async fn copy_opts(&self, _: &Path, _: &Path, _: CopyOptions) -> object_store::Result<()> {
        Err(object_store::Error::NotImplemented {
            operation: "copy".into(),
            implementer: "InMemoryView".into(),
        })
    }
}

#[tokio::test]
async fn crash_after_the_objects_before_the_catalog_commit() {
    crash_and_restart(CrashPoint::BeforeCommit).await;
}

#[tokio::test]
async fn crash_after_the_catalog_commit_before_local_deletion() {
    crash_and_restart(CrashPoint::AfterCommit).await;
}

#[tokio::test]
async fn crash_inside_a_multipart_upload() {
    crash_and_restart(CrashPoint::MultipartPart).await;
}

#[tokio::test]
async fn a_failed_multipart_part_is_retried() {
    fault_and_finish(CrashPoint::FailPartOnce).await;
}

#[tokio::test]
async fn a_conditional_manifest_write_that_loses_the_race_is_retried() {
    fault_and_finish(CrashPoint::LoseRaceOnce).await;
}

#[tokio::test]
async fn a_manifest_write_whose_answer_is_lost_is_not_applied_twice() {
    fault_and_finish(CrashPoint::AnswerLostOnce).await;
}
