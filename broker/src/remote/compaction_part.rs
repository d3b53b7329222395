//! The bucket's side of a tiered log's cleaning pass, as the log asks for
//! it (`log::tiered_part`'s traits), over the tiering manager's
//! `CompactionLease`: the catalog's segments, their objects, and the
//! conditional swap of cleaned segments into the manifest. Attached to a
//! log by the tiering sync (`sync.rs`). The cleaner runs on its own
//! threads; each call blocks one of them on the tiering runtime.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use strata_catalog::RemoteSegment;
use strata_tiering::{CompactionLease, RemoteLogManager, RemotePartition, SealedSegment};

use crate::log::tiered_part::{
    CleanedSegmentFiles, RemoteLease, RemotePartError, RemoteSegmentInfo, TieredPart,
};

/// A tiered log's remote side: its partition in the tiering manager.
pub struct BucketPart {
    pub manager: Arc<RemoteLogManager>,
    pub remote: Arc<RemotePartition>,
    /// The runtime the object store client lives on; cleaner threads
    /// block on it.
    pub runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for BucketPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BucketPart")
            .field("topic", &self.remote.topic)
            .field("partition", &self.remote.partition)
            .finish()
    }
}

fn info(s: &RemoteSegment) -> RemoteSegmentInfo {
    RemoteSegmentInfo {
        base_offset: s.base_offset,
        last_offset: s.last_offset,
        max_timestamp: s.max_timestamp,
        size_bytes: s.size_bytes,
        leader_epoch: s.leader_epoch,
        has_txn_index: s.txn_index_key.is_some(),
    }
}

impl TieredPart for BucketPart {
    fn segments(&self) -> Vec<RemoteSegmentInfo> {
        self.remote.manifest().segments.iter().map(info).collect()
    }

    fn try_lease(&self) -> Option<Box<dyn RemoteLease>> {
        let lease = self.manager.try_compaction_lease(&self.remote)?;
        let segments = lease
            .segments()
            .map(|s| s.iter().map(|s| (s.base_offset, s.clone())).collect())
            .unwrap_or_default();
        Some(Box::new(BucketLease {
            lease,
            runtime: self.runtime.clone(),
            listed: segments,
            uploaded: HashMap::new(),
        }))
    }

    fn earliest_offset(&self) -> Option<i64> {
        self.remote.manifest().earliest_offset()
    }
}

/// The catalog's writer for one pass, and the catalog's segments it saw
/// and uploaded, by base offset (the log names segments by their
/// [`RemoteSegmentInfo`]).
struct BucketLease {
    lease: CompactionLease,
    runtime: tokio::runtime::Handle,
    listed: HashMap<i64, RemoteSegment>,
    uploaded: HashMap<i64, RemoteSegment>,
}

fn failed(e: impl std::fmt::Display) -> RemotePartError {
    e.to_string()
}

impl BucketLease {
    /// The catalog's segment the log means by `seg`.
    fn listed(&self, seg: &RemoteSegmentInfo) -> Result<&RemoteSegment, RemotePartError> {
        self.listed
            .get(&seg.base_offset)
            .filter(|s| s.last_offset == seg.last_offset)
            .ok_or_else(|| {
                format!(
                    "segment {}..={} is not in the catalog this pass holds",
                    seg.base_offset, seg.last_offset
                )
            })
    }
}

impl RemoteLease for BucketLease {
    fn nothing_remote(&self) -> bool {
        self.lease.nothing_remote()
    }

    fn segments(&self) -> Option<Vec<RemoteSegmentInfo>> {
        self.lease.segments().map(|s| s.iter().map(info).collect())
    }

    fn txn_index(&self, seg: &RemoteSegmentInfo) -> Result<Vec<u8>, RemotePartError> {
        let seg = self.listed(seg)?;
        self.runtime
            .block_on(self.lease.txn_index(seg))
            .map(|b| b.to_vec())
            .map_err(failed)
    }

    fn download(&self, seg: &RemoteSegmentInfo, dest: &Path) -> Result<(), RemotePartError> {
        let seg = self.listed(seg)?;
        self.runtime
            .block_on(self.lease.download(seg, dest))
            .map_err(failed)
    }

    fn upload_cleaned(
        &mut self,
        original: &RemoteSegmentInfo,
        cleaned: &CleanedSegmentFiles,
    ) -> Result<RemoteSegmentInfo, RemotePartError> {
        let original = self.listed(original)?.clone();
        let files = SealedSegment {
            base_offset: original.base_offset,
            last_offset: original.last_offset,
            max_timestamp: cleaned.max_timestamp,
            leader_epoch: original.leader_epoch,
            log: cleaned.log.clone(),
            index: cleaned.index.clone(),
            time_index: cleaned.time_index.clone(),
            producer_snapshot: None,
            txn_index: None,
        };
        let uploaded = self
            .runtime
            .block_on(self.lease.upload_cleaned(&original, &files))
            .map_err(failed)?;
        let out = info(&uploaded);
        self.uploaded.insert(uploaded.base_offset, uploaded);
        Ok(out)
    }

    fn replace(
        &mut self,
        replacements: Vec<(RemoteSegmentInfo, Option<RemoteSegmentInfo>)>,
        delete_delay: Duration,
    ) -> Result<usize, RemotePartError> {
        let mut swaps = Vec::with_capacity(replacements.len());
        for (original, cleaned) in replacements {
            let original = self.listed(&original)?.clone();
            let cleaned = match cleaned {
                None => None,
                Some(c) => Some(
                    self.uploaded
                        .get(&c.base_offset)
                        .filter(|u| u.last_offset == c.last_offset)
                        .cloned()
                        .ok_or_else(|| {
                            format!(
                                "cleaned segment {}..={} was not uploaded by this pass",
                                c.base_offset, c.last_offset
                            )
                        })?,
                ),
            };
            swaps.push((original, cleaned));
        }
        self.runtime
            .block_on(self.lease.replace(swaps, delete_delay))
            .map_err(failed)
    }
}
