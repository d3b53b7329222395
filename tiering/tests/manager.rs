//! The tiering manager against an in-memory object store that can be
//! switched off (injected outage), with a scripted partition log: what is
//! uploaded, what is deleted locally and when, outage and fencing.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use strata_catalog::{PartitionCatalog, PartitionPath};
use strata_tiering::{
    LocalSegmentInfo, ManagerOptions, RemoteLogManager, SealedSegment, TieredLog, TieringPolicy,
    UploadOptions,
};

/// An in-memory store whose every call fails while `down` is set.
#[derive(Debug, Default)]
struct FlakyStore {
    inner: InMemory,
    down: AtomicBool,
}

impl fmt::Display for FlakyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FlakyStore")
    }
}

impl FlakyStore {
    fn check(&self) -> object_store::Result<()> {
        if self.down.load(Ordering::SeqCst) {
            return Err(object_store::Error::Generic {
                store: "flaky",
                source: "injected outage".into(),
            });
        }
        Ok(())
    }
}

#[async_trait]
impl ObjectStore for FlakyStore {
    async fn put_opts(
        &self,
        l: &Path,
        p: PutPayload,
        o: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.check()?;
        self.inner.put_opts(l, p, o).await
    }
    async fn put_multipart_opts(
        &self,
        l: &Path,
        o: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.check()?;
        self.inner.put_multipart_opts(l, o).await
    }
    async fn get_opts(&self, l: &Path, o: GetOptions) -> object_store::Result<GetResult> {
        self.check()?;
        self.inner.get_opts(l, o).await
    }
    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        if let Err(e) = self.check() {
            return stream::once(async move { Err(e) }).boxed();
        }
        self.inner.delete_stream(locations)
    }
    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        if let Err(e) = self.check() {
            return stream::once(async move { Err(e) }).boxed();
        }
        self.inner.list(prefix)
    }
    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.check()?;
        self.inner.list_with_delimiter(prefix).await
    }
    async fn copy_opts(&self, from: &Path, to: &Path, o: CopyOptions) -> object_store::Result<()> {
        self.check()?;
        self.inner.copy_opts(from, to, o).await
    }
}

/// A partition log made of files in a temp dir, driven by the test.
struct FakeLog {
    dir: tempfile::TempDir,
    sealed: Mutex<Vec<LocalSegmentInfo>>,
    policy: Mutex<TieringPolicy>,
    remote_start: Mutex<Option<i64>>,
}

impl FakeLog {
    fn new(policy: TieringPolicy) -> Arc<Self> {
        Arc::new(FakeLog {
            dir: tempfile::tempdir().unwrap(),
            sealed: Mutex::new(Vec::new()),
            policy: Mutex::new(policy),
            remote_start: Mutex::new(None),
        })
    }
    /// Seals a segment of 10 offsets and `size` bytes, `age_ms` old.
    fn seal(&self, base: i64, size: usize, age_ms: i64) {
        let stem = self.dir.path().join(format!("{base:020}"));
        let f = |ext: &str| PathBuf::from(format!("{}.{ext}", stem.display()));
        std::fs::write(f("log"), vec![base as u8; size]).unwrap();
        std::fs::write(f("index"), [0u8; 8]).unwrap();
        std::fs::write(f("timeindex"), [0u8; 12]).unwrap();
        let ts = now() - age_ms;
        self.sealed.lock().unwrap().push(LocalSegmentInfo {
            segment: SealedSegment {
                base_offset: base,
                last_offset: base + 9,
                max_timestamp: ts,
                leader_epoch: 0,
                log: f("log"),
                index: f("index"),
                time_index: f("timeindex"),
                producer_snapshot: None,
            },
            size_bytes: size as u64,
            retention_timestamp: ts,
        });
    }
    fn local_bases(&self) -> Vec<i64> {
        self.sealed
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.segment.base_offset)
            .collect()
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

impl TieredLog for FakeLog {
    fn topic(&self) -> &str {
        "t"
    }
    fn partition(&self) -> i32 {
        0
    }
    fn policy(&self) -> TieringPolicy {
        *self.policy.lock().unwrap()
    }
    fn sealed_segments(&self) -> Vec<LocalSegmentInfo> {
        self.sealed.lock().unwrap().clone()
    }
    fn local_size_bytes(&self) -> u64 {
        self.sealed
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.size_bytes)
            .sum()
    }
    fn roll_if_expired(&self, _now_ms: i64) {}
    fn delete_local_before(&self, offset: i64) -> Result<usize, String> {
        let mut s = self.sealed.lock().unwrap();
        let before = s.len();
        s.retain(|x| x.segment.last_offset + 1 > offset);
        Ok(before - s.len())
    }
    fn set_remote_log_start(&self, offset: Option<i64>) {
        *self.remote_start.lock().unwrap() = offset;
    }
    fn is_closed(&self) -> bool {
        false
    }
}

fn policy(local_ms: i64) -> TieringPolicy {
    TieringPolicy {
        remote_enabled: true,
        retention_ms: -1,
        retention_bytes: -1,
        local_retention_ms: local_ms,
        local_retention_bytes: -1,
    }
}

fn manager(store: Arc<dyn ObjectStore>, owner: &str) -> Arc<RemoteLogManager> {
    RemoteLogManager::new(
        store,
        "",
        owner,
        ManagerOptions {
            interval: Duration::from_millis(20),
            max_concurrent_uploads: 2,
            upload: UploadOptions {
                attempts: 1,
                initial_backoff: Duration::from_millis(1),
                ..Default::default()
            },
            manifest_versions_kept: 3,
        },
    )
}

async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn remote_bases(store: &Arc<dyn ObjectStore>) -> Vec<i64> {
    let c = PartitionCatalog::open(store.clone(), PartitionPath::new("", "t", "tid", 0))
        .await
        .unwrap();
    c.manifest()
        .segments
        .iter()
        .map(|s| s.base_offset)
        .collect()
}

#[tokio::test]
async fn uploads_then_deletes_locally_only_outside_the_hot_window() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let log = FakeLog::new(policy(60_000));
    log.seal(0, 100, 120_000); // old: may go once uploaded
    log.seal(10, 100, 1_000); // inside the one-minute hot window
    let m = manager(store.clone(), "a");
    let rp = m.add_partition("tid", log.clone()).await;
    eventually("both uploaded", || rp.manifest().segments.len() == 2).await;
    eventually("the old one deleted locally", || {
        log.local_bases() == vec![10]
    })
    .await;
    assert_eq!(*log.remote_start.lock().unwrap(), Some(0));
    assert_eq!(remote_bases(&store).await, vec![0, 10]);
    // Shrinking the hot window at run time lets the other one go too.
    *log.policy.lock().unwrap() = policy(500);
    rp.wake();
    eventually("hot window shrunk", || log.local_bases().is_empty()).await;
    // Nothing is uploaded twice.
    assert_eq!(rp.stats.uploaded_segments.load(Ordering::Relaxed), 2);
}

#[tokio::test]
async fn an_outage_keeps_local_segments_and_uploads_resume() {
    let flaky = Arc::new(FlakyStore::default());
    let store: Arc<dyn ObjectStore> = flaky.clone();
    let log = FakeLog::new(policy(0));
    let m = manager(store.clone(), "a");
    let rp = m.add_partition("tid", log.clone()).await;
    flaky.down.store(true, Ordering::SeqCst);
    log.seal(0, 100, 10_000);
    log.seal(10, 100, 10_000);
    eventually("errors counted", || {
        rp.stats.upload_errors.load(Ordering::Relaxed) >= 3 || !m.store_available()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!m.store_available());
    assert_eq!(
        log.local_bases(),
        vec![0, 10],
        "nothing deleted while the store is down"
    );
    flaky.down.store(false, Ordering::SeqCst);
    eventually("uploaded after the outage", || {
        rp.manifest().segments.len() == 2
    })
    .await;
    eventually("then deleted locally", || log.local_bases().is_empty()).await;
    assert!(m.store_available());
    assert_eq!(remote_bases(&store).await, vec![0, 10]);
}

#[tokio::test]
async fn a_fenced_broker_stops_uploading_and_deleting() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let old_log = FakeLog::new(policy(0));
    old_log.seal(0, 100, 10_000);
    let old = manager(store.clone(), "old");
    let old_rp = old.add_partition("tid", old_log.clone()).await;
    eventually("old broker tiered its segment", || {
        old_log.local_bases().is_empty()
    })
    .await;
    // A second broker claims the partition (e.g. restored from the bucket).
    let new_log = FakeLog::new(policy(3_600_000));
    new_log.seal(10, 100, 0);
    let new = manager(store.clone(), "new");
    let new_rp = new.add_partition("tid", new_log.clone()).await;
    eventually("new broker uploaded", || {
        new_rp.manifest().segments.len() == 2
    })
    .await;
    // The old broker seals a segment the new one also has: it is fenced.
    old_log.seal(10, 100, 10_000);
    eventually("old broker fenced", || {
        old_rp.stats.fenced.load(Ordering::Relaxed)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        old_log.local_bases(),
        vec![10],
        "a fenced broker keeps its local segments"
    );
    let c = PartitionCatalog::open(store.clone(), PartitionPath::new("", "t", "tid", 0))
        .await
        .unwrap();
    assert_eq!(c.manifest().owner, "new");
    assert_eq!(remote_bases(&store).await, vec![0, 10]);
    // Segment objects of the catalog are all there.
    for s in &c.manifest().segments {
        let b: Bytes = store
            .get(&Path::from(s.log_key.as_str()))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(b.len(), 100);
    }
}

#[tokio::test]
async fn total_retention_deletes_remote_segments_and_their_objects() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let log = FakeLog::new(TieringPolicy {
        remote_enabled: true,
        retention_ms: 60_000,
        retention_bytes: -1,
        local_retention_ms: 0,
        local_retention_bytes: -1,
    });
    log.seal(0, 100, 120_000); // past total retention
    log.seal(10, 100, 1_000);
    let m = manager(store.clone(), "a");
    let rp = m.add_partition("tid", log.clone()).await;
    eventually("expired segment removed from the catalog", || {
        rp.manifest()
            .segments
            .iter()
            .map(|s| s.base_offset)
            .collect::<Vec<_>>()
            == vec![10]
    })
    .await;
    assert_eq!(rp.manifest().log_start_offset, 10);
    assert_eq!(*log.remote_start.lock().unwrap(), Some(10));
    let path = PartitionPath::new("", "t", "tid", 0);
    // The objects go after the catalog commit, in the same round: poll.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<_> = futures_util::TryStreamExt::try_collect::<Vec<_>>(
            store.list(Some(&path.segments_dir())),
        )
        .await
        .unwrap();
        let expired = |o: &ObjectMeta| o.location.as_ref().contains("00000000000000000000-");
        let kept = |o: &ObjectMeta| o.location.as_ref().contains("00000000000000000010-");
        if !left.iter().any(expired) {
            assert!(
                left.iter().any(kept),
                "the live segment's objects stay: {left:?}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "expired segment's objects still there: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
