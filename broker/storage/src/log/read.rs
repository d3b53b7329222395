//! Reads of the local log: whole batches from the segment holding an
//! offset, below the high watermark (read uncommitted) or the last stable
//! offset (read committed), CRC-checked before they are served. Never
//! writes.

use std::path::PathBuf;

use bytes::Bytes;

use super::batch::{self, BatchScanner};
use super::partition_log::{LogError, PartitionLog, ReadResult};
use super::segment::SegmentSlice;

/// Which records a read may return (Fetch's and ListOffsets' isolation level).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// Up to the high watermark.
    ReadUncommitted,
    /// Up to the last stable offset: no record of an open transaction.
    ReadCommitted,
    /// Up to the log end: what a follower copies (never a client).
    LogEnd,
}

impl PartitionLog {
    /// Reads whole batches starting with the one that contains `offset`, up
    /// to `max_bytes` and below the high watermark. With `min_one`, the
    /// first batch is returned even if it is larger than `max_bytes`.
    pub fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one: bool,
    ) -> Result<ReadResult, LogError> {
        self.read_below(offset, max_bytes, min_one, Isolation::ReadUncommitted)
    }

    /// [`Self::read`], stopping below the last stable offset for
    /// `ReadCommitted` (Kafka's `isolation.level=read_committed`).
    pub fn read_below(
        &self,
        offset: i64,
        max_bytes: usize,
        min_one: bool,
        isolation: Isolation,
    ) -> Result<ReadResult, LogError> {
        let high_watermark = self.high_watermark();
        let hw = match isolation {
            Isolation::ReadUncommitted => high_watermark,
            Isolation::ReadCommitted => self.last_stable_offset(),
            Isolation::LogEnd => self.log_end_offset(),
        };
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
            let mut c: Vec<(SegmentSlice, u64, PathBuf)> = Vec::with_capacity(2);
            if offset < hw {
                let floor = inner.segments.range(..=offset).next_back();
                for (_, seg) in floor.into_iter().chain(inner.segments.range(offset + 1..)) {
                    if seg.next_offset() > offset {
                        if let Some(from) = seg.lost_from().filter(|f| offset >= *f) {
                            return Err(LogError::LostLocally {
                                segment: seg.log_path(),
                                from,
                                to: seg.next_offset() - 1,
                            });
                        }
                        c.push((seg.slice()?, seg.position_hint(offset), seg.log_path()));
                    }
                    if c.len() == 2 {
                        break;
                    }
                }
            }
            (c, self.global_start(inner.log_start_offset))
        };
        let empty = ReadResult {
            records: Bytes::new(),
            high_watermark,
            log_start_offset,
        };
        for (slice, hint, segment) in candidates {
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
            // CRC-checked: a batch the disk changed is never served. The
            // last one may be cut by `want`; only a whole bad batch counts.
            let mut scanner = BatchScanner::new(&buf, true);
            for (p, h) in scanner.by_ref() {
                if h.base_offset >= hw {
                    break;
                }
                end = p + h.size;
            }
            if end == 0 {
                if let Some(reason) = scanner.stopped_by.take() {
                    if !matches!(reason, batch::BatchError::Truncated { .. }) {
                        return Err(LogError::CorruptStored {
                            segment,
                            position: pos,
                            reason,
                        });
                    }
                }
            }
            buf.truncate(end);
            return Ok(ReadResult {
                records: Bytes::from(buf),
                high_watermark,
                log_start_offset,
            });
        }
        Ok(empty)
    }
}
