//! Timestamp lookups of a [`PartitionLog`]: the first record at or after a
//! time (ListOffsets by timestamp, `offsets_for_times`), the record with
//! the largest timestamp (ListOffsets -3), and ListOffsets v0's "offsets
//! before a time". All stay at or below the high watermark.

use super::batch::BatchHeader;
use super::partition_log::{LogError, PartitionLog};
use super::segment::{find_record, retention_timestamp, LogSegment, SegmentSlice};

impl PartitionLog {
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
                // The first segment whose max timestamp reaches `ts` holds
                // the answer; a second covers a batch cut by the watermark.
                .take(2)
                .map(|s| Ok((s.slice()?, s.position_for_timestamp(ts))))
                .collect::<Result<_, std::io::Error>>()?
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

    /// The timestamp of the batch holding `offset` in the local log (its
    /// first record's, or the one timestamp of a LogAppendTime batch), if
    /// that batch is below the high watermark. Reads one batch header,
    /// never a batch's records: within one batch, an estimate of the
    /// record's own timestamp (consumer lag in seconds,
    /// `group/lag.rs`).
    pub fn batch_timestamp_at(&self, offset: i64) -> Result<Option<i64>, LogError> {
        if offset >= self.high_watermark() {
            return Ok(None);
        }
        let found = {
            let inner = self.lock();
            match inner.segments.range(..=offset).next_back() {
                Some((_, s)) => Some((s.slice()?, s.position_hint(offset))),
                None => None,
            }
        };
        let Some((slice, hint)) = found else {
            return Ok(None);
        };
        Ok(slice.seek(hint, offset)?.map(|(_, h)| {
            if h.is_log_append_time() {
                h.max_timestamp
            } else {
                h.base_timestamp
            }
        }))
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
                Ok::<_, std::io::Error>((
                    s.slice()?,
                    s.position_for_timestamp(s.max_timestamp()),
                    s.max_timestamp(),
                ))
            })
            .transpose()?
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

    /// ListOffsets v0 (Kafka's `legacyFetchOffsetsBefore`): segment start
    /// offsets, newest first, of segments last written at or before
    /// `timestamp` (-1: from the log end, -2: from the log start), at most
    /// `max` of them. The log end counts as a segment written now; offsets
    /// above the high watermark give way to it, as Kafka answers consumers.
    /// The first local segment starts at the log start offset, remote
    /// segments included.
    pub fn offsets_before(&self, timestamp: i64, max: usize) -> Vec<i64> {
        let hw = self.high_watermark();
        let start = self.log_start_offset();
        let inner = self.lock();
        let mut points: Vec<(i64, i64)> = inner
            .segments
            .values()
            .map(|s| (s.base_offset().max(start), retention_timestamp(s)))
            .collect();
        if let Some(first) = points.first_mut() {
            first.0 = start;
        }
        let leo = inner.log_end_offset();
        if inner
            .segments
            .values()
            .next_back()
            .is_some_and(|s| !s.is_empty())
        {
            points.push((leo, self.clock.now_ms()));
        }
        drop(inner);
        let from = match timestamp {
            -1 => points.len(),
            -2 => points.len().min(1),
            ts => points
                .iter()
                .rposition(|(_, t)| *t <= ts)
                .map_or(0, |i| i + 1),
        };
        let mut offsets: Vec<i64> = points[..from].iter().rev().take(max).map(|p| p.0).collect();
        offsets.dedup();
        if offsets.iter().any(|o| *o > hw) {
            offsets.retain(|o| *o <= hw);
            offsets.insert(0, hw);
        }
        offsets
    }
}
