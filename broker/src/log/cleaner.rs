//! Log compaction of one partition (`cleanup.policy=compact`): Kafka's
//! `LogCleaner` pass. The dirty section (from the cleaner checkpoint up to
//! the first uncleanable offset: the active segment, or the first segment
//! younger than `min.compaction.lag.ms`) is read into a map from key hash to
//! its latest offset; then every sealed segment up to the end of that map is
//! rewritten in groups of at most `segment.bytes`, keeping each key's latest
//! record, tombstones until their delete horizon, and every active
//! producer's last batch (`strata_format::compaction` rewrites a batch).
//! Offsets never change: a cleaned log has gaps.
//!
//! A group is written into `cleaner.tmp/` with its indexes, then moved into
//! place under the partition lock: the indexes, then the `.log` file (the
//! commit point), then the group's other segments are deleted. The
//! checkpoint's `cleaned_through` is made durable before the move, so a
//! restart tells a gap left by compaction from a segment the disk cut
//! short. A crash leaves `cleaner.tmp/`, and the next open recovers every
//! segment in full. Never touches the active segment, never holds the
//! partition lock while reading or writing data.

use std::collections::HashMap;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use strata_format::compaction::{clean_batch, for_each_record, CleanPolicy, Cleaned};

use super::batch::{BatchHeader, BatchScanner};
use super::partition_log::{fsync_dir, settings, LogError, PartitionLog};
use super::segment::{
    file_stem, LogSegment, SegmentSlice, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX,
};

pub use super::cleaner_checkpoint::{interrupted_pass, CleanerCheckpoint, TMP_DIR};

/// Memory one key costs in the offset map (hash, offset, table overhead).
pub const BYTES_PER_KEY: u64 = 32;
/// How far a stored batch's records may inflate while the cleaner reads it.
const MAX_INFLATED: u64 = 1 << 30;

/// Key hash → latest offset, bounded in entries. 128-bit hashes, as Kafka's
/// MD5: a collision would make the cleaner drop a live key's value.
pub struct OffsetMap {
    entries: HashMap<u128, i64>,
    capacity: usize,
}

impl OffsetMap {
    pub fn with_memory(bytes: u64) -> Self {
        OffsetMap {
            entries: HashMap::new(),
            capacity: (bytes / BYTES_PER_KEY).max(1) as usize,
        }
    }

    fn hash(key: &[u8]) -> u128 {
        let mut a = std::collections::hash_map::DefaultHasher::new();
        0u8.hash(&mut a);
        key.hash(&mut a);
        let mut b = std::collections::hash_map::DefaultHasher::new();
        1u8.hash(&mut b);
        key.hash(&mut b);
        ((a.finish() as u128) << 64) | b.finish() as u128
    }

    /// Records `offset` for `key`; false when the map is full and `key` is
    /// new (it is not recorded).
    fn put(&mut self, key: &[u8], offset: i64) -> bool {
        let h = Self::hash(key);
        if self.entries.len() >= self.capacity && !self.entries.contains_key(&h) {
            return false;
        }
        self.entries.insert(h, offset);
        true
    }

    fn get(&self, key: &[u8]) -> Option<i64> {
        self.entries.get(&Self::hash(key)).copied()
    }

    fn clear(&mut self) {
        self.entries.clear();
    }
}

/// Paces a pass to `log.cleaner.io.max.bytes.per.second`.
pub struct Throttle {
    bytes_per_second: f64,
    started: Instant,
    bytes: f64,
}

impl Throttle {
    pub fn new(bytes_per_second: f64) -> Self {
        Throttle {
            bytes_per_second,
            started: Instant::now(),
            bytes: 0.0,
        }
    }

    fn account(&mut self, bytes: usize) {
        self.bytes += bytes as f64;
        let due = Duration::from_secs_f64((self.bytes / self.bytes_per_second).min(3600.0));
        let elapsed = self.started.elapsed();
        if due > elapsed {
            std::thread::sleep(due - elapsed);
        }
    }
}

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CleanStats {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_removed: u64,
    /// Dirty ratio that started the pass.
    pub dirty_ratio: f64,
}

/// A sealed segment as the pass saw it.
#[derive(Clone)]
struct SegmentView {
    base: i64,
    next_offset: i64,
    size: u64,
    max_timestamp: i64,
    slice: SegmentSlice,
}

/// Starts `log.cleaner.threads` OS threads (off the request runtime), each
/// with its share of the dedupe buffer and of the I/O budget, cleaning the
/// dirtiest due log of `logs()` and sleeping `log.cleaner.backoff.ms`
/// when none is due.
pub fn start_cleaners(
    broker: &crate::config::BrokerConfig,
    logs: impl Fn() -> Vec<std::sync::Arc<PartitionLog>> + Send + Sync + 'static,
) {
    let threads = broker.i64("log.cleaner.threads").max(1) as u64;
    let memory = broker.i64("log.cleaner.dedupe.buffer.size").max(1 << 20) as u64;
    let rate: f64 = broker
        .value("log.cleaner.io.max.bytes.per.second")
        .parse()
        .unwrap_or(f64::MAX);
    let backoff = Duration::from_millis(broker.i64("log.cleaner.backoff.ms").max(10) as u64);
    let logs = std::sync::Arc::new(logs);
    for _ in 0..threads {
        let logs = logs.clone();
        let started = std::thread::Builder::new()
            .name("strata-log-cleaner".into())
            .spawn(move || {
                let mut map = OffsetMap::with_memory(memory / threads);
                loop {
                    let mut throttle = Throttle::new(rate / threads as f64);
                    let now = crate::clock::now_ms();
                    if !clean_dirtiest(&logs(), now, &mut map, &mut throttle) {
                        std::thread::sleep(backoff);
                    }
                }
            });
        if let Err(e) = started {
            tracing::error!(error = %e, "cannot start the log cleaner");
        }
    }
}

/// Cleans the dirtiest due log of `logs` that no other cleaner thread
/// holds. Returns whether a pass ran.
pub fn clean_dirtiest(
    logs: &[std::sync::Arc<PartitionLog>],
    now: i64,
    map: &mut OffsetMap,
    throttle: &mut Throttle,
) -> bool {
    use std::sync::atomic::Ordering;
    let mut due: Vec<(f64, &std::sync::Arc<PartitionLog>)> = logs
        .iter()
        .filter_map(|l| {
            l.cleanability(now)
                .filter(|c| c.due)
                .map(|c| (c.dirty_ratio, l))
        })
        .collect();
    due.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (_, log) in due {
        if log.cleaning.swap(true, Ordering::AcqRel) {
            continue;
        }
        let started = Instant::now();
        let result = log.clean(now, map, throttle, false);
        log.cleaning.store(false, Ordering::Release);
        match result {
            Ok(Some(s)) => {
                tracing::info!(topic = %log.topic(), partition = log.partition(),
                    dirty_ratio = s.dirty_ratio, read = s.bytes_read, written = s.bytes_written,
                    removed = s.records_removed, ms = started.elapsed().as_millis() as u64,
                    "cleaned");
                return true;
            }
            Ok(None) => {}
            Err(LogError::Closed) => {}
            Err(e) => {
                tracing::error!(topic = %log.topic(), partition = log.partition(), error = %e,
                    "cleaning pass failed; the log is left as it was");
            }
        }
    }
    false
}

/// The dirty ratio of a compacted log and whether it must be cleaned now.
pub struct Cleanability {
    pub dirty_ratio: f64,
    pub due: bool,
}

impl PartitionLog {
    /// How dirty the log is, for choosing which log to clean first.
    pub fn cleanability(&self, now: i64) -> Option<Cleanability> {
        let cfg = self.config();
        if !cfg.compacted || self.is_closed() {
            return None;
        }
        let (segments, first_dirty) = self.cleanable_segments(now, &cfg);
        judge(&segments, first_dirty, now, &cfg)
    }

    /// Sealed segments below the first uncleanable offset, and the first
    /// dirty offset.
    fn cleanable_segments(
        &self,
        now: i64,
        cfg: &crate::config::TopicConfig,
    ) -> (Vec<SegmentView>, i64) {
        let checkpoint = CleanerCheckpoint::load(self.dir());
        let inner = self.lock();
        let active = inner.active().base_offset();
        let lag_cutoff = now.saturating_sub(cfg.min_compaction_lag_ms);
        let mut out = Vec::new();
        for (base, seg) in inner.segments.range(..active) {
            // A segment with records younger than min.compaction.lag.ms,
            // and everything after it, waits.
            if seg.max_timestamp() > lag_cutoff && cfg.min_compaction_lag_ms > 0 {
                break;
            }
            if seg.lost_from().is_some() {
                break;
            }
            let Ok(slice) = seg.slice() else { break };
            out.push(SegmentView {
                base: *base,
                next_offset: seg.next_offset(),
                size: seg.size(),
                max_timestamp: seg.max_timestamp(),
                slice,
            });
        }
        let first_dirty = checkpoint.first_dirty.max(inner.log_start_offset);
        (out, first_dirty)
    }

    /// One cleaning pass, if the log is compacted and dirty enough (or
    /// `force`). Returns what it did.
    pub fn clean(
        &self,
        now: i64,
        map: &mut OffsetMap,
        throttle: &mut Throttle,
        force: bool,
    ) -> Result<Option<CleanStats>, LogError> {
        let cfg = self.config();
        if !cfg.compacted {
            return Ok(None);
        }
        let (segments, first_dirty) = self.cleanable_segments(now, &cfg);
        let Some(c) = judge(&segments, first_dirty, now, &cfg) else {
            return Ok(None);
        };
        if !c.due && !force {
            return Ok(None);
        }
        let mut stats = CleanStats {
            dirty_ratio: c.dirty_ratio,
            ..Default::default()
        };
        let policy = CleanPolicy {
            now_ms: now,
            delete_retention_ms: cfg.delete_retention_ms,
            max_inflated_bytes: MAX_INFLATED,
            max_batch_bytes: cfg.max_message_bytes.max(1 << 20) * 2,
        };

        // 1. The map: latest offset of each key in the dirty section.
        map.clear();
        let mut map_end = first_dirty;
        'dirty: for seg in segments.iter().filter(|s| s.next_offset > first_dirty) {
            let mut full = false;
            for_each_batch(&seg.slice, |bytes, h| {
                stats.bytes_read += h.size as u64;
                throttle.account(h.size);
                if full || h.last_offset() < first_dirty || h.is_control() {
                    return Ok(());
                }
                let mut batch_fits = true;
                let read = for_each_record(bytes, &policy, |r| {
                    if let Some(k) = r.key {
                        if r.offset >= first_dirty && !map.put(k, r.offset) {
                            batch_fits = false;
                        }
                    }
                    Ok(())
                });
                if let Err(e) = read {
                    // Its keys stay out of the map, so nothing is dropped
                    // for them; the rewrite keeps the batch whole.
                    tracing::warn!(topic = %self.topic(), partition = self.partition(),
                        offset = h.base_offset, error = %e, "cleaner cannot read a batch's keys");
                }
                if batch_fits {
                    map_end = h.next_offset();
                } else {
                    full = true;
                }
                Ok(())
            })?;
            if full {
                break 'dirty;
            }
            map_end = map_end.max(seg.next_offset);
        }
        if map_end <= first_dirty {
            return Ok(None);
        }

        // 2. Rewrite every segment up to the end of the map, in groups.
        let mut checkpoint = CleanerCheckpoint::load(self.dir());
        let producers = self.lock().producers.last_batch_offsets();
        let tmp = self.dir().join(TMP_DIR);
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(&tmp)?;
        let to_clean: Vec<&SegmentView> = segments.iter().filter(|s| s.base < map_end).collect();
        for group in groups(&to_clean, cfg.segment_bytes) {
            let base = group[0].base;
            let end = group.last().map(|s| s.next_offset).unwrap_or(base);
            let tmp_log = tmp.join(format!("{}{LOG_SUFFIX}", file_stem(base)));
            let mut out = BufWriter::with_capacity(1 << 20, fs::File::create(&tmp_log)?);
            let mut written = 0u64;
            for seg in &group {
                for_each_batch(&seg.slice, |bytes, h| {
                    stats.bytes_read += h.size as u64;
                    let retain_empty = h.producer_id >= 0
                        && producers.get(&h.producer_id) == Some(&h.last_offset());
                    let cleaned = clean_batch(bytes, &policy, retain_empty, |r| match r.key {
                        None => false,
                        Some(k) => map.get(k).is_none_or(|latest| r.offset >= latest),
                    });
                    let kept: &[u8] = match &cleaned {
                        Ok(Cleaned::Unchanged) => bytes,
                        Ok(Cleaned::Rewritten(b)) => b,
                        Ok(Cleaned::Removed) => &[],
                        Err(e) => {
                            // Never lose what cannot be read: keep it whole.
                            tracing::warn!(topic = %self.topic(), partition = self.partition(),
                                offset = h.base_offset, error = %e, "cleaner kept a batch it could not rewrite");
                            bytes
                        }
                    };
                    stats.records_removed += removed_records(h, kept);
                    out.write_all(kept)?;
                    written += kept.len() as u64;
                    throttle.account(h.size + kept.len());
                    Ok(())
                })?;
            }
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            drop(file);
            stats.bytes_written += written;
            // The gap rule must know about this group before it is visible.
            checkpoint.cleaned_through = checkpoint.cleaned_through.max(end);
            checkpoint.store(self.dir())?;
            self.swap_in(base, &group, written, &tmp, &cfg)?;
        }
        let _ = fs::remove_dir_all(&tmp);
        checkpoint.first_dirty = checkpoint.first_dirty.max(map_end);
        checkpoint.store(self.dir())?;
        Ok(Some(stats))
    }

    /// Replaces `group` by the cleaned segment in `tmp` (none if it came
    /// out empty). Skipped if retention removed any of the group meanwhile.
    fn swap_in(
        &self,
        base: i64,
        group: &[&SegmentView],
        size: u64,
        tmp: &Path,
        cfg: &crate::config::TopicConfig,
    ) -> Result<(), LogError> {
        let seg_settings = settings(cfg);
        // Build the indexes outside the partition lock.
        let cleaned = if size > 0 {
            let (seg, report) = LogSegment::open(tmp, base, seg_settings, true)?;
            if report.truncated_bytes > 0 {
                return Err(LogError::Io(io::Error::other(format!(
                    "the cleaned segment at {base} failed its own check: {:?}",
                    report.stopped_by
                ))));
            }
            let mut seg = seg;
            seg.seal()?;
            drop(seg);
            true
        } else {
            false
        };
        let mut inner = self.lock_open()?;
        if !group.iter().all(|g| {
            inner
                .segments
                .get(&g.base)
                .is_some_and(|s| s.size() == g.size)
        }) {
            tracing::info!(topic = %self.topic(), partition = self.partition(), base,
                "segments changed during cleaning (retention); this group waits for the next pass");
            return Ok(());
        }
        let dir = self.dir().to_path_buf();
        let stem = file_stem(base);
        super::file_pool::global().forget(&dir.join(format!("{stem}{LOG_SUFFIX}")));
        // The cleaned segment first (its .log rename is the commit point),
        // then the rest of the group: a crash in between leaves segments a
        // restart drops as overlapping, or keeps whole.
        if cleaned {
            for suffix in [INDEX_SUFFIX, TIME_INDEX_SUFFIX, LOG_SUFFIX] {
                let name = format!("{stem}{suffix}");
                fs::rename(tmp.join(&name), dir.join(&name))?;
            }
            fsync_dir(&dir)?;
        }
        for g in group {
            if let Some(seg) = inner.segments.remove(&g.base) {
                if cleaned && g.base == base {
                    super::file_pool::global().forget(&seg.log_path());
                } else {
                    seg.delete_files()?;
                }
            }
        }
        fsync_dir(&dir)?;
        if cleaned {
            let (mut seg, _) = LogSegment::open(&dir, base, seg_settings, false)?;
            seg.release_file();
            inner.segments.insert(base, seg);
        }
        Ok(())
    }
}

/// Records a kept batch lost against the original: 0 for an unchanged one.
fn removed_records(h: &BatchHeader, kept: &[u8]) -> u64 {
    let after = if kept.is_empty() {
        0
    } else {
        BatchHeader::parse_header_only(kept)
            .map(|k| k.record_count)
            .unwrap_or(h.record_count)
    };
    (h.record_count - after).max(0) as u64
}

/// The dirty ratio of `segments` and whether they are due for cleaning.
fn judge(
    segments: &[SegmentView],
    first_dirty: i64,
    now: i64,
    cfg: &crate::config::TopicConfig,
) -> Option<Cleanability> {
    let (dirty, total) = dirty_bytes(segments, first_dirty);
    if dirty == 0 {
        return None;
    }
    let dirty_ratio = dirty as f64 / total.max(1) as f64;
    let overdue = segments
        .iter()
        .find(|s| s.next_offset > first_dirty)
        .is_some_and(|s| {
            s.max_timestamp >= 0 && s.max_timestamp < now.saturating_sub(cfg.max_compaction_lag_ms)
        });
    Some(Cleanability {
        dirty_ratio,
        due: dirty_ratio >= cfg.min_cleanable_dirty_ratio || overdue,
    })
}

fn dirty_bytes(segments: &[SegmentView], first_dirty: i64) -> (u64, u64) {
    let total: u64 = segments.iter().map(|s| s.size).sum();
    let dirty: u64 = segments
        .iter()
        .filter(|s| s.next_offset > first_dirty)
        .map(|s| s.size)
        .sum();
    (dirty, total)
}

/// Consecutive segments whose sizes add up to at most `segment_bytes` and
/// whose offsets fit one segment's 32-bit relative offsets.
fn groups<'a>(segments: &[&'a SegmentView], segment_bytes: u64) -> Vec<Vec<&'a SegmentView>> {
    let mut out: Vec<Vec<&SegmentView>> = Vec::new();
    let mut size = 0u64;
    for s in segments {
        let fits = out.last().is_some_and(|g| {
            size + s.size <= segment_bytes && s.next_offset - g[0].base <= u32::MAX as i64
        });
        if fits {
            size += s.size;
            if let Some(g) = out.last_mut() {
                g.push(s);
            }
        } else {
            size = s.size;
            out.push(vec![s]);
        }
    }
    out
}

/// Every whole batch of a sealed segment, read in 1 MiB chunks.
fn for_each_batch(
    slice: &SegmentSlice,
    mut on_batch: impl FnMut(&[u8], &BatchHeader) -> io::Result<()>,
) -> io::Result<()> {
    let mut pos = 0u64;
    while pos < slice.end {
        let Some(first) = slice.header_at(pos)? else {
            break;
        };
        let want = (first.size as u64).max(1 << 20).min(slice.end - pos) as usize;
        let buf = slice.read(pos, want)?;
        let mut scanner = BatchScanner::new(&buf, true);
        let mut advanced = 0usize;
        for (at, h) in scanner.by_ref() {
            on_batch(&buf[at..at + h.size], &h)?;
            advanced = at + h.size;
        }
        if advanced == 0 {
            if let Some(e) = scanner.stopped_by {
                return Err(io::Error::other(format!("segment at position {pos}: {e}")));
            }
            break;
        }
        pos += advanced as u64;
    }
    Ok(())
}

#[cfg(test)]
#[path = "cleaner_tests.rs"]
mod tests;
