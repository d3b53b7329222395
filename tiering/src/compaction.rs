//! The bucket's side of compacting a tiered partition (docs/compaction.md).
//! The broker's cleaner takes a [`CompactionLease`] for a pass: it holds the
//! partition's catalog writer, so uploads and retention wait until the pass
//! ends. Through it the cleaner reads remote segments whole, uploads the
//! segments it rewrote under new keys, and swaps them into the manifest
//! with one conditional PUT: readers see the old set or the new one, never
//! a mix. The originals' objects are deleted `delete_delay` later, once
//! reads planned from the old manifest have drained; a crash before that
//! leaves them unreferenced, and the next claim deletes them as orphans.
//!
//! This module never decides what a segment keeps: that is the cleaner's.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use object_store::{ObjectStore, ObjectStoreExt};
use strata_catalog::{PartitionCatalog, RemoteSegment};
use tokio::io::AsyncWriteExt;
use tokio::sync::OwnedMutexGuard;

use crate::error::TieringError;
use crate::manager::{RemoteLogManager, RemotePartition};
use crate::upload::{upload_file, SealedSegment, UploadOptions};

/// A pass's hold on a tiered partition's catalog writer.
pub struct CompactionLease {
    writer: OwnedMutexGuard<Option<PartitionCatalog>>,
    rp: Arc<RemotePartition>,
    store: Arc<dyn ObjectStore>,
    upload: UploadOptions,
}

impl RemoteLogManager {
    /// Holds the partition's catalog writer until the lease is dropped;
    /// None while the tiering task is in a round (try again later), and for
    /// good once another broker fenced this one.
    pub fn try_compaction_lease(&self, rp: &Arc<RemotePartition>) -> Option<CompactionLease> {
        if rp.stats.fenced.load(Ordering::Relaxed) {
            return None;
        }
        Some(CompactionLease {
            writer: rp.writer.clone().try_lock_owned().ok()?,
            rp: rp.clone(),
            store: self.store().clone(),
            upload: self.upload_options().clone(),
        })
    }
}

impl CompactionLease {
    /// The remote segments, oldest first, if this broker owns the catalog.
    pub fn segments(&self) -> Option<&[RemoteSegment]> {
        self.writer
            .as_ref()
            .map(|c| c.manifest().segments.as_slice())
    }

    /// Remote storage is off for the partition and the bucket holds
    /// nothing of it: the local log is the whole log.
    pub fn nothing_remote(&self) -> bool {
        self.writer.is_none() && self.rp.nothing_remote.load(Ordering::Relaxed)
    }

    /// Reads a remote segment's `.log` object whole into `dest` (one GET),
    /// checking its size and CRC32C against the catalog.
    /// The bytes of `seg`'s `.txnindex` object (empty when it has none):
    /// which of its transactions were aborted.
    pub async fn txn_index(&self, seg: &RemoteSegment) -> Result<bytes::Bytes, TieringError> {
        match &seg.txn_index_key {
            None => Ok(bytes::Bytes::new()),
            Some(key) => {
                let key = object_store::path::Path::from(key.as_str());
                Ok(self.store.get(&key).await?.bytes().await?)
            }
        }
    }

    pub async fn download(&self, seg: &RemoteSegment, dest: &Path) -> Result<(), TieringError> {
        let local_err = |source| TieringError::Local {
            path: dest.display().to_string(),
            source,
        };
        let key = object_store::path::Path::from(seg.log_key.as_str());
        let mut stream = self.store.get(&key).await?.into_stream();
        let mut file = tokio::fs::File::create(dest).await.map_err(local_err)?;
        let (mut size, mut crc) = (0u64, 0u32);
        use futures_util::StreamExt;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk?;
            crc = crc32c::crc32c_append(crc, &chunk);
            size += chunk.len() as u64;
            file.write_all(&chunk).await.map_err(local_err)?;
        }
        file.flush().await.map_err(local_err)?;
        if size != seg.size_bytes || crc != seg.crc32c {
            return Err(TieringError::Verification {
                key: seg.log_key.clone(),
                message: format!(
                    "read {size} bytes with crc32c {crc:#010x}; the catalog says {} bytes, {:#010x}",
                    seg.size_bytes, seg.crc32c
                ),
            });
        }
        self.rp
            .stats
            .compaction_bytes_read
            .fetch_add(size, Ordering::Relaxed);
        Ok(())
    }

    /// Uploads the cleaned version of `original` (its `.log` and indexes in
    /// `cleaned`) under new keys; records nothing. The producer snapshot
    /// object of the original is kept.
    pub async fn upload_cleaned(
        &self,
        original: &RemoteSegment,
        cleaned: &SealedSegment,
    ) -> Result<RemoteSegment, TieringError> {
        let cat = self.writer.as_ref().ok_or_else(not_owner)?;
        let epoch = cat.writer_epoch().unwrap_or(0);
        let tag = format!(
            "c{}-{:x}",
            cat.manifest().version,
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        );
        let key = |kind: &str| {
            cat.path()
                .cleaned_segment_object(original.base_offset, epoch, &tag, kind)
        };
        let (log_key, index_key, time_key) = (key("log"), key("index"), key("timeindex"));
        let (size, crc) = upload_file(&self.store, &cleaned.log, &log_key, &self.upload).await?;
        upload_file(&self.store, &cleaned.index, &index_key, &self.upload).await?;
        upload_file(&self.store, &cleaned.time_index, &time_key, &self.upload).await?;
        self.rp
            .stats
            .compaction_bytes_written
            .fetch_add(size, Ordering::Relaxed);
        Ok(RemoteSegment {
            base_offset: original.base_offset,
            // The offsets it covers stay the original's, gaps included.
            last_offset: original.last_offset,
            max_timestamp: cleaned.max_timestamp.max(0).min(original.max_timestamp),
            size_bytes: size,
            crc32c: crc,
            leader_epoch: original.leader_epoch,
            writer_epoch: epoch,
            log_key: log_key.to_string(),
            index_key: index_key.to_string(),
            time_index_key: time_key.to_string(),
            producer_snapshot_key: original.producer_snapshot_key.clone(),
            // Markers are kept by compaction: the aborted transactions
            // are the original's (the object is shared, as the snapshot).
            txn_index_key: original.txn_index_key.clone(),
        })
    }

    /// Swaps the cleaned segments in (`None`: the original kept nothing),
    /// publishes the manifest to readers, and deletes the originals'
    /// objects after `delete_delay`. A replacement whose original is no
    /// longer in the manifest (retention removed it meanwhile) is dropped
    /// and its new objects deleted. Returns how many segments changed.
    pub async fn replace(
        &mut self,
        replacements: Vec<(RemoteSegment, Option<RemoteSegment>)>,
        delete_delay: Duration,
    ) -> Result<usize, TieringError> {
        let cat = self.writer.as_mut().ok_or_else(not_owner)?;
        let replaced = cat.replace_segments(&replacements).await?;
        self.rp.publish(cat.manifest());
        let dropped: Vec<RemoteSegment> = replacements
            .into_iter()
            .filter(|(old, _)| !replaced.contains(old))
            .filter_map(|(_, new)| new)
            .collect();
        let mut doomed = cat.unreferenced_keys(&replaced);
        doomed.extend(cat.unreferenced_keys(&dropped));
        let store = self.store.clone();
        let (topic, partition) = (self.rp.topic.clone(), self.rp.partition);
        tokio::spawn(async move {
            tokio::time::sleep(delete_delay).await;
            if let Err(e) = strata_catalog::store::delete_keys(&*store, &doomed).await {
                tracing::warn!(%topic, partition, error = %e,
                    "deleting objects replaced by compaction failed; the next claim removes them");
            }
        });
        Ok(replaced.len())
    }
}

fn not_owner() -> TieringError {
    TieringError::Catalog(strata_catalog::CatalogError::Fenced {
        mine: 0,
        current: 0,
        owner: "no catalog writer on this broker yet".into(),
    })
}
