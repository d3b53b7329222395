//! Re-encoding a batch's records with another codec: what Kafka does on
//! append when a topic's `compression.type` names a codec other than the
//! one the producer used. The records section is inflated through its codec
//! as a stream and written straight into the target's encoder; the records
//! themselves (lengths, attributes, deltas, keys, values, headers) are kept
//! byte for byte, and the header keeps every field but the codec bits, the
//! length and the CRC.
//!
//! Only for batches the validator accepted (their records are well formed
//! and inflate within the bound). Memory: the output, never more than the
//! caller's limit (the topic's `max.message.bytes`), plus the codecs' fixed
//! windows. Never chooses whether to re-encode: [`needs_transcode`] is
//! Kafka's rule, the caller applies it. No I/O.

use std::io::{self, Read, Write};

use thiserror::Error;

use crate::batch::{compute_crc, BatchHeader, ATTRIBUTES, CRC, HEADER_LEN, LOG_OVERHEAD};
use crate::records::{decompressed, ScanError};

/// Kafka's record batch codecs (attribute bits 0–2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    None = 0,
    Gzip = 1,
    Snappy = 2,
    Lz4 = 3,
    Zstd = 4,
}

impl Codec {
    pub fn id(self) -> i16 {
        self as i16
    }

    pub fn from_id(id: i16) -> Option<Codec> {
        Some(match id {
            0 => Codec::None,
            1 => Codec::Gzip,
            2 => Codec::Snappy,
            3 => Codec::Lz4,
            4 => Codec::Zstd,
            _ => return None,
        })
    }

    /// The codec's name in `compression.type`.
    pub fn name(self) -> &'static str {
        match self {
            Codec::None => "uncompressed",
            Codec::Gzip => "gzip",
            Codec::Snappy => "snappy",
            Codec::Lz4 => "lz4",
            Codec::Zstd => "zstd",
        }
    }

    /// Parses a `compression.type` value other than `producer`, case
    /// insensitive as Kafka's.
    pub fn from_name(name: &str) -> Option<Codec> {
        [
            Codec::None,
            Codec::Gzip,
            Codec::Snappy,
            Codec::Lz4,
            Codec::Zstd,
        ]
        .into_iter()
        .find(|c| c.name().eq_ignore_ascii_case(name.trim()))
    }
}

/// What a topic stores its batches as: a codec and Kafka's level for it
/// (`compression.gzip.level` 1–9 or -1, `compression.lz4.level` 1–17,
/// `compression.zstd.level` -131072–22).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoding {
    pub codec: Codec,
    pub level: i32,
}

impl Encoding {
    /// Kafka's default level for `codec`.
    pub fn default_for(codec: Codec) -> Self {
        let level = match codec {
            Codec::Gzip => -1,
            Codec::Lz4 => 9,
            Codec::Zstd => 3,
            Codec::None | Codec::Snappy => 0,
        };
        Encoding { codec, level }
    }
}

/// Kafka's rule (`LogValidator`): a batch is re-encoded only when the topic
/// names a codec (`target` is `None` for `producer`) that differs from the
/// batch's; a different level alone keeps the producer's bytes.
pub fn needs_transcode(header: &BatchHeader, target: Option<Encoding>) -> bool {
    target.is_some_and(|t| t.codec.id() != header.attributes & 0x07)
}

#[derive(Debug, Error)]
pub enum TranscodeError {
    /// Kafka's RecordTooLargeException after re-compression.
    #[error("the batch re-encoded as {codec} is larger than {limit} bytes (max.message.bytes)")]
    TooLarge { codec: &'static str, limit: usize },
    #[error(transparent)]
    Scan(#[from] ScanError),
    #[error("encoding the records as {codec}: {source}")]
    Encode {
        codec: &'static str,
        source: io::Error,
    },
}

/// Xerial's block size, as the Java client's `SnappyOutputStream` writes.
const SNAPPY_BLOCK: usize = 32 << 10;
const SNAPPY_XERIAL_HEADER: &[u8; 16] = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01";
/// zstd levels from 20 ask for windows of 32 MiB and more; the readers
/// (ours and the clients') bound what they accept, so the window is capped
/// at the 16 MiB the broker's own decoder allows.
const ZSTD_WINDOW_LOG: u32 = 24;

/// Re-encodes `batch` (one validated v2 batch) with `to`, failing once its
/// records inflate past `inflate_limit` or the new batch passes `max_size`
/// bytes. Returns the new batch, its CRC computed.
pub fn transcode(
    batch: &[u8],
    to: Encoding,
    inflate_limit: u64,
    max_size: usize,
) -> Result<Vec<u8>, TranscodeError> {
    let h = BatchHeader::parse(batch).map_err(ScanError::from)?;
    let records = &batch[HEADER_LEN..h.size.min(batch.len())];
    let mut source =
        decompressed(h.attributes & 0x07, records)?.take(inflate_limit.saturating_add(1));
    let mut out = Vec::with_capacity(records.len().min(max_size) + HEADER_LEN);
    out.extend_from_slice(&batch[..HEADER_LEN]);
    let sink = Bounded {
        out,
        limit: max_size,
        overflowed: false,
    };
    let too_large = || TranscodeError::TooLarge {
        codec: to.codec.name(),
        limit: max_size,
    };
    let (sink, copied) = match encode(to, &mut source, sink) {
        Ok(done) => done,
        Err((overflowed, _)) if overflowed => return Err(too_large()),
        Err((_, e)) if e.kind() == io::ErrorKind::InvalidData || is_read_error(&e) => {
            return Err(ScanError::Io(e).into())
        }
        Err((_, source)) => {
            return Err(TranscodeError::Encode {
                codec: to.codec.name(),
                source,
            })
        }
    };
    if copied > inflate_limit {
        return Err(ScanError::InflatesBeyond(inflate_limit).into());
    }
    let mut out = sink.out;
    let length = (out.len() - LOG_OVERHEAD) as i32;
    out[8..12].copy_from_slice(&length.to_be_bytes());
    let attributes = (h.attributes & !0x07) | to.codec.id();
    out[ATTRIBUTES..ATTRIBUTES + 2].copy_from_slice(&attributes.to_be_bytes());
    let crc = compute_crc(&out);
    out[CRC..CRC + 4].copy_from_slice(&crc.to_be_bytes());
    Ok(out)
}

/// An error the decoder raised (as opposed to the encoder or the sink).
fn is_read_error(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<ReadFailed>())
}

#[derive(Debug, Error)]
#[error("{0}")]
struct ReadFailed(io::Error);

/// Reads through `inner`, tagging its errors so they are told apart from
/// the encoder's.
struct Tagged<'a, R: Read + ?Sized>(&'a mut R);

impl<R: Read + ?Sized> Read for Tagged<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0
            .read(buf)
            .map_err(|e| io::Error::new(e.kind(), ReadFailed(e)))
    }
}

/// Copies `src` through `to`'s encoder into `sink`. On failure, says whether
/// the sink overflowed.
fn encode(
    to: Encoding,
    src: &mut impl Read,
    sink: Bounded,
) -> Result<(Bounded, u64), (bool, io::Error)> {
    let mut src = Tagged(src);
    let mut enc = Encoder::new(to, sink).map_err(|e| (false, e))?;
    let copied = io::copy(&mut src, &mut enc);
    let overflowed = enc.overflowed();
    let n = copied.map_err(|e| (overflowed, e))?;
    let sink = enc.finish()?;
    Ok((sink, n))
}

/// One of Kafka's codecs writing into a [`Bounded`] buffer, as Kafka's Java
/// client writes it: gzip, xerial-framed snappy, LZ4 frames with
/// independent 64 KiB blocks, zstd.
pub(crate) enum Encoder {
    None(Bounded),
    Gzip(flate2::write::GzEncoder<Bounded>),
    Snappy(XerialWriter),
    Lz4(lz4::Encoder<Bounded>),
    Zstd(zstd::stream::write::Encoder<'static, Bounded>),
}

impl Encoder {
    pub(crate) fn new(to: Encoding, sink: Bounded) -> io::Result<Self> {
        Ok(match to.codec {
            Codec::None => Encoder::None(sink),
            Codec::Gzip => {
                let level = if (1..=9).contains(&to.level) {
                    to.level as u32
                } else {
                    6
                };
                Encoder::Gzip(flate2::write::GzEncoder::new(
                    sink,
                    flate2::Compression::new(level),
                ))
            }
            Codec::Snappy => Encoder::Snappy(XerialWriter::new(sink)),
            Codec::Lz4 => {
                // Kafka's default level is lz4-java's fast compressor; any
                // other level its high-compression one.
                let level = if to.level == 9 {
                    0
                } else {
                    to.level.clamp(1, 17) as u32
                };
                Encoder::Lz4(
                    lz4::EncoderBuilder::new()
                        .block_size(lz4::BlockSize::Max64KB)
                        .block_mode(lz4::BlockMode::Independent)
                        .checksum(lz4::ContentChecksum::NoChecksum)
                        .level(level)
                        .build(sink)?,
                )
            }
            Codec::Zstd => {
                let mut enc = zstd::stream::write::Encoder::new(sink, to.level)?;
                if to.level >= 20 {
                    enc.window_log(ZSTD_WINDOW_LOG)?;
                }
                Encoder::Zstd(enc)
            }
        })
    }

    /// Whether the output passed its limit (the last error was that).
    pub(crate) fn overflowed(&self) -> bool {
        match self {
            Encoder::None(s) => s.overflowed,
            Encoder::Gzip(e) => e.get_ref().overflowed,
            Encoder::Snappy(e) => e.sink.overflowed,
            Encoder::Lz4(e) => e.writer().overflowed,
            Encoder::Zstd(e) => e.get_ref().overflowed,
        }
    }

    /// Ends the stream; on failure, says whether the sink overflowed.
    pub(crate) fn finish(self) -> Result<Bounded, (bool, io::Error)> {
        match self {
            Encoder::None(s) => Ok(s),
            Encoder::Gzip(e) => e.finish().map_err(|e| (true, e)),
            Encoder::Snappy(e) => e.finish(),
            Encoder::Lz4(e) => {
                let (sink, done) = e.finish();
                let overflowed = sink.overflowed;
                done.map_err(|e| (overflowed, e))?;
                Ok(sink)
            }
            Encoder::Zstd(e) => e.finish().map_err(|e| (true, e)),
        }
    }
}

impl Write for Encoder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Encoder::None(s) => s.write(buf),
            Encoder::Gzip(e) => e.write(buf),
            Encoder::Snappy(e) => e.write(buf),
            Encoder::Lz4(e) => e.write(buf),
            Encoder::Zstd(e) => e.write(buf),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A `Vec` that refuses to grow past `limit`.
pub(crate) struct Bounded {
    pub(crate) out: Vec<u8>,
    pub(crate) limit: usize,
    pub(crate) overflowed: bool,
}

impl Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.out.len() + buf.len() > self.limit {
            self.overflowed = true;
            return Err(io::Error::other("batch too large"));
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Snappy as Kafka's Java client writes it: xerial's header, then
/// `[u32 length][raw block]` for each 32 KiB of input.
pub(crate) struct XerialWriter {
    sink: Bounded,
    block: Vec<u8>,
    encoder: snap::raw::Encoder,
    compressed: Vec<u8>,
    wrote_header: bool,
}

impl XerialWriter {
    fn new(sink: Bounded) -> Self {
        XerialWriter {
            sink,
            block: Vec::with_capacity(SNAPPY_BLOCK),
            encoder: snap::raw::Encoder::new(),
            compressed: vec![0; snap::raw::max_compress_len(SNAPPY_BLOCK)],
            wrote_header: false,
        }
    }

    fn write_block(&mut self) -> io::Result<()> {
        if !self.wrote_header {
            self.sink.write_all(SNAPPY_XERIAL_HEADER)?;
            self.wrote_header = true;
        }
        if self.block.is_empty() {
            return Ok(());
        }
        let n = self
            .encoder
            .compress(&self.block, &mut self.compressed)
            .map_err(io::Error::other)?;
        self.sink.write_all(&(n as u32).to_be_bytes())?;
        self.sink.write_all(&self.compressed[..n])?;
        self.block.clear();
        Ok(())
    }

    fn finish(mut self) -> Result<Bounded, (bool, io::Error)> {
        match self.write_block() {
            Ok(()) => Ok(self.sink),
            Err(e) => Err((self.sink.overflowed, e)),
        }
    }
}

impl Write for XerialWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = buf.len().min(SNAPPY_BLOCK - self.block.len());
        self.block.extend_from_slice(&buf[..n]);
        if self.block.len() == SNAPPY_BLOCK {
            self.write_block()?;
        }
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::{testing, validate};
    use crate::records::walk_records;
    use kafka_protocol::records::{Compression, RecordBatchDecoder};

    const ALL: [Codec; 5] = [
        Codec::None,
        Codec::Gzip,
        Codec::Snappy,
        Codec::Lz4,
        Codec::Zstd,
    ];

    fn compression(c: Codec) -> Compression {
        match c {
            Codec::None => Compression::None,
            Codec::Gzip => Compression::Gzip,
            Codec::Snappy => Compression::Snappy,
            Codec::Lz4 => Compression::Lz4,
            Codec::Zstd => Compression::Zstd,
        }
    }

    fn records_of(batch: &[u8]) -> Vec<(i64, i64, Option<Vec<u8>>, Option<Vec<u8>>)> {
        let mut buf = bytes::Bytes::copy_from_slice(batch);
        RecordBatchDecoder::decode(&mut buf)
            .expect("kafka-protocol decodes the batch")
            .records
            .into_iter()
            .map(|r| {
                (
                    r.offset,
                    r.timestamp,
                    r.key.map(|k| k.to_vec()),
                    r.value.map(|v| v.to_vec()),
                )
            })
            .collect()
    }

    #[test]
    fn every_codec_to_every_codec_keeps_the_records() {
        for from in ALL {
            let original = testing::batch_with(200, 300, 1_700_000_000_000, compression(from));
            let before = records_of(&original);
            let mut infos_before = Vec::new();
            walk_records(&original, |r| {
                infos_before.push(r);
                true
            })
            .unwrap();
            for to in ALL {
                for level in [None, Some(1)] {
                    let enc = match level {
                        None => Encoding::default_for(to),
                        Some(l) => Encoding {
                            codec: to,
                            level: l,
                        },
                    };
                    let out = transcode(&original, enc, u64::MAX, 1 << 20).unwrap();
                    let h = validate(&out).expect("the new batch is valid, CRC included");
                    assert_eq!(h.attributes & 0x07, to.id(), "{from:?} -> {to:?}");
                    assert_eq!(h.size, out.len());
                    let old = BatchHeader::parse(&original).unwrap();
                    assert_eq!(
                        (
                            h.base_offset,
                            h.record_count,
                            h.base_timestamp,
                            h.max_timestamp
                        ),
                        (
                            old.base_offset,
                            old.record_count,
                            old.base_timestamp,
                            old.max_timestamp
                        )
                    );
                    assert_eq!(records_of(&out), before, "{from:?} -> {to:?} {level:?}");
                    let mut infos = Vec::new();
                    walk_records(&out, |r| {
                        infos.push(r);
                        true
                    })
                    .unwrap();
                    assert_eq!(infos, infos_before);
                }
            }
        }
    }

    #[test]
    fn keeps_the_producer_fields_and_flags() {
        let mut b = testing::batch_with(3, 10, 1_000, Compression::None).to_vec();
        // Producer id 7, epoch 2, sequence 40, transactional, LogAppendTime.
        b[43..51].copy_from_slice(&7i64.to_be_bytes());
        b[51..53].copy_from_slice(&2i16.to_be_bytes());
        b[53..57].copy_from_slice(&40i32.to_be_bytes());
        b[21..23].copy_from_slice(&0x18i16.to_be_bytes());
        let crc = compute_crc(&b);
        b[17..21].copy_from_slice(&crc.to_be_bytes());
        let out = transcode(&b, Encoding::default_for(Codec::Zstd), u64::MAX, 1 << 20).unwrap();
        let h = validate(&out).unwrap();
        assert_eq!(
            (h.producer_id, h.producer_epoch, h.base_sequence),
            (7, 2, 40)
        );
        assert!(h.is_transactional() && h.is_log_append_time());
        assert_eq!(h.attributes & 0x07, 4);
    }

    #[test]
    fn refuses_to_grow_past_the_limit() {
        let b = testing::batch_with(100, 1000, 1_000, Compression::Zstd);
        // 100 KB of records: fine within 1 MiB, too large within 10 KB.
        assert!(transcode(&b, Encoding::default_for(Codec::None), u64::MAX, 1 << 20).is_ok());
        match transcode(&b, Encoding::default_for(Codec::None), u64::MAX, 10_000) {
            Err(TranscodeError::TooLarge { limit: 10_000, .. }) => {}
            other => panic!("{other:?}"),
        }
        match transcode(&b, Encoding::default_for(Codec::Gzip), u64::MAX, 100) {
            Err(TranscodeError::TooLarge { .. }) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn stops_at_the_inflation_bound() {
        let b = testing::batch_with(100, 1000, 1_000, Compression::Zstd);
        match transcode(&b, Encoding::default_for(Codec::Lz4), 5_000, 1 << 20) {
            Err(TranscodeError::Scan(ScanError::InflatesBeyond(5_000))) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_rule_is_kafkas() {
        let zstd = BatchHeader::parse(&testing::batch_with(1, 1, 0, Compression::Zstd)).unwrap();
        assert!(!needs_transcode(&zstd, None));
        assert!(!needs_transcode(
            &zstd,
            Some(Encoding {
                codec: Codec::Zstd,
                level: 19
            })
        ));
        assert!(needs_transcode(
            &zstd,
            Some(Encoding::default_for(Codec::Lz4))
        ));
        assert!(needs_transcode(
            &zstd,
            Some(Encoding::default_for(Codec::None))
        ));
        assert_eq!(Codec::from_name("ZSTD"), Some(Codec::Zstd));
        assert_eq!(Codec::from_name("uncompressed"), Some(Codec::None));
        assert_eq!(Codec::from_name("producer"), None);
    }
}
