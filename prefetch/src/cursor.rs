//! `ChunkCursor`: walks the record batches of one segment object from a
//! byte position, over its chunks, cutting whole batches on their headers
//! (never decoding them). Owns the stitching of batches that cross chunk
//! boundaries and the zero-copy runs of kept batches; it never decides what
//! to read ahead or what a fetch gets.

use bytes::{Bytes, BytesMut};
use strata_catalog::RemoteSegment;

use crate::classes::PriorityClass;
use crate::error::PrefetchError;
use crate::stream_key::StreamKey;
use strata_format::batch::{BatchError, BatchHeader, HEADER_LEN};

/// Where a cursor gets a segment object's chunks: the prefetcher, with its
/// cache, budgets and held read-ahead.
pub(crate) trait ChunkSource {
    fn chunk_bytes(&self) -> u64;
    /// Chunk `index` of `seg`, from the cache or a GET.
    fn chunk(
        &self,
        seg: &RemoteSegment,
        index: u64,
        class: PriorityClass,
        stream: Option<&StreamKey>,
    ) -> impl std::future::Future<Output = Result<Bytes, PrefetchError>> + Send;
    /// Chunk `index` of `seg` if it is in memory.
    fn chunk_cached(
        &self,
        seg: &RemoteSegment,
        index: u64,
        stream: Option<&StreamKey>,
    ) -> Option<Bytes>;
}

/// Sequential batches of one segment from a start position, over chunks.
pub(crate) struct ChunkCursor<'a, S: ChunkSource> {
    p: &'a S,
    seg: &'a RemoteSegment,
    class: PriorityClass,
    /// The stream whose held read-ahead this cursor may use.
    pub(crate) stream: Option<&'a StreamKey>,
    /// Only chunks already in memory: a missing one ends the read with
    /// `PrefetchError::NotCached` instead of a GET.
    pub(crate) cached_only: bool,
    /// Chunks found in memory in `cached_only` mode (counted as cache hits
    /// only if the whole read is answered that way).
    pub(crate) hits: u64,
    /// Absolute position of `buf[0]`.
    pub(crate) start: u64,
    buf: Bytes,
    pub(crate) at: usize,
    /// Start (in `buf`) of the batches kept since the last skip or refill.
    run: Option<usize>,
    kept: Vec<Bytes>,
}

impl<'a, S: ChunkSource> ChunkCursor<'a, S> {
    pub(crate) fn new(p: &'a S, seg: &'a RemoteSegment, class: PriorityClass, start: u64) -> Self {
        ChunkCursor {
            p,
            seg,
            class,
            stream: None,
            cached_only: false,
            hits: 0,
            start,
            buf: Bytes::new(),
            at: 0,
            run: None,
            kept: Vec::new(),
        }
    }

    fn corrupt(&self, message: String) -> PrefetchError {
        PrefetchError::Corrupt {
            key: self.seg.log_key.clone(),
            position: self.start + self.at as u64,
            message,
        }
    }

    pub(crate) async fn next(&mut self) -> Result<Option<BatchHeader>, PrefetchError> {
        loop {
            let avail = &self.buf[self.at..];
            match BatchHeader::parse_header_only(avail) {
                Ok(f) if f.size <= avail.len() => return Ok(Some(f)),
                Ok(f) => self.refill(f.size).await?,
                Err(BatchError::Truncated { .. }) => {
                    let pos = self.start + self.at as u64;
                    if pos >= self.seg.size_bytes {
                        return Ok(None);
                    }
                    if self.seg.size_bytes - pos < HEADER_LEN as u64 {
                        return Err(self.corrupt("truncated batch header".into()));
                    }
                    self.refill(HEADER_LEN).await?
                }
                Err(e) => return Err(self.corrupt(e.to_string())),
            }
        }
    }

    /// Makes at least `need` bytes from the current position available:
    /// the rest of the chunk there (no copy), or, when a batch crosses into
    /// the next chunk, a buffer of just those `need` bytes.
    async fn refill(&mut self, need: usize) -> Result<(), PrefetchError> {
        self.end_run();
        let from = self.start + self.at as u64;
        if from + need as u64 > self.seg.size_bytes {
            return Err(self.corrupt(format!(
                "batch of {need} bytes runs past the end of the {}-byte object",
                self.seg.size_bytes
            )));
        }
        let cb = self.p.chunk_bytes();
        let mut parts: Vec<Bytes> = Vec::new();
        let mut have = 0usize;
        let mut pos = from;
        while have < need {
            let index = pos / cb;
            let chunk = if self.cached_only {
                let c = self
                    .p
                    .chunk_cached(self.seg, index, self.stream)
                    .ok_or(PrefetchError::NotCached)?;
                self.hits += 1;
                c
            } else {
                self.p
                    .chunk(self.seg, index, self.class, self.stream)
                    .await?
            };
            let off = (pos - index * cb) as usize;
            if off >= chunk.len() {
                return Err(self.corrupt(format!("chunk {index} ends before byte {pos}")));
            }
            let part = if have == 0 {
                chunk.slice(off..)
            } else {
                chunk.slice(off..chunk.len().min(off + (need - have)))
            };
            have += part.len();
            pos += part.len() as u64;
            parts.push(part);
        }
        self.buf = if parts.len() == 1 {
            parts.pop().unwrap_or_default()
        } else {
            let mut b = BytesMut::with_capacity(need);
            for p in parts {
                let want = need - b.len();
                b.extend_from_slice(&p[..p.len().min(want)]);
            }
            b.freeze()
        };
        self.start = from;
        self.at = 0;
        Ok(())
    }

    pub(crate) fn take(&mut self, f: &BatchHeader) -> Bytes {
        let b = self.buf.slice(self.at..self.at + f.size);
        self.at += f.size;
        b
    }

    /// Keeps the batch `f` for the answer, joined to the batches kept just
    /// before it when they lie together in the same buffer.
    pub(crate) fn keep(&mut self, f: &BatchHeader) {
        self.run.get_or_insert(self.at);
        self.at += f.size;
    }

    pub(crate) fn skip(&mut self, f: &BatchHeader) {
        self.end_run();
        self.at += f.size;
    }

    fn end_run(&mut self) {
        if let Some(s) = self.run.take() {
            self.kept.push(self.buf.slice(s..self.at));
        }
    }

    /// The kept batches, as few slices as they lie in.
    pub(crate) fn kept(&mut self) -> Vec<Bytes> {
        self.end_run();
        std::mem::take(&mut self.kept)
    }
}
