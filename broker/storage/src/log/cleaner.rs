//! Log compaction of one partition (`cleanup.policy=compact`): Kafka's
//! `LogCleaner` pass. The dirty section (from the cleaner checkpoint up to
//! the first uncleanable offset: the active segment, or the first segment
//! younger than `min.compaction.lag.ms`) is read into a map from key hash to
//! its latest offset; then every sealed segment up to the end of that map is
//! rewritten in groups of at most `segment.bytes`, keeping each key's latest
//! record, tombstones until their delete horizon, and every active
//! producer's last batch (`strata_format::compaction` rewrites a batch).
//! Offsets never change: a cleaned log has gaps. Transactions: the dirty
//! section ends before the first unstable offset (an open transaction may
//! still abort); records of aborted transactions are removed and never
//! count as a key's latest value; markers and `.txnindex` entries stay.
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
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use strata_format::compaction::{clean_batch, for_each_record, CleanPolicy, Cleaned};

use super::aborted_ranges::AbortedRanges;
use super::batch::{BatchHeader, BatchScanner};
use super::cleaner_remote::{OpenedSegment, RemotePass, RemoteSegmentInfo, RemoteView, TieredPart};
use super::partition_log::{fsync_dir, settings, LogError, PartitionLog};
use super::segment::{
    file_stem, LogSegment, SegmentSlice, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX,
};
use super::txn_index::{encode_entries, TXN_INDEX_SUFFIX};

pub use super::cleaner_checkpoint::{interrupted_pass, CleanerCheckpoint, TMP_DIR};
pub use super::cleaner_threads::{clean_dirtiest, start_cleaners, Cleaners};
pub use super::offset_map::{OffsetMap, Throttle};

/// How far a stored batch's records may inflate while the cleaner reads it.
const MAX_INFLATED: u64 = 1 << 30;

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CleanStats {
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub records_removed: u64,
    /// Dirty ratio that started the pass.
    pub dirty_ratio: f64,
    /// Remote segments replaced by a cleaned version or removed.
    pub remote_segments_replaced: u64,
}

/// A sealed segment as the pass saw it.
#[derive(Clone)]
struct SegmentView {
    base: i64,
    next_offset: i64,
    size: u64,
    max_timestamp: i64,
    source: Source,
}

/// Where a segment's bytes are.
#[derive(Clone)]
enum Source {
    Local(SegmentSlice),
    /// In the bucket; `local_copy` is the same segment inside the hot window.
    Remote {
        segment: RemoteSegmentInfo,
        local_copy: Option<SegmentSlice>,
    },
}

impl SegmentView {
    fn open(&self, pass: Option<&RemotePass>) -> Result<OpenedSegment, LogError> {
        match (&self.source, pass) {
            (Source::Local(slice), _) => Ok(OpenedSegment::local(slice.clone())),
            (
                Source::Remote {
                    segment,
                    local_copy,
                },
                Some(pass),
            ) => pass.open(segment, local_copy.as_ref()),
            (Source::Remote { .. }, None) => Err(LogError::Io(io::Error::other(
                "a remote segment without the remote part",
            ))),
        }
    }
}

/// The dirty ratio of a compacted log and whether it must be cleaned now.
pub(crate) struct Cleanability {
    pub dirty_ratio: f64,
    pub due: bool,
    /// The newest timestamp of the oldest dirty segment (cleaner lag).
    pub dirty_since_ms: i64,
}

impl PartitionLog {
    /// How dirty the log is, for choosing which log to clean first;
    /// `tiered` is the bucket's part of a tiered log.
    pub(crate) fn cleanability(
        &self,
        tiered: Option<&dyn TieredPart>,
        now: i64,
    ) -> Option<Cleanability> {
        let cfg = self.config();
        if !cfg.compacted || self.is_closed() {
            return None;
        }
        let remote = tiered.map(|p| p.segments()).unwrap_or_default();
        let (segments, first_dirty) = self.cleanable_segments(now, &cfg, &remote);
        judge(&segments, first_dirty, now, &cfg)
    }

    /// Sealed segments below the first uncleanable offset, and the first
    /// dirty offset. A tiered log's remote segments come first; local
    /// segments the bucket also holds are only their copies.
    fn cleanable_segments(
        &self,
        now: i64,
        cfg: &strata_common::config::TopicConfig,
        remote: &[RemoteSegmentInfo],
    ) -> (Vec<SegmentView>, i64) {
        let checkpoint = CleanerCheckpoint::load(self.dir());
        let inner = self.lock();
        let active = inner.active().base_offset();
        // Nothing at or after an open transaction's first offset is cleaned.
        let unstable = inner.producers.first_unstable_offset().unwrap_or(i64::MAX);
        let lag_cutoff = now.saturating_sub(cfg.min_compaction_lag_ms);
        // A segment with records younger than min.compaction.lag.ms, and
        // everything after it, waits.
        let too_young =
            |max_timestamp: i64| max_timestamp > lag_cutoff && cfg.min_compaction_lag_ms > 0;
        let remote_end = remote.last().map_or(i64::MIN, |s| s.next_offset());
        let mut copies = HashMap::new();
        let mut local = Vec::new();
        let mut whole = true;
        for (base, seg) in inner.segments.range(..active) {
            if too_young(seg.max_timestamp())
                || seg.lost_from().is_some()
                || seg.next_offset() > unstable
            {
                break;
            }
            let Ok(slice) = seg.slice() else { break };
            if seg.next_offset() <= remote_end {
                copies.insert(*base, (seg.next_offset(), slice));
                continue;
            }
            if *base < remote_end {
                // Straddles the catalog's end: not a log the cleaner knows.
                whole = false;
                break;
            }
            local.push(SegmentView {
                base: *base,
                next_offset: seg.next_offset(),
                size: seg.size(),
                max_timestamp: seg.max_timestamp(),
                source: Source::Local(slice),
            });
        }
        let mut out = Vec::new();
        for r in remote {
            if too_young(r.max_timestamp) {
                whole = false;
                break;
            }
            let local_copy = copies
                .get(&r.base_offset)
                .filter(|(next, _)| *next == r.next_offset())
                .map(|(_, slice)| slice.clone());
            out.push(SegmentView {
                base: r.base_offset,
                next_offset: r.next_offset(),
                size: r.size_bytes,
                max_timestamp: r.max_timestamp,
                source: Source::Remote {
                    segment: r.clone(),
                    local_copy,
                },
            });
        }
        if whole {
            out.extend(local);
        }
        let log_start = remote
            .first()
            .map_or(inner.log_start_offset, |r| r.base_offset);
        (out, checkpoint.first_dirty.max(log_start))
    }

    /// One cleaning pass, if the log is compacted and dirty enough (or
    /// `force`), covering the bucket's part too when `tiered` is given (a
    /// tiered log's whole log). Returns what it did.
    pub fn clean(
        &self,
        tiered: Option<Arc<dyn TieredPart>>,
        now: i64,
        map: &mut OffsetMap,
        throttle: &mut Throttle,
        force: bool,
    ) -> Result<Option<CleanStats>, LogError> {
        let cfg = self.config();
        if !cfg.compacted {
            return Ok(None);
        }
        // A tiered log: hold the catalog writer for the whole pass.
        let (mut pass, remote, _local_hold) = match tiered {
            None => (None, Vec::new(), None),
            Some(part) => match RemotePass::begin(part, self.dir())? {
                RemoteView::Local(hold) => (None, Vec::new(), Some(hold)),
                RemoteView::NotReady => return Ok(None),
                RemoteView::Segments(pass, remote) => (Some(pass), remote, None),
            },
        };
        let (segments, first_dirty) = self.cleanable_segments(now, &cfg, &remote);
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

        // Aborted transactions of the whole log: the local segments' and
        // the bucket's (records of either never count as a key's value).
        let remote_aborted = match pass.as_ref() {
            Some(pass) => pass.aborted_transactions(&remote)?,
            None => Vec::new(),
        };
        let aborted = AbortedRanges::new(
            self.lock()
                .segments
                .values()
                .flat_map(|s| s.txn_index().entries().iter())
                .chain(remote_aborted.iter()),
        );
        // 1. The map: latest offset of each key in the dirty section.
        map.clear();
        let mut map_end = first_dirty;
        'dirty: for seg in segments.iter().filter(|s| s.next_offset > first_dirty) {
            let mut full = false;
            let opened = seg.open(pass.as_ref())?;
            for_each_batch(&opened.slice, |bytes, h| {
                stats.bytes_read += h.size as u64;
                throttle.account(h.size);
                if full || h.last_offset() < first_dirty || h.is_control() || aborted.contains(h) {
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
        let mut rewrite = Rewrite {
            aborted: &aborted,
            policy: &policy,
            producers: &producers,
            map: &*map,
            stats: &mut stats,
            throttle: &mut *throttle,
        };
        // The bucket's segments first: each cleaned one is uploaded, then
        // one manifest swap replaces them all.
        if let Some(pass) = pass.as_mut() {
            let mut replacements = Vec::new();
            for view in segments.iter().filter(|s| s.base < map_end) {
                let Source::Remote { segment, .. } = &view.source else {
                    continue;
                };
                let opened = view.open(Some(pass))?;
                let stem = file_stem(view.base);
                let tmp_log = tmp.join(format!("{stem}{LOG_SUFFIX}"));
                let (written, changed) =
                    self.rewrite_into(&opened.slice, &tmp_log, &mut rewrite)?;
                drop(opened);
                let cleaned = if !changed {
                    None
                } else if written > 0 {
                    let max_timestamp = build_indexes(&tmp, view.base, settings(&cfg))?;
                    Some(Some(pass.upload(segment, &tmp, max_timestamp)?))
                } else {
                    Some(None)
                };
                for suffix in [LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX] {
                    let _ = fs::remove_file(tmp.join(format!("{stem}{suffix}")));
                }
                if let Some(cleaned) = cleaned {
                    rewrite.stats.bytes_written += written;
                    replacements.push((segment.clone(), cleaned));
                }
            }
            let delay = Duration::from_millis(cfg.file_delete_delay_ms as u64);
            rewrite.stats.remote_segments_replaced = pass.commit(self, replacements, delay)? as u64;
        }
        let to_clean: Vec<&SegmentView> = segments
            .iter()
            .filter(|s| s.base < map_end && matches!(s.source, Source::Local(_)))
            .collect();
        for group in groups(&to_clean, cfg.segment_bytes) {
            let base = group[0].base;
            let end = group.last().map(|s| s.next_offset).unwrap_or(base);
            let tmp_log = tmp.join(format!("{}{LOG_SUFFIX}", file_stem(base)));
            let mut out = BufWriter::with_capacity(1 << 20, fs::File::create(&tmp_log)?);
            let mut written = 0u64;
            for seg in &group {
                let Source::Local(slice) = &seg.source else {
                    continue;
                };
                written += self.rewrite_batches(slice, &mut out, &mut rewrite)?.0;
            }
            let file = out.into_inner().map_err(|e| e.into_error())?;
            file.sync_all()?;
            drop(file);
            rewrite.stats.bytes_written += written;
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

    /// Writes `slice`'s batches as the pass keeps them to `out`; returns the
    /// bytes written and whether any batch changed.
    fn rewrite_batches(
        &self,
        slice: &SegmentSlice,
        out: &mut impl Write,
        rw: &mut Rewrite<'_>,
    ) -> Result<(u64, bool), LogError> {
        let (mut written, mut changed) = (0u64, false);
        for_each_batch(slice, |bytes, h| {
            rw.stats.bytes_read += h.size as u64;
            let retain_empty =
                h.producer_id >= 0 && rw.producers.get(&h.producer_id) == Some(&h.last_offset());
            let map = &*rw.map;
            let aborted = rw.aborted.contains(h);
            let cleaned = clean_batch(bytes, rw.policy, retain_empty, |r| match r.key {
                _ if aborted => false,
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
            changed |= !matches!(cleaned, Ok(Cleaned::Unchanged) | Err(_));
            rw.stats.records_removed += removed_records(h, kept);
            out.write_all(kept)?;
            written += kept.len() as u64;
            rw.throttle.account(h.size + kept.len());
            Ok(())
        })?;
        Ok((written, changed))
    }

    /// [`Self::rewrite_batches`] into a new file at `path`, made durable.
    fn rewrite_into(
        &self,
        slice: &SegmentSlice,
        path: &Path,
        rw: &mut Rewrite<'_>,
    ) -> Result<(u64, bool), LogError> {
        let mut out = BufWriter::with_capacity(1 << 20, fs::File::create(path)?);
        let done = self.rewrite_batches(slice, &mut out, rw)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        Ok(done)
    }

    /// Replaces `group` by the cleaned segment in `tmp` (none if it came
    /// out empty). Skipped if retention removed any of the group meanwhile.
    fn swap_in(
        &self,
        base: i64,
        group: &[&SegmentView],
        size: u64,
        tmp: &Path,
        cfg: &strata_common::config::TopicConfig,
    ) -> Result<(), LogError> {
        let seg_settings = settings(cfg);
        // Build the indexes outside the partition lock.
        let cleaned = size > 0;
        if cleaned {
            build_indexes(tmp, base, seg_settings)?;
        }
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
        // The group's aborted transactions go with its markers into the
        // cleaned segment: written (atomically) before its .log moves in.
        let aborted: Vec<_> = group
            .iter()
            .filter_map(|g| inner.segments.get(&g.base))
            .flat_map(|s| s.txn_index().entries().iter().copied())
            .collect();
        let txn_index_name = format!("{stem}{TXN_INDEX_SUFFIX}");
        if cleaned {
            if aborted.is_empty() {
                let _ = fs::remove_file(dir.join(&txn_index_name));
            } else {
                strata_common::durable_file::write_atomically(
                    &dir.join(&txn_index_name),
                    &encode_entries(&aborted),
                )?;
            }
        }
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

/// What rewriting a segment needs from its pass.
struct Rewrite<'a> {
    aborted: &'a AbortedRanges,
    policy: &'a CleanPolicy,
    producers: &'a HashMap<i64, i64>,
    map: &'a OffsetMap,
    stats: &'a mut CleanStats,
    throttle: &'a mut Throttle,
}

/// Checks the cleaned `.log` at `base` in `dir` and writes its indexes
/// beside it; returns its largest timestamp.
fn build_indexes(
    dir: &Path,
    base: i64,
    seg_settings: super::segment::SegmentSettings,
) -> Result<i64, LogError> {
    let (mut seg, report) = LogSegment::open(dir, base, seg_settings, true)?;
    if report.truncated_bytes > 0 {
        return Err(LogError::Io(io::Error::other(format!(
            "the cleaned segment at {base} failed its own check: {:?}",
            report.stopped_by
        ))));
    }
    seg.seal()?;
    let max_timestamp = seg.max_timestamp();
    drop(seg);
    super::file_pool::global().forget(&dir.join(format!("{}{LOG_SUFFIX}", file_stem(base))));
    Ok(max_timestamp)
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
    cfg: &strata_common::config::TopicConfig,
) -> Option<Cleanability> {
    let (dirty, total) = dirty_bytes(segments, first_dirty);
    if dirty == 0 {
        return None;
    }
    let dirty_ratio = dirty as f64 / total.max(1) as f64;
    let dirty_since_ms = segments
        .iter()
        .find(|s| s.next_offset > first_dirty)
        .map_or(now, |s| s.max_timestamp.max(0));
    let overdue =
        dirty_since_ms > 0 && dirty_since_ms < now.saturating_sub(cfg.max_compaction_lag_ms);
    Some(Cleanability {
        dirty_ratio,
        due: dirty_ratio >= cfg.min_cleanable_dirty_ratio || overdue,
        dirty_since_ms,
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
