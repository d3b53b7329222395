//! An `ObjectStore` that counts the requests it passes on, by kind (PUT,
//! GET, HEAD, LIST, DELETE, COPY), and the bytes each moved, so what
//! tiering and a catch-up cost per GiB can be read off `/metrics`
//! (request-priced stores bill PUT/COPY/LIST apart from GET/HEAD).
//!
//! Counts are of calls made through the `object_store` API: a multipart
//! upload counts one PUT to start it, one per part and one to complete it,
//! as S3 bills it; a LIST call counts once however many pages its stream
//! fetches; retries inside the client count once. It changes nothing it
//! forwards.

use std::fmt;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result, UploadPart,
};

/// The kinds of request counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestKind {
    Put,
    Get,
    Head,
    List,
    Delete,
    Copy,
}

impl RequestKind {
    pub const ALL: [RequestKind; 6] = [
        RequestKind::Put,
        RequestKind::Get,
        RequestKind::Head,
        RequestKind::List,
        RequestKind::Delete,
        RequestKind::Copy,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RequestKind::Put => "PUT",
            RequestKind::Get => "GET",
            RequestKind::Head => "HEAD",
            RequestKind::List => "LIST",
            RequestKind::Delete => "DELETE",
            RequestKind::Copy => "COPY",
        }
    }
}

/// Requests and bytes per kind (bytes: sent for PUT, received for GET).
#[derive(Debug, Default)]
pub struct StoreCounters {
    requests: [AtomicU64; 6],
    errors: [AtomicU64; 6],
    bytes: [AtomicU64; 6],
}

impl StoreCounters {
    fn add(&self, kind: RequestKind, ok: bool, bytes: u64) {
        let i = kind as usize;
        self.requests[i].fetch_add(1, Ordering::Relaxed);
        if !ok {
            self.errors[i].fetch_add(1, Ordering::Relaxed);
        }
        self.bytes[i].fetch_add(bytes, Ordering::Relaxed);
    }

    /// (requests, failed requests, bytes) of one kind so far.
    pub fn get(&self, kind: RequestKind) -> (u64, u64, u64) {
        let i = kind as usize;
        (
            self.requests[i].load(Ordering::Relaxed),
            self.errors[i].load(Ordering::Relaxed),
            self.bytes[i].load(Ordering::Relaxed),
        )
    }
}

/// Every request the process's buckets made (one object store per
/// process in practice; tests that open several share the counts).
pub static STORE_REQUESTS: std::sync::LazyLock<Arc<StoreCounters>> =
    std::sync::LazyLock::new(|| Arc::new(StoreCounters::default()));

/// Counts the requests made through `inner` into `counters`.
#[derive(Debug)]
pub struct CountingStore {
    inner: Arc<dyn ObjectStore>,
    counters: Arc<StoreCounters>,
}

impl CountingStore {
    pub fn new(inner: Arc<dyn ObjectStore>, counters: Arc<StoreCounters>) -> Self {
        CountingStore { inner, counters }
    }
}

impl fmt::Display for CountingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.inner)
    }
}

#[async_trait]
impl ObjectStore for CountingStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let n = payload.content_length() as u64;
        let r = self.inner.put_opts(location, payload, opts).await;
        self.counters.add(RequestKind::Put, r.is_ok(), n);
        r
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let r = self.inner.put_multipart_opts(location, opts).await;
        self.counters.add(RequestKind::Put, r.is_ok(), 0);
        Ok(Box::new(CountingUpload {
            inner: r?,
            counters: self.counters.clone(),
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let kind = if options.head {
            RequestKind::Head
        } else {
            RequestKind::Get
        };
        let r = self.inner.get_opts(location, options).await;
        let bytes = match &r {
            Ok(g) if kind == RequestKind::Get => g.range.end.saturating_sub(g.range.start),
            _ => 0,
        };
        self.counters.add(kind, r.is_ok(), bytes);
        r
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let r = self.inner.get_ranges(location, ranges).await;
        let bytes = r
            .as_ref()
            .map_or(0, |v| v.iter().map(|b| b.len() as u64).sum());
        self.counters.add(RequestKind::Get, r.is_ok(), bytes);
        r
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        let counters = self.counters.clone();
        self.inner
            .delete_stream(locations)
            .map(move |r| {
                counters.add(RequestKind::Delete, r.is_ok(), 0);
                r
            })
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.counters.add(RequestKind::List, true, 0);
        self.inner.list(prefix)
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.counters.add(RequestKind::List, true, 0);
        self.inner.list_with_offset(prefix, offset)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let r = self.inner.list_with_delimiter(prefix).await;
        self.counters.add(RequestKind::List, r.is_ok(), 0);
        r
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        let r = self.inner.copy_opts(from, to, options).await;
        self.counters.add(RequestKind::Copy, r.is_ok(), 0);
        r
    }
}

/// A multipart upload whose parts and completion count as PUTs.
#[derive(Debug)]
struct CountingUpload {
    inner: Box<dyn MultipartUpload>,
    counters: Arc<StoreCounters>,
}

#[async_trait]
impl MultipartUpload for CountingUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let n = data.content_length() as u64;
        let counters = self.counters.clone();
        let part = self.inner.put_part(data);
        Box::pin(async move {
            let r = part.await;
            counters.add(RequestKind::Put, r.is_ok(), n);
            r
        })
    }

    async fn complete(&mut self) -> Result<PutResult> {
        let r = self.inner.complete().await;
        self.counters.add(RequestKind::Put, r.is_ok(), 0);
        r
    }

    async fn abort(&mut self) -> Result<()> {
        let r = self.inner.abort().await;
        self.counters.add(RequestKind::Delete, r.is_ok(), 0);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;
    use object_store::ObjectStoreExt;

    #[tokio::test]
    async fn requests_and_bytes_are_counted_by_kind() {
        let counters = Arc::new(StoreCounters::default());
        let store = CountingStore::new(Arc::new(InMemory::new()), counters.clone());
        let a = Path::from("a");
        store
            .put(&a, PutPayload::from(vec![7u8; 100]))
            .await
            .unwrap();
        let mut up = store.put_multipart(&Path::from("b")).await.unwrap();
        up.put_part(PutPayload::from(vec![1u8; 30])).await.unwrap();
        up.put_part(PutPayload::from(vec![2u8; 20])).await.unwrap();
        up.complete().await.unwrap();
        assert_eq!(store.get_range(&a, 10..50).await.unwrap().len(), 40);
        assert_eq!(
            store.get(&a).await.unwrap().bytes().await.unwrap().len(),
            100
        );
        store.head(&a).await.unwrap();
        assert!(store.get(&Path::from("missing")).await.is_err());
        let listed: Vec<_> = store.list(None).collect().await;
        assert_eq!(listed.len(), 2);
        store.copy(&a, &Path::from("c")).await.unwrap();
        store.delete(&a).await.unwrap();
        // PUT: one put, multipart start + 2 parts + complete.
        assert_eq!(counters.get(RequestKind::Put), (5, 0, 150));
        assert_eq!(counters.get(RequestKind::Get), (3, 1, 140));
        assert_eq!(counters.get(RequestKind::Head).0, 1);
        assert_eq!(counters.get(RequestKind::List).0, 1);
        assert_eq!(counters.get(RequestKind::Copy).0, 1);
        assert_eq!(counters.get(RequestKind::Delete), (1, 0, 0));
    }
}
