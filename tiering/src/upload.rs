//! Uploading one sealed segment.
//!
//! Each file goes up as a single PUT, or as a multipart upload above
//! `multipart_threshold`, while its CRC32C is computed; the object is then
//! read back and its size and CRC compared before the segment is recorded in
//! the catalog. Failures are retried with exponential backoff. Object keys
//! carry the writer epoch, so a fenced writer's leftovers never collide with
//! the owner's objects.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart};
use strata_catalog::{PartitionCatalog, RemoteSegment};
use tokio::io::AsyncReadExt;

use crate::error::TieringError;

/// A sealed local segment, described by the partition log.
#[derive(Debug, Clone)]
pub struct SealedSegment {
    pub base_offset: i64,
    pub last_offset: i64,
    pub max_timestamp: i64,
    pub leader_epoch: i32,
    pub log: PathBuf,
    pub index: PathBuf,
    pub time_index: PathBuf,
    pub producer_snapshot: Option<PathBuf>,
    /// The `.txnindex`, if the segment holds abort markers.
    pub txn_index: Option<PathBuf>,
}

#[derive(Debug, Clone)]
pub struct UploadOptions {
    /// Files larger than this use multipart upload.
    pub multipart_threshold: usize,
    /// Part size of multipart uploads.
    pub part_size: usize,
    /// Parts in flight per file.
    pub part_concurrency: usize,
    /// Attempts per file before giving up (≥ 1).
    pub attempts: u32,
    pub initial_backoff: Duration,
    pub max_backoff: Duration,
}

impl Default for UploadOptions {
    fn default() -> Self {
        UploadOptions {
            multipart_threshold: 16 << 20,
            part_size: 8 << 20,
            part_concurrency: 4,
            attempts: 5,
            initial_backoff: Duration::from_millis(200),
            max_backoff: Duration::from_secs(10),
        }
    }
}

/// Uploads `seg` and records it in `catalog` (which must be the partition's
/// writer). Returns the catalog entry. Only after this returns may the local
/// segment be deleted.
pub async fn upload_segment(
    store: &Arc<dyn ObjectStore>,
    catalog: &mut PartitionCatalog,
    seg: &SealedSegment,
    opts: &UploadOptions,
) -> Result<RemoteSegment, TieringError> {
    let epoch = catalog.writer_epoch().unwrap_or(0);
    let path = catalog.path().clone();
    let key = |kind: &str| path.segment_object(seg.base_offset, epoch, kind);
    let (log_key, index_key, time_key) = (key("log"), key("index"), key("timeindex"));
    let (size, crc) = upload_file(store, &seg.log, &log_key, opts).await?;
    upload_file(store, &seg.index, &index_key, opts).await?;
    upload_file(store, &seg.time_index, &time_key, opts).await?;
    let snapshot_key = match &seg.producer_snapshot {
        Some(p) => {
            let k = key("snapshot");
            upload_file(store, p, &k, opts).await?;
            Some(k.to_string())
        }
        None => None,
    };
    let txn_index_key = match &seg.txn_index {
        Some(p) => {
            let k = key("txnindex");
            upload_file(store, p, &k, opts).await?;
            Some(k.to_string())
        }
        None => None,
    };
    let remote = RemoteSegment {
        base_offset: seg.base_offset,
        last_offset: seg.last_offset,
        max_timestamp: seg.max_timestamp,
        size_bytes: size,
        crc32c: crc,
        leader_epoch: seg.leader_epoch,
        writer_epoch: epoch,
        log_key: log_key.to_string(),
        index_key: index_key.to_string(),
        time_index_key: time_key.to_string(),
        producer_snapshot_key: snapshot_key,
        txn_index_key,
    };
    catalog.add_segment(remote.clone()).await?;
    tracing::info!(topic = %path.topic, partition = path.partition, base_offset = seg.base_offset,
        last_offset = seg.last_offset, bytes = size, "segment tiered");
    Ok(remote)
}

/// Uploads one file with retries; returns (size, CRC32C) once verified.
pub(crate) async fn upload_file(
    store: &Arc<dyn ObjectStore>,
    local: &Path,
    key: &ObjectPath,
    opts: &UploadOptions,
) -> Result<(u64, u32), TieringError> {
    let mut backoff = opts.initial_backoff;
    let mut attempt = 1;
    loop {
        match upload_once(store, local, key, opts).await {
            Ok(done) => return Ok(done),
            Err(e) if e.is_retriable() && attempt < opts.attempts.max(1) => {
                tracing::warn!(key = %key, attempt, error = %e, backoff_ms = backoff.as_millis() as u64,
                    "upload failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(opts.max_backoff);
                attempt += 1;
            }
            Err(e) => return Err(e),
        }
    }
}

async fn upload_once(
    store: &Arc<dyn ObjectStore>,
    local: &Path,
    key: &ObjectPath,
    opts: &UploadOptions,
) -> Result<(u64, u32), TieringError> {
    let local_err = |source| TieringError::Local {
        path: local.display().to_string(),
        source,
    };
    let mut file = tokio::fs::File::open(local).await.map_err(local_err)?;
    let len = file.metadata().await.map_err(local_err)?.len();
    let mut crc = 0u32;
    if (len as usize) <= opts.multipart_threshold {
        let mut buf = Vec::with_capacity(len as usize);
        file.read_to_end(&mut buf).await.map_err(local_err)?;
        crc = crc32c::crc32c(&buf);
        store.put(key, PutPayload::from(Bytes::from(buf))).await?;
    } else {
        let upload = store.put_multipart(key).await?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, opts.part_size);
        let mut chunk = vec![0u8; opts.part_size.max(1)];
        loop {
            let n = file.read(&mut chunk).await.map_err(local_err)?;
            if n == 0 {
                break;
            }
            crc = crc32c::crc32c_append(crc, &chunk[..n]);
            writer
                .wait_for_capacity(opts.part_concurrency.max(1))
                .await?;
            writer.write(&chunk[..n]);
        }
        writer.finish().await?;
    }
    verify(store, key, len, crc).await?;
    Ok((len, crc))
}

/// Reads the object back: its size and CRC32C must match what was sent.
async fn verify(
    store: &Arc<dyn ObjectStore>,
    key: &ObjectPath,
    len: u64,
    crc: u32,
) -> Result<(), TieringError> {
    let meta = store.head(key).await?;
    if meta.size != len {
        return Err(TieringError::Verification {
            key: key.to_string(),
            message: format!("size {} != {len}", meta.size),
        });
    }
    let bytes = store.get(key).await?.bytes().await?;
    let remote_crc = crc32c::crc32c(&bytes);
    if remote_crc != crc {
        return Err(TieringError::Verification {
            key: key.to_string(),
            message: format!("crc32c {remote_crc:#010x} != {crc:#010x}"),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::local::LocalFileSystem;
    use object_store::memory::InMemory;
    use strata_catalog::{CatalogError, PartitionPath};

    fn write_segment(dir: &Path, base: i64, log_len: usize) -> SealedSegment {
        let stem = format!("{base:020}");
        let log: Vec<u8> = (0..log_len).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(dir.join(format!("{stem}.log")), &log).unwrap();
        std::fs::write(dir.join(format!("{stem}.index")), [1u8; 16]).unwrap();
        std::fs::write(dir.join(format!("{stem}.timeindex")), [2u8; 24]).unwrap();
        std::fs::write(dir.join(format!("{stem}.snapshot")), [3u8; 10]).unwrap();
        SealedSegment {
            base_offset: base,
            last_offset: base + 99,
            max_timestamp: 1_000 + base,
            leader_epoch: 0,
            log: dir.join(format!("{stem}.log")),
            index: dir.join(format!("{stem}.index")),
            time_index: dir.join(format!("{stem}.timeindex")),
            producer_snapshot: Some(dir.join(format!("{stem}.snapshot"))),
            txn_index: None,
        }
    }

    async fn roundtrip(store: Arc<dyn ObjectStore>) {
        let dir = tempfile::tempdir().unwrap();
        let path = PartitionPath::new("p", "t", "tid", 0);
        let mut cat = PartitionCatalog::claim(store.clone(), path.clone(), "b0")
            .await
            .unwrap();
        let opts = UploadOptions {
            multipart_threshold: 64 * 1024,
            part_size: 5 << 20,
            ..Default::default()
        };
        let small = write_segment(dir.path(), 0, 10_000);
        let big = write_segment(dir.path(), 100, 6 << 20); // multipart, two parts
        for seg in [&small, &big] {
            let r = upload_segment(&store, &mut cat, seg, &opts).await.unwrap();
            let remote = store
                .get(&ObjectPath::from(r.log_key.clone()))
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            assert_eq!(remote.as_ref(), std::fs::read(&seg.log).unwrap().as_slice());
            assert_eq!(r.crc32c, crc32c::crc32c(&remote));
            assert!(r.producer_snapshot_key.is_some());
        }
        let view = PartitionCatalog::open(store, path).await.unwrap();
        assert_eq!(view.manifest().segments.len(), 2);
        assert_eq!(
            view.manifest().segment_for_offset(150).unwrap().size_bytes,
            6 << 20
        );
    }

    #[tokio::test]
    async fn uploads_and_records_segments_in_memory() {
        roundtrip(Arc::new(InMemory::new())).await;
    }

    #[tokio::test]
    async fn uploads_and_records_segments_on_local_filesystem() {
        let bucket = tempfile::tempdir().unwrap();
        roundtrip(Arc::new(
            LocalFileSystem::new_with_prefix(bucket.path()).unwrap(),
        ))
        .await;
    }

    #[tokio::test]
    async fn a_fenced_writer_uploads_but_records_nothing() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let dir = tempfile::tempdir().unwrap();
        let path = PartitionPath::new("", "t", "tid", 0);
        let mut old = PartitionCatalog::claim(store.clone(), path.clone(), "old")
            .await
            .unwrap();
        let _new = PartitionCatalog::claim(store.clone(), path.clone(), "new")
            .await
            .unwrap();
        let seg = write_segment(dir.path(), 0, 1000);
        let err = upload_segment(&store, &mut old, &seg, &UploadOptions::default())
            .await
            .unwrap_err();
        assert!(
            matches!(err, TieringError::Catalog(CatalogError::Fenced { .. })),
            "{err}"
        );
        assert!(!err.is_retriable());
        let view = PartitionCatalog::open(store, path).await.unwrap();
        assert!(view.manifest().segments.is_empty());
    }

    #[tokio::test]
    async fn a_missing_local_file_is_not_retried() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let path = PartitionPath::new("", "t", "tid", 0);
        let mut cat = PartitionCatalog::claim(store.clone(), path, "b")
            .await
            .unwrap();
        let mut seg = write_segment(tempfile::tempdir().unwrap().path(), 0, 10);
        seg.log = PathBuf::from("/nonexistent/segment.log");
        let err = upload_segment(&store, &mut cat, &seg, &UploadOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(err, TieringError::Local { .. }));
        assert!(cat.manifest().segments.is_empty());
    }
}
