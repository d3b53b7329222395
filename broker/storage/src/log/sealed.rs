//! What the tiering manager sees of a [`PartitionLog`]: its sealed, durable
//! segments with their files, and deletion of a sealed prefix once the
//! object store holds it. Never deletes the active segment and never moves
//! the local log start past a segment that stays.

use std::path::PathBuf;

use std::path::Path;

use super::partition_log::{settings, LogError, LogInner, PartitionLog};
use super::producer_state::{snapshot_path, ProducerStateManager};
use super::segment::{file_stem, retention_timestamp, LogSegment};

/// A sealed segment's files and what retention needs to know about it.
#[derive(Debug, Clone)]
pub struct SealedSegmentFiles {
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub retention_timestamp: i64,
    pub size_bytes: u64,
    pub log: PathBuf,
    pub index: PathBuf,
    pub time_index: PathBuf,
    /// Producer state as of the segment's end, if the snapshot still exists.
    pub producer_snapshot: Option<PathBuf>,
    /// The aborted transactions whose markers it holds, if any.
    pub txn_index: Option<PathBuf>,
}

impl PartitionLog {
    /// Sealed segments entirely below the high watermark (durable) and
    /// the last stable offset (no open transaction: the bucket only gets
    /// decided data, as Kafka tiers), oldest first. Empty segments are
    /// left out.
    pub fn sealed_segment_files(&self) -> Vec<SealedSegmentFiles> {
        let hw = self.last_stable_offset();
        let inner = self.lock();
        let active = inner.active().base_offset();
        let dir = self.dir();
        inner
            .segments
            .values()
            .filter(|s| s.base_offset() != active && !s.is_empty() && s.next_offset() <= hw)
            .map(|s| {
                let stem = file_stem(s.base_offset());
                let snapshot = snapshot_path(dir, s.next_offset());
                SealedSegmentFiles {
                    base_offset: s.base_offset(),
                    last_offset: s.next_offset() - 1,
                    max_timestamp: s.max_timestamp(),
                    retention_timestamp: retention_timestamp(s),
                    size_bytes: s.size(),
                    log: s.log_path(),
                    index: dir.join(format!("{stem}.index")),
                    time_index: dir.join(format!("{stem}.timeindex")),
                    producer_snapshot: snapshot.exists().then_some(snapshot),
                    txn_index: (!s.txn_index().entries().is_empty())
                        .then(|| s.txn_index().path().to_path_buf()),
                }
            })
            .collect()
    }

    /// Deletes sealed segments that end at or below `offset` (they are in
    /// the object store) and moves the local log start to the first segment
    /// left. Readers holding one of them finish reading it. Returns how many.
    pub fn delete_segments_before(&self, offset: i64) -> Result<usize, LogError> {
        let mut inner = self.lock_open()?;
        let removed = delete_whole_segments_below(&mut inner, offset)?;
        if let Some(first) = inner.segments.keys().next().copied() {
            if first > inner.log_start_offset {
                inner.log_start_offset = first;
            }
            if removed > 0 {
                ProducerStateManager::delete_snapshots_below(self.dir(), first)?;
            }
        }
        Ok(removed)
    }

    /// Copies the part of the sealed segment `base_offset` from the batch
    /// starting at `from` into a new segment in `dir` (log, offset and
    /// time indexes built as by an append, the aborted transactions whose
    /// markers it holds), for an upload that must start at the catalog's
    /// end inside this replica's segment: replicas roll segments on their
    /// own, so a new leader's boundaries need not match the bucket's.
    /// Reads and writes a batch at a time; the log itself is not changed.
    pub fn copy_segment_tail(
        &self,
        base_offset: i64,
        from: i64,
        dir: &Path,
    ) -> Result<SealedSegmentFiles, LogError> {
        let not_there = |why: &str| {
            LogError::Io(std::io::Error::other(format!(
                "cannot copy segment {base_offset} from offset {from}: {why}"
            )))
        };
        let (slice, hint, aborted, next_offset) = {
            let inner = self.lock();
            let seg = inner
                .segments
                .get(&base_offset)
                .ok_or_else(|| not_there("no such segment"))?;
            if from <= base_offset || from >= seg.next_offset() {
                return Err(not_there("the offset is not inside it"));
            }
            let aborted: Vec<_> = seg
                .txn_index()
                .entries()
                .iter()
                .filter(|t| t.last_offset >= from)
                .copied()
                .collect();
            (
                seg.slice()?,
                seg.position_hint(from),
                aborted,
                seg.next_offset(),
            )
        };
        let Some((mut position, first)) = slice.seek(hint, from)? else {
            return Err(not_there("no batch there"));
        };
        if first.base_offset != from {
            return Err(not_there("no batch starts there"));
        }
        std::fs::create_dir_all(dir)?;
        let mut copy = LogSegment::create(dir, from, settings(&self.config()))?;
        let now = self.clock.now_ms();
        while let Some(h) = slice.header_at(position)? {
            let bytes = slice.read(position, h.size as usize)?;
            copy.append(&bytes, &h, now)?;
            position += h.size as u64;
        }
        for t in aborted {
            copy.txn_index_mut().append(t)?;
        }
        copy.seal()?;
        if copy.next_offset() != next_offset {
            let _ = copy.delete_files();
            return Err(not_there("the copy ends elsewhere (the segment changed)"));
        }
        let stem = file_stem(from);
        let snapshot = snapshot_path(self.dir(), next_offset);
        Ok(SealedSegmentFiles {
            base_offset: from,
            last_offset: next_offset - 1,
            max_timestamp: copy.max_timestamp(),
            retention_timestamp: retention_timestamp(&copy),
            size_bytes: copy.size(),
            log: copy.log_path(),
            index: dir.join(format!("{stem}.index")),
            time_index: dir.join(format!("{stem}.timeindex")),
            producer_snapshot: snapshot.exists().then_some(snapshot),
            txn_index: (!copy.txn_index().entries().is_empty())
                .then(|| copy.txn_index().path().to_path_buf()),
        })
    }
}

/// Deletes the segments that end at or below `offset`, oldest first,
/// never the active one; a reader already holding one finishes reading
/// it. Returns how many went.
pub(super) fn delete_whole_segments_below(
    inner: &mut LogInner,
    offset: i64,
) -> Result<usize, LogError> {
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
    Ok(removed)
}
