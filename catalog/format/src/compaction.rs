//! Log compaction's rewrite of one stored record batch v2, as Kafka's
//! cleaner does it (`MemoryRecords.filterTo`): the caller says which
//! records are the latest for their key; this module applies the tombstone
//! rule (KIP-534's delete horizon), keeps a batch whole when nothing in it
//! changes, rebuilds it with the retained records otherwise, and keeps an
//! empty batch header when the caller must preserve a producer's last
//! sequence.
//!
//! What a rebuilt batch keeps: base offset, last offset delta (so the
//! producer's last sequence survives, as Kafka's `overrideLastOffset`),
//! producer id, epoch, base sequence, the transactional and timestamp-type
//! flags, the partition leader epoch, the codec (at its default level, as
//! Kafka's cleaner), each retained record's offset, timestamp, key, value
//! and headers. What it changes: the record count, the max timestamp (the
//! retained records' largest, for `CreateTime`), and, when tombstones stay
//! behind, the base timestamp, which becomes the delete horizon (attribute
//! bit 6), with every record's timestamp delta re-encoded against it.
//!
//! Records are read one at a time through the codec and written into the
//! encoder as they are kept: memory is one record, the codec windows and
//! the output. Never decides what the latest record of a key is, and does
//! no I/O.

use std::io::{self, Read, Write};

use thiserror::Error;

use crate::batch::{compute_crc, BatchHeader, ATTRIBUTES, CRC, HEADER_LEN, LOG_OVERHEAD};
use crate::records::{decompressed, ScanError};
use crate::transcode::{Bounded, Codec, Encoder, Encoding};

/// Attribute bit 6: the base timestamp is the batch's delete horizon.
pub const DELETE_HORIZON_BIT: i16 = 0x40;
const TIMESTAMP_TYPE_BIT: i16 = 0x08;
const CONTROL_BIT: i16 = 0x20;

/// One record as the cleaner sees it.
#[derive(Debug, Clone, Copy)]
pub struct RecordView<'a> {
    /// Position in its batch, from 0.
    pub index: i32,
    pub offset: i64,
    /// The record's timestamp (its CreateTime; for a LogAppendTime batch
    /// the batch's max timestamp is what clients show).
    pub timestamp: i64,
    pub key: Option<&'a [u8]>,
    /// The value is null: a tombstone.
    pub is_tombstone: bool,
}

/// The settings a cleaning pass rewrites batches with.
#[derive(Debug, Clone, Copy)]
pub struct CleanPolicy {
    pub now_ms: i64,
    /// `delete.retention.ms`: how long a tombstone outlives the first
    /// cleaning pass that saw it.
    pub delete_retention_ms: i64,
    /// Bound on how far a batch's records may inflate.
    pub max_inflated_bytes: u64,
    /// Bound on the rebuilt batch (and on one record).
    pub max_batch_bytes: usize,
}

/// What became of a batch.
#[derive(Debug, PartialEq, Eq)]
pub enum Cleaned {
    /// Every record stays and no header field changes: copy the bytes.
    Unchanged,
    /// The batch rebuilt with the retained records (or, with none and
    /// `retain_empty`, an empty batch header).
    Rewritten(Vec<u8>),
    /// Nothing of the batch stays.
    Removed,
}

#[derive(Debug, Error)]
pub enum CleanError {
    #[error(transparent)]
    Scan(#[from] ScanError),
    #[error("record {index}: {what}")]
    Malformed { index: i32, what: &'static str },
    #[error("the rebuilt batch would pass {0} bytes")]
    TooLarge(usize),
    #[error("encoding the retained records: {0}")]
    Encode(io::Error),
}

/// A batch's delete horizon, if a cleaning pass set one.
pub fn delete_horizon(h: &BatchHeader) -> Option<i64> {
    (h.attributes & DELETE_HORIZON_BIT != 0).then_some(h.base_timestamp)
}

/// Calls `on_record` for each record of `batch` (one stored v2 batch) in
/// order, with its key; the view borrows a buffer reused for the next one.
pub fn for_each_record(
    batch: &[u8],
    policy: &CleanPolicy,
    mut on_record: impl FnMut(&RecordView) -> Result<(), CleanError>,
) -> Result<(), CleanError> {
    let h = BatchHeader::parse(batch).map_err(ScanError::from)?;
    let mut reader = RecordReader::new(batch, &h, policy)?;
    while let Some(r) = reader.next()? {
        on_record(&r.view(&h))?;
    }
    Ok(())
}

/// Rewrites `batch` keeping the records `keep` accepts (the latest of their
/// key) and the tombstones whose delete horizon has not passed. With
/// `retain_empty` (the batch holds an active producer's last sequence), a
/// batch left without records stays as an empty header.
pub fn clean_batch(
    batch: &[u8],
    policy: &CleanPolicy,
    retain_empty: bool,
    mut keep: impl FnMut(&RecordView) -> bool,
) -> Result<Cleaned, CleanError> {
    let h = BatchHeader::parse(batch).map_err(ScanError::from)?;
    if h.attributes & CONTROL_BIT != 0 {
        return Ok(Cleaned::Unchanged);
    }
    let horizon = delete_horizon(&h);
    let tombstones_expire = horizon.is_some_and(|t| policy.now_ms >= t);
    // First pass: decide. Records are small next to the batch; the
    // decisions are one bit each.
    let mut decisions: Vec<bool> = Vec::with_capacity(h.record_count.max(0) as usize);
    let mut retained_tombstones = false;
    {
        let mut reader = RecordReader::new(batch, &h, policy)?;
        while let Some(r) = reader.next()? {
            let view = r.view(&h);
            let kept = keep(&view) && !(view.is_tombstone && tombstones_expire);
            retained_tombstones |= kept && view.is_tombstone;
            decisions.push(kept);
        }
    }
    let retained = decisions.iter().filter(|k| **k).count();
    let set_horizon = retained_tombstones && horizon.is_none();
    if retained == decisions.len() && !set_horizon {
        return Ok(Cleaned::Unchanged);
    }
    if retained == 0 {
        return Ok(if retain_empty {
            Cleaned::Rewritten(empty_header(batch, &h))
        } else {
            Cleaned::Removed
        });
    }
    let base_timestamp = if set_horizon {
        policy.now_ms.saturating_add(policy.delete_retention_ms)
    } else {
        h.base_timestamp
    };
    let codec =
        Codec::from_id(h.attributes & 0x07).ok_or(ScanError::UnknownCodec(h.attributes & 0x07))?;
    let mut out = Vec::with_capacity(batch.len().min(policy.max_batch_bytes));
    out.extend_from_slice(&batch[..HEADER_LEN]);
    let sink = Bounded {
        out,
        limit: policy.max_batch_bytes,
        overflowed: false,
    };
    let mut enc = Encoder::new(Encoding::default_for(codec), sink).map_err(CleanError::Encode)?;
    let mut max_timestamp = -1i64;
    let mut reader = RecordReader::new(batch, &h, policy)?;
    let mut i = 0usize;
    let mut scratch = Vec::new();
    while let Some(r) = reader.next()? {
        if !decisions.get(i).copied().unwrap_or(false) {
            i += 1;
            continue;
        }
        i += 1;
        let timestamp = h.base_timestamp.wrapping_add(r.timestamp_delta);
        max_timestamp = max_timestamp.max(timestamp);
        scratch.clear();
        scratch.push(r.attributes);
        put_varlong(&mut scratch, timestamp.wrapping_sub(base_timestamp));
        put_varlong(&mut scratch, r.offset_delta as i64);
        scratch.extend_from_slice(r.from_key);
        let mut len = Vec::with_capacity(5);
        put_varlong(&mut len, scratch.len() as i64);
        let written = enc.write_all(&len).and_then(|_| enc.write_all(&scratch));
        if let Err(e) = written {
            return Err(if enc.overflowed() {
                CleanError::TooLarge(policy.max_batch_bytes)
            } else {
                CleanError::Encode(e)
            });
        }
    }
    let mut out = match enc.finish() {
        Ok(sink) => sink.out,
        Err((true, _)) => return Err(CleanError::TooLarge(policy.max_batch_bytes)),
        Err((false, e)) => return Err(CleanError::Encode(e)),
    };
    let mut attributes = h.attributes;
    if set_horizon {
        attributes |= DELETE_HORIZON_BIT;
    }
    let max_timestamp = if h.attributes & TIMESTAMP_TYPE_BIT != 0 {
        h.max_timestamp
    } else {
        max_timestamp
    };
    let length = (out.len() - LOG_OVERHEAD) as i32;
    out[8..12].copy_from_slice(&length.to_be_bytes());
    out[ATTRIBUTES..ATTRIBUTES + 2].copy_from_slice(&attributes.to_be_bytes());
    out[27..35].copy_from_slice(&base_timestamp.to_be_bytes());
    out[35..43].copy_from_slice(&max_timestamp.to_be_bytes());
    out[57..61].copy_from_slice(&(retained as i32).to_be_bytes());
    let crc = compute_crc(&out);
    out[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(Cleaned::Rewritten(out))
}

/// Kafka's `writeEmptyHeader`: the batch's offsets, producer fields and
/// flags with no records, uncompressed, both timestamps its max timestamp.
fn empty_header(batch: &[u8], h: &BatchHeader) -> Vec<u8> {
    let mut out = batch[..HEADER_LEN].to_vec();
    let length = (HEADER_LEN - LOG_OVERHEAD) as i32;
    out[8..12].copy_from_slice(&length.to_be_bytes());
    let attributes = h.attributes & !0x07 & !DELETE_HORIZON_BIT;
    out[ATTRIBUTES..ATTRIBUTES + 2].copy_from_slice(&attributes.to_be_bytes());
    out[27..35].copy_from_slice(&h.max_timestamp.to_be_bytes());
    out[57..61].copy_from_slice(&0i32.to_be_bytes());
    let crc = compute_crc(&out);
    out[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
    out
}

/// One record read whole: its deltas and its bytes from the key on.
struct RawRecord<'a> {
    index: i32,
    attributes: u8,
    timestamp_delta: i64,
    offset_delta: i32,
    key: Option<&'a [u8]>,
    is_tombstone: bool,
    /// Key length through the last header: copied as is when rebuilt.
    from_key: &'a [u8],
}

impl<'a> RawRecord<'a> {
    fn view(&self, h: &BatchHeader) -> RecordView<'a> {
        RecordView {
            index: self.index,
            offset: h.base_offset.wrapping_add(self.offset_delta as i64),
            timestamp: h.base_timestamp.wrapping_add(self.timestamp_delta),
            key: self.key,
            is_tombstone: self.is_tombstone,
        }
    }
}

/// Reads the records of a batch one by one into a reused buffer.
struct RecordReader<'b> {
    src: io::Take<Box<dyn Read + 'b>>,
    limit: u64,
    buf: Vec<u8>,
    index: i32,
    count: i32,
    max_record: usize,
}

impl<'b> RecordReader<'b> {
    fn new(batch: &'b [u8], h: &BatchHeader, policy: &CleanPolicy) -> Result<Self, CleanError> {
        let records = &batch[HEADER_LEN..h.size.min(batch.len())];
        let limit = policy.max_inflated_bytes;
        Ok(RecordReader {
            src: decompressed(h.attributes & 0x07, records)?.take(limit.saturating_add(1)),
            limit,
            buf: Vec::new(),
            index: 0,
            count: h.record_count.max(0),
            max_record: policy.max_batch_bytes,
        })
    }

    fn next(&mut self) -> Result<Option<RawRecord<'_>>, CleanError> {
        if self.index >= self.count {
            return Ok(None);
        }
        let index = self.index;
        self.index += 1;
        let malformed = |what| CleanError::Malformed { index, what };
        let len = read_varint_from(&mut self.src).map_err(|_| malformed("record length"))?;
        if len < 1 || len as usize > self.max_record {
            return Err(malformed("record length out of bounds"));
        }
        self.buf.resize(len as usize, 0);
        self.src.read_exact(&mut self.buf).map_err(|_| {
            if self.src.limit() == 0 {
                CleanError::Scan(ScanError::InflatesBeyond(self.limit))
            } else {
                malformed("record ends early")
            }
        })?;
        parse_record(&self.buf, index).map(Some)
    }
}

fn parse_record(rec: &[u8], index: i32) -> Result<RawRecord<'_>, CleanError> {
    let malformed = |what| CleanError::Malformed { index, what };
    let mut at = 0usize;
    let attributes = *rec.first().ok_or_else(|| malformed("empty record"))?;
    at += 1;
    let timestamp_delta = varlong_at(rec, &mut at).ok_or_else(|| malformed("timestamp delta"))?;
    let offset_delta = varlong_at(rec, &mut at)
        .and_then(|v| i32::try_from(v).ok())
        .ok_or_else(|| malformed("offset delta"))?;
    let from_key = &rec[at..];
    let key = bytes_at(rec, &mut at).ok_or_else(|| malformed("key"))?;
    let value = bytes_at(rec, &mut at).ok_or_else(|| malformed("value"))?;
    Ok(RawRecord {
        index,
        attributes,
        timestamp_delta,
        offset_delta,
        key,
        is_tombstone: value.is_none(),
        from_key,
    })
}

fn varlong_at(b: &[u8], at: &mut usize) -> Option<i64> {
    let mut z: u64 = 0;
    for i in 0..10 {
        let byte = *b.get(*at)?;
        *at += 1;
        z |= ((byte & 0x7f) as u64) << (i * 7);
        if byte < 0x80 {
            return Some(((z >> 1) as i64) ^ -((z & 1) as i64));
        }
    }
    None
}

/// A varint-length-prefixed field; `Some(None)` for null.
fn bytes_at<'a>(b: &'a [u8], at: &mut usize) -> Option<Option<&'a [u8]>> {
    let len = varlong_at(b, at)?;
    if len == -1 {
        return Some(None);
    }
    let len = usize::try_from(len).ok()?;
    let end = at.checked_add(len)?;
    let out = b.get(*at..end)?;
    *at = end;
    Some(Some(out))
}

fn read_varint_from(r: &mut impl Read) -> io::Result<i32> {
    let mut z: u64 = 0;
    for i in 0..5 {
        let mut one = [0u8; 1];
        r.read_exact(&mut one)?;
        z |= ((one[0] & 0x7f) as u64) << (i * 7);
        if one[0] < 0x80 {
            let v = ((z >> 1) as i64) ^ -((z & 1) as i64);
            return i32::try_from(v).map_err(|_| io::Error::from(io::ErrorKind::InvalidData));
        }
    }
    Err(io::Error::from(io::ErrorKind::InvalidData))
}

fn put_varlong(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod tests;
