//! Kafka record batch v2 headers: parsing, validation, and the in-place
//! rewrites the broker is allowed to make before a batch is stored (the base
//! offset, the partition leader epoch, and the max timestamp: the records'
//! true one, or the append time when the topic uses `LogAppendTime`).
//!
//! This module never decompresses or re-encodes records: the bytes a producer
//! sent are the bytes on disk and the bytes a consumer receives. It does no
//! I/O: callers hand it bytes.

use thiserror::Error;

/// Size of the fixed v2 batch header (base offset through record count).
pub const HEADER_LEN: usize = 61;
/// Bytes before the `length` field's coverage starts (base offset + length).
pub const LOG_OVERHEAD: usize = 12;

const BASE_OFFSET: usize = 0;
const LENGTH: usize = 8;
const PARTITION_LEADER_EPOCH: usize = 12;
pub const MAGIC: usize = 16;
pub const CRC: usize = 17;
pub const ATTRIBUTES: usize = 21;
const LAST_OFFSET_DELTA: usize = 23;
const BASE_TIMESTAMP: usize = 27;
const MAX_TIMESTAMP: usize = 35;
const PRODUCER_ID: usize = 43;
const PRODUCER_EPOCH: usize = 51;
const BASE_SEQUENCE: usize = 53;
const RECORDS_COUNT: usize = 57;

const TIMESTAMP_TYPE_BIT: i16 = 0x08;
const TRANSACTIONAL_BIT: i16 = 0x10;
const CONTROL_BIT: i16 = 0x20;

/// Why a byte range is not a valid v2 record batch.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum BatchError {
    #[error("record batch truncated: need {needed} bytes, have {available}")]
    Truncated { needed: usize, available: usize },
    #[error("record batch length {0} is invalid")]
    InvalidLength(i32),
    #[error("unsupported record batch magic {0} (only v2 record batches are accepted)")]
    UnsupportedMagic(i8),
    #[error("record batch CRC mismatch: header says {expected:#010x}, computed {actual:#010x}")]
    CrcMismatch { expected: u32, actual: u32 },
    #[error("record batch has last offset delta {last_offset_delta} but {record_count} records")]
    InvalidRecordCount {
        last_offset_delta: i32,
        record_count: i32,
    },
}

/// The fixed header of one v2 record batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchHeader {
    pub base_offset: i64,
    /// Total size of the batch in bytes, including the 12-byte log overhead.
    pub size: usize,
    pub partition_leader_epoch: i32,
    pub magic: i8,
    pub crc: u32,
    pub attributes: i16,
    pub last_offset_delta: i32,
    pub base_timestamp: i64,
    pub max_timestamp: i64,
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub record_count: i32,
}

fn be_i64(b: &[u8], at: usize) -> i64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_be_bytes(a)
}
fn be_i32(b: &[u8], at: usize) -> i32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    i32::from_be_bytes(a)
}
fn be_i16(b: &[u8], at: usize) -> i16 {
    i16::from_be_bytes([b[at], b[at + 1]])
}

impl BatchHeader {
    /// Parses the header at the start of `buf` without checking the CRC.
    /// Fails if the header or the body it announces is not entirely in `buf`.
    pub fn parse(buf: &[u8]) -> Result<Self, BatchError> {
        if buf.len() < LOG_OVERHEAD {
            return Err(BatchError::Truncated {
                needed: LOG_OVERHEAD,
                available: buf.len(),
            });
        }
        let length = be_i32(buf, LENGTH);
        if length < (HEADER_LEN - LOG_OVERHEAD) as i32 {
            return Err(BatchError::InvalidLength(length));
        }
        let size = LOG_OVERHEAD + length as usize;
        if buf.len() < HEADER_LEN {
            return Err(BatchError::Truncated {
                needed: HEADER_LEN,
                available: buf.len(),
            });
        }
        let magic = buf[MAGIC] as i8;
        if magic != 2 {
            return Err(BatchError::UnsupportedMagic(magic));
        }
        if buf.len() < size {
            return Err(BatchError::Truncated {
                needed: size,
                available: buf.len(),
            });
        }
        Ok(Self::parse_unchecked(buf, size))
    }

    /// Parses only the fixed header (the first [`HEADER_LEN`] bytes), without
    /// requiring the body to be present. Used when scanning a file.
    pub fn parse_header_only(buf: &[u8]) -> Result<Self, BatchError> {
        if buf.len() < HEADER_LEN {
            return Err(BatchError::Truncated {
                needed: HEADER_LEN,
                available: buf.len(),
            });
        }
        let length = be_i32(buf, LENGTH);
        if length < (HEADER_LEN - LOG_OVERHEAD) as i32 {
            return Err(BatchError::InvalidLength(length));
        }
        let magic = buf[MAGIC] as i8;
        if magic != 2 {
            return Err(BatchError::UnsupportedMagic(magic));
        }
        Ok(Self::parse_unchecked(buf, LOG_OVERHEAD + length as usize))
    }

    fn parse_unchecked(buf: &[u8], size: usize) -> Self {
        BatchHeader {
            base_offset: be_i64(buf, BASE_OFFSET),
            size,
            partition_leader_epoch: be_i32(buf, PARTITION_LEADER_EPOCH),
            magic: buf[MAGIC] as i8,
            crc: be_i32(buf, CRC) as u32,
            attributes: be_i16(buf, ATTRIBUTES),
            last_offset_delta: be_i32(buf, LAST_OFFSET_DELTA),
            base_timestamp: be_i64(buf, BASE_TIMESTAMP),
            max_timestamp: be_i64(buf, MAX_TIMESTAMP),
            producer_id: be_i64(buf, PRODUCER_ID),
            producer_epoch: be_i16(buf, PRODUCER_EPOCH),
            base_sequence: be_i32(buf, BASE_SEQUENCE),
            record_count: be_i32(buf, RECORDS_COUNT),
        }
    }

    /// Saturates rather than overflows: the base offset is not covered by
    /// the CRC, so a flipped bit on disk can put it anywhere.
    pub fn last_offset(&self) -> i64 {
        self.base_offset
            .saturating_add(self.last_offset_delta as i64)
    }
    pub fn next_offset(&self) -> i64 {
        self.last_offset().saturating_add(1)
    }
    pub fn is_log_append_time(&self) -> bool {
        self.attributes & TIMESTAMP_TYPE_BIT != 0
    }
    pub fn is_transactional(&self) -> bool {
        self.attributes & TRANSACTIONAL_BIT != 0
    }
    pub fn is_control(&self) -> bool {
        self.attributes & CONTROL_BIT != 0
    }
}

/// CRC32C of the part of the batch the header's CRC covers.
pub fn compute_crc(batch: &[u8]) -> u32 {
    crc32c::crc32c(&batch[ATTRIBUTES..])
}

/// Fully validates one complete batch (`batch` must be exactly one batch):
/// structure, magic, CRC and record count.
pub fn validate(batch: &[u8]) -> Result<BatchHeader, BatchError> {
    let header = BatchHeader::parse(batch)?;
    let actual = compute_crc(&batch[..header.size]);
    if actual != header.crc {
        return Err(BatchError::CrcMismatch {
            expected: header.crc,
            actual,
        });
    }
    // A stored batch may hold no records: log compaction keeps an empty
    // header for a producer's last sequence, as Kafka's cleaner does.
    // (Produced batches must hold count = last offset delta + 1 records.)
    if header.last_offset_delta < 0
        || header.record_count < 0
        || header.record_count as i64 > header.last_offset_delta as i64 + 1
    {
        return Err(BatchError::InvalidRecordCount {
            last_offset_delta: header.last_offset_delta,
            record_count: header.record_count,
        });
    }
    Ok(header)
}

/// Validates a buffer of one or more consecutive batches as sent by a
/// producer. Every byte must belong to a valid batch.
pub fn validate_all(buf: &[u8]) -> Result<Vec<BatchHeader>, BatchError> {
    let mut out = Vec::with_capacity(1);
    let mut pos = 0;
    if buf.is_empty() {
        return Err(BatchError::Truncated {
            needed: HEADER_LEN,
            available: 0,
        });
    }
    while pos < buf.len() {
        let header = validate(&buf[pos..])?;
        pos += header.size;
        out.push(header);
    }
    Ok(out)
}

/// Rewrites the base offset in place (not covered by the CRC).
pub fn set_base_offset(batch: &mut [u8], base_offset: i64) {
    batch[BASE_OFFSET..BASE_OFFSET + 8].copy_from_slice(&base_offset.to_be_bytes());
}

/// Sets the max timestamp (keeping the timestamp type) and recomputes the
/// CRC: what Kafka's validator does when a producer's header does not say
/// the largest timestamp its records carry.
pub fn set_max_timestamp(batch: &mut [u8], timestamp: i64) {
    batch[MAX_TIMESTAMP..MAX_TIMESTAMP + 8].copy_from_slice(&timestamp.to_be_bytes());
    let crc = compute_crc(batch);
    batch[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
}

/// Sets the partition leader epoch (not covered by the CRC): the leader's
/// epoch at append, as Kafka stamps every batch it appends.
pub fn set_partition_leader_epoch(batch: &mut [u8], epoch: i32) {
    batch[PARTITION_LEADER_EPOCH..PARTITION_LEADER_EPOCH + 4].copy_from_slice(&epoch.to_be_bytes());
}

/// Marks the batch as `LogAppendTime` with `timestamp` as its max timestamp
/// and recomputes the CRC. Records keep their deltas; clients use the batch
/// max timestamp for every record of a `LogAppendTime` batch.
pub fn set_log_append_time(batch: &mut [u8], timestamp: i64) {
    let attributes = be_i16(batch, ATTRIBUTES) | TIMESTAMP_TYPE_BIT;
    batch[ATTRIBUTES..ATTRIBUTES + 2].copy_from_slice(&attributes.to_be_bytes());
    batch[MAX_TIMESTAMP..MAX_TIMESTAMP + 8].copy_from_slice(&timestamp.to_be_bytes());
    let crc = compute_crc(batch);
    batch[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
}

/// The offsets `[first base offset, next offset after the last batch)` of
/// the whole batches at the start of `records` (headers only; no CRC
/// work); `None` when there is none.
pub fn offset_range(records: &[u8]) -> Option<(i64, i64)> {
    let mut batches = BatchScanner::new(records, false);
    let (_, first) = batches.next()?;
    let end = batches
        .last()
        .map_or(first.next_offset(), |(_, h)| h.next_offset());
    Some((first.base_offset, end))
}

/// Iterates over the complete, CRC-valid batches at the start of `buf`;
/// stops at the first incomplete or invalid one. Yields (position, header).
pub struct BatchScanner<'a> {
    buf: &'a [u8],
    pos: usize,
    verify_crc: bool,
    pub stopped_by: Option<BatchError>,
}

impl<'a> BatchScanner<'a> {
    pub fn new(buf: &'a [u8], verify_crc: bool) -> Self {
        Self {
            buf,
            pos: 0,
            verify_crc,
            stopped_by: None,
        }
    }
    /// Position just past the last batch yielded so far.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl Iterator for BatchScanner<'_> {
    type Item = (usize, BatchHeader);
    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.buf.len() || self.stopped_by.is_some() {
            return None;
        }
        let rest = &self.buf[self.pos..];
        let parsed = if self.verify_crc {
            validate(rest)
        } else {
            BatchHeader::parse(rest)
        };
        match parsed {
            Ok(h) => {
                let at = self.pos;
                self.pos += h.size;
                Some((at, h))
            }
            Err(e) => {
                self.stopped_by = Some(e);
                None
            }
        }
    }
}

#[cfg(any(test, feature = "encode"))]
mod encode {
    use bytes::{Bytes, BytesMut};
    use kafka_protocol::indexmap::IndexMap;
    use kafka_protocol::records::{
        Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
    };

    /// Encodes `(key, value, timestamp)` records as one v2 batch (offsets
    /// from 0, no producer id) with `compression`. For batches the broker writes
    /// itself (`__consumer_offsets`) and for tests; never used on produced data.
    pub fn encode_records(
        records: &[(Option<Bytes>, Option<Bytes>, i64)],
        compression: Compression,
    ) -> Result<Bytes, String> {
        encode_records_for(records, compression, None)
    }

    /// [`encode_records`] as part of a producer's transaction (id, epoch):
    /// the batch is transactional and carries them (a coordinator's own
    /// writes, which no sequence check applies to).
    pub fn encode_records_for(
        records: &[(Option<Bytes>, Option<Bytes>, i64)],
        compression: Compression,
        producer: Option<(i64, i16)>,
    ) -> Result<Bytes, String> {
        let (producer_id, producer_epoch) = producer.unwrap_or((-1, -1));
        let encoded: Vec<Record> = records
            .iter()
            .enumerate()
            .map(|(i, (key, value, timestamp))| Record {
                transactional: producer.is_some(),
                control: false,
                delete_horizon: false,
                partition_leader_epoch: 0,
                producer_id,
                producer_epoch,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                // The encoder splits batches where offset - sequence changes.
                sequence: i as i32,
                timestamp: *timestamp,
                key: key.clone(),
                value: value.clone(),
                headers: IndexMap::new(),
            })
            .collect();
        let mut buf = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            &encoded,
            &RecordEncodeOptions {
                version: 2,
                compression,
            },
        )
        .map_err(|e| e.to_string())?;
        Ok(buf.freeze())
    }
}
#[cfg(any(test, feature = "encode"))]
pub use encode::{encode_records, encode_records_for};

#[cfg(any(test, feature = "encode"))]
pub mod testing {
    //! Real v2 batches for tests.
    use bytes::Bytes;
    use kafka_protocol::records::Compression;

    pub fn batch(n: usize, value_len: usize, timestamp: i64) -> Bytes {
        batch_with(n, value_len, timestamp, Compression::None)
    }

    pub fn batch_with(n: usize, value_len: usize, timestamp: i64, c: Compression) -> Bytes {
        let records: Vec<_> = (0..n)
            .map(|i| {
                (
                    Some(Bytes::from(format!("key-{i}"))),
                    Some(Bytes::from(vec![b'v'; value_len])),
                    timestamp + i as i64,
                )
            })
            .collect();
        super::encode_records(&records, c).expect("encode batch")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_validates_encoder_output() {
        let b = testing::batch(3, 10, 1_000);
        let h = validate(&b).unwrap();
        assert_eq!(h.size, b.len());
        assert_eq!(h.last_offset_delta, 2);
        assert_eq!(h.record_count, 3);
        assert_eq!(h.base_timestamp, 1_000);
        assert_eq!(h.max_timestamp, 1_002);
    }

    #[test]
    fn detects_crc_mismatch_anywhere_in_body() {
        let b = testing::batch(2, 10, 0);
        for i in ATTRIBUTES..b.len() {
            let mut m = b.to_vec();
            m[i] ^= 0x01;
            assert!(validate(&m).is_err(), "flip at {i} not detected");
        }
    }

    #[test]
    fn offset_range_spans_whole_batches() {
        assert_eq!(offset_range(&[]), None);
        let mut two = testing::batch(3, 10, 0).to_vec();
        let mut second = testing::batch(2, 10, 0).to_vec();
        set_base_offset(&mut second, 3);
        two.extend_from_slice(&second);
        assert_eq!(offset_range(&two), Some((0, 5)));
        // A cut-off batch at the end does not count.
        assert_eq!(offset_range(&two[..two.len() - 1]), Some((0, 3)));
    }

    #[test]
    fn base_offset_rewrite_keeps_crc_valid() {
        let mut b = testing::batch(2, 10, 0).to_vec();
        set_base_offset(&mut b, 42);
        let h = validate(&b).unwrap();
        assert_eq!(h.base_offset, 42);
        assert_eq!(h.last_offset(), 43);
    }

    #[test]
    fn log_append_time_rewrite_recomputes_crc() {
        let mut b = testing::batch(2, 10, 5).to_vec();
        set_log_append_time(&mut b, 99_999);
        let h = validate(&b).unwrap();
        assert!(h.is_log_append_time());
        assert_eq!(h.max_timestamp, 99_999);
    }

    #[test]
    fn validate_all_rejects_trailing_garbage() {
        let mut v = testing::batch(1, 1, 0).to_vec();
        v.extend_from_slice(&[0, 0, 0]);
        assert!(matches!(
            validate_all(&v),
            Err(BatchError::Truncated { .. })
        ));
        assert!(validate_all(&[]).is_err());
    }

    #[test]
    fn rejects_old_magic() {
        let mut v = testing::batch(1, 1, 0).to_vec();
        v[MAGIC] = 1;
        assert_eq!(validate(&v), Err(BatchError::UnsupportedMagic(1)));
    }
}
