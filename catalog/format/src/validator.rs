//! Validation of a producer's record batch before it is appended, as Kafka's
//! `LogValidator` does it for record batch v2: the batch's structure and CRC,
//! every record inside it (decompressed as a stream, never inflated in
//! memory), the timestamp bounds of `CreateTime` topics, keys on compacted
//! topics, and the max timestamp the records really carry.
//!
//! It decides nothing about offsets, producer state or storage and never
//! re-encodes: its result says what the header must say (the true max
//! timestamp) and the caller rewrites the header in place. No I/O.

use thiserror::Error;

use crate::batch::{self, BatchError, BatchHeader};
use crate::records::{walk_records_within, ScanError};

/// How a topic stamps its records (`message.timestamp.type` and the
/// `message.timestamp.{before,after}.max.ms` bounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampPolicy {
    /// The producer's timestamps, which must lie within
    /// `[now - before_max_ms, now + after_max_ms]`.
    CreateTime {
        before_max_ms: i64,
        after_max_ms: i64,
    },
    /// The broker stamps every record with the append time.
    LogAppendTime,
}

/// What the validator checks a produced batch against.
#[derive(Debug, Clone, Copy)]
pub struct AppendPolicy {
    pub now_ms: i64,
    pub timestamps: TimestampPolicy,
    /// `cleanup.policy` includes `compact`: every record needs a key.
    pub compacted: bool,
    /// The most bytes a compressed batch's records may inflate to: the
    /// bound on the work validating one batch can cost.
    pub max_inflated_bytes: u64,
}

/// One record's failure, as Kafka reports it in a ProduceResponse's
/// `record_errors` (`batch_index`, `batch_index_error_message`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordError {
    pub index: i32,
    pub message: String,
}

/// Why a produced batch is refused. Each variant maps to one Kafka error
/// code: [`ValidationError::Corrupt`] to CORRUPT_MESSAGE, the timestamp
/// variant to INVALID_TIMESTAMP, every other to INVALID_RECORD.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum ValidationError {
    /// The bytes are not a record batch, or its CRC does not match.
    #[error(transparent)]
    Corrupt(BatchError),
    /// The batch as a whole breaks a rule (count, offsets, control batch,
    /// sequence, more than one batch, malformed records).
    #[error("{0}")]
    InvalidBatch(String),
    /// Records whose timestamp is out of the topic's bounds, or that claim
    /// LogAppendTime on a CreateTime topic.
    #[error("One or more records have been rejected due to invalid timestamp")]
    InvalidTimestamps(Vec<RecordError>),
    /// Records that break a per-record rule (a compacted topic without key).
    #[error("One or more records have been rejected due to {} record errors in total, and only showing the first three errors at most: {}", .0.len(), first_three(.0))]
    InvalidRecords(Vec<RecordError>),
}

impl ValidationError {
    /// The per-record errors, if the refusal is one.
    pub fn record_errors(&self) -> &[RecordError] {
        match self {
            ValidationError::InvalidTimestamps(e) | ValidationError::InvalidRecords(e) => e,
            _ => &[],
        }
    }
}

fn first_three(errors: &[RecordError]) -> String {
    let shown: Vec<String> = errors
        .iter()
        .take(3)
        .map(|e| {
            format!(
                "RecordError(batchIndex={}, message='{}')",
                e.index, e.message
            )
        })
        .collect();
    format!("[{}]", shown.join(", "))
}

/// Validates `buf`, the records of one partition in a ProduceRequest, which
/// for v2 must be exactly one batch (as Kafka requires). Returns the header
/// as it must be stored: with `CreateTime`, its max timestamp is the
/// records' largest, whatever the producer's header said (the caller
/// rewrites it and the CRC); with `LogAppendTime` the caller stamps the time.
pub fn validate_produced(
    buf: &[u8],
    policy: &AppendPolicy,
) -> Result<BatchHeader, ValidationError> {
    let header = batch::validate(buf).map_err(|e| match e {
        BatchError::InvalidRecordCount {
            last_offset_delta,
            record_count,
        } => ValidationError::InvalidBatch(format!(
            "Inconsistent batch offset range [0, {last_offset_delta}] and count of records {record_count}"
        )),
        BatchError::UnsupportedMagic(m) => ValidationError::InvalidBatch(format!(
            "record batch magic {m} is not supported: produce requests of version 3 and later carry magic 2 batches"
        )),
        other => ValidationError::Corrupt(other),
    })?;
    if header.size != buf.len() {
        return Err(ValidationError::InvalidBatch(
            "Compressed outer record has more than one batch".into(),
        ));
    }
    if header.last_offset_delta as i64 + 1 != header.record_count as i64 {
        return Err(ValidationError::InvalidBatch(format!(
            "Inconsistent batch offset range [{}, {}] and count of records {}",
            header.base_offset,
            header.last_offset(),
            header.record_count
        )));
    }
    if header.is_control() {
        return Err(ValidationError::InvalidBatch(
            "Clients are not allowed to write control records".into(),
        ));
    }
    if header.producer_id >= 0 && header.base_sequence < 0 {
        return Err(ValidationError::InvalidBatch(format!(
            "Invalid sequence number {} in record batch with producerId {}",
            header.base_sequence, header.producer_id
        )));
    }

    let mut timestamp_errors = Vec::new();
    let mut key_errors = Vec::new();
    let mut max_timestamp = -1i64;
    let mut offsets_broken: Option<(i32, i32)> = None;
    // The walk visits every record the count claims, or fails.
    walk_records_within(buf, policy.max_inflated_bytes, |r| {
        if r.offset_delta != r.index && offsets_broken.is_none() {
            offsets_broken = Some((r.index, r.offset_delta));
        }
        if policy.compacted && !r.has_key {
            key_errors.push(RecordError {
                index: r.index,
                message: "Compacted topic cannot accept message without key".into(),
            });
        }
        match policy.timestamps {
            TimestampPolicy::CreateTime {
                before_max_ms,
                after_max_ms,
            } => {
                if header.is_log_append_time() {
                    timestamp_errors.push(RecordError {
                        index: r.index,
                        message: "Invalid timestamp type in message: producer should not set timestamp type to LogAppendTime.".into(),
                    });
                } else if r.timestamp != -1 {
                    let diff = policy.now_ms.saturating_sub(r.timestamp);
                    if diff > before_max_ms || diff.saturating_neg() > after_max_ms {
                        timestamp_errors.push(RecordError {
                            index: r.index,
                            message: format!(
                                "Timestamp {} of message with offset {} is out of range. The timestamp should be within [{}, {}]",
                                r.timestamp,
                                r.offset_delta,
                                policy.now_ms.saturating_sub(before_max_ms),
                                policy.now_ms.saturating_add(after_max_ms)
                            ),
                        });
                    }
                }
            }
            TimestampPolicy::LogAppendTime => {}
        }
        max_timestamp = max_timestamp.max(r.timestamp);
        true
    })
    .map_err(|e| match e {
        ScanError::Batch(b) => ValidationError::Corrupt(b),
        ScanError::InflatesBeyond(n) => ValidationError::InvalidBatch(format!(
            "the batch's records inflate beyond {n} bytes, the most a batch may inflate to on this topic"
        )),
        ScanError::Malformed { index, what } => {
            ValidationError::InvalidBatch(format!("Found invalid record structure: record {index}: {what}"))
        }
        other => ValidationError::InvalidBatch(format!("Found invalid record structure: {other}")),
    })?;
    if let Some((index, delta)) = offsets_broken {
        return Err(ValidationError::InvalidBatch(format!(
            "Inner record {index} inside the record batch does not have incremental offsets: offset delta {delta}, expected {index}"
        )));
    }
    if !timestamp_errors.is_empty() {
        return Err(ValidationError::InvalidTimestamps(timestamp_errors));
    }
    if !key_errors.is_empty() {
        return Err(ValidationError::InvalidRecords(key_errors));
    }
    let mut stored = header;
    if matches!(policy.timestamps, TimestampPolicy::CreateTime { .. }) {
        stored.max_timestamp = max_timestamp;
    }
    Ok(stored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::testing::batch_with;
    use kafka_protocol::records::Compression;

    const NOW: i64 = 1_700_000_000_000;

    fn create_time() -> AppendPolicy {
        AppendPolicy {
            now_ms: NOW,
            timestamps: TimestampPolicy::CreateTime {
                before_max_ms: i64::MAX,
                after_max_ms: i64::MAX,
            },
            compacted: false,
            max_inflated_bytes: u64::MAX,
        }
    }

    fn with_max_timestamp(b: &[u8], ts: i64) -> Vec<u8> {
        let mut v = b.to_vec();
        batch::set_max_timestamp(&mut v, ts);
        v
    }

    #[test]
    fn the_true_max_timestamp_replaces_a_missing_or_lying_header() {
        for c in [Compression::None, Compression::Lz4, Compression::Zstd] {
            let b = batch_with(4, 20, NOW - 10, c);
            for header_says in [-1, 5, NOW + 99] {
                let v = with_max_timestamp(&b, header_says);
                assert_eq!(BatchHeader::parse(&v).unwrap().max_timestamp, header_says);
                let got = validate_produced(&v, &create_time()).unwrap();
                assert_eq!(got.max_timestamp, NOW - 7, "{c:?} header {header_says}");
            }
            let honest = validate_produced(&b, &create_time()).unwrap();
            assert_eq!(
                honest,
                BatchHeader::parse(&b).unwrap(),
                "an honest header is kept"
            );
            assert_eq!(honest.max_timestamp, NOW - 7);
        }
    }

    #[test]
    fn timestamps_outside_the_bounds_are_refused_per_record() {
        let b = batch_with(3, 5, NOW - 5_000, Compression::Snappy);
        let policy = AppendPolicy {
            timestamps: TimestampPolicy::CreateTime {
                before_max_ms: 4_999,
                after_max_ms: 0,
            },
            ..create_time()
        };
        let e = validate_produced(&b, &policy).unwrap_err();
        let ValidationError::InvalidTimestamps(errors) = &e else {
            panic!("{e:?}")
        };
        // Record 0 is 5000 ms old, record 1 is 4999 ms old: only 0 fails.
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].index, 0);
        assert!(
            errors[0].message.contains("is out of range"),
            "{}",
            errors[0].message
        );

        let future = batch_with(2, 5, NOW + 1, Compression::None);
        let e = validate_produced(&future, &policy).unwrap_err();
        assert_eq!(e.record_errors().len(), 2);
    }

    #[test]
    fn a_compacted_topic_needs_keys() {
        let records = vec![
            (
                Some(bytes::Bytes::from_static(b"k")),
                Some(bytes::Bytes::from_static(b"v")),
                NOW,
            ),
            (None, Some(bytes::Bytes::from_static(b"v")), NOW),
        ];
        let b = crate::batch::encode_records(&records, Compression::Gzip).unwrap();
        let policy = AppendPolicy {
            compacted: true,
            ..create_time()
        };
        let e = validate_produced(&b, &policy).unwrap_err();
        assert_eq!(
            e.record_errors(),
            &[RecordError {
                index: 1,
                message: "Compacted topic cannot accept message without key".into()
            }]
        );
        assert!(validate_produced(&b, &create_time()).is_ok());
    }

    #[test]
    fn batch_rules() {
        let b = batch_with(2, 5, NOW, Compression::None);
        // Two batches in one partition's records.
        let mut two = b.to_vec();
        two.extend_from_slice(&b);
        assert!(matches!(
            validate_produced(&two, &create_time()),
            Err(ValidationError::InvalidBatch(m)) if m.contains("more than one batch")
        ));
        // A record count that the offset range does not match.
        let mut v = b.to_vec();
        v[57..61].copy_from_slice(&1i32.to_be_bytes());
        batch::set_max_timestamp(&mut v, NOW); // recomputes the CRC
        assert!(matches!(
            validate_produced(&v, &create_time()),
            Err(ValidationError::InvalidBatch(m)) if m.contains("Inconsistent batch offset range")
        ));
        // A control batch.
        let mut v = b.to_vec();
        v[22] |= 0x20;
        batch::set_max_timestamp(&mut v, NOW);
        assert!(matches!(
            validate_produced(&v, &create_time()),
            Err(ValidationError::InvalidBatch(m)) if m.contains("control records")
        ));
        // A flipped bit: corrupt, not invalid.
        let mut v = b.to_vec();
        let last = v.len() - 1;
        v[last] ^= 1;
        assert!(matches!(
            validate_produced(&v, &create_time()),
            Err(ValidationError::Corrupt(BatchError::CrcMismatch { .. }))
        ));
    }

    #[test]
    fn a_batch_that_inflates_beyond_the_bound_is_refused() {
        let b = batch_with(50, 10_000, NOW, Compression::Zstd);
        assert!(b.len() < 20_000, "{}", b.len());
        let policy = AppendPolicy {
            max_inflated_bytes: 100_000,
            ..create_time()
        };
        let e = validate_produced(&b, &policy).unwrap_err();
        assert!(
            matches!(&e, ValidationError::InvalidBatch(m) if m.contains("inflate beyond 100000")),
            "{e:?}"
        );
        let policy = AppendPolicy {
            max_inflated_bytes: 1_000_000,
            ..create_time()
        };
        assert!(validate_produced(&b, &policy).is_ok());
    }

    #[test]
    fn log_append_time_from_a_producer_is_refused_on_a_create_time_topic() {
        let mut v = batch_with(2, 5, NOW, Compression::None).to_vec();
        batch::set_log_append_time(&mut v, NOW);
        let e = validate_produced(&v, &create_time()).unwrap_err();
        assert!(matches!(e, ValidationError::InvalidTimestamps(_)), "{e:?}");
        let lat = AppendPolicy {
            timestamps: TimestampPolicy::LogAppendTime,
            ..create_time()
        };
        assert!(validate_produced(&v, &lat).is_ok());
    }

    #[test]
    fn records_with_gaps_in_their_offset_deltas_are_refused() {
        // Two records whose second offset delta is 2 (a hole): last offset
        // delta 1 and record count 2 agree, the records do not.
        let b = batch_with(2, 5, NOW, Compression::None).to_vec();
        let h = BatchHeader::parse(&b).unwrap();
        // Second record: [len][attr][ts delta][offset delta]...; find it by
        // walking the first record's length varint.
        let first_len = (b[crate::batch::HEADER_LEN] >> 1) as usize; // zigzag, < 64
        let second = crate::batch::HEADER_LEN + 1 + first_len;
        let offset_delta_at = second + 1 + 1 + 1; // len (1 byte), attributes, ts delta (1 byte)
        assert_eq!(
            b[offset_delta_at], 2,
            "zigzag(1) expected at the second record's offset delta"
        );
        let mut v = b.clone();
        v[offset_delta_at] = 4; // zigzag(2)
        batch::set_max_timestamp(&mut v, h.max_timestamp);
        let e = validate_produced(&v, &create_time()).unwrap_err();
        assert!(
            matches!(&e, ValidationError::InvalidBatch(m) if m.contains("incremental offsets")),
            "{e:?}"
        );
    }

    #[test]
    fn trailing_bytes_and_short_records_are_invalid_not_corrupt() {
        let b = batch_with(2, 5, NOW, Compression::None).to_vec();
        let mut v = b.clone();
        v.push(0);
        let len = (v.len() - 12) as i32;
        v[8..12].copy_from_slice(&len.to_be_bytes());
        batch::set_max_timestamp(&mut v, NOW + 1);
        let e = validate_produced(&v, &create_time()).unwrap_err();
        assert!(
            matches!(&e, ValidationError::InvalidBatch(m) if m.contains("remain after")),
            "{e:?}"
        );
    }
}
