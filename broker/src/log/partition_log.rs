//! `PartitionLog`: the ordered segments of one topic partition, with offset
//! assignment, group-committed fsync, reads up to the high watermark,
//! timestamp lookups and retention.
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::Duration;

use bytes::Bytes;
use thiserror::Error;
use tokio::sync::{watch, Notify};

use super::batch::{self, BatchHeader, BatchScanner};
use super::producer_state::{ProducerStateManager, SequenceCheck, SequenceError};
use super::segment::{LogSegment, RecoveryReport, SegmentSettings, SegmentSlice, LOG_SUFFIX};
use crate::config::{TimestampType, TopicConfig};

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
    #[error("idempotent producer check failed: {0:?}")]
    Sequence(SequenceError),
    #[error("storage error: {0}")]
    Io(#[from] io::Error),
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
}

/// What a read returns: whole batches, plus the partition's offsets.
#[derive(Debug, Clone)]
pub struct ReadResult {
    pub records: Bytes,
    pub high_watermark: i64,
    pub log_start_offset: i64,
}

#[derive(Debug)]
struct LogInner {
    segments: BTreeMap<i64, LogSegment>,
    log_start_offset: i64,
    /// Scratch buffer for rewriting batch headers before they hit the file.
    scratch: Vec<u8>,
    producers: ProducerStateManager,
}

impl LogInner {
    fn active(&self) -> &LogSegment {
        self.segments
            .values()
            .next_back()
            .expect("a partition log always has an active segment")
    }
    fn active_mut(&mut self) -> &mut LogSegment {
        self.segments
            .values_mut()
            .next_back()
            .expect("a partition log always has an active segment")
    }
    fn log_end_offset(&self) -> i64 {
        self.active().next_offset()
    }
}

#[derive(Debug)]
pub struct PartitionLog {
    topic: String,
    partition: i32,
    dir: PathBuf,
    config: Arc<SharedConfig>,
    inner: Mutex<LogInner>,
    high_watermark: watch::Sender<i64>,
    flush_requested: Notify,
    closed: AtomicBool,
}

/// Directory name of a partition: `<topic>-<partition>`, as Kafka names it.
pub fn partition_dir_name(topic: &str, partition: i32) -> String {
    format!("{topic}-{partition}")
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn settings(c: &TopicConfig) -> SegmentSettings {
    SegmentSettings {
        index_interval_bytes: c.index_interval_bytes,
        max_index_bytes: c.segment_index_bytes,
    }
}

impl PartitionLog {
    /// Creates the directory and first segment of a new partition.
    pub fn create(
        data_dir: &Path,
        topic: &str,
        partition: i32,
        config: Arc<SharedConfig>,
    ) -> Result<Arc<Self>, LogError> {
        let dir = data_dir.join(partition_dir_name(topic, partition));
        fs::create_dir_all(&dir)?;
        let seg = LogSegment::create(&dir, 0, settings(&config.get()))?;
        fsync_dir(&dir)?;
        fsync_dir(data_dir)?;
        let mut segments = BTreeMap::new();
        segments.insert(0, seg);
        Ok(Self::from_parts(
            topic,
            partition,
            dir,
            config,
            segments,
            0,
            0,
            ProducerStateManager::default(),
        ))
    }

    /// Opens an existing partition. Segments from the one holding
    /// `recovery_point` onwards are recovered (CRC scan, torn tail cut,
    /// indexes rebuilt) unless the broker shut down cleanly. A corrupt
    /// segment drops every later segment, which cannot be trusted.
    pub fn open(
        data_dir: &Path,
        topic: &str,
        partition: i32,
        config: Arc<SharedConfig>,
        recovery_point: Option<i64>,
        log_start_checkpoint: Option<i64>,
        clean_shutdown: bool,
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
        // Segments at or after the one holding the recovery point.
        let recover_from = match (clean_shutdown, recovery_point) {
            (true, _) => i64::MAX,
            (false, None) => i64::MIN,
            (false, Some(rp)) => bases
                .iter()
                .copied()
                .filter(|b| *b <= rp)
                .max()
                .unwrap_or(i64::MIN),
        };
        let mut segments = BTreeMap::new();
        let mut expected_next: Option<i64> = None;
        let mut drop_rest = false;
        for base in bases {
            if drop_rest {
                tracing::warn!(
                    topic,
                    partition,
                    base,
                    "deleting segment after a corrupt one"
                );
                remove_segment_files(&dir, base);
                continue;
            }
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
                drop_rest = true;
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
            expected_next = Some(seg.next_offset());
            segments.insert(base, seg);
        }
        if segments.is_empty() {
            let start = log_start_checkpoint.unwrap_or(0).max(0);
            segments.insert(start, LogSegment::create(&dir, start, settings(&cfg))?);
        }
        // Make whatever survived durable before it becomes visible.
        if let Some(active) = segments.values().next_back() {
            active.file().sync_data()?;
        }
        let first = *segments.keys().next().unwrap_or(&0);
        let leo = segments
            .values()
            .next_back()
            .map(|s| s.next_offset())
            .unwrap_or(0);
        let log_start = log_start_checkpoint.unwrap_or(first).clamp(first, leo);
        let producers = rebuild_producer_state(&dir, &segments, leo)?;
        Ok(Self::from_parts(
            topic, partition, dir, config, segments, log_start, leo, producers,
        ))
    }

    fn from_parts(
        topic: &str,
        partition: i32,
        dir: PathBuf,
        config: Arc<SharedConfig>,
        segments: BTreeMap<i64, LogSegment>,
        log_start_offset: i64,
        high_watermark: i64,
        producers: ProducerStateManager,
    ) -> Arc<Self> {
        let (hw, _) = watch::channel(high_watermark);
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
            }),
            high_watermark: hw,
            flush_requested: Notify::new(),
            closed: AtomicBool::new(false),
        })
    }

    fn lock(&self) -> MutexGuard<'_, LogInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The lock, for operations that touch files: refused once the log is
    /// closed or deleted, so a late flush or retention pass can never write
    /// into the directory of a topic re-created under the same name.
    fn lock_open(&self) -> Result<MutexGuard<'_, LogInner>, LogError> {
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
    pub fn config(&self) -> Arc<TopicConfig> {
        self.config.get()
    }
    pub fn high_watermark(&self) -> i64 {
        *self.high_watermark.borrow()
    }
    pub fn subscribe(&self) -> watch::Receiver<i64> {
        self.high_watermark.subscribe()
    }
    pub fn log_start_offset(&self) -> i64 {
        self.lock().log_start_offset
    }
    pub fn log_end_offset(&self) -> i64 {
        self.lock().log_end_offset()
    }
    pub fn size_bytes(&self) -> u64 {
        self.lock().segments.values().map(|s| s.size()).sum()
    }
    pub fn segment_count(&self) -> usize {
        self.lock().segments.len()
    }

    /// Appends validated batches, assigning offsets. `records` must be the
    /// concatenation of the batches described by `headers`.
    pub fn append(&self, records: &[u8], headers: &[BatchHeader]) -> Result<AppendInfo, LogError> {
        let cfg = self.config.get();
        for h in headers {
            if h.size > cfg.max_message_bytes {
                return Err(LogError::MessageTooLarge {
                    size: h.size,
                    max: cfg.max_message_bytes,
                });
            }
        }
        let now = now_ms();
        let append_time = cfg.message_timestamp_type == TimestampType::LogAppendTime;
        let mut inner = self.lock_open()?;
        let mut next = inner.log_end_offset();
        let mut first: Option<(i64, bool)> = None;
        let mut last_written = next - 1;
        let mut pos = 0usize;
        for h in headers {
            match inner.producers.check(h).map_err(LogError::Sequence)? {
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
                cfg.segment_ms,
                now,
            ) {
                self.roll_locked(&mut inner, &cfg)?;
            }
            let mut scratch = std::mem::take(&mut inner.scratch);
            scratch.clear();
            scratch.extend_from_slice(&records[pos..pos + h.size]);
            batch::set_base_offset(&mut scratch, next);
            let mut stored = *h;
            stored.base_offset = next;
            if append_time {
                batch::set_log_append_time(&mut scratch, now);
                stored.max_timestamp = now;
                stored.attributes |= 0x08;
            }
            let result = inner.active_mut().append(&scratch, &stored, now);
            inner.scratch = scratch;
            result?;
            inner.producers.update(&stored);
            first.get_or_insert((next, false));
            last_written = last;
            pos += h.size;
            next = last + 1;
        }
        let log_start_offset = inner.log_start_offset;
        drop(inner);
        let (base_offset, duplicate) = first.unwrap_or((next, false));
        let duplicate = duplicate && last_written < next;
        if !duplicate {
            self.flush_requested.notify_one();
        }
        Ok(AppendInfo {
            base_offset,
            last_offset: last_written,
            log_append_time: if append_time && !duplicate { now } else { -1 },
            log_start_offset,
            duplicate,
        })
    }

    fn roll_locked(&self, inner: &mut LogInner, cfg: &TopicConfig) -> Result<(), LogError> {
        let next = inner.log_end_offset();
        inner.active_mut().seal()?;
        inner.producers.write_snapshot(&self.dir, next)?;
        let seg = LogSegment::create(&self.dir, next, settings(cfg))?;
        inner.segments.insert(next, seg);
        tracing::debug!(topic = %self.topic, partition = self.partition, base_offset = next, "rolled segment");
        Ok(())
    }

    /// Waits until the high watermark reaches `offset` (exclusive end) or
    /// the timeout passes. Returns whether it did.
    pub async fn wait_durable(&self, end_offset: i64, timeout: Duration) -> bool {
        let mut rx = self.high_watermark.subscribe();
        let reached = tokio::time::timeout(timeout, async {
            rx.wait_for(|hw| *hw >= end_offset).await.is_ok()
        })
        .await;
        matches!(reached, Ok(true))
    }

    /// One flush round: fsyncs everything appended so far and advances the
    /// high watermark. Blocking; run off the async workers.
    pub fn flush(&self) -> io::Result<()> {
        let (file, target) = {
            let mut inner = match self.lock_open() {
                Ok(i) => i,
                Err(_) => return Ok(()),
            };
            let target = inner.log_end_offset();
            if target <= self.high_watermark() {
                return Ok(());
            }
            inner.active_mut().persist_indexes()?;
            (inner.active().file().clone(), target)
        };
        file.sync_data()?;
        self.high_watermark.send_if_modified(|hw| {
            if target > *hw {
                *hw = target;
                true
            } else {
                false
            }
        });
        Ok(())
    }

    /// Runs flush rounds whenever appends ask for one, until closed.
    pub async fn run_flusher(self: Arc<Self>) {
        loop {
            self.flush_requested.notified().await;
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            let log = self.clone();
            match tokio::task::spawn_blocking(move || log.flush()).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    // An fsync failure means the page cache may have dropped
                    // data we cannot rewrite: stop rather than ack it.
                    tracing::error!(topic = %self.topic, partition = self.partition, error = %e,
                        "fsync failed; stopping the broker to avoid acknowledging lost data");
                    std::process::exit(70);
                }
                Err(e) => tracing::error!(error = %e, "flush task failed"),
            }
        }
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

    /// Reads whole batches starting with the one that contains `offset`, up
    /// to `max_bytes` and below the high watermark. With `min_one`, the
    /// first batch is returned even if it is larger than `max_bytes`.
    pub fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one: bool,
    ) -> Result<ReadResult, LogError> {
        let hw = self.high_watermark();
        let (candidates, log_start_offset) = {
            let inner = self.lock();
            let leo = inner.log_end_offset();
            if offset < inner.log_start_offset || offset > leo {
                return Err(LogError::OffsetOutOfRange {
                    offset,
                    log_start_offset: inner.log_start_offset,
                    log_end_offset: leo,
                });
            }
            let mut c: Vec<(SegmentSlice, u64)> = Vec::with_capacity(2);
            if offset < hw {
                let floor = inner.segments.range(..=offset).next_back();
                for (_, seg) in floor.into_iter().chain(inner.segments.range(offset + 1..)) {
                    if seg.next_offset() > offset {
                        c.push((seg.slice(), seg.position_hint(offset)));
                    }
                    if c.len() == 2 {
                        break;
                    }
                }
            }
            (c, inner.log_start_offset)
        };
        let empty = ReadResult {
            records: Bytes::new(),
            high_watermark: hw,
            log_start_offset,
        };
        for (slice, hint) in candidates {
            let Some((pos, first)) = slice.seek(hint, offset)? else {
                continue;
            };
            if first.base_offset >= hw {
                return Ok(empty);
            }
            let want = if first.size > max_bytes {
                if !min_one {
                    return Ok(empty);
                }
                first.size
            } else {
                max_bytes
            };
            let mut buf = slice.read(pos, want)?;
            let mut end = 0;
            for (p, h) in BatchScanner::new(&buf, false) {
                if h.base_offset >= hw {
                    break;
                }
                end = p + h.size;
            }
            buf.truncate(end);
            return Ok(ReadResult {
                records: Bytes::from(buf),
                high_watermark: hw,
                log_start_offset,
            });
        }
        Ok(empty)
    }

    /// Offset and timestamp of the first record with timestamp >= `ts`
    /// below the high watermark, or None.
    pub fn offset_for_timestamp(&self, ts: i64) -> Result<Option<(i64, i64)>, LogError> {
        let hw = self.high_watermark();
        let candidates: Vec<(SegmentSlice, u64)> = {
            let inner = self.lock();
            inner
                .segments
                .values()
                .filter(|s| s.max_timestamp() >= ts)
                .map(|s| (s.slice(), s.position_for_timestamp(ts)))
                .collect()
        };
        for (slice, hint) in candidates {
            if let Some((pos, h)) = slice.seek_timestamp(hint, ts)? {
                if h.base_offset >= hw {
                    return Ok(None);
                }
                return Ok(find_record(&slice, pos, &h, hw, |t| t >= ts));
            }
        }
        Ok(None)
    }

    /// Offset and timestamp of the record with the largest timestamp (the
    /// earliest such record on ties), or None if the log is empty.
    pub fn max_timestamp_offset(&self) -> Result<Option<(i64, i64)>, LogError> {
        let hw = self.high_watermark();
        let best = {
            let inner = self.lock();
            let mut best: Option<&LogSegment> = None;
            for s in inner.segments.values() {
                if s.is_empty() || s.base_offset() >= hw {
                    continue;
                }
                if best.is_none_or(|b| s.max_timestamp() > b.max_timestamp()) {
                    best = Some(s);
                }
            }
            best.map(|s| {
                (
                    s.slice(),
                    s.position_for_timestamp(s.max_timestamp()),
                    s.max_timestamp(),
                )
            })
        };
        let Some((slice, hint, max_ts)) = best else {
            return Ok(None);
        };
        // Batches above the watermark are invisible; fall back to the
        // largest visible timestamp by scanning the segment if needed.
        let mut pos = hint;
        let mut found: Option<(u64, BatchHeader)> = None;
        while let Some(h) = slice.header_at(pos)? {
            if h.base_offset >= hw {
                break;
            }
            if found.is_none_or(|(_, f)| h.max_timestamp > f.max_timestamp) {
                found = Some((pos, h));
            }
            if h.max_timestamp == max_ts {
                break;
            }
            pos += h.size as u64;
        }
        Ok(found.and_then(|(p, h)| {
            let target = h.max_timestamp;
            find_record(&slice, p, &h, hw, |t| t == target)
        }))
    }

    /// Applies `retention.ms` and `retention.bytes`: deletes whole segments
    /// from the start and advances the log start offset. The active segment
    /// is rolled first when it alone is past retention. Returns the number
    /// of segments deleted.
    pub fn enforce_retention(&self, now: i64) -> Result<usize, LogError> {
        let cfg = self.config.get();
        let mut removed: Vec<LogSegment> = Vec::new();
        {
            let mut inner = self.lock_open()?;
            if cfg.retention_ms >= 0 {
                let cutoff = now - cfg.retention_ms;
                loop {
                    let count = inner.segments.len();
                    let Some(first) = inner.segments.values().next() else {
                        break;
                    };
                    if first.is_empty() || retention_timestamp(first) >= cutoff {
                        break;
                    }
                    if count == 1 {
                        // Only the active segment is left and all of it is
                        // expired: roll so it can go.
                        self.roll_locked(&mut inner, &cfg)?;
                        continue;
                    }
                    if let Some((_, seg)) = inner.segments.pop_first() {
                        removed.push(seg);
                    }
                }
            }
            if cfg.retention_bytes >= 0 {
                let mut total: u64 = inner.segments.values().map(|s| s.size()).sum();
                while inner.segments.len() > 1 {
                    let Some(first) = inner.segments.values().next() else {
                        break;
                    };
                    if total.saturating_sub(first.size()) < cfg.retention_bytes as u64 {
                        break;
                    }
                    total -= first.size();
                    if let Some((_, seg)) = inner.segments.pop_first() {
                        removed.push(seg);
                    }
                }
            }
            if let Some(first) = inner.segments.keys().next().copied() {
                if first > inner.log_start_offset {
                    inner.log_start_offset = first;
                }
            }
            // Unlink under the lock so a concurrent topic deletion and
            // re-creation cannot have new files under these names. Readers
            // holding a slice keep reading the unlinked file.
            for seg in &removed {
                tracing::info!(topic = %self.topic, partition = self.partition,
                    base_offset = seg.base_offset(), size = seg.size(), "retention deleted segment");
                seg.delete_files()?;
            }
        }
        Ok(removed.len())
    }

    /// Removes the partition's directory (topic deletion).
    pub fn delete(&self) -> io::Result<()> {
        self.closed.store(true, Ordering::Release);
        self.flush_requested.notify_one();
        let _inner = self.lock();
        match fs::remove_dir_all(&self.dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Rolls the active segment now if it is not empty; returns the base
    /// offset of the (new) active segment.
    pub fn roll(&self) -> Result<i64, LogError> {
        let cfg = self.config.get();
        let mut inner = self.lock_open()?;
        if !inner.active().is_empty() {
            self.roll_locked(&mut inner, &cfg)?;
        }
        Ok(inner.active().base_offset())
    }

    /// Deletes every segment that lies entirely below `offset` and moves the
    /// log start offset up to it (never past the log end). Returns the number
    /// of segments deleted.
    pub fn delete_before(&self, offset: i64) -> Result<usize, LogError> {
        let mut inner = self.lock_open()?;
        let offset = offset.min(inner.log_end_offset());
        let mut removed = 0;
        while inner.segments.len() > 1 {
            let Some(first) = inner.segments.values().next() else {
                break;
            };
            if first.next_offset() > offset {
                break;
            }
            if let Some((_, seg)) = inner.segments.pop_first() {
                seg.delete_files()?;
                removed += 1;
            }
        }
        if offset > inner.log_start_offset {
            inner.log_start_offset = offset;
        }
        Ok(removed)
    }

    /// Rolls the active segment if it is older than `segment.ms` and not empty.
    pub fn roll_if_expired(&self, now: i64) -> Result<bool, LogError> {
        let cfg = self.config.get();
        let mut inner = self.lock();
        if inner
            .active()
            .should_roll(0, inner.log_end_offset(), u64::MAX, cfg.segment_ms, now)
        {
            self.roll_locked(&mut inner, &cfg)?;
            return Ok(true);
        }
        Ok(false)
    }
}

/// Producer state after every batch below `leo`: the newest snapshot at or
/// below it, plus the batch headers written after it.
fn rebuild_producer_state(
    dir: &Path,
    segments: &BTreeMap<i64, LogSegment>,
    leo: i64,
) -> Result<ProducerStateManager, LogError> {
    let first = segments.keys().next().copied().unwrap_or(0);
    let (from, mut state) = match ProducerStateManager::load_snapshot(dir, leo)? {
        Some((off, s)) if off >= first => (off, s),
        _ => (first, ProducerStateManager::default()),
    };
    let mut scanned = 0usize;
    let floor = segments
        .range(..=from)
        .next_back()
        .map(|(b, _)| *b)
        .unwrap_or(first);
    for seg in segments.range(floor..).map(|(_, s)| s) {
        let slice = seg.slice();
        let mut pos = if seg.base_offset() <= from {
            seg.position_hint(from)
        } else {
            0
        };
        while let Some(h) = slice.header_at(pos)? {
            if h.base_offset >= from {
                state.update(&h);
                scanned += 1;
            }
            pos += h.size as u64;
        }
    }
    if scanned > 0 || !state.is_empty() {
        tracing::debug!(dir = %dir.display(), snapshot_offset = from, scanned, producers = state.len(), "rebuilt producer state");
    }
    Ok(state)
}

fn retention_timestamp(seg: &LogSegment) -> i64 {
    if seg.max_timestamp() >= 0 {
        return seg.max_timestamp();
    }
    fs::metadata(seg.log_path())
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
        .unwrap_or(i64::MAX)
}

/// Decodes the batch at `pos` to find the first record (below `hw`) whose
/// timestamp satisfies `pred`. LogAppendTime batches carry one timestamp.
fn find_record(
    slice: &SegmentSlice,
    pos: u64,
    h: &BatchHeader,
    hw: i64,
    pred: impl Fn(i64) -> bool,
) -> Option<(i64, i64)> {
    if h.is_log_append_time() {
        return pred(h.max_timestamp).then_some((h.base_offset, h.max_timestamp));
    }
    let bytes = slice.read(pos, h.size).ok()?;
    let mut buf = Bytes::from(bytes);
    match kafka_protocol::records::RecordBatchDecoder::decode(&mut buf) {
        Ok(set) => set
            .records
            .iter()
            .find(|r| r.offset < hw && pred(r.timestamp))
            .map(|r| (r.offset, r.timestamp)),
        Err(e) => {
            tracing::warn!(error = %e, "cannot decode batch for timestamp lookup; using its base offset");
            Some((h.base_offset, h.max_timestamp))
        }
    }
}

fn remove_segment_files(dir: &Path, base: i64) {
    let stem = super::segment::file_stem(base);
    for suffix in [".log", ".index", ".timeindex"] {
        let _ = fs::remove_file(dir.join(format!("{stem}{suffix}")));
    }
}

pub fn fsync_dir(dir: &Path) -> io::Result<()> {
    fs::File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BrokerConfig;
    use crate::log::batch::testing;

    fn config(sets: &[&str]) -> Arc<SharedConfig> {
        let broker = BrokerConfig::load(
            None,
            &sets.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        )
        .unwrap();
        SharedConfig::new(TopicConfig::resolve(&broker, &BTreeMap::new()))
    }

    fn append_n(log: &PartitionLog, batches: usize, ts: i64) -> Vec<AppendInfo> {
        (0..batches)
            .map(|i| {
                let b = testing::batch(4, 100, ts + i as i64 * 10);
                let h = batch::validate_all(&b).unwrap();
                log.append(&b, &h).unwrap()
            })
            .collect()
    }

    #[test]
    fn offsets_are_assigned_and_reads_stop_at_high_watermark() {
        let dir = tempfile::tempdir().unwrap();
        let log = PartitionLog::create(dir.path(), "t", 0, config(&[])).unwrap();
        let infos = append_n(&log, 3, 1_000);
        assert_eq!(infos[0].base_offset, 0);
        assert_eq!(infos[2].last_offset, 11);
        // Nothing is visible before it is durable.
        assert_eq!(log.high_watermark(), 0);
        assert!(log.read(0, 1 << 20, true).unwrap().records.is_empty());
        log.flush().unwrap();
        assert_eq!(log.high_watermark(), 12);
        let r = log.read(5, 1 << 20, true).unwrap();
        // The batch holding offset 5 starts at 4.
        let first = BatchHeader::parse(&r.records).unwrap();
        assert_eq!(first.base_offset, 4);
        assert_eq!(BatchScanner::new(&r.records, true).count(), 2);
        assert!(matches!(
            log.read(13, 100, true),
            Err(LogError::OffsetOutOfRange { .. })
        ));
        assert!(log.read(12, 100, true).unwrap().records.is_empty());
    }

    #[test]
    fn max_bytes_returns_whole_batches_and_min_one() {
        let dir = tempfile::tempdir().unwrap();
        let log = PartitionLog::create(dir.path(), "t", 0, config(&[])).unwrap();
        append_n(&log, 3, 0);
        log.flush().unwrap();
        let size = BatchHeader::parse(&log.read(0, 1 << 20, true).unwrap().records)
            .unwrap()
            .size;
        let r = log.read(0, size + size / 2, true).unwrap();
        assert_eq!(r.records.len(), size);
        assert!(log.read(0, 10, false).unwrap().records.is_empty());
        assert_eq!(log.read(0, 10, true).unwrap().records.len(), size);
    }

    #[test]
    fn rolls_segments_and_reads_across_them() {
        let dir = tempfile::tempdir().unwrap();
        let log =
            PartitionLog::create(dir.path(), "t", 0, config(&["log.segment.bytes=1000"])).unwrap();
        append_n(&log, 20, 0);
        log.flush().unwrap();
        assert!(log.segment_count() >= 5);
        let mut offset = 0;
        let mut seen = 0;
        while offset < log.high_watermark() {
            let r = log.read(offset, 1 << 20, true).unwrap();
            for (_, h) in BatchScanner::new(&r.records, true) {
                assert_eq!(h.base_offset, offset);
                offset = h.next_offset();
                seen += 1;
            }
        }
        assert_eq!(seen, 20);
    }

    #[test]
    fn timestamp_lookups_across_segments() {
        let dir = tempfile::tempdir().unwrap();
        let log =
            PartitionLog::create(dir.path(), "t", 0, config(&["log.segment.bytes=1000"])).unwrap();
        // Batch i holds timestamps 10_000 + i*10 + 0..3.
        append_n(&log, 20, 10_000);
        log.flush().unwrap();
        assert_eq!(log.offset_for_timestamp(0).unwrap(), Some((0, 10_000)));
        assert_eq!(
            log.offset_for_timestamp(10_052).unwrap(),
            Some((22, 10_052))
        );
        // Between records: the next one.
        assert_eq!(
            log.offset_for_timestamp(10_055).unwrap(),
            Some((24, 10_060))
        );
        assert_eq!(log.offset_for_timestamp(99_999).unwrap(), None);
        assert_eq!(log.max_timestamp_offset().unwrap(), Some((79, 10_193)));
    }

    #[test]
    fn retention_by_bytes_and_time_advances_log_start() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(&["log.segment.bytes=1000"]);
        let log = PartitionLog::create(dir.path(), "t", 0, cfg.clone()).unwrap();
        let now = now_ms();
        append_n(&log, 20, now - 10_000);
        log.flush().unwrap();
        let before = log.segment_count();
        let mut c = (*cfg.get()).clone();
        c.retention_bytes = 2_000;
        cfg.set(c.clone());
        let deleted = log.enforce_retention(now).unwrap();
        assert!(deleted > 0 && log.segment_count() == before - deleted);
        assert!(log.size_bytes() <= 3_000);
        let start = log.log_start_offset();
        assert!(start > 0);
        assert!(matches!(
            log.read(0, 100, true),
            Err(LogError::OffsetOutOfRange { .. })
        ));
        assert!(!log.read(start, 1 << 20, true).unwrap().records.is_empty());
        // Everything is older than 5 s: time retention empties the log,
        // rolling the active segment, and the log keeps its offsets.
        c.retention_bytes = -1;
        c.retention_ms = 5_000;
        cfg.set(c);
        log.enforce_retention(now).unwrap();
        assert_eq!(log.segment_count(), 1);
        assert_eq!(log.log_start_offset(), 80);
        assert_eq!(log.log_end_offset(), 80);
        let info = append_n(&log, 1, now)[0];
        assert_eq!(info.base_offset, 80);
    }

    #[test]
    fn unclean_reopen_truncates_torn_tail_and_keeps_durable_data() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(&["log.segment.bytes=1000"]);
        let log = PartitionLog::create(dir.path(), "t", 0, cfg.clone()).unwrap();
        append_n(&log, 10, 0);
        log.flush().unwrap();
        let hw = log.high_watermark();
        let active = log.lock().active().log_path();
        drop(log);
        // A torn write: half a batch at the end of the active segment.
        let half = testing::batch(4, 100, 0);
        let mut f = fs::OpenOptions::new().append(true).open(&active).unwrap();
        std::io::Write::write_all(&mut f, &half[..half.len() / 2]).unwrap();
        let log = PartitionLog::open(dir.path(), "t", 0, cfg, Some(0), None, false).unwrap();
        assert_eq!(log.log_end_offset(), hw);
        assert_eq!(log.high_watermark(), hw);
        let mut offset = 0;
        while offset < hw {
            let r = log.read(offset, 1 << 20, true).unwrap();
            let (_, last) = BatchScanner::new(&r.records, true).last().unwrap();
            offset = last.next_offset();
        }
        assert_eq!(offset, hw);
    }

    #[tokio::test]
    async fn acks_all_waits_for_flusher_group_commit() {
        let dir = tempfile::tempdir().unwrap();
        let log = PartitionLog::create(dir.path(), "t", 0, config(&[])).unwrap();
        tokio::spawn(log.clone().run_flusher());
        let infos = append_n(&log, 50, 0);
        let end = infos.last().unwrap().last_offset + 1;
        assert!(log.wait_durable(end, Duration::from_secs(10)).await);
        assert_eq!(log.high_watermark(), end);
    }

    fn idempotent_batch(pid: i64, epoch: i16, seq: i32, n: usize) -> Vec<u8> {
        let mut b = testing::batch(n, 10, 1_000).to_vec();
        b[43..51].copy_from_slice(&pid.to_be_bytes());
        b[51..53].copy_from_slice(&epoch.to_be_bytes());
        b[53..57].copy_from_slice(&seq.to_be_bytes());
        let crc = batch::compute_crc(&b);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        b
    }

    fn append_raw(log: &PartitionLog, b: &[u8]) -> Result<AppendInfo, LogError> {
        let h = batch::validate_all(b).unwrap();
        log.append(b, &h)
    }

    #[test]
    fn idempotent_retries_are_deduplicated_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(&["log.segment.bytes=600"]);
        let log = PartitionLog::create(dir.path(), "t", 0, cfg.clone()).unwrap();
        append_n(&log, 1, 0); // offsets 0..3 from a plain producer
        let first = append_raw(&log, &idempotent_batch(7, 0, 0, 3)).unwrap();
        assert_eq!(
            (first.base_offset, first.last_offset, first.duplicate),
            (4, 6, false)
        );
        let retry = append_raw(&log, &idempotent_batch(7, 0, 0, 3)).unwrap();
        assert_eq!(
            (retry.base_offset, retry.last_offset, retry.duplicate),
            (4, 6, true)
        );
        assert_eq!(log.log_end_offset(), 7, "a duplicate appends nothing");
        assert!(matches!(
            append_raw(&log, &idempotent_batch(7, 0, 5, 1)),
            Err(LogError::Sequence(SequenceError::OutOfOrder {
                expected: 3,
                got: 5
            }))
        ));
        for seq in [3, 4, 5, 6, 7] {
            append_raw(&log, &idempotent_batch(7, 0, seq, 1)).unwrap();
        }
        log.flush().unwrap();
        let leo = log.log_end_offset();
        drop(log);
        // Unclean reopen without snapshots: state comes from batch headers.
        for f in fs::read_dir(dir.path().join("t-0")).unwrap() {
            let p = f.unwrap().path();
            if p.extension().is_some_and(|e| e == "snapshot") {
                fs::remove_file(p).unwrap();
            }
        }
        let log = PartitionLog::open(dir.path(), "t", 0, cfg.clone(), None, None, false).unwrap();
        let retry = append_raw(&log, &idempotent_batch(7, 0, 7, 1)).unwrap();
        assert!(retry.duplicate);
        assert_eq!(retry.base_offset, leo - 1);
        assert!(
            matches!(
                append_raw(&log, &idempotent_batch(7, 0, 0, 3)),
                Err(LogError::Sequence(SequenceError::OutOfOrder { .. }))
            ),
            "only the last five batches are remembered"
        );
        // A clean close writes a snapshot that the next open uses.
        log.close().unwrap();
        drop(log);
        let log = PartitionLog::open(dir.path(), "t", 0, cfg, None, None, true).unwrap();
        assert!(
            append_raw(&log, &idempotent_batch(7, 0, 7, 1))
                .unwrap()
                .duplicate
        );
        assert!(matches!(
            append_raw(&log, &idempotent_batch(7, -1, 8, 1)),
            Err(LogError::Sequence(
                SequenceError::InvalidProducerEpoch { .. }
            ))
        ));
        assert_eq!(
            append_raw(&log, &idempotent_batch(7, 1, 0, 1))
                .unwrap()
                .base_offset,
            leo
        );
    }
}
