//! `RemoteReader`: reads whole record batches from a tiered segment.
//!
//! The position to start from comes from the segment's uploaded offset (or
//! time) index; then only the byte range needed is fetched with ranged GETs,
//! in chunks of about `max_bytes`, and batches are cut on their headers —
//! never decoded. Index objects are kept in a small bounded cache (oldest
//! out first). Issue 5 replaces this single-reader path with parallel
//! read-ahead into a memory+disk cache; the contract stays the same.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use strata_catalog::RemoteSegment;

use crate::batch_frame::{self, Frame, HEADER_LEN};
use crate::error::PrefetchError;
use crate::index;

/// Smallest ranged GET the reader issues.
const MIN_CHUNK: usize = 64 * 1024;
/// Largest ranged GET the reader issues (a bigger batch is fetched whole).
const MAX_CHUNK: usize = 16 << 20;

#[derive(Debug)]
pub struct RemoteReader {
    store: Arc<dyn ObjectStore>,
    indexes: Mutex<IndexCache>,
}

#[derive(Debug, Default)]
struct IndexCache {
    map: HashMap<String, Bytes>,
    order: VecDeque<String>,
    bytes: usize,
    budget: usize,
}

impl IndexCache {
    fn get(&self, key: &str) -> Option<Bytes> {
        self.map.get(key).cloned()
    }
    fn put(&mut self, key: &str, value: Bytes) {
        if value.len() > self.budget || self.map.contains_key(key) {
            return;
        }
        self.bytes += value.len();
        self.map.insert(key.to_string(), value);
        self.order.push_back(key.to_string());
        while self.bytes > self.budget {
            let Some(old) = self.order.pop_front() else {
                break;
            };
            if let Some(v) = self.map.remove(&old) {
                self.bytes -= v.len();
            }
        }
    }
}

impl RemoteReader {
    /// `index_cache_bytes` bounds the memory held by cached index objects.
    pub fn new(store: Arc<dyn ObjectStore>, index_cache_bytes: usize) -> Self {
        RemoteReader {
            store,
            indexes: Mutex::new(IndexCache {
                budget: index_cache_bytes,
                ..Default::default()
            }),
        }
    }

    async fn index_object(&self, key: &str) -> Result<Bytes, PrefetchError> {
        if let Some(b) = self
            .indexes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(key)
        {
            return Ok(b);
        }
        let bytes = self.store.get(&Path::from(key)).await?.bytes().await?;
        self.indexes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .put(key, bytes.clone());
        Ok(bytes)
    }

    /// Whole batches of `seg` starting with the one holding `offset` (or the
    /// first after it), up to `max_bytes`; with `min_one`, the first batch
    /// even if it is larger. Empty if `offset` is past the segment.
    pub async fn read(
        &self,
        seg: &RemoteSegment,
        offset: i64,
        max_bytes: usize,
        min_one: bool,
    ) -> Result<Bytes, PrefetchError> {
        let idx = self.index_object(&seg.index_key).await?;
        let start = index::position_for_offset(&idx, offset - seg.base_offset);
        let mut cur = Cursor::new(self, seg, start, max_bytes);
        let mut out = BytesMut::new();
        while let Some(f) = cur.next().await? {
            if f.last_offset < offset {
                cur.skip(&f);
                continue;
            }
            let fits = out.len() + f.size <= max_bytes;
            if !(fits || out.is_empty() && min_one) {
                break;
            }
            out.extend_from_slice(&cur.take(&f));
            if out.len() >= max_bytes {
                break;
            }
        }
        Ok(out.freeze())
    }

    /// The first batch of `seg` whose max timestamp is at or after
    /// `timestamp`, with its bytes (to find the exact record), if any.
    pub async fn batch_at_timestamp(
        &self,
        seg: &RemoteSegment,
        timestamp: i64,
    ) -> Result<Option<(Frame, Bytes)>, PrefetchError> {
        let tidx = self.index_object(&seg.time_index_key).await?;
        let rel = index::offset_for_timestamp(&tidx, timestamp);
        let idx = self.index_object(&seg.index_key).await?;
        let start = index::position_for_offset(&idx, rel);
        let mut cur = Cursor::new(self, seg, start, MIN_CHUNK * 4);
        while let Some(f) = cur.next().await? {
            if f.max_timestamp >= timestamp {
                return Ok(Some((f, cur.take(&f))));
            }
            cur.skip(&f);
        }
        Ok(None)
    }
}

/// Sequential batches of one segment object from a start position, fetched
/// in ranged chunks.
struct Cursor<'a> {
    store: &'a Arc<dyn ObjectStore>,
    key: Path,
    size: u64,
    /// Absolute position of `buf[0]`.
    start: u64,
    buf: Bytes,
    at: usize,
    chunk: usize,
}

impl<'a> Cursor<'a> {
    fn new(r: &'a RemoteReader, seg: &RemoteSegment, start: u64, chunk: usize) -> Self {
        Cursor {
            store: &r.store,
            key: Path::from(seg.log_key.as_str()),
            size: seg.size_bytes,
            start,
            buf: Bytes::new(),
            at: 0,
            chunk: chunk.clamp(MIN_CHUNK, MAX_CHUNK),
        }
    }

    fn corrupt(&self, message: String) -> PrefetchError {
        PrefetchError::Corrupt {
            key: self.key.to_string(),
            position: self.start + self.at as u64,
            message,
        }
    }

    /// The next batch's frame, with its bytes in the buffer; None at the end.
    async fn next(&mut self) -> Result<Option<Frame>, PrefetchError> {
        loop {
            let avail = &self.buf[self.at..];
            match batch_frame::parse(avail) {
                Ok(Some(f)) if f.size <= avail.len() => return Ok(Some(f)),
                Ok(Some(f)) => self.refill(f.size).await?,
                Ok(None) => {
                    let pos = self.start + self.at as u64;
                    if pos >= self.size {
                        return Ok(None);
                    }
                    if (self.size - pos) < HEADER_LEN as u64 {
                        return Err(self.corrupt("truncated batch header".into()));
                    }
                    self.refill(HEADER_LEN).await?
                }
                Err(m) => return Err(self.corrupt(m)),
            }
        }
    }

    /// Fetches at least `need` bytes from the current position.
    async fn refill(&mut self, need: usize) -> Result<(), PrefetchError> {
        let from = self.start + self.at as u64;
        let left = self.size.saturating_sub(from);
        if (need as u64) > left {
            return Err(self.corrupt(format!(
                "batch of {need} bytes runs past the end of the {}-byte object",
                self.size
            )));
        }
        let len = (need.max(self.chunk) as u64).min(left);
        self.buf = self.store.get_range(&self.key, from..from + len).await?;
        if (self.buf.len() as u64) < need as u64 {
            return Err(self.corrupt(format!("short read: {} of {need} bytes", self.buf.len())));
        }
        self.start = from;
        self.at = 0;
        Ok(())
    }

    fn take(&mut self, f: &Frame) -> Bytes {
        let b = self.buf.slice(self.at..self.at + f.size);
        self.at += f.size;
        b
    }

    fn skip(&mut self, f: &Frame) {
        self.at += f.size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch_frame::tests::batch;
    use object_store::memory::InMemory;
    use object_store::PutPayload;

    /// A segment at base 1000 of 100 batches of 10 records each, 1 KiB
    /// bodies, timestamps 10 per batch, indexed every 8 KiB.
    async fn segment(store: &Arc<dyn ObjectStore>) -> (RemoteSegment, Vec<Vec<u8>>) {
        let mut log = Vec::new();
        let mut idx = Vec::new();
        let mut tidx = Vec::new();
        let mut batches = Vec::new();
        let mut last_indexed = 0usize;
        for i in 0..100i64 {
            let b = batch(1000 + i * 10, 9, i * 10, 1024 + (i as usize % 3) * 100);
            if log.len() - last_indexed >= 8192 || i == 0 {
                idx.extend_from_slice(&((i * 10) as u32).to_be_bytes());
                idx.extend_from_slice(&(log.len() as u32).to_be_bytes());
                tidx.extend_from_slice(&(i * 10).to_be_bytes());
                tidx.extend_from_slice(&((i * 10) as u32).to_be_bytes());
                last_indexed = log.len();
            }
            log.extend_from_slice(&b);
            batches.push(b);
        }
        for (k, v) in [("s.log", &log), ("s.index", &idx), ("s.timeindex", &tidx)] {
            store
                .put(&Path::from(k), PutPayload::from(v.clone()))
                .await
                .unwrap();
        }
        let seg = RemoteSegment {
            base_offset: 1000,
            last_offset: 1999,
            max_timestamp: 990,
            size_bytes: log.len() as u64,
            crc32c: 0,
            leader_epoch: 0,
            writer_epoch: 1,
            log_key: "s.log".into(),
            index_key: "s.index".into(),
            time_index_key: "s.timeindex".into(),
            producer_snapshot_key: None,
        };
        (seg, batches)
    }

    #[tokio::test]
    async fn reads_whole_batches_from_any_offset_within_max_bytes() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let (seg, batches) = segment(&store).await;
        let r = RemoteReader::new(store, 1 << 20);
        for offset in [1000, 1005, 1234, 1999] {
            let got = r.read(&seg, offset, 5000, true).await.unwrap();
            let first = ((offset - 1000) / 10) as usize;
            let mut want = Vec::new();
            for b in &batches[first..] {
                if want.len() + b.len() > 5000 {
                    break;
                }
                want.extend_from_slice(b);
            }
            assert_eq!(got.as_ref(), want.as_slice(), "offset {offset}");
        }
        // min_one returns an oversized first batch; without it, nothing.
        assert_eq!(
            r.read(&seg, 1000, 10, true).await.unwrap().as_ref(),
            batches[0].as_slice()
        );
        assert!(r.read(&seg, 1000, 10, false).await.unwrap().is_empty());
        // The whole segment in one go, and nothing past it.
        let all: usize = batches.iter().map(Vec::len).sum();
        assert_eq!(r.read(&seg, 0, usize::MAX, true).await.unwrap().len(), all);
        assert!(r.read(&seg, 2000, 1 << 20, true).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn finds_the_first_batch_at_a_timestamp() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let (seg, _) = segment(&store).await;
        let r = RemoteReader::new(store, 1 << 20);
        for (ts, base) in [(0, 1000), (1, 1010), (455, 1460), (990, 1990)] {
            let (f, bytes) = r.batch_at_timestamp(&seg, ts).await.unwrap().unwrap();
            assert_eq!(f.base_offset, base, "timestamp {ts}");
            assert_eq!(bytes.len(), f.size);
        }
        assert!(r.batch_at_timestamp(&seg, 991).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_deleted_object_is_not_found() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let (seg, _) = segment(&store).await;
        store.delete(&Path::from("s.log")).await.unwrap();
        let r = RemoteReader::new(store, 1 << 20);
        assert!(matches!(
            r.read(&seg, 1000, 100, true).await,
            Err(PrefetchError::NotFound(_))
        ));
    }
}
