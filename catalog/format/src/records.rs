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
/// The largest uncompressed snappy block. Xerial framing (the Java client)
/// writes 32 KiB blocks; librdkafka writes a batch as one raw block of up to
/// its `batch.size` (1 MB by default). A raw block cannot be inflated in
/// parts, so this is the memory one validation or lookup can hold for it.
const SNAPPY_BLOCK_MAX: usize = 16 << 20;
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
    #[error("the records inflate beyond {0} bytes")]
    InflatesBeyond(u64),
}

/// What a walk over a batch's records sees of one record: its place, its
/// absolute offset and timestamp (from the header's bases and the record's
/// deltas) and whether it has a key. Keys, values and headers themselves
/// are skipped, never buffered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordInfo {
    /// Position of the record in its batch, from 0.
    pub index: i32,
    pub offset_delta: i32,
    /// Base offset + offset delta.
    pub offset: i64,
    /// Base timestamp + timestamp delta (the record's CreateTime).
    pub timestamp: i64,
    pub has_key: bool,
}

/// Calls `on_record(offset, timestamp)` for each record of `batch` in
/// order until it returns false. Returns the number of records visited.
pub fn scan_records(
    batch: &[u8],
    mut on_record: impl FnMut(i64, i64) -> bool,
) -> Result<i32, ScanError> {
    walk_records(batch, |r| on_record(r.offset, r.timestamp))
}

/// Walks the records of `batch`, checking the structure of each one as
/// Kafka's record reader does (lengths, key, value, header count and every
/// header, the record ending exactly at its length, no bytes after the last
/// record) and calling `on_record` for each until it returns false.
/// Returns the number of records visited.
pub fn walk_records(
    batch: &[u8],
    on_record: impl FnMut(RecordInfo) -> bool,
) -> Result<i32, ScanError> {
    walk_records_within(batch, u64::MAX, on_record)
}

/// [`walk_records`], failing with [`ScanError::InflatesBeyond`] once the
/// records section has inflated past `inflate_limit` bytes: the bound on
/// the work a compressed batch can make its reader do.
pub fn walk_records_within(
    batch: &[u8],
    inflate_limit: u64,
    on_record: impl FnMut(RecordInfo) -> bool,
) -> Result<i32, ScanError> {
    let h = BatchHeader::parse(batch)?;
    let records = &batch[HEADER_LEN..h.size.min(batch.len())];
    match h.attributes & 0x07 {
        // Uncompressed: parsed in place, nothing copied.
        0 => walk(
            &h,
            &mut SliceSource {
                buf: records,
                pos: 0,
            },
            on_record,
        ),
        codec => {
            let mut src = StreamSource {
                reader: decompressed(codec, records)?,
                consumed: 0,
                limit: inflate_limit,
            };
            walk(&h, &mut src, on_record)
        }
    }
}

/// The bytes of a records section, as the walk reads them.
trait Source {
    /// The next byte; `UnexpectedEof` at the end.
    fn byte(&mut self) -> Result<u8, ScanError>;
    /// Skips `n` bytes; `UnexpectedEof` if fewer remain.
    fn skip(&mut self, n: u64) -> Result<(), ScanError>;
    /// Bytes read or skipped so far.
    fn consumed(&self) -> u64;
    /// Whether any byte remains.
    fn has_more(&mut self) -> Result<bool, ScanError>;
}

fn eof() -> ScanError {
    ScanError::Io(io::ErrorKind::UnexpectedEof.into())
}

struct SliceSource<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Source for SliceSource<'_> {
    #[inline]
    fn byte(&mut self) -> Result<u8, ScanError> {
        let b = *self.buf.get(self.pos).ok_or_else(eof)?;
        self.pos += 1;
        Ok(b)
    }
    fn skip(&mut self, n: u64) -> Result<(), ScanError> {
        if n > (self.buf.len() - self.pos) as u64 {
            self.pos = self.buf.len();
            return Err(eof());
        }
        self.pos += n as usize;
        Ok(())
    }
    fn consumed(&self) -> u64 {
        self.pos as u64
    }
    fn has_more(&mut self) -> Result<bool, ScanError> {
        Ok(self.pos < self.buf.len())
    }
}

/// A codec's output, read through a small buffer and never kept, counted
/// against the inflation limit.
struct StreamSource<'a> {
    reader: Box<dyn Read + 'a>,
    consumed: u64,
    limit: u64,
}

impl StreamSource<'_> {
    fn count(&mut self, n: u64) -> Result<(), ScanError> {
        self.consumed += n;
        if self.consumed > self.limit {
            return Err(ScanError::InflatesBeyond(self.limit));
        }
        Ok(())
    }
}

impl Source for StreamSource<'_> {
    fn byte(&mut self) -> Result<u8, ScanError> {
        let mut b = [0u8; 1];
        self.reader.read_exact(&mut b).map_err(ScanError::Io)?;
        self.count(1)?;
        Ok(b[0])
    }
    fn skip(&mut self, n: u64) -> Result<(), ScanError> {
        let allowed = n.min(self.limit.saturating_sub(self.consumed).saturating_add(1));
        let copied = io::copy(&mut (&mut self.reader).take(allowed), &mut io::sink())?;
        self.count(copied)?;
        if copied < n {
            return Err(eof());
        }
        Ok(())
    }
    fn consumed(&self) -> u64 {
        self.consumed
    }
    fn has_more(&mut self) -> Result<bool, ScanError> {
        let mut b = [0u8; 1];
        Ok(self.reader.read(&mut b)? > 0)
    }
}

fn is_eof(e: &ScanError) -> bool {
    matches!(e, ScanError::Io(io) if io.kind() == io::ErrorKind::UnexpectedEof)
}

fn walk(
    h: &BatchHeader,
    src: &mut impl Source,
    mut on_record: impl FnMut(RecordInfo) -> bool,
) -> Result<i32, ScanError> {
    let mut visited = 0;
    for index in 0..h.record_count.max(0) {
        let malformed = |what| ScanError::Malformed { index, what };
        let len = match read_varint(src) {
            Ok(n) => n,
            Err(e) if is_eof(&e) => {
                return Err(malformed("records end before the batch's record count"))
            }
            Err(e) => return Err(e),
        };
        if len < 1 {
            return Err(malformed("record length below 1"));
        }
        let start = src.consumed();
        let fields = read_record_fields(src).map_err(|e| match e {
            ScanError::Malformed { index: -1, what } => malformed(what),
            e if is_eof(&e) => malformed("record ends before its fields"),
            e => e,
        })?;
        let used = src.consumed() - start;
        if used > len as u64 {
            return Err(malformed("record's fields run past its length"));
        }
        if used < len as u64 {
            return Err(malformed("record is longer than its fields"));
        }
        visited += 1;
        let Some(offset) = h.base_offset.checked_add(fields.offset_delta as i64) else {
            return Err(malformed("offset delta overflows the base offset"));
        };
        let info = RecordInfo {
            index,
            offset_delta: fields.offset_delta,
            offset,
            timestamp: h.base_timestamp.wrapping_add(fields.timestamp_delta),
            has_key: fields.has_key,
        };
        if !on_record(info) {
            return Ok(visited);
        }
    }
    // Kafka's reader: "Incorrect declared batch size, records still remaining".
    if src.has_more()? {
        return Err(ScanError::Malformed {
            index: h.record_count,
            what: "bytes remain after the batch's last record",
        });
    }
    Ok(visited)
}

struct RecordFields {
    timestamp_delta: i64,
    offset_delta: i32,
    has_key: bool,
}

fn negative_length() -> ScanError {
    ScanError::Malformed {
        index: -1,
        what: "negative length",
    }
}

/// Reads one record's fields after its length, skipping key, value and
/// headers.
#[inline]
fn read_record_fields(src: &mut impl Source) -> Result<RecordFields, ScanError> {
    let _attributes = src.byte()?;
    let timestamp_delta = read_varlong(src)?;
    let offset_delta = read_varint(src)?;
    let has_key = skip_bytes_field(src, true)?;
    skip_bytes_field(src, true)?;
    let headers = read_varint(src)?;
    if headers < 0 {
        return Err(negative_length());
    }
    for _ in 0..headers {
        if !skip_bytes_field(src, false)? {
            return Err(negative_length());
        }
        skip_bytes_field(src, true)?;
    }
    Ok(RecordFields {
        timestamp_delta,
        offset_delta,
        has_key,
    })
}

/// Skips a varint-length-prefixed field; -1 (null) is allowed when
/// `nullable`. Returns whether the field was present (not null).
#[inline]
fn skip_bytes_field(src: &mut impl Source, nullable: bool) -> Result<bool, ScanError> {
    let len = read_varint(src)?;
    if len == -1 && nullable {
        return Ok(false);
    }
    if len < 0 {
        return Err(negative_length());
    }
    src.skip(len as u64)?;
    Ok(true)
}

/// Inflates `data`, compressed with Kafka codec `codec`, into memory;
/// fails once it passes `limit` bytes. For legacy message sets, whose
/// messages must be re-encoded; record batches are never inflated whole.
pub(crate) fn inflate(codec: i16, data: &[u8], limit: u64) -> Result<Vec<u8>, ScanError> {
    let mut r = decompressed(codec, data)?;
    let mut out = Vec::new();
    (&mut r).take(limit).read_to_end(&mut out)?;
    let mut one = [0u8; 1];
    if r.read(&mut one)? > 0 {
        return Err(ScanError::InflatesBeyond(limit));
    }
    Ok(out)
}

pub(crate) fn decompressed<'a>(
    codec: i16,
    records: &'a [u8],
) -> Result<Box<dyn Read + 'a>, ScanError> {
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
            return Err(invalid(
                "snappy block inflates beyond 16 MiB (a raw snappy block is read whole, so it is bounded)",
            ));
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

#[inline]
fn read_uvarlong(src: &mut impl Source) -> Result<u64, ScanError> {
    // Most varints in a record (lengths, deltas, counts) fit in one byte.
    let first = src.byte()?;
    if first < 0x80 {
        return Ok(first as u64);
    }
    let mut value = (first & 0x7f) as u64;
    for i in 1..10 {
        let b = src.byte()?;
        value |= ((b & 0x7f) as u64) << (i * 7);
        if b < 0x80 {
            return Ok(value);
        }
    }
    Err(ScanError::Io(invalid("varint longer than 10 bytes")))
}

#[inline]
fn read_varlong(src: &mut impl Source) -> Result<i64, ScanError> {
    let z = read_uvarlong(src)?;
    Ok(((z >> 1) as i64) ^ -((z & 1) as i64))
}

#[inline]
fn read_varint(src: &mut impl Source) -> Result<i32, ScanError> {
    let v = read_varlong(src)?;
    i32::try_from(v).map_err(|_| ScanError::Io(invalid("varint out of range for an int32")))
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
