//! Message sets v0 and v1 (magic 0 and 1), the record format of Produce
//! v0–v2 from clients older than Kafka 0.11: read and checked here so the
//! broker can up-convert them to one record batch v2, as Kafka 3.9 does on
//! append. The log never holds them.
//!
//! Each entry is `offset i64, size i32, crc u32, magic i8, attributes i8,
//! [timestamp i64 (magic 1)], key bytes, value bytes`; a compressed entry's
//! value is a whole inner message set (gzip, snappy, lz4), inflated here
//! within a caller-given bound. No I/O.

use bytes::Bytes;
use thiserror::Error;

use crate::records::inflate;

/// Why a message set cannot be converted; `Corrupt` maps to CORRUPT_MESSAGE
/// (CRC, truncation), `Invalid` to INVALID_RECORD.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum LegacyError {
    #[error("{0}")]
    Corrupt(String),
    #[error("{0}")]
    Invalid(String),
}

/// One record of a legacy message set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyRecord {
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    /// CreateTime of a magic 1 message; -1 for magic 0.
    pub timestamp: i64,
}

/// A producer's message set, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageSet {
    pub magic: i8,
    /// Kafka's codec id of the (outer) messages: 0 none, 1 gzip, 2 snappy, 3 lz4.
    pub codec: i16,
    pub records: Vec<LegacyRecord>,
}

const MIN_MESSAGE_V0: usize = 4 + 1 + 1 + 4 + 4;
const MIN_MESSAGE_V1: usize = MIN_MESSAGE_V0 + 8;
const TIMESTAMP_TYPE_BIT: i8 = 0x08;

/// Reads a Produce v0–v2 partition's records: every message's CRC and
/// structure, compressed wrappers inflated to at most `inflate_limit` bytes
/// in all. All messages must share one magic, as Kafka requires.
pub fn read_message_set(buf: &[u8], inflate_limit: u64) -> Result<MessageSet, LegacyError> {
    let mut out = MessageSet {
        magic: -1,
        codec: 0,
        records: Vec::new(),
    };
    let mut budget = inflate_limit;
    read_into(buf, &mut out, &mut budget, None)?;
    if out.records.is_empty() {
        return Err(LegacyError::Invalid(
            "the message set holds no messages".into(),
        ));
    }
    Ok(out)
}

fn be_i32(b: &[u8]) -> i32 {
    i32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn bytes_field<'a>(
    b: &'a [u8],
    at: &mut usize,
    what: &str,
) -> Result<Option<&'a [u8]>, LegacyError> {
    if b.len() < *at + 4 {
        return Err(LegacyError::Corrupt(format!(
            "message ends inside its {what} length"
        )));
    }
    let len = be_i32(&b[*at..]);
    *at += 4;
    if len == -1 {
        return Ok(None);
    }
    if len < 0 || b.len() - *at < len as usize {
        return Err(LegacyError::Corrupt(format!(
            "message {what} length {len} runs past the message"
        )));
    }
    let v = &b[*at..*at + len as usize];
    *at += len as usize;
    Ok(Some(v))
}

/// `wrapper`: the magic and timestamp of the compressed message holding
/// this (inner) set, whose own messages must not be compressed.
fn read_into(
    buf: &[u8],
    out: &mut MessageSet,
    budget: &mut u64,
    wrapper: Option<(i8, Option<i64>)>,
) -> Result<(), LegacyError> {
    let mut pos = 0;
    while pos < buf.len() {
        if buf.len() - pos < 12 {
            return Err(LegacyError::Corrupt(
                "message set ends inside a message's offset and size".into(),
            ));
        }
        let size = be_i32(&buf[pos + 8..]);
        let body_at = pos + 12;
        if size < MIN_MESSAGE_V0 as i32 || buf.len() - body_at < size as usize {
            return Err(LegacyError::Corrupt(format!(
                "message size {size} is below the minimum or runs past the message set"
            )));
        }
        let m = &buf[body_at..body_at + size as usize];
        pos = body_at + size as usize;

        let crc = u32::from_be_bytes([m[0], m[1], m[2], m[3]]);
        let mut hasher = flate2::Crc::new();
        hasher.update(&m[4..]);
        if hasher.sum() != crc {
            return Err(LegacyError::Corrupt(format!(
                "message CRC mismatch: the message says {crc:#010x}, computed {:#010x}",
                hasher.sum()
            )));
        }
        let magic = m[4] as i8;
        let attributes = m[5] as i8;
        if !(0..=1).contains(&magic) {
            return Err(LegacyError::Invalid(format!(
                "message magic {magic} in a message set"
            )));
        }
        if out.magic == -1 {
            out.magic = magic;
        } else if out.magic != magic {
            return Err(LegacyError::Invalid(format!(
                "message magic {magic} is not the same as the first message's magic {}",
                out.magic
            )));
        }
        let mut at = 6;
        let timestamp = if magic == 1 {
            if m.len() < MIN_MESSAGE_V1 {
                return Err(LegacyError::Corrupt(
                    "magic 1 message too short for its timestamp".into(),
                ));
            }
            let mut a = [0u8; 8];
            a.copy_from_slice(&m[6..14]);
            at = 14;
            i64::from_be_bytes(a)
        } else {
            -1
        };
        let key = bytes_field(m, &mut at, "key")?;
        let value = bytes_field(m, &mut at, "value")?;
        if at != m.len() {
            return Err(LegacyError::Corrupt(
                "bytes after the message's value".into(),
            ));
        }
        let codec = (attributes & 0x07) as i16;
        if codec != 0 {
            if wrapper.is_some() {
                return Err(LegacyError::Invalid(
                    "a compressed message inside a compressed message".into(),
                ));
            }
            if codec > 3 {
                return Err(LegacyError::Invalid(format!(
                    "compression codec {codec} does not exist for magic {magic} messages"
                )));
            }
            out.codec = codec;
            let inner = inflate(codec, value.unwrap_or(&[]), *budget).map_err(|e| {
                LegacyError::Invalid(format!("compressed message set cannot be read: {e}"))
            })?;
            *budget = budget.saturating_sub(inner.len() as u64);
            let stamp = (magic == 1 && attributes & TIMESTAMP_TYPE_BIT != 0).then_some(timestamp);
            read_into(&inner, out, budget, Some((magic, stamp)))?;
            continue;
        }
        let timestamp = match wrapper {
            Some((_, Some(log_append_time))) => log_append_time,
            _ => timestamp,
        };
        out.records.push(LegacyRecord {
            key: key.map(Bytes::copy_from_slice),
            value: value.map(Bytes::copy_from_slice),
            timestamp,
        });
    }
    Ok(())
}

#[cfg(any(test, feature = "encode"))]
mod convert {
    use super::*;
    use kafka_protocol::records::Compression;

    /// The message set as one record batch v2 (offsets from 0, no producer
    /// id), compressed with the same codec: what Kafka 3.9 stores for it.
    pub fn to_batch(set: &MessageSet) -> Result<Bytes, String> {
        let compression = match set.codec {
            1 => Compression::Gzip,
            2 => Compression::Snappy,
            3 => Compression::Lz4,
            _ => Compression::None,
        };
        let records: Vec<(Option<Bytes>, Option<Bytes>, i64)> = set
            .records
            .iter()
            .map(|r| (r.key.clone(), r.value.clone(), r.timestamp))
            .collect();
        crate::batch::encode_records(&records, compression)
    }
}
#[cfg(any(test, feature = "encode"))]
pub use convert::to_batch;

#[cfg(test)]
mod tests {
    use super::*;

    fn message(
        magic: i8,
        attributes: i8,
        ts: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Vec<u8> {
        let mut m = vec![magic as u8, attributes as u8];
        if magic == 1 {
            m.extend_from_slice(&ts.to_be_bytes());
        }
        for f in [key, value] {
            match f {
                None => m.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(b) => {
                    m.extend_from_slice(&(b.len() as i32).to_be_bytes());
                    m.extend_from_slice(b);
                }
            }
        }
        let mut c = flate2::Crc::new();
        c.update(&m);
        let mut out = 0i64.to_be_bytes().to_vec();
        out.extend_from_slice(&((m.len() + 4) as i32).to_be_bytes());
        out.extend_from_slice(&c.sum().to_be_bytes());
        out.extend_from_slice(&m);
        out
    }

    #[test]
    fn magic_1_messages_keep_keys_values_and_timestamps() {
        let mut set = message(1, 0, 1_000, Some(b"k"), Some(b"v1"));
        set.extend(message(1, 0, 1_005, None, Some(b"v2")));
        let got = read_message_set(&set, 1 << 20).unwrap();
        assert_eq!((got.magic, got.codec), (1, 0));
        assert_eq!(got.records.len(), 2);
        assert_eq!(got.records[0].key.as_deref(), Some(&b"k"[..]));
        assert_eq!(got.records[1].timestamp, 1_005);
        let batch = to_batch(&got).unwrap();
        let h = crate::batch::validate(&batch).unwrap();
        assert_eq!((h.record_count, h.max_timestamp), (2, 1_005));
    }

    #[test]
    fn a_gzip_wrapper_is_inflated_and_its_messages_read() {
        use std::io::Write;
        let mut inner = message(1, 0, 7, None, Some(b"a"));
        inner.extend(message(1, 0, 8, None, Some(b"b")));
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(&inner).unwrap();
        let wrapper = message(1, 1, 8, None, Some(&gz.finish().unwrap()));
        let got = read_message_set(&wrapper, 1 << 20).unwrap();
        assert_eq!(got.codec, 1);
        assert_eq!(
            got.records.iter().map(|r| r.timestamp).collect::<Vec<_>>(),
            vec![7, 8]
        );
        assert!(
            matches!(read_message_set(&wrapper, 10), Err(LegacyError::Invalid(m)) if m.contains("inflate beyond"))
        );
    }

    #[test]
    fn crc_mixed_magic_and_truncation_are_refused() {
        let mut bad = message(0, 0, 0, None, Some(b"x"));
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert!(
            matches!(read_message_set(&bad, 1 << 20), Err(LegacyError::Corrupt(m)) if m.contains("CRC"))
        );
        let mut mixed = message(0, 0, 0, None, Some(b"x"));
        mixed.extend(message(1, 0, 5, None, Some(b"y")));
        assert!(matches!(
            read_message_set(&mixed, 1 << 20),
            Err(LegacyError::Invalid(_))
        ));
        let ok = message(0, 0, 0, None, Some(b"x"));
        for cut in 1..ok.len() {
            assert!(
                read_message_set(&ok[..cut], 1 << 20).is_err(),
                "cut at {cut}"
            );
        }
        let got = read_message_set(&ok, 1 << 20).unwrap();
        assert_eq!(got.records[0].timestamp, -1);
    }
}
