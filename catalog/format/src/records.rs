//! Reads the offset and timestamp of each record inside a v2 batch without
//! materialising the records: the records section is streamed through its
//! codec (gzip, snappy, lz4, zstd) and each record's key, value and headers
//! are skipped, not kept. Memory stays at the codecs' fixed windows however
//! far the batch inflates, so a compressed batch sent to make the broker
//! allocate (a decompression bomb) costs it nothing more than its size.
//!
//! Owns no I/O beyond the batch bytes it is given and never re-encodes.
//! [`first_record`] answers "the first record at or after" a time or an
//! offset for the log, the historical read path and, later, the cleaner.

use std::io::{self, Read};

use thiserror::Error;

use crate::batch::{BatchError, BatchHeader, HEADER_LEN};

/// The largest zstd window a batch may ask for (2^24 = 16 MiB). Producers'
/// default levels use 2^21 or less; larger would let a frame header make
/// the decoder allocate up to 2 GiB.
const ZSTD_WINDOW_LOG_MAX: u32 = 24;
/// The largest uncompressed snappy block (xerial framing writes 32 KiB).
const SNAPPY_BLOCK_MAX: usize = 4 << 20;
const SNAPPY_XERIAL_MAGIC: &[u8; 8] = b"\x82SNAPPY\x00";

#[derive(Debug, Error)]
pub enum ScanError {
    #[error(transparent)]
    Batch(#[from] BatchError),
    #[error("unknown compression codec {0}")]
    UnknownCodec(i16),
    #[error("record {index}: {what}")]
    Malformed { index: i32, what: &'static str },
    #[error("records section: {0}")]
    Io(#[from] io::Error),
}

/// Calls `on_record(offset, timestamp)` for each record of `batch` in
/// order until it returns false. Returns the number of records visited.
pub fn scan_records(
    batch: &[u8],
    mut on_record: impl FnMut(i64, i64) -> bool,
) -> Result<i32, ScanError> {
    let h = BatchHeader::parse(batch)?;
    let records = &batch[HEADER_LEN..h.size.min(batch.len())];
    let mut reader = decompressed(h.attributes & 0x07, records)?;
    let mut visited = 0;
    for index in 0..h.record_count.max(0) {
        let len = match read_varint(&mut reader) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(ScanError::Malformed {
                    index,
                    what: "records end before the batch's record count",
                })
            }
            Err(e) => return Err(e.into()),
        };
        if len < 1 {
            return Err(ScanError::Malformed {
                index,
                what: "record length below 1",
            });
        }
        let mut rec = (&mut reader).take(len as u64);
        let mut attributes = [0u8; 1];
        rec.read_exact(&mut attributes)?;
        let timestamp_delta = read_varlong(&mut rec)?;
        let offset_delta = read_varint(&mut rec)?;
        // Key, value and headers: skipped, never buffered.
        io::copy(&mut rec, &mut io::sink())?;
        if rec.limit() > 0 {
            return Err(ScanError::Malformed {
                index,
                what: "record ends before its length",
            });
        }
        visited += 1;
        let Some(offset) = h.base_offset.checked_add(offset_delta as i64) else {
            return Err(ScanError::Malformed {
                index,
                what: "offset delta overflows the base offset",
            });
        };
        let timestamp = h.base_timestamp.wrapping_add(timestamp_delta);
        if !on_record(offset, timestamp) {
            break;
        }
    }
    Ok(visited)
}

fn decompressed<'a>(codec: i16, records: &'a [u8]) -> Result<Box<dyn Read + 'a>, ScanError> {
    Ok(match codec {
        0 => Box::new(records),
        1 => Box::new(flate2::read::MultiGzDecoder::new(records)),
        2 => Box::new(SnappyReader::new(records)),
        3 => Box::new(lz4::Decoder::new(records)?),
        4 => {
            let mut d = zstd::stream::read::Decoder::with_buffer(records)?;
            d.window_log_max(ZSTD_WINDOW_LOG_MAX)?;
            Box::new(d)
        }
        other => return Err(ScanError::UnknownCodec(other)),
    })
}

/// Kafka's snappy: xerial-framed blocks (`[u32 length][raw block]`…)
/// after a 16-byte header, or one raw block without it.
struct SnappyReader<'a> {
    input: &'a [u8],
    block: Vec<u8>,
    at: usize,
    framed: Option<bool>,
}

impl<'a> SnappyReader<'a> {
    fn new(input: &'a [u8]) -> Self {
        SnappyReader {
            input,
            block: Vec::new(),
            at: 0,
            framed: None,
        }
    }

    fn next_block(&mut self) -> io::Result<bool> {
        let framed = *self.framed.get_or_insert_with(|| {
            let f = self.input.starts_with(SNAPPY_XERIAL_MAGIC) && self.input.len() >= 16;
            if f {
                self.input = &self.input[16..];
            }
            f
        });
        if self.input.is_empty() {
            return Ok(false);
        }
        let raw = if framed {
            if self.input.len() < 4 {
                return Err(invalid("snappy block length cut short"));
            }
            let n = u32::from_be_bytes([self.input[0], self.input[1], self.input[2], self.input[3]])
                as usize;
            if n > self.input.len() - 4 {
                return Err(invalid("snappy block longer than the batch"));
            }
            let raw = &self.input[4..4 + n];
            self.input = &self.input[4 + n..];
            raw
        } else {
            std::mem::take(&mut self.input)
        };
        let len = snap::raw::decompress_len(raw).map_err(|e| invalid_owned(e.to_string()))?;
        if len > SNAPPY_BLOCK_MAX {
            return Err(invalid("snappy block inflates beyond 4 MiB"));
        }
        self.block.resize(len, 0);
        snap::raw::Decoder::new()
            .decompress(raw, &mut self.block)
            .map_err(|e| invalid_owned(e.to_string()))?;
        self.at = 0;
        Ok(true)
    }
}

impl Read for SnappyReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.block.len() {
            if !self.next_block()? {
                return Ok(0);
            }
        }
        let n = out.len().min(self.block.len() - self.at);
        out[..n].copy_from_slice(&self.block[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn invalid(what: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

fn invalid_owned(what: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

fn read_uvarlong(r: &mut impl Read) -> io::Result<u64> {
    let mut value = 0u64;
    for i in 0..10 {
        let mut b = [0u8; 1];
        r.read_exact(&mut b)?;
        value |= ((b[0] & 0x7f) as u64) << (i * 7);
        if b[0] < 0x80 {
            return Ok(value);
        }
    }
    Err(invalid("varint longer than 10 bytes"))
}

fn read_varlong(r: &mut impl Read) -> io::Result<i64> {
    let z = read_uvarlong(r)?;
    Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
}

fn read_varint(r: &mut impl Read) -> io::Result<i32> {
    let v = read_varlong(r)?;
    i32::try_from(v).map_err(|_| invalid("varint out of range for an int32"))
}

/// The first record of one whole batch, at an offset below `below`, whose
/// timestamp satisfies `pred`: (offset, timestamp). A `LogAppendTime` batch
/// carries one timestamp, its max timestamp, for all of its records.
pub fn first_record(
    batch: &[u8],
    below: i64,
    pred: impl Fn(i64) -> bool,
) -> Result<Option<(i64, i64)>, ScanError> {
    let h = BatchHeader::parse(batch)?;
    if h.is_log_append_time() {
        return Ok(pred(h.max_timestamp).then_some((h.base_offset, h.max_timestamp)));
    }
    let mut found = None;
    scan_records(batch, |offset, timestamp| {
        if offset < below && pred(timestamp) {
            found = Some((offset, timestamp));
            return false;
        }
        true
    })?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::testing::batch_with;
    use kafka_protocol::records::Compression;

    fn all(batch: &[u8]) -> Vec<(i64, i64)> {
        let mut out = vec![];
        scan_records(batch, |o, t| {
            out.push((o, t));
            true
        })
        .unwrap();
        out
    }

    #[test]
    fn every_codec_yields_each_records_offset_and_timestamp() {
        for c in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let b = batch_with(5, 100, 1_000, c);
            let got = all(&b);
            assert_eq!(got.len(), 5, "{c:?}");
            assert_eq!(
                got.iter().map(|r| r.0).collect::<Vec<_>>(),
                vec![0, 1, 2, 3, 4]
            );
            assert!(got.iter().all(|r| r.1 >= 1_000), "{c:?}: {got:?}");
        }
    }

    #[test]
    fn stops_when_told() {
        let b = batch_with(5, 10, 1_000, Compression::Zstd);
        let mut seen = 0;
        assert_eq!(
            scan_records(&b, |_, _| {
                seen += 1;
                seen < 2
            })
            .unwrap(),
            2
        );
    }

    #[test]
    fn a_record_count_beyond_the_records_is_an_error_not_an_allocation() {
        let mut b = batch_with(2, 10, 1_000, Compression::None).to_vec();
        b[57..61].copy_from_slice(&0x7fff_ffffi32.to_be_bytes());
        b[23..27].copy_from_slice(&0x7fff_fffei32.to_be_bytes());
        let crc = crate::batch::compute_crc(&b);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        let e = scan_records(&b, |_, _| true).unwrap_err();
        assert!(matches!(e, ScanError::Malformed { index: 2, .. }), "{e}");
    }
}
