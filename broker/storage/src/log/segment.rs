//! `LogSegment`: one `.log` file of record batches plus its `.index`,
//! `.timeindex` and (once it holds an abort marker) `.txnindex`, named by
//! the base offset in 20 digits as Kafka does.
//!
//! A segment owns its files and their recovery (CRC scan, torn-tail
//! truncation, index rebuild). It never decides when to roll or delete: that
//! is the partition log's job. Mutation happens under the partition's lock;
//! reads go through a [`SegmentSlice`] that holds the file open, so a segment
//! deleted by retention stays readable for a fetch already in progress.
//! The active segment keeps its own handle; once sealed, a segment hands it
//! to the process's [`super::file_pool`], which bounds open descriptors.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

use super::batch::{self, BatchError, BatchHeader, HEADER_LEN, LOG_OVERHEAD};
use super::index::{OffsetIndex, OffsetPosition, TimeIndex, TimestampOffset};
use super::txn_index::{TransactionIndex, TXN_INDEX_SUFFIX};

pub(crate) const LOG_SUFFIX: &str = ".log";
pub(crate) const INDEX_SUFFIX: &str = ".index";
pub(crate) const TIME_INDEX_SUFFIX: &str = ".timeindex";

pub(crate) fn txn_index_path(dir: &Path, base_offset: i64) -> PathBuf {
    dir.join(format!("{}{TXN_INDEX_SUFFIX}", file_stem(base_offset)))
}

/// File name stem for a segment: the base offset in 20 digits.
pub(crate) fn file_stem(base_offset: i64) -> String {
    format!("{base_offset:020}")
}

/// Settings a segment needs from the topic config.
#[derive(Debug, Clone, Copy)]
pub struct SegmentSettings {
    pub index_interval_bytes: u64,
    pub max_index_bytes: usize,
}

/// What recovery found in a segment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecoveryReport {
    pub valid_batches: usize,
    /// Bytes cut from the end because they were not a complete valid batch.
    pub truncated_bytes: u64,
    pub stopped_by: Option<String>,
}

#[derive(Debug)]
pub struct LogSegment {
    base_offset: i64,
    dir: PathBuf,
    /// The segment's own handle while it is active (or being opened);
    /// `None` once [`Self::release_file`] gave it to the pool.
    file: Option<Arc<File>>,
    size: u64,
    next_offset: i64,
    max_timestamp: i64,
    offset_of_max_timestamp: i64,
    index: OffsetIndex,
    time_index: TimeIndex,
    bytes_since_last_index: u64,
    settings: SegmentSettings,
    /// Wall-clock ms when the segment received its first batch (for `segment.ms`).
    first_append_ms: Option<i64>,
    /// Set on a sealed segment that recovery cut short: its records from
    /// this offset to `next_offset` are missing from the file (the disk
    /// lost them; the bucket may hold them).
    lost_from: Option<i64>,
    /// Transactions aborted by a marker in this segment.
    txn_index: TransactionIndex,
}

impl LogSegment {
    fn paths(dir: &Path, base_offset: i64) -> (PathBuf, PathBuf, PathBuf) {
        let stem = file_stem(base_offset);
        (
            dir.join(format!("{stem}{LOG_SUFFIX}")),
            dir.join(format!("{stem}{INDEX_SUFFIX}")),
            dir.join(format!("{stem}{TIME_INDEX_SUFFIX}")),
        )
    }

    fn open_log_file(path: &Path, create: bool) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(create)
            .truncate(false)
            .open(path)
    }

    /// Creates a new, empty segment.
    pub fn create(dir: &Path, base_offset: i64, settings: SegmentSettings) -> io::Result<Self> {
        let (log, idx, tidx) = Self::paths(dir, base_offset);
        let file = Self::open_log_file(&log, true)?;
        file.set_len(0)?;
        Ok(Self {
            base_offset,
            dir: dir.to_path_buf(),
            file: Some(Arc::new(file)),
            size: 0,
            next_offset: base_offset,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
            index: OffsetIndex::create(&idx, settings.max_index_bytes)?,
            time_index: TimeIndex::create(&tidx, settings.max_index_bytes)?,
            bytes_since_last_index: 0,
            settings,
            first_append_ms: None,
            lost_from: None,
            txn_index: TransactionIndex::open(txn_index_path(dir, base_offset)),
        })
    }

    /// Opens an existing segment. With `recover`, every batch is checked by
    /// CRC, a torn or corrupt tail is truncated and both indexes are rebuilt.
    /// Without it, the indexes are loaded (rebuilt if missing or invalid)
    /// and only the tail after the last offset-index entry is scanned.
    pub fn open(
        dir: &Path,
        base_offset: i64,
        settings: SegmentSettings,
        recover: bool,
    ) -> io::Result<(Self, RecoveryReport)> {
        let (log, idx_path, tidx_path) = Self::paths(dir, base_offset);
        let file = Self::open_log_file(&log, false)?;
        let file_len = file.metadata()?.len();
        if !recover {
            let index = OffsetIndex::load(&idx_path, settings.max_index_bytes, |e| {
                (e.position as u64) < file_len
            })?;
            let time_index = TimeIndex::load(&tidx_path, settings.max_index_bytes, |_| true)?;
            if let (Some(index), Some(time_index)) = (index, time_index) {
                let mut seg = Self::with_parts(
                    dir,
                    base_offset,
                    Arc::new(file),
                    file_len,
                    index,
                    time_index,
                    settings,
                );
                if seg.load_tail()? {
                    return Ok((seg, RecoveryReport::default()));
                }
                // The tail was not clean after all: fall through to recovery.
                let file = seg.file()?;
                return Self::recover_file(dir, base_offset, file, settings);
            }
        }
        Self::recover_file(dir, base_offset, Arc::new(file), settings)
    }

    fn with_parts(
        dir: &Path,
        base_offset: i64,
        file: Arc<File>,
        size: u64,
        index: OffsetIndex,
        time_index: TimeIndex,
        settings: SegmentSettings,
    ) -> Self {
        Self {
            base_offset,
            dir: dir.to_path_buf(),
            file: Some(file),
            size,
            next_offset: base_offset,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
            index,
            time_index,
            bytes_since_last_index: 0,
            settings,
            first_append_ms: None,
            lost_from: None,
            txn_index: TransactionIndex::open(txn_index_path(dir, base_offset)),
        }
    }

    /// After loading valid indexes: scans from the last indexed batch to the
    /// end to learn the next offset and max timestamp. Returns false if the
    /// file does not end on a batch boundary.
    fn load_tail(&mut self) -> io::Result<bool> {
        if let Some(t) = self.time_index.last() {
            self.max_timestamp = t.timestamp;
            self.offset_of_max_timestamp = self.base_offset + t.relative_offset as i64;
        }
        let start = self.index.last().map(|e| e.position as u64).unwrap_or(0);
        let mut last_next = None;
        let mut max_ts = (self.max_timestamp, self.offset_of_max_timestamp);
        let file = self.file()?;
        let (end, stop) = scan_file(&file, start, self.size, false, |_, h| {
            last_next = Some(h.next_offset());
            if h.max_timestamp > max_ts.0 {
                max_ts = (h.max_timestamp, h.base_offset);
            }
            true
        })?;
        if end != self.size || stop.is_some() {
            return Ok(false);
        }
        if let Some(n) = last_next {
            self.next_offset = n;
        } else if let Some(e) = self.index.last() {
            // The last indexed batch must have been scanned.
            let _ = e;
            return Ok(false);
        }
        self.max_timestamp = max_ts.0;
        self.offset_of_max_timestamp = max_ts.1;
        self.bytes_since_last_index = end - start;
        Ok(true)
    }

    /// Full recovery: CRC-checks every batch, truncates at the first invalid
    /// byte, rebuilds both indexes from scratch.
    fn recover_file(
        dir: &Path,
        base_offset: i64,
        file: Arc<File>,
        settings: SegmentSettings,
    ) -> io::Result<(Self, RecoveryReport)> {
        let (_, idx_path, tidx_path) = Self::paths(dir, base_offset);
        let file_len = file.metadata()?.len();
        let index = OffsetIndex::create(&idx_path, settings.max_index_bytes)?;
        let time_index = TimeIndex::create(&tidx_path, settings.max_index_bytes)?;
        let mut seg = Self::with_parts(
            dir,
            base_offset,
            file.clone(),
            0,
            index,
            time_index,
            settings,
        );
        let mut valid = 0usize;
        let mut expected_next = base_offset;
        let mut out_of_order = None;
        let (end, stop) = scan_file(&file, 0, file_len, true, |pos, h| {
            if h.base_offset < expected_next {
                out_of_order = Some(format!(
                    "batch at position {pos} has base offset {} below expected {expected_next}",
                    h.base_offset
                ));
                return false;
            }
            expected_next = h.next_offset();
            seg.track_batch(pos, h);
            valid += 1;
            true
        })?;
        let truncated = file_len - end;
        if truncated > 0 {
            file.set_len(end)?;
            file.sync_all()?;
        }
        seg.index.persist(true)?;
        seg.time_index.persist(true)?;
        let stopped_by = out_of_order.or_else(|| stop.map(|e| e.to_string()));
        Ok((
            seg,
            RecoveryReport {
                valid_batches: valid,
                truncated_bytes: truncated,
                stopped_by: if truncated > 0 { stopped_by } else { None },
            },
        ))
    }

    /// A reopened, non-empty active segment counts its `segment.ms` age
    /// from `now_ms` (the log's clock when it reopened it): the time of
    /// its first append is not stored.
    pub(super) fn mark_reopened(&mut self, now_ms: i64) {
        if self.size > 0 {
            self.first_append_ms = Some(now_ms);
        }
    }

    /// Updates size, next offset, timestamps and indexes for a batch that is
    /// now at `position` in the file.
    fn track_batch(&mut self, position: u64, h: &BatchHeader) {
        if self.bytes_since_last_index >= self.settings.index_interval_bytes {
            let rel = (h.base_offset - self.base_offset) as u32;
            self.index.append(OffsetPosition {
                relative_offset: rel,
                position: position as u32,
            });
            self.index_max_timestamp();
            self.bytes_since_last_index = 0;
        }
        if h.max_timestamp > self.max_timestamp {
            self.max_timestamp = h.max_timestamp;
            self.offset_of_max_timestamp = h.base_offset;
        }
        self.size = position + h.size as u64;
        self.next_offset = h.next_offset();
        self.bytes_since_last_index += h.size as u64;
    }

    /// Records the max timestamp seen so far in the time index, if it grew
    /// since the last entry (entries must increase in timestamp).
    fn index_max_timestamp(&mut self) {
        if self.max_timestamp >= 0
            && self
                .time_index
                .last()
                .is_none_or(|t| self.max_timestamp > t.timestamp)
        {
            self.time_index.append(TimestampOffset {
                timestamp: self.max_timestamp,
                relative_offset: (self.offset_of_max_timestamp - self.base_offset) as u32,
            });
        }
    }

    /// Appends one batch whose base offset has already been assigned.
    pub fn append(&mut self, bytes: &[u8], header: &BatchHeader, now_ms: i64) -> io::Result<()> {
        let position = self.size;
        let Some(file) = &self.file else {
            return Err(io::Error::other(format!(
                "append to sealed segment {}",
                self.log_path().display()
            )));
        };
        if let Err(e) = file.write_all_at(bytes, position) {
            // A write cut short (no space left) leaves part of the batch
            // past the segment's end: cut it, so that neither a later roll
            // nor recovery takes it for log.
            let _ = file.set_len(position);
            return Err(e);
        }
        if self.first_append_ms.is_none() {
            self.first_append_ms = Some(now_ms);
        }
        self.track_batch(position, header);
        Ok(())
    }

    /// Whether appending `batch_size` more bytes ending at `last_offset`
    /// requires rolling to a new segment first.
    pub(crate) fn should_roll(
        &self,
        batch_size: u64,
        last_offset: i64,
        segment_bytes: u64,
        segment_ms: i64,
        now_ms: i64,
    ) -> bool {
        if self.size == 0 {
            return false;
        }
        self.size + batch_size > segment_bytes
            || self
                .first_append_ms
                .is_some_and(|t| now_ms - t >= segment_ms)
            || self.index.is_full()
            || self.time_index.is_full()
            || last_offset - self.base_offset > u32::MAX as i64
            || self.size + batch_size > u32::MAX as u64
    }

    /// Seals the segment: records the final max timestamp in the time index
    /// and makes the log and both indexes durable.
    pub fn seal(&mut self) -> io::Result<()> {
        self.index_max_timestamp();
        self.file()?.sync_data()?;
        self.index.persist(true)?;
        self.time_index.persist(true)?;
        self.txn_index.sync()
    }

    /// Records that this sealed segment, cut short by recovery, used to
    /// reach `next_base` (where its successor starts): the offsets between
    /// its last valid batch and there are lost from the file, not from the
    /// log, so offsets stay contiguous and reads there fail rather than
    /// skip ahead.
    pub(crate) fn mark_lost_until(&mut self, next_base: i64) {
        if next_base > self.next_offset {
            self.lost_from = Some(self.next_offset);
            self.next_offset = next_base;
        }
    }

    /// The first offset whose records the file lost, if recovery cut it.
    pub(crate) fn lost_from(&self) -> Option<i64> {
        self.lost_from
    }

    /// Gives the file handle of a segment that will not be written again
    /// to the process's pool; reads reopen it through the pool from now on.
    pub(crate) fn release_file(&mut self) {
        if let Some(file) = self.file.take() {
            super::file_pool::global().insert(&self.log_path(), file);
        }
    }

    /// Writes pending index entries (without fsync; indexes are rebuilt by
    /// recovery if they are behind the log).
    pub(crate) fn persist_indexes(&mut self) -> io::Result<()> {
        self.index.persist(false)?;
        self.time_index.persist(false)
    }

    /// Deletes the segment's files. Open readers keep working.
    pub(crate) fn delete_files(&self) -> io::Result<()> {
        let (log, idx, tidx) = Self::paths(&self.dir, self.base_offset);
        super::file_pool::global().forget(&log);
        for p in [log, idx, tidx, self.txn_index.path().to_path_buf()] {
            match fs::remove_file(&p) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    pub fn base_offset(&self) -> i64 {
        self.base_offset
    }
    pub fn next_offset(&self) -> i64 {
        self.next_offset
    }
    pub fn size(&self) -> u64 {
        self.size
    }
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }
    pub fn max_timestamp(&self) -> i64 {
        self.max_timestamp
    }
    /// The segment's file: its own handle while active, else the pool's.
    pub fn file(&self) -> io::Result<Arc<File>> {
        match &self.file {
            Some(f) => Ok(f.clone()),
            None => super::file_pool::global().get(&self.log_path()),
        }
    }
    pub(crate) fn log_path(&self) -> PathBuf {
        Self::paths(&self.dir, self.base_offset).0
    }
    #[cfg(test)]
    pub(crate) fn offset_index(&self) -> &OffsetIndex {
        &self.index
    }
    pub fn txn_index(&self) -> &TransactionIndex {
        &self.txn_index
    }
    pub(crate) fn txn_index_mut(&mut self) -> &mut TransactionIndex {
        &mut self.txn_index
    }
    pub fn time_index(&self) -> &TimeIndex {
        &self.time_index
    }

    /// File position to start scanning from to find `offset`.
    pub(crate) fn position_hint(&self, offset: i64) -> u64 {
        self.index
            .floor(offset - self.base_offset)
            .map(|e| e.position as u64)
            .unwrap_or(0)
    }

    /// File position to start scanning from to find the first batch with a
    /// timestamp `>= timestamp`.
    pub(crate) fn position_for_timestamp(&self, timestamp: i64) -> u64 {
        match self.time_index.floor(timestamp.saturating_sub(1)) {
            Some(e) => self.position_hint(self.base_offset + e.relative_offset as i64),
            None => 0,
        }
    }

    /// A read handle on the bytes currently in the segment.
    pub fn slice(&self) -> io::Result<SegmentSlice> {
        Ok(SegmentSlice {
            file: self.file()?,
            end: self.size,
        })
    }
}

/// A read-only view of a segment's bytes `[0, end)`, valid even after the
/// segment's files are deleted.
#[derive(Debug, Clone)]
pub struct SegmentSlice {
    pub file: Arc<File>,
    pub end: u64,
}

impl SegmentSlice {
    /// Reads the header of the batch at `position`.
    pub(crate) fn header_at(&self, position: u64) -> io::Result<Option<BatchHeader>> {
        if position + HEADER_LEN as u64 > self.end {
            return Ok(None);
        }
        let mut buf = [0u8; HEADER_LEN];
        self.file.read_exact_at(&mut buf, position)?;
        match BatchHeader::parse_header_only(&buf) {
            Ok(h) if position + h.size as u64 <= self.end => Ok(Some(h)),
            _ => Ok(None),
        }
    }

    /// From `position`, skips batches that end before `offset`; returns the
    /// position and header of the first batch with last offset >= `offset`.
    pub fn seek(&self, mut position: u64, offset: i64) -> io::Result<Option<(u64, BatchHeader)>> {
        while let Some(h) = self.header_at(position)? {
            if h.last_offset() >= offset {
                return Ok(Some((position, h)));
            }
            position += h.size as u64;
        }
        Ok(None)
    }

    /// From `position`, the first batch whose max timestamp is `>= ts`.
    pub(crate) fn seek_timestamp(
        &self,
        mut position: u64,
        ts: i64,
    ) -> io::Result<Option<(u64, BatchHeader)>> {
        while let Some(h) = self.header_at(position)? {
            if h.max_timestamp >= ts {
                return Ok(Some((position, h)));
            }
            position += h.size as u64;
        }
        Ok(None)
    }

    pub fn read(&self, position: u64, len: usize) -> io::Result<Vec<u8>> {
        let len = len.min(self.end.saturating_sub(position) as usize);
        let mut buf = vec![0u8; len];
        self.file.read_exact_at(&mut buf, position)?;
        Ok(buf)
    }
}

pub fn retention_timestamp(seg: &LogSegment) -> i64 {
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
pub(crate) fn find_record(
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
    first_record_in_batch(Bytes::from(bytes), hw, pred)
}

/// The first record of one whole batch (below `hw`) whose timestamp
/// satisfies `pred`: (offset, timestamp). A batch whose records cannot be
/// read answers with its base offset (and a warning).
pub fn first_record_in_batch(
    bytes: Bytes,
    hw: i64,
    pred: impl Fn(i64) -> bool,
) -> Option<(i64, i64)> {
    match strata_format::records::first_record(&bytes, hw, pred) {
        Ok(found) => found,
        Err(e) => {
            let h = BatchHeader::parse(&bytes).ok()?;
            tracing::warn!(error = %e, base_offset = h.base_offset,
                "cannot read the records of a batch for a timestamp lookup; using its base offset");
            Some((h.base_offset, h.max_timestamp))
        }
    }
}

/// Scans batches sequentially in `[from, end)`. `on_batch` returns false to
/// stop. Returns the position after the last accepted batch and, if the scan
/// stopped before `end` on invalid bytes, why.
fn scan_file(
    file: &File,
    from: u64,
    end: u64,
    verify_crc: bool,
    mut on_batch: impl FnMut(u64, &BatchHeader) -> bool,
) -> io::Result<(u64, Option<BatchError>)> {
    let mut reader = BufReader::with_capacity(
        1 << 20,
        ReadAt {
            file,
            pos: from,
            end,
        },
    );
    let mut pos = from;
    let mut buf = Vec::with_capacity(64 * 1024);
    while pos < end {
        let remaining = end - pos;
        if remaining < LOG_OVERHEAD as u64 {
            return Ok((
                pos,
                Some(BatchError::Truncated {
                    needed: LOG_OVERHEAD,
                    available: remaining as usize,
                }),
            ));
        }
        buf.resize(LOG_OVERHEAD, 0);
        reader.read_exact(&mut buf[..LOG_OVERHEAD])?;
        let length = i32::from_be_bytes([buf[8], buf[9], buf[10], buf[11]]);
        if length < (HEADER_LEN - LOG_OVERHEAD) as i32 {
            return Ok((pos, Some(BatchError::InvalidLength(length))));
        }
        let size = LOG_OVERHEAD + length as usize;
        if size as u64 > remaining {
            return Ok((
                pos,
                Some(BatchError::Truncated {
                    needed: size,
                    available: remaining as usize,
                }),
            ));
        }
        buf.resize(size, 0);
        reader.read_exact(&mut buf[LOG_OVERHEAD..])?;
        let parsed = if verify_crc {
            batch::validate(&buf)
        } else {
            BatchHeader::parse(&buf)
        };
        let header = match parsed {
            Ok(h) => h,
            Err(e) => return Ok((pos, Some(e))),
        };
        if !on_batch(pos, &header) {
            return Ok((pos, None));
        }
        pos += size as u64;
    }
    Ok((pos, None))
}

/// Positional reader over a shared file.
struct ReadAt<'a> {
    file: &'a File,
    pos: u64,
    end: u64,
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(self.end.saturating_sub(self.pos) as usize);
        if n == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..n], self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
#[path = "segment_tests.rs"]
mod tests;
