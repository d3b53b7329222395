//! `RemoteLogManager` (Kafka's name): one task per partition that, every
//! `interval`, seals an active segment older than `segment.ms`, uploads the
//! sealed segments the catalog does not have yet (bounded concurrency across
//! partitions), deletes local segments that are both recorded and outside
//! the hot window, and applies total retention to the remote part.
//!
//! Only the partition's writer (its leader) uploads and writes the
//! catalog, claimed at its leader epoch in a cluster. On a follower the
//! task reads the catalog instead, and deletes local segments it records
//! that are outside the hot window (or below total retention), as the
//! leader does: a follower's disk holds the hot tail, not the history.
//!
//! The partition log is reached only through [`LocalLog`], so this module
//! never sees the broker's types. It must never delete a local segment the
//! catalog has not recorded, and stops writing a partition once another
//! broker has fenced it, until its own leadership changes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use object_store::ObjectStore;
use strata_catalog::{
    CatalogError, ManifestView, PartitionCatalog, PartitionManifest, PartitionPath,
};
use tokio::sync::{Notify, Semaphore};
use tracing::Instrument;

use crate::clock::{SystemWallClock, WallClock};
use crate::error::TieringError;
use crate::policy::{LocalSegmentInfo, TieringPolicy};
use crate::upload::{upload_segment, SealedSegment, UploadOptions};

/// What the tiering manager needs from a partition log.
pub trait LocalLog: Send + Sync + 'static {
    fn topic(&self) -> &str;
    fn partition(&self) -> i32;
    fn policy(&self) -> TieringPolicy;
    /// Sealed segments entirely below the high watermark, oldest first.
    fn sealed_segments(&self) -> Vec<LocalSegmentInfo>;
    /// Every local byte, the active segment included.
    fn local_size_bytes(&self) -> u64;
    /// Seals the active segment if it is older than `segment.ms`.
    fn roll_if_expired(&self, now_ms: i64);
    /// Deletes sealed local segments that end at or below `offset`; a
    /// reader that already holds one keeps reading it.
    fn delete_local_before(&self, offset: i64) -> Result<usize, String>;
    /// Tells the log where the remote part starts (None: nothing remote),
    /// which makes it the log start offset clients see.
    fn set_remote_log_start(&self, offset: Option<i64>);
    /// The catalog is about to be read for the first time: until
    /// `set_remote_log_start` is called, where the log starts is unknown.
    fn remote_log_start_unknown(&self) {}
    /// Offsets below this were deleted by a client (DeleteRecords, Kafka's
    /// `ClientRecordDeletion`); 0 when none were. The writer raises the
    /// catalog's log start to it, so the bucket never serves them again,
    /// not even to a broker rebuilt from it.
    fn deleted_before(&self) -> i64 {
        0
    }
    /// The partition was deleted or the broker is stopping.
    fn is_closed(&self) -> bool;
    /// This broker may write the partition's catalog (it leads the
    /// partition; always, for a single broker). Otherwise the manager lets
    /// go of the catalog and leaves the partition alone.
    fn is_writer(&self) -> bool {
        true
    }
    /// In a cluster, the leader epoch this broker leads the partition at:
    /// the catalog is claimed at it ([`PartitionCatalog::claim_at`]), so a
    /// deposed leader is fenced in the bucket too. None for a single
    /// broker (the writer epoch alone fences).
    fn leader_epoch(&self) -> Option<i32> {
        None
    }
    /// Copies the part of the sealed segment `seg` from `from` (a batch
    /// boundary inside it) into scratch files, for an upload that starts
    /// at the catalog's end: a replica that became leader rolled its
    /// segments elsewhere than the previous leader. The caller removes
    /// the copy with [`Self::release_copy`].
    fn copy_segment_tail(&self, seg: &SealedSegment, from: i64) -> Result<SealedSegment, String> {
        let _ = (seg, from);
        Err("this log cannot copy part of a segment".into())
    }
    /// Removes a copy made by [`Self::copy_segment_tail`].
    fn release_copy(&self, copy: &SealedSegment) {
        let _ = copy;
    }
    /// Uploads stop below this offset: a compacted log's first dirty
    /// offset, so that the bucket only receives cleaned segments.
    fn upload_end(&self) -> Option<i64> {
        None
    }
}

/// How often a partition's leadership is looked at between rounds: a new
/// leader claims the catalog within this, not within a whole interval.
const ROLE_CHECK: Duration = Duration::from_secs(1);

/// A follower re-reads its partition's catalog at least every this many
/// rounds, for total retention and the remote log start it reports.
const FOLLOWER_REFRESH_ROUNDS: u64 = 10;

#[derive(Debug, Clone)]
pub struct ManagerOptions {
    /// How often each partition is checked (`remote.log.manager.task.interval.ms`).
    pub interval: Duration,
    /// Uploads in flight across all partitions
    /// (`remote.log.manager.copier.thread.pool.size`).
    pub max_concurrent_uploads: usize,
    pub upload: UploadOptions,
    /// Manifest versions kept by garbage collection.
    pub manifest_versions_kept: usize,
    /// What rounds measure retention and `segment.ms` against.
    pub clock: Arc<dyn WallClock>,
}

impl Default for ManagerOptions {
    fn default() -> Self {
        ManagerOptions {
            interval: Duration::from_secs(30),
            max_concurrent_uploads: 4,
            upload: UploadOptions::default(),
            manifest_versions_kept: 10,
            clock: Arc::new(SystemWallClock),
        }
    }
}

/// Counters and gauges of one partition, for `/metrics`.
#[derive(Debug, Default)]
pub struct PartitionStats {
    pub uploaded_segments: AtomicU64,
    pub uploaded_bytes: AtomicU64,
    pub upload_errors: AtomicU64,
    pub deleted_local_segments: AtomicU64,
    pub deleted_remote_segments: AtomicU64,
    /// Sealed local segments not in the bucket yet.
    pub copy_lag_segments: AtomicU64,
    pub copy_lag_bytes: AtomicU64,
    /// The newest record's timestamp (ms) of the oldest of those; 0 when
    /// none is pending: what the bucket lags behind the disk, in time.
    pub copy_lag_oldest_timestamp_ms: AtomicU64,
    pub fenced: AtomicBool,
    /// Remote segment bytes the cleaner downloaded and uploaded
    /// (`crate::compaction`).
    pub compaction_bytes_read: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
}

/// A tiered partition as readers see it: the latest manifest this broker
/// knows, and its statistics.
#[derive(Debug)]
pub struct RemotePartition {
    pub topic: String,
    pub topic_id: String,
    pub partition: i32,
    /// The catalog's manifest in memory, shared with the readers of
    /// history: this side publishes, they read.
    view: Arc<ManifestView>,
    pub stats: PartitionStats,
    wake: Notify,
    /// The catalog writer, once claimed. The tiering task holds it for a
    /// round, the cleaner for a pass over the remote part: one at a time.
    pub(crate) writer: Arc<tokio::sync::Mutex<Option<PartitionCatalog>>>,
    /// Remote storage is off and the bucket has nothing of this partition.
    pub(crate) nothing_remote: AtomicBool,
}

impl RemotePartition {
    pub fn manifest(&self) -> Arc<PartitionManifest> {
        self.view.current()
    }
    /// The shared view the readers of history hold.
    pub fn view(&self) -> &Arc<ManifestView> {
        &self.view
    }
    pub(crate) fn publish(&self, m: &PartitionManifest) {
        self.view.publish(m);
    }
    /// Runs the partition's next round now (after a config change).
    pub fn wake(&self) {
        self.wake.notify_one();
    }
}

/// The tiering manager of one broker.
#[derive(Debug)]
pub struct RemoteLogManager {
    store: Arc<dyn ObjectStore>,
    prefix: String,
    owner: String,
    opts: ManagerOptions,
    uploads: Arc<Semaphore>,
    partitions: Mutex<HashMap<(String, i32), Arc<RemotePartition>>>,
    store_available: AtomicBool,
}

impl RemoteLogManager {
    pub fn new(
        store: Arc<dyn ObjectStore>,
        prefix: &str,
        owner: &str,
        opts: ManagerOptions,
    ) -> Arc<Self> {
        Arc::new(RemoteLogManager {
            store,
            prefix: prefix.to_string(),
            owner: owner.to_string(),
            uploads: Arc::new(Semaphore::new(opts.max_concurrent_uploads.max(1))),
            opts,
            partitions: Mutex::new(HashMap::new()),
            store_available: AtomicBool::new(true),
        })
    }

    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    pub fn upload_options(&self) -> &crate::upload::UploadOptions {
        &self.opts.upload
    }

    /// Whether the last object store operation succeeded.
    pub fn store_available(&self) -> bool {
        self.store_available.load(Ordering::Relaxed)
    }

    /// The tiered partition `topic`/`partition` of the topic incarnation
    /// `topic_id`, if this broker manages it.
    pub fn partition(
        &self,
        topic: &str,
        topic_id: &str,
        partition: i32,
    ) -> Option<Arc<RemotePartition>> {
        let map = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&(topic.to_string(), partition))
            .filter(|p| p.topic_id == topic_id)
            .cloned()
    }

    pub fn partitions(&self) -> Vec<Arc<RemotePartition>> {
        let map = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        let mut v: Vec<_> = map.values().cloned().collect();
        v.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
        v
    }

    /// Starts managing a partition (idempotent per topic incarnation).
    /// Reads the partition's catalog before returning, so reads below the
    /// local log start work as soon as the broker serves requests; if the
    /// object store is down, the partition's task keeps trying.
    pub async fn add_partition(
        self: &Arc<Self>,
        topic_id: &str,
        log: Arc<dyn LocalLog>,
    ) -> Arc<RemotePartition> {
        let key = (log.topic().to_string(), log.partition());
        if let Some(p) = self.partition(&key.0, topic_id, key.1) {
            return p;
        }
        let rp = Arc::new(RemotePartition {
            topic: key.0.clone(),
            topic_id: topic_id.to_string(),
            partition: key.1,
            view: Arc::new(ManifestView::new(&key.0, key.1, PartitionManifest::empty())),
            stats: PartitionStats::default(),
            wake: Notify::new(),
            writer: Arc::new(tokio::sync::Mutex::new(None)),
            nothing_remote: AtomicBool::new(false),
        });
        let path = PartitionPath::new(&self.prefix, &key.0, topic_id, key.1);
        let mut task = PartitionTask {
            mgr: self.clone(),
            log,
            rp: rp.clone(),
            path,
            last_gc_version: 0,
            claimed_at: None,
            fenced_at: None,
            follower_rounds: 0,
        };
        task.log.remote_log_start_unknown();
        task.load_view().await;
        self.partitions
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, rp.clone());
        let span = tracing::info_span!("tiering", topic = %rp.topic, partition = rp.partition);
        tokio::spawn(task.run().instrument(span));
        rp
    }

    fn note_store(&self, ok: bool) {
        let was = self.store_available.swap(ok, Ordering::Relaxed);
        if was != ok {
            if ok {
                tracing::info!("object store reachable again");
            } else {
                tracing::warn!(
                    "object store unavailable; local segments are kept until uploads succeed"
                );
            }
        }
    }
}

/// What this broker is for a partition, as one round sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    /// It writes the catalog: at this leader epoch in a cluster, with no
    /// epoch as a single broker.
    Writer(Option<i32>),
    /// Another broker leads; this one reads the catalog.
    Follower,
}

struct PartitionTask {
    mgr: Arc<RemoteLogManager>,
    log: Arc<dyn LocalLog>,
    rp: Arc<RemotePartition>,
    path: PartitionPath,
    last_gc_version: u64,
    /// The leader epoch the writer in `rp.writer` was claimed at.
    claimed_at: Option<i32>,
    /// The role at which another broker fenced this one: writer rounds
    /// stop until the role changes.
    fenced_at: Option<Role>,
    /// Rounds run as a follower (the catalog is re-read every
    /// `FOLLOWER_REFRESH_ROUNDS` of them even when nothing could go).
    follower_rounds: u64,
}

impl PartitionTask {
    fn role(&self) -> Role {
        if self.log.is_writer() {
            Role::Writer(self.log.leader_epoch())
        } else {
            Role::Follower
        }
    }

    async fn run(mut self) {
        loop {
            if self.log.is_closed() {
                break;
            }
            let role = self.role();
            if self.fenced_at.is_some_and(|f| f != role) {
                self.fenced_at = None;
                self.rp.stats.fenced.store(false, Ordering::Relaxed);
            }
            // Fencing stops a writer only: a follower keeps trimming.
            if self.fenced_at.is_none() || role == Role::Follower {
                self.round(role).await;
            }
            // The next round after the interval, on a wake, or as soon as
            // the leadership changed.
            let deadline = tokio::time::Instant::now() + self.mgr.opts.interval;
            loop {
                let now = tokio::time::Instant::now();
                if now >= deadline {
                    break;
                }
                let tick = (deadline - now).min(ROLE_CHECK);
                tokio::select! {
                    _ = tokio::time::sleep(tick) => {}
                    _ = self.rp.wake.notified() => break,
                }
                if self.log.is_closed() || self.role() != role {
                    break;
                }
            }
        }
        let mut map = self
            .mgr
            .partitions
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let key = (self.rp.topic.clone(), self.rp.partition);
        if map.get(&key).is_some_and(|p| Arc::ptr_eq(p, &self.rp)) {
            map.remove(&key);
        }
    }

    /// Reads the catalog without claiming it (at start, for readers).
    async fn load_view(&mut self) {
        match PartitionCatalog::open(self.mgr.store.clone(), self.path.clone()).await {
            Ok(view) => {
                self.mgr.note_store(true);
                self.publish(view.manifest());
            }
            Err(e) => {
                self.mgr.note_store(false);
                tracing::warn!(topic = %self.rp.topic, partition = self.rp.partition, error = %e,
                    "cannot read the partition's catalog yet; retrying in the background");
            }
        }
    }

    fn publish(&self, m: &PartitionManifest) {
        self.rp.publish(m);
        self.log.set_remote_log_start(m.earliest_offset());
    }

    fn fenced(&mut self, role: Role, e: &CatalogError) {
        self.fenced_at = Some(role);
        self.rp.stats.fenced.store(true, Ordering::Relaxed);
        tracing::error!(topic = %self.rp.topic, partition = self.rp.partition, error = %e,
            "tiering stopped for this partition: fenced by another broker that claimed its catalog; local segments are no longer deleted");
    }

    fn failed(&self, what: &str, e: &TieringError) {
        if matches!(
            e,
            TieringError::ObjectStore(_)
                | TieringError::Verification { .. }
                | TieringError::Catalog(CatalogError::ObjectStore(_))
        ) {
            self.mgr.note_store(false);
        }
        tracing::warn!(topic = %self.rp.topic, partition = self.rp.partition, error = %e,
            "{what} failed; will retry");
    }

    /// One round in `role`, the role seen when the round began: a round
    /// never claims or writes with a leadership it no longer has.
    async fn round(&mut self, role: Role) {
        let policy = self.log.policy();
        let now = self.mgr.opts.clock.now_ms();
        let epoch = match role {
            Role::Writer(epoch) => epoch,
            Role::Follower => {
                // Another broker leads: its writer epoch owns the catalog.
                *self.rp.writer.lock().await = None;
                self.claimed_at = None;
                self.follow(policy, now).await;
                return;
            }
        };
        if policy.remote_enabled {
            // The upload-lag bound: an idle active segment is sealed after
            // segment.ms, then uploaded below.
            self.log.roll_if_expired(now);
        }
        let writer = self.rp.writer.clone();
        let mut writer = writer.lock().await;
        if self.role() != role {
            // The leadership changed while the cleaner held the writer.
            return;
        }
        if writer.is_some() && self.claimed_at != epoch {
            // Leading again at a newer epoch: claim at it (someone may
            // have led, and claimed, in between).
            *writer = None;
        }
        if writer.is_none() {
            if !policy.remote_enabled && self.rp.nothing_remote.load(Ordering::Relaxed) {
                update_lag(&self.rp, &self.log.sealed_segments(), None);
                return;
            }
            match self.claim(policy, epoch).await {
                Ok(Some(cat)) => {
                    *writer = Some(cat);
                    self.claimed_at = epoch;
                }
                Ok(None) => return,
                Err(e) => {
                    if let TieringError::Catalog(
                        ce @ (CatalogError::Fenced { .. } | CatalogError::StaleLeaderEpoch { .. }),
                    ) = &e
                    {
                        self.fenced(role, ce);
                    } else {
                        self.failed("claiming the partition catalog", &e);
                    }
                    return;
                }
            }
        }
        let Some(cat) = writer.as_mut() else { return };
        if let Err(e) = self.upload_and_retain(cat, policy, now).await {
            match &e {
                TieringError::Catalog(
                    ce @ (CatalogError::Fenced { .. } | CatalogError::StaleLeaderEpoch { .. }),
                ) => self.fenced(role, ce),
                _ => self.failed("tiering", &e),
            }
        }
    }

    /// A follower's round: the catalog is read, never written. Local
    /// segments it records outside the hot window go, as on the leader,
    /// and so does anything below the remote log start (total retention,
    /// which the leader applied). The catalog is read only when a local
    /// segment could go, or every `FOLLOWER_REFRESH_ROUNDS` rounds.
    async fn follow(&mut self, policy: TieringPolicy, now: i64) {
        // Uploading is the leader's: nothing awaits upload here.
        update_lag(&self.rp, &[], None);
        if !policy.remote_enabled {
            return;
        }
        let sealed = self.log.sealed_segments();
        let size = self.log.local_size_bytes();
        let could_go = policy.local_cut(&sealed, size, i64::MAX, now).is_some();
        self.follower_rounds = self.follower_rounds.wrapping_add(1);
        if !could_go && self.follower_rounds % FOLLOWER_REFRESH_ROUNDS != 1 {
            return;
        }
        let view = match PartitionCatalog::open(self.mgr.store.clone(), self.path.clone()).await {
            Ok(v) => v,
            Err(e) => {
                self.failed("reading the partition catalog", &e.into());
                return;
            }
        };
        self.mgr.note_store(true);
        let m = view.manifest();
        self.publish(m);
        let mut cut = m
            .next_offset()
            .and_then(|end| policy.local_cut(&sealed, size, end, now));
        if !m.segments.is_empty() || m.log_start_offset > 0 {
            cut = cut.max(Some(m.log_start_offset));
        }
        let Some(cut) = cut else { return };
        match self.log.delete_local_before(cut) {
            Ok(0) => {}
            Ok(n) => {
                self.rp
                    .stats
                    .deleted_local_segments
                    .fetch_add(n as u64, Ordering::Relaxed);
                tracing::info!(topic = %self.rp.topic, partition = self.rp.partition, segments = n,
                    local_log_start_offset = cut,
                    "follower deleted local segments the bucket holds, outside the hot window");
            }
            Err(e) => tracing::error!(error = %e, "deleting local segments failed"),
        }
    }

    /// Becomes the partition's writer. Ok(None): nothing to manage (remote
    /// storage off and nothing in the bucket).
    async fn claim(
        &mut self,
        policy: TieringPolicy,
        leader_epoch: Option<i32>,
    ) -> Result<Option<PartitionCatalog>, TieringError> {
        if !policy.remote_enabled {
            let view = PartitionCatalog::open(self.mgr.store.clone(), self.path.clone()).await?;
            self.mgr.note_store(true);
            self.publish(view.manifest());
            if view.manifest().segments.is_empty() {
                self.rp.nothing_remote.store(true, Ordering::Relaxed);
                return Ok(None);
            }
        }
        let cat = PartitionCatalog::claim_at(
            self.mgr.store.clone(),
            self.path.clone(),
            &self.mgr.owner,
            leader_epoch,
        )
        .await?;
        self.mgr.note_store(true);
        match cat.delete_orphans().await {
            Ok(0) => {}
            Ok(n) => {
                tracing::info!(topic = %self.rp.topic, partition = self.rp.partition, objects = n,
                "deleted segment objects no catalog version references (an upload interrupted before its commit)")
            }
            Err(e) => tracing::warn!(error = %e, "could not delete orphan segment objects"),
        }
        self.rp.nothing_remote.store(false, Ordering::Relaxed);
        self.publish(cat.manifest());
        self.last_gc_version = cat.manifest().version;
        Ok(Some(cat))
    }
}

/// Updates the copy-lag gauges: sealed segments not in the bucket yet.
fn update_lag(rp: &RemotePartition, sealed: &[LocalSegmentInfo], remote_end: Option<i64>) {
    let pending: Vec<&LocalSegmentInfo> = sealed
        .iter()
        .filter(|s| remote_end.is_none_or(|e| s.segment.base_offset >= e))
        .collect();
    rp.stats
        .copy_lag_segments
        .store(pending.len() as u64, Ordering::Relaxed);
    rp.stats.copy_lag_bytes.store(
        pending.iter().map(|s| s.size_bytes).sum(),
        Ordering::Relaxed,
    );
    let oldest = pending
        .iter()
        .map(|s| s.retention_timestamp.max(1) as u64)
        .min()
        .unwrap_or(0);
    rp.stats
        .copy_lag_oldest_timestamp_ms
        .store(oldest, Ordering::Relaxed);
}

impl PartitionTask {
    async fn upload_and_retain(
        &mut self,
        cat: &mut PartitionCatalog,
        policy: TieringPolicy,
        now: i64,
    ) -> Result<(), TieringError> {
        // A client's DeleteRecords first: it waits for this commit.
        let deleted = self.log.deleted_before();
        if deleted > cat.manifest().log_start_offset {
            let removed = cat.advance_log_start(deleted).await?;
            self.publish(cat.manifest());
            self.rp
                .stats
                .deleted_remote_segments
                .fetch_add(removed.len() as u64, Ordering::Relaxed);
            tracing::info!(topic = %self.rp.topic, partition = self.rp.partition, segments = removed.len(),
                log_start_offset = deleted, "records deleted by a client are gone from the catalog");
            if let Err(e) = cat.delete_segment_objects(&removed).await {
                tracing::warn!(error = %e, "deleting segment objects below the log start failed; the next claim removes them");
            }
        }
        let mut sealed = self.log.sealed_segments();
        if policy.remote_enabled {
            let upload_end = self.log.upload_end();
            for seg in &sealed {
                if upload_end.is_some_and(|e| seg.segment.last_offset >= e) {
                    break; // not cleaned yet (a compacted log)
                }
                if seg.segment.last_offset < cat.manifest().log_start_offset {
                    continue; // deleted by a client before it was uploaded
                }
                let remote_end = cat.manifest().next_offset();
                let mut copy = None;
                if let Some(end) = remote_end.filter(|e| seg.segment.base_offset < *e) {
                    if seg.segment.last_offset < end {
                        continue; // already in the bucket
                    }
                    // The catalog ends inside this segment (the previous
                    // leader rolled elsewhere): upload the part above it.
                    match self.log.copy_segment_tail(&seg.segment, end) {
                        Ok(c) => copy = Some(c),
                        Err(e) => {
                            tracing::error!(topic = %self.rp.topic, partition = self.rp.partition,
                                base_offset = seg.segment.base_offset, remote_end = end, error = %e,
                                "local segment overlaps the catalog's end and cannot be split; not uploading it");
                            break;
                        }
                    }
                }
                let _permit =
                    self.mgr
                        .uploads
                        .acquire()
                        .await
                        .map_err(|_| TieringError::Verification {
                            key: String::new(),
                            message: "upload pool closed".into(),
                        })?;
                let mut to_upload = copy.clone().unwrap_or_else(|| seg.segment.clone());
                if to_upload.max_timestamp < 0 {
                    to_upload.max_timestamp = seg.retention_timestamp;
                }
                let uploaded =
                    upload_segment(&self.mgr.store, cat, &to_upload, &self.mgr.opts.upload).await;
                if let Some(c) = &copy {
                    self.log.release_copy(c);
                }
                match uploaded {
                    Ok(r) => {
                        self.mgr.note_store(true);
                        self.rp
                            .stats
                            .uploaded_segments
                            .fetch_add(1, Ordering::Relaxed);
                        self.rp
                            .stats
                            .uploaded_bytes
                            .fetch_add(r.size_bytes, Ordering::Relaxed);
                        self.rp.publish(cat.manifest());
                        self.log
                            .set_remote_log_start(cat.manifest().earliest_offset());
                    }
                    Err(e) => {
                        self.rp.stats.upload_errors.fetch_add(1, Ordering::Relaxed);
                        update_lag(&self.rp, &sealed, cat.manifest().next_offset());
                        return Err(e);
                    }
                }
            }
        }
        // Hot window: local segments the catalog has, outside the window.
        if let Some(end) = cat.manifest().next_offset() {
            if let Some(cut) = policy.local_cut(&sealed, self.log.local_size_bytes(), end, now) {
                match self.log.delete_local_before(cut) {
                    Ok(n) => {
                        self.rp
                            .stats
                            .deleted_local_segments
                            .fetch_add(n as u64, Ordering::Relaxed);
                        if n > 0 {
                            tracing::info!(topic = %self.rp.topic, partition = self.rp.partition, segments = n,
                                local_log_start_offset = cut, "deleted local segments outside the hot window (in the bucket)");
                        }
                    }
                    Err(e) => tracing::error!(error = %e, "deleting local segments failed"),
                }
                sealed = self.log.sealed_segments();
            }
        }
        // Total retention: the remote prefix, and any local copy of it.
        let remote_end = cat.manifest().next_offset().unwrap_or(i64::MIN);
        let local_only: u64 = self.log.local_size_bytes().saturating_sub(
            sealed
                .iter()
                .filter(|s| s.segment.last_offset < remote_end)
                .map(|s| s.size_bytes)
                .sum(),
        );
        if let Some(cut) = policy.remote_cut(cat.manifest(), local_only, now) {
            let removed = cat.truncate_before(cut).await?;
            self.rp.publish(cat.manifest());
            self.log
                .set_remote_log_start(cat.manifest().earliest_offset().or(Some(cut)));
            if let Err(e) = self.log.delete_local_before(cut) {
                tracing::error!(error = %e, "deleting local segments below total retention failed");
            }
            self.rp
                .stats
                .deleted_remote_segments
                .fetch_add(removed.len() as u64, Ordering::Relaxed);
            tracing::info!(topic = %self.rp.topic, partition = self.rp.partition, segments = removed.len(),
                log_start_offset = cut, "total retention removed remote segments");
            if let Err(e) = cat.delete_segment_objects(&removed).await {
                tracing::warn!(error = %e, "deleting expired segment objects failed; the next claim removes them");
            }
            sealed = self.log.sealed_segments();
        }
        if cat.manifest().version
            >= self.last_gc_version + 2 * self.mgr.opts.manifest_versions_kept as u64
        {
            match cat.gc(self.mgr.opts.manifest_versions_kept).await {
                Ok(_) => self.last_gc_version = cat.manifest().version,
                Err(e) => tracing::warn!(error = %e, "manifest garbage collection failed"),
            }
        }
        let end = cat.manifest().next_offset();
        update_lag(&self.rp, &sealed, end);
        Ok(())
    }
}
