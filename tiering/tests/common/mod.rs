//! Shared by the tiering manager tests: an in-memory store that can be
//! switched off (injected outage), a scripted partition log in a temp dir,
//! and the manager with test timings.

#![allow(dead_code)]

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::stream::{self, BoxStream, StreamExt};
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use strata_catalog::{PartitionCatalog, PartitionPath};
use strata_tiering::{
    LocalLog, LocalSegmentInfo, ManagerOptions, RemoteLogManager, SealedSegment, TieringPolicy,
    UploadOptions,
};

/// An in-memory store whose every call fails while `down` is set.
#[derive(Debug, Default)]
pub struct FlakyStore {
    pub inner: InMemory,
    pub down: AtomicBool,
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
pub struct FakeLog {
    pub dir: tempfile::TempDir,
    pub sealed: Mutex<Vec<LocalSegmentInfo>>,
    pub policy: Mutex<TieringPolicy>,
    pub remote_start: Mutex<Option<i64>>,
    /// (writes the catalog, leader epoch): (true, None) is a single broker.
    pub role: Mutex<(bool, Option<i32>)>,
}

impl FakeLog {
    pub fn new(policy: TieringPolicy) -> Arc<Self> {
        Arc::new(FakeLog {
            dir: tempfile::tempdir().unwrap(),
            sealed: Mutex::new(Vec::new()),
            policy: Mutex::new(policy),
            remote_start: Mutex::new(None),
            role: Mutex::new((true, None)),
        })
    }
    /// Seals a segment of 10 offsets and `size` bytes, `age_ms` old.
    pub fn seal(&self, base: i64, size: usize, age_ms: i64) {
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
                txn_index: None,
            },
            size_bytes: size as u64,
            retention_timestamp: ts,
        });
    }
    pub fn local_bases(&self) -> Vec<i64> {
        self.sealed
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.segment.base_offset)
            .collect()
    }
}

pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

impl LocalLog for FakeLog {
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
    fn copy_segment_tail(&self, seg: &SealedSegment, from: i64) -> Result<SealedSegment, String> {
        let stem = self.dir.path().join(format!("copy-{from:020}"));
        let f = |ext: &str| PathBuf::from(format!("{}.{ext}", stem.display()));
        let size = std::fs::metadata(&seg.log)
            .map_err(|e| e.to_string())?
            .len();
        let keep = size * (seg.last_offset + 1 - from) as u64
            / (seg.last_offset + 1 - seg.base_offset) as u64;
        std::fs::write(f("log"), vec![from as u8; keep as usize]).map_err(|e| e.to_string())?;
        std::fs::write(f("index"), [0u8; 8]).map_err(|e| e.to_string())?;
        std::fs::write(f("timeindex"), [0u8; 12]).map_err(|e| e.to_string())?;
        Ok(SealedSegment {
            base_offset: from,
            log: f("log"),
            index: f("index"),
            time_index: f("timeindex"),
            ..seg.clone()
        })
    }
    fn release_copy(&self, copy: &SealedSegment) {
        for p in [&copy.log, &copy.index, &copy.time_index] {
            std::fs::remove_file(p).unwrap();
        }
    }
    fn is_writer(&self) -> bool {
        self.role.lock().unwrap().0
    }
    fn leader_epoch(&self) -> Option<i32> {
        self.role.lock().unwrap().1
    }
}

pub fn policy(local_ms: i64) -> TieringPolicy {
    TieringPolicy {
        remote_enabled: true,
        retention_ms: -1,
        retention_bytes: -1,
        local_retention_ms: local_ms,
        local_retention_bytes: -1,
    }
}

pub fn manager(store: Arc<dyn ObjectStore>, owner: &str) -> Arc<RemoteLogManager> {
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
            ..Default::default()
        },
    )
}

pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

pub async fn remote_bases(store: &Arc<dyn ObjectStore>) -> Vec<i64> {
    let c = PartitionCatalog::open(store.clone(), PartitionPath::new("", "t", "tid", 0))
        .await
        .unwrap();
    c.manifest()
        .segments
        .iter()
        .map(|s| s.base_offset)
        .collect()
}
