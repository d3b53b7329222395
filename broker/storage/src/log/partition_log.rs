//! `PartitionLog`: the ordered segments of one topic partition (Kafka's
//! `UnifiedLog`, local part), with offset assignment, idempotent-producer
//! checks, group-committed fsync and reads up to the high watermark.
//! Timestamp lookups are in `timestamps.rs`, retention and segment rolling
//! in `retention.rs`, the flush rounds in `group_commit.rs`, the ends and
//! the high watermark in `ends.rs`. Which broker leads, the ISR and the
//! epoch to stamp are the partition's above it (`crate::partition`), which
//! every write goes through.
//!
//! Durability policy (docs/durability.md): the high watermark is the durable
//! prefix of the log. A flusher task fsyncs appended data in rounds, so
//! concurrent appends share one fsync; acks=all producers wait for the
//! watermark to pass their batch, and consumers never see data that a crash
//! could take back. This type never talks to the network.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Instant;

use bytes::Bytes;
use thiserror::Error;
use tokio::sync::{watch, Notify};

use super::batch::{self, BatchHeader};
use super::producer_state::{ProducerStateManager, SequenceCheck, SequenceError};
use super::segment::{LogSegment, RecoveryReport, SegmentSettings, LOG_SUFFIX};
use strata_common::clock::SharedClock;
use strata_common::config::{TimestampType, TopicConfig};

/// A topic's live configuration, shared by its partitions and changeable at
/// run time.
#[derive(Debug)]
pub struct SharedConfig(RwLock<Arc<TopicConfig>>);

impl SharedConfig {
    pub fn new(c: TopicConfig) -> Arc<Self> {
        Arc::new(SharedConfig(RwLock::new(Arc::new(c))))
    }
    pub fn get(&self) -> Arc<TopicConfig> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
    pub fn set(&self, c: TopicConfig) {
        *self.0.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(c);
    }
}

/// `remote_log_start` before the tiering manager first read the catalog.
const REMOTE_START_UNKNOWN: i64 = -2;

#[derive(Debug, Error)]
pub enum LogError {
    #[error("offset {offset} is out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
    #[error("record batch of {size} bytes exceeds max.message.bytes {max}")]
    MessageTooLarge { size: usize, max: usize },
    #[error("corrupt record batch: {0}")]
    Corrupt(#[from] batch::BatchError),
    #[error("partition log is closed")]
    Closed,
    /// This broker follows the partition: only the leader's batches,
    /// through the replica fetcher, are appended here.
    #[error("this broker is a follower of the partition")]
    NotLeader,
    /// A follower's write for a leadership this log no longer follows.
    #[error("replicated write for leader epoch {epoch}, which this log no longer follows")]
    StaleLeaderEpoch { epoch: i32 },
    /// A replicated batch that does not continue this log.
    #[error("replicated batch at offset {base_offset} does not continue the log ending at {log_end_offset}")]
    NotContiguous {
        log_end_offset: i64,
        base_offset: i64,
    },
    /// A stored batch failed its check when read: never served.
    #[error("corrupt record batch in {} at position {position}: {reason}", segment.display())]
    CorruptStored {
        segment: PathBuf,
        position: u64,
        reason: batch::BatchError,
    },
    /// The records at an offset were in a sealed segment that recovery
    /// found cut short: the file lost them (the bucket may hold them).
    #[error("records {from}..{to} lost from {} (found cut short at start)", segment.display())]
    LostLocally {
        segment: PathBuf,
        from: i64,
        to: i64,
    },
    #[error("idempotent producer check failed: {0:?}")]
    Sequence(SequenceError),
    #[error("transaction marker refused: {0:?}")]
    Marker(SequenceError),
    #[error("storage error: {0}")]
    Io(#[from] io::Error),
}

/// Who wrote a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppendOrigin {
    /// A producer: idempotence and sequence checks apply.
    Client,
    /// A producer whose transactional batches are verified (KIP-890): one
    /// that would open the producer's transaction here must carry the
    /// guard [`PartitionLog::begin_txn_verification`] issued (None: no
    /// verification was needed because the transaction was open then).
    VerifiedClient(Option<u64>),
    /// A coordinator writing its own internal topic.
    Coordinator,
}

/// Result of a successful append.
#[derive(Debug, Clone, Copy)]
pub struct AppendInfo {
    pub base_offset: i64,
    pub last_offset: i64,
    /// Broker time stamped on the batches, or -1 for CreateTime topics.
    pub log_append_time: i64,
    pub log_start_offset: i64,
    /// The batches were retries of batches already written; nothing new
    /// was appended and the offsets are the original ones.
    pub duplicate: bool,
    /// The leader epoch this broker appended at: an acks=all wait holds
    /// only while it still leads at it.
    pub leader_epoch: i32,
}

/// What a read returns: whole batches, plus the partition's offsets.
#[derive(Debug, Clone)]
pub struct ReadResult {
    pub records: Bytes,
    pub high_watermark: i64,
    pub log_start_offset: i64,
}

#[derive(Debug)]
pub(super) struct LogInner {
    pub(super) segments: BTreeMap<i64, LogSegment>,
    pub(super) log_start_offset: i64,
    /// Scratch buffer for rewriting batch headers before they hit the file.
    scratch: Vec<u8>,
    pub(super) producers: ProducerStateManager,
    /// When the oldest append not yet covered by a flush round happened:
    /// what the commit latency (append to durable) is measured from.
    pub(super) unflushed_since: Option<Instant>,
    /// Truncations so far: a flush round that raced one does not report
    /// its stale end as durable.
    pub(super) truncations: u64,
}

impl LogInner {
    pub(super) fn active(&self) -> &LogSegment {
        self.segments
            .values()
            .next_back()
            .expect("a partition log always has an active segment")
    }
    pub(super) fn active_mut(&mut self) -> &mut LogSegment {
        self.segments
            .values_mut()
            .next_back()
            .expect("a partition log always has an active segment")
    }
    pub(super) fn log_end_offset(&self) -> i64 {
        self.active().next_offset()
    }
}

/// No bound from above: the partition leads alone.
pub(crate) const UNBOUNDED: i64 = i64::MAX;

/// The log's ends and the high watermark's bound (`ends.rs`), and its
/// hydration (`hydration.rs`).
#[derive(Debug)]
pub(crate) struct Ends {
    /// The end of the log's fsynced prefix.
    pub(super) durable_end: i64,
    /// How far the partition above lets the high watermark go.
    pub(super) bound: i64,
    /// The log holds what this replica acknowledged before (`hydration.rs`).
    pub(super) hydrated: bool,
    /// The unhydrated marker is on disk (`hydration.rs`).
    pub(super) unhydrated_marker: bool,
}

impl Ends {
    pub(super) fn new(durable_end: i64) -> Self {
        Ends {
            durable_end,
            bound: UNBOUNDED,
            hydrated: false,
            unhydrated_marker: false,
        }
    }
}

/// Present in a partition's directory while its log is not hydrated
/// (`hydration.rs`).
pub(crate) const UNHYDRATED_MARKER: &str = "replica.unhydrated";

#[derive(Debug)]
pub struct PartitionLog {
    topic: String,
    partition: i32,
    dir: PathBuf,
    config: Arc<SharedConfig>,
    inner: Mutex<LogInner>,
    pub(super) high_watermark: watch::Sender<i64>,
    pub(super) flush_requested: Notify,
    pub(super) closed: AtomicBool,
    /// First offset in the object store (-1: nothing remote). Below the
    /// local log start, reads go there (set by the tiering manager).
    remote_log_start: AtomicI64,
    /// Offsets below this were deleted by a client (DeleteRecords) or, on a
    /// follower, below the leader's log start: never served again, even
    /// from the bucket (`records_deleted.rs`). 0 when none were.
    pub(super) deleted_before: AtomicI64,
    /// The highest leader epoch this log was given (`epochs.rs`): what a
    /// single broker, which has no epochs of the store's, stamps.
    pub(super) leader_epoch: std::sync::atomic::AtomicI32,
    /// Where each leader epoch began (`leader-epoch-checkpoint`).
    pub(super) epochs: Mutex<super::leader_epoch::LeaderEpochCache>,
    /// The durable end, the bound the partition above puts on the high
    /// watermark, and whether the log holds what it acknowledged
    /// (`ends.rs`, `hydration.rs`).
    pub(super) ends: Mutex<Ends>,
    /// The log end offset after every append (replica fetches wait on it).
    pub(super) log_end: watch::Sender<i64>,
    /// Where the log reads time: LogAppendTime and marker timestamps and
    /// `segment.ms`. Latency timers (how long an append waited for its
    /// flush) read the machine's monotonic clock.
    pub(super) clock: SharedClock,
}

/// Directory name of a partition: `<topic>-<partition>`, as Kafka names it.
pub(crate) fn partition_dir_name(topic: &str, partition: i32) -> String {
    format!("{topic}-{partition}")
}

pub(super) fn settings(c: &TopicConfig) -> SegmentSettings {
    SegmentSettings {
        index_interval_bytes: c.index_interval_bytes,
        max_index_bytes: c.segment_index_bytes,
    }
}

impl PartitionLog {
    /// Creates the directory and first segment of a partition this broker
    /// may have held before and lost (a replaced disk): the log starts
    /// unhydrated (`hydration.rs`), the marker durable before the log
    /// exists.
    pub(crate) fn create_unhydrated(
        data_dir: &Path,
        topic: &str,
        partition: i32,
        config: Arc<SharedConfig>,
        clock: SharedClock,
    ) -> Result<Arc<Self>, LogError> {
        let dir = data_dir.join(partition_dir_name(topic, partition));
        fs::create_dir_all(&dir)?;
        fs::write(dir.join(UNHYDRATED_MARKER), b"")?;
        fsync_dir(&dir)?;
        fsync_dir(data_dir)?;
        Self::create(data_dir, topic, partition, config, clock)
    }

    /// Creates the directory and first segment of a new partition.
    pub fn create(
        data_dir: &Path,
        topic: &str,
        partition: i32,
        config: Arc<SharedConfig>,
        clock: SharedClock,
    ) -> Result<Arc<Self>, LogError> {
        let dir = data_dir.join(partition_dir_name(topic, partition));
        fs::create_dir_all(&dir)?;
        let seg = LogSegment::create(&dir, 0, settings(&config.get()))?;
        fsync_dir(&dir)?;
        fsync_dir(data_dir)?;
        let mut segments = BTreeMap::new();
        segments.insert(0, seg);
        let epochs = super::leader_epoch::open_for_log(&dir, 0, 0);
        let log = Self::from_parts(
            topic,
            partition,
            dir,
            config,
            segments,
            0,
            0,
            ProducerStateManager::default(),
            epochs,
            clock,
        );
        log.load_hydration();
        Ok(log)
    }

    /// Creates an empty partition whose first offset is `start_offset`, with
    /// the producer state as of that offset (disaster recovery from the
    /// object store).
    pub(crate) fn create_at(
        data_dir: &Path,
        topic: &str,
        partition: i32,
        config: Arc<SharedConfig>,
        start_offset: i64,
        producer_snapshot: Option<&[u8]>,
        leader_epoch: Option<i32>,
        clock: SharedClock,
    ) -> Result<Arc<Self>, LogError> {
        let dir = data_dir.join(partition_dir_name(topic, partition));
        fs::create_dir_all(&dir)?;
        // Empty: it holds nothing it acknowledged before (`hydration.rs`).
        fs::write(dir.join(UNHYDRATED_MARKER), b"")?;
        fsync_dir(&dir)?;
        if let (Some(epoch), true) = (leader_epoch, start_offset > 0) {
            // Before the log opens, which takes its epoch from the cache;
            // at the last tiered offset, as a replica started at the
            // bucket's end records it (`follower.rs`).
            let mut cache = super::leader_epoch::LeaderEpochCache::empty(&dir);
            cache.assign(epoch, start_offset - 1)?;
        }
        if let Some(mut state) = producer_snapshot.and_then(ProducerStateManager::decode) {
            // The markers of transactions open at the bucket's end were
            // lost with the disk (and their coordinator's state with it):
            // nothing would ever end them, and the last stable offset
            // would stay behind them for good. Their records read as
            // committed (docs/transactions.md).
            state.forget_open_transactions();
            state.write_snapshot(&dir, start_offset)?;
        }
        let log = Self::open(
            data_dir,
            topic,
            partition,
            config,
            None,
            Some(start_offset),
            false,
            clock,
        )?;
        fsync_dir(&dir)?;
        fsync_dir(data_dir)?;
        Ok(log)
    }

    /// Opens an existing partition. Segments from the one holding
    /// `recovery_point` onwards are recovered (CRC scan, torn tail cut,
    /// indexes rebuilt) unless the broker shut down cleanly. A sealed
    /// segment that ends before its successor starts keeps the missing
    /// range as lost locally (see `docs/segment-files.md`).
    pub fn open(
        data_dir: &Path,
        topic: &str,
        partition: i32,
        config: Arc<SharedConfig>,
        recovery_point: Option<i64>,
        log_start_checkpoint: Option<i64>,
        clean_shutdown: bool,
        clock: SharedClock,
    ) -> Result<Arc<Self>, LogError> {
        let dir = data_dir.join(partition_dir_name(topic, partition));
        let cfg = config.get();
        let mut bases = Vec::new();
        for entry in fs::read_dir(&dir)? {
            let name = entry?.file_name();
            let name = name.to_string_lossy();
            if let Some(stem) = name.strip_suffix(LOG_SUFFIX) {
                if let Ok(base) = stem.parse::<i64>() {
                    bases.push(base);
                }
            } else if name.ends_with(".deleted")
                || name.ends_with(".swap")
                || name.ends_with(".tmp")
            {
                let _ = fs::remove_file(dir.join(name.as_ref()));
            }
        }
        bases.sort_unstable();
        // A cleaning pass a crash interrupted may have moved some of a
        // group's files: every segment is recovered then.
        let interrupted_clean = super::cleaner_checkpoint::interrupted_pass(&dir);
        let cleaned_through =
            super::cleaner_checkpoint::CleanerCheckpoint::load(&dir).cleaned_through;
        // Segments at or after the one holding the recovery point.
        let recover_from = match (clean_shutdown, recovery_point) {
            _ if interrupted_clean => i64::MIN,
            (true, _) => i64::MAX,
            (false, None) => i64::MIN,
            (false, Some(rp)) => bases
                .iter()
                .copied()
                .filter(|b| *b <= rp)
                .max()
                .unwrap_or(i64::MIN),
        };
        let mut segments: BTreeMap<i64, LogSegment> = BTreeMap::new();
        let mut expected_next: Option<i64> = None;
        for base in bases {
            let recover = base >= recover_from;
            let (seg, report): (LogSegment, RecoveryReport) =
                LogSegment::open(&dir, base, settings(&cfg), recover)?;
            if report.truncated_bytes > 0 {
                tracing::warn!(
                    topic,
                    partition,
                    base,
                    truncated_bytes = report.truncated_bytes,
                    reason = report.stopped_by.as_deref().unwrap_or(""),
                    "recovery truncated a torn or corrupt segment tail"
                );
            }
            if let Some(n) = expected_next {
                if base < n {
                    tracing::warn!(
                        topic,
                        partition,
                        base,
                        "segment overlaps the previous one; deleting it"
                    );
                    drop(seg);
                    remove_segment_files(&dir, base);
                    continue;
                }
            }
            // A segment that ends before its successor starts lost records:
            // not a torn write (a segment is fsynced before its successor
            // exists) but damage, whether recovery cut it or it was cut at a
            // batch boundary. Its successors are kept, and the missing range
            // stays in the log as lost locally.
            if let Some((_, prev)) = segments.iter_mut().next_back() {
                let from = prev.next_offset();
                // Below `cleaned_through`, gaps are compaction's.
                if from < base && base > cleaned_through {
                    prev.mark_lost_until(base);
                    tracing::error!(
                        topic,
                        partition,
                        segment = %prev.log_path().display(),
                        from,
                        to = base - 1,
                        "a sealed segment is shorter than its records: they are read from the bucket's \
                         copy if tiered, else fetches there fail with KAFKA_STORAGE_ERROR"
                    );
                }
            }
            expected_next = Some(seg.next_offset());
            segments.insert(base, seg);
        }
        if segments.is_empty() {
            let start = log_start_checkpoint.unwrap_or(0).max(0);
            segments.insert(start, LogSegment::create(&dir, start, settings(&cfg))?);
        }
        // Make whatever survived durable before it becomes visible.
        if let Some(active) = segments.values().next_back() {
            active.file()?.sync_data()?;
        }
        // Older segments are sealed: their handles go to the bounded pool,
        // so a partition with many segments opens with one descriptor.
        let active_base = segments.keys().next_back().copied();
        for (base, seg) in segments.iter_mut() {
            if Some(*base) != active_base {
                seg.release_file();
            } else {
                seg.mark_reopened(clock.now_ms());
            }
        }
        let first = *segments.keys().next().unwrap_or(&0);
        let leo = segments
            .values()
            .next_back()
            .map(|s| s.next_offset())
            .unwrap_or(0);
        let log_start = log_start_checkpoint.unwrap_or(first).clamp(first, leo);
        let producers = super::producer_state::rebuild_producer_state(&dir, &mut segments, leo)?;
        let epochs = super::leader_epoch::open_for_log(&dir, log_start, leo);
        let log = Self::from_parts(
            topic, partition, dir, config, segments, log_start, leo, producers, epochs, clock,
        );
        // Opened from disk: it holds what it held, unless it was created
        // or emptied since it last caught up (`hydration.rs`).
        log.load_hydration();
        Ok(log)
    }

    #[allow(clippy::too_many_arguments)]
    fn from_parts(
        topic: &str,
        partition: i32,
        dir: PathBuf,
        config: Arc<SharedConfig>,
        segments: BTreeMap<i64, LogSegment>,
        log_start_offset: i64,
        high_watermark: i64,
        producers: ProducerStateManager,
        epochs: super::leader_epoch::LeaderEpochCache,
        clock: SharedClock,
    ) -> Arc<Self> {
        let (hw, _) = watch::channel(high_watermark);
        let (log_end, _) = watch::channel(high_watermark);
        let leader_epoch = epochs.latest_epoch().unwrap_or(0);
        Arc::new(PartitionLog {
            topic: topic.to_string(),
            partition,
            dir,
            config,
            inner: Mutex::new(LogInner {
                segments,
                log_start_offset,
                scratch: Vec::new(),
                producers,
                unflushed_since: None,
                truncations: 0,
            }),
            high_watermark: hw,
            flush_requested: Notify::new(),
            closed: AtomicBool::new(false),
            remote_log_start: AtomicI64::new(-1),
            deleted_before: AtomicI64::new(0),
            leader_epoch: leader_epoch.into(),
            epochs: Mutex::new(epochs),
            ends: Mutex::new(Ends::new(high_watermark)),
            log_end,
            clock,
        })
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, LogInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lock, for operations that touch files: refused once the log is
    /// closed or deleted, so a late flush or retention pass can never write
    /// into the directory of a topic re-created under the same name.
    pub(super) fn lock_open(&self) -> Result<MutexGuard<'_, LogInner>, LogError> {
        let inner = self.lock();
        if self.closed.load(Ordering::Acquire) {
            return Err(LogError::Closed);
        }
        Ok(inner)
    }

    pub fn topic(&self) -> &str {
        &self.topic
    }
    pub fn partition(&self) -> i32 {
        self.partition
    }
    pub fn dir(&self) -> &Path {
        &self.dir
    }
    /// The clock this log reads (the log manager's).
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    pub fn config(&self) -> Arc<TopicConfig> {
        self.config.get()
    }
    pub fn high_watermark(&self) -> i64 {
        *self.high_watermark.borrow()
    }
    pub fn subscribe(&self) -> watch::Receiver<i64> {
        self.high_watermark.subscribe()
    }
    /// The first offset clients can read: the remote log start when the
    /// object store holds older data than the local disk (Kafka's
    /// `logStartOffset`), else the local one.
    pub fn log_start_offset(&self) -> i64 {
        self.global_start(self.lock().log_start_offset)
    }
    /// The first offset on local disk (Kafka's `localLogStartOffset`).
    pub fn local_log_start_offset(&self) -> i64 {
        self.lock().log_start_offset
    }
    /// The tiering manager manages this log but has not read its catalog
    /// yet: where the log starts is not known until it has.
    pub fn mark_remote_log_start_unknown(&self) {
        let _ = self.remote_log_start.compare_exchange(
            -1,
            REMOTE_START_UNKNOWN,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
    }
    /// The log start offset, unless the bucket's part of the log is not
    /// known yet (its catalog could not be read): what a leader tells its
    /// followers, which delete below it.
    pub fn log_start_offset_if_known(&self) -> Option<i64> {
        (self.remote_log_start.load(Ordering::Acquire) != REMOTE_START_UNKNOWN)
            .then(|| self.log_start_offset())
    }
    /// Records where the remote part of the log starts (None: nothing remote).
    pub fn set_remote_log_start(&self, offset: Option<i64>) {
        self.remote_log_start
            .store(offset.unwrap_or(-1), Ordering::Release);
    }
    /// The remote log start, if the object store holds part of the log.
    pub fn remote_log_start_offset(&self) -> Option<i64> {
        let r = self.remote_log_start.load(Ordering::Acquire);
        (r >= 0).then_some(r)
    }
    pub(super) fn global_start(&self, local: i64) -> i64 {
        let start = match self.remote_log_start_offset() {
            Some(r) if r < local => r,
            _ => local,
        };
        start.max(self.deleted_before.load(Ordering::Acquire))
    }
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }
    pub fn log_end_offset(&self) -> i64 {
        self.lock().log_end_offset()
    }
    pub fn size_bytes(&self) -> u64 {
        self.lock().segments.values().map(|s| s.size()).sum()
    }
    /// The largest producer id with state in this partition.
    pub fn max_producer_id(&self) -> Option<i64> {
        self.lock().producers.max_producer_id()
    }
    pub fn segment_count(&self) -> usize {
        self.lock().segments.len()
    }

    /// KIP-890, before a producer's transactional write: None when its
    /// transaction is already open here at `epoch` (no verification
    /// needed), else the token of the producer's verification guard (a
    /// pending one is shared), which a marker for the producer revokes.
    pub fn begin_txn_verification(&self, producer_id: i64, epoch: i16) -> Option<u64> {
        static NEXT_TOKEN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let mut inner = self.lock();
        if inner.producers.has_ongoing_txn(producer_id, epoch) {
            return None;
        }
        let token = NEXT_TOKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(inner.producers.begin_verification(
            producer_id,
            super::producer_state::VerificationGuard { token, epoch },
        ))
    }

    /// Appends validated batches at `leader_epoch` (the partition above
    /// checked that this broker leads at it), assigning offsets. `records`
    /// must be the concatenation of the batches described by `headers`; a
    /// header's max timestamp is what is stored (the validator's, when it
    /// differs from the batch's own). A coordinator's own batches (offset
    /// commits of a transaction) carry a producer id but no sequence, and
    /// skip the idempotence checks, as in Kafka.
    pub(crate) fn append_as_leader(
        &self,
        records: &[u8],
        headers: &[BatchHeader],
        origin: AppendOrigin,
        leader_epoch: i32,
    ) -> Result<AppendInfo, LogError> {
        let cfg = self.config.get();
        for h in headers {
            if h.size > cfg.max_message_bytes {
                return Err(LogError::MessageTooLarge {
                    size: h.size,
                    max: cfg.max_message_bytes,
                });
            }
        }
        let now = self.clock.now_ms();
        let append_time = cfg.message_timestamp_type == TimestampType::LogAppendTime;
        let mut inner = self.lock_open()?;
        let mut next = inner.log_end_offset();
        let mut first: Option<(i64, bool)> = None;
        let mut last_written = next - 1;
        let mut pos = 0usize;
        for h in headers {
            let check = match origin {
                AppendOrigin::Client => inner.producers.check(h),
                AppendOrigin::VerifiedClient(token) => inner
                    .producers
                    .check_verified(h, token)
                    .and_then(|()| inner.producers.check(h)),
                // Not sequenced, but a fenced producer epoch is refused.
                AppendOrigin::Coordinator => inner
                    .producers
                    .check_marker(h.producer_id, h.producer_epoch)
                    .map(|()| SequenceCheck::Append),
            };
            match check.map_err(LogError::Sequence)? {
                SequenceCheck::Duplicate(meta) => {
                    tracing::debug!(topic = %self.topic, partition = self.partition, producer_id = h.producer_id,
                        base_sequence = h.base_sequence, base_offset = meta.base_offset, "duplicate batch; returning its original offset");
                    first.get_or_insert((meta.base_offset, true));
                    last_written = last_written.max(meta.last_offset);
                    pos += h.size;
                    continue;
                }
                SequenceCheck::Append => {}
            }
            let last = next + h.last_offset_delta as i64;
            if inner.active().should_roll(
                h.size as u64,
                last,
                cfg.segment_bytes,
                cfg.max_segment_ms(),
                now,
            ) {
                self.roll_locked(&mut inner, &cfg)?;
            }
            let mut scratch = std::mem::take(&mut inner.scratch);
            scratch.clear();
            scratch.extend_from_slice(&records[pos..pos + h.size]);
            batch::set_base_offset(&mut scratch, next);
            let epoch = self.stamp_epoch(&mut scratch, next, leader_epoch);
            let mut stored = *h;
            stored.base_offset = next;
            stored.partition_leader_epoch = epoch;
            if append_time {
                batch::set_log_append_time(&mut scratch, now);
                stored.max_timestamp = now;
                stored.attributes |= 0x08;
            } else if BatchHeader::parse_header_only(&scratch)
                .is_ok_and(|sent| sent.max_timestamp != h.max_timestamp)
            {
                // The validator found the records' true max timestamp and
                // the producer's header says otherwise (-1, or a lie).
                batch::set_max_timestamp(&mut scratch, h.max_timestamp);
            }
            let result = inner.active_mut().append(&scratch, &stored, now);
            inner.scratch = scratch;
            result?;
            match origin {
                AppendOrigin::Client | AppendOrigin::VerifiedClient(_) => {
                    inner.producers.update(&stored)
                }
                AppendOrigin::Coordinator => inner.producers.track_txn(&stored),
            }
            first.get_or_insert((next, false));
            last_written = last;
            pos += h.size;
            next = last + 1;
        }
        let log_start_offset = self.global_start(inner.log_start_offset);
        let (base_offset, duplicate) = first.unwrap_or((next, false));
        let duplicate = duplicate && last_written < next;
        if !duplicate {
            inner.unflushed_since.get_or_insert_with(Instant::now);
        }
        drop(inner);
        if !duplicate {
            self.log_end.send_replace(next);
            self.flush_requested.notify_one();
        }
        Ok(AppendInfo {
            base_offset,
            last_offset: last_written,
            log_append_time: if append_time && !duplicate { now } else { -1 },
            log_start_offset,
            duplicate,
            leader_epoch,
        })
    }

    pub(super) fn roll_locked(
        &self,
        inner: &mut LogInner,
        cfg: &TopicConfig,
    ) -> Result<(), LogError> {
        let next = inner.log_end_offset();
        inner.active_mut().seal()?;
        inner.active_mut().release_file();
        inner.producers.write_snapshot(&self.dir, next)?;
        let seg = LogSegment::create(&self.dir, next, settings(cfg))?;
        inner.segments.insert(next, seg);
        tracing::debug!(topic = %self.topic, partition = self.partition, base_offset = next, "rolled segment");
        Ok(())
    }

    /// Stops the flusher and makes everything durable (clean shutdown).
    pub fn close(&self) -> io::Result<()> {
        self.flush()?;
        let mut inner = self.lock();
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(()); // already closed or deleted
        }
        self.flush_requested.notify_one();
        inner.active_mut().seal()?;
        let leo = inner.log_end_offset();
        if leo > 0 {
            inner.producers.write_snapshot(&self.dir, leo)?;
        }
        Ok(())
    }

    /// Closes the log and moves its directory into `to` (a retired copy,
    /// kept for an operator).
    pub(crate) fn retire_into(&self, to: &Path) -> io::Result<()> {
        self.close()?;
        let inner = self.lock();
        for seg in inner.segments.values() {
            super::file_pool::global().forget(&seg.log_path());
        }
        match self.dir.file_name() {
            Some(name) => fs::rename(&self.dir, to.join(name)),
            None => Err(io::Error::other("partition directory without a name")),
        }
    }

    /// Removes the partition's directory (topic deletion).
    pub fn delete(&self) -> io::Result<()> {
        self.closed.store(true, Ordering::Release);
        self.flush_requested.notify_one();
        let inner = self.lock();
        for seg in inner.segments.values() {
            super::file_pool::global().forget(&seg.log_path());
        }
        match fs::remove_dir_all(&self.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }
}

fn remove_segment_files(dir: &Path, base: i64) {
    let stem = super::segment::file_stem(base);
    super::file_pool::global().forget(&dir.join(format!("{stem}.log")));
    for suffix in [".log", ".index", ".timeindex", ".txnindex"] {
        let _ = fs::remove_file(dir.join(format!("{stem}{suffix}")));
    }
}

pub use strata_common::durable_file::fsync_dir;

#[cfg(test)]
#[path = "partition_log_tests.rs"]
mod tests;
