//! [`LocalLog`] for the broker's partitions: the tiering manager's window
//! onto one partition's log and role, with the topic's live configuration
//! turned into a [`TieringPolicy`].

use std::sync::Arc;

use strata_tiering::{LocalLog, LocalSegmentInfo, SealedSegment, TieringPolicy};

use std::path::PathBuf;

use crate::config::BrokerConfig;
use crate::log::sealed::SealedSegmentFiles;
use crate::log::{LogError, PartitionLog};
use strata_storage::partition::Partition;

pub struct LocalLogView {
    pub partition: Arc<Partition>,
    pub broker: Arc<BrokerConfig>,
}

/// Under the data directory, where copies of segment tails are made for
/// upload (a name that is no partition directory's).
const SCRATCH_DIR: &str = "tiering-scratch";

impl LocalLogView {
    fn log(&self) -> &PartitionLog {
        self.partition.log()
    }

    fn sealed(&self, s: SealedSegmentFiles) -> SealedSegment {
        SealedSegment {
            base_offset: s.base_offset,
            last_offset: s.last_offset,
            max_timestamp: s.max_timestamp,
            // The epoch of its last batch: where a replica that starts
            // at the bucket's end resumes its epoch cache.
            leader_epoch: self.log().epoch_of_offset(s.last_offset),
            log: s.log,
            index: s.index,
            time_index: s.time_index,
            producer_snapshot: s.producer_snapshot,
            txn_index: s.txn_index,
        }
    }

    fn scratch_dir(&self, from: i64) -> PathBuf {
        let data_dir = self.log().dir().parent().unwrap_or(self.log().dir());
        data_dir.join(SCRATCH_DIR).join(format!(
            "{}-{}-{from}",
            self.log().topic(),
            self.log().partition()
        ))
    }
}

impl LocalLog for LocalLogView {
    fn topic(&self) -> &str {
        self.log().topic()
    }
    fn partition(&self) -> i32 {
        self.log().partition()
    }
    fn policy(&self) -> TieringPolicy {
        let c = self.log().config();
        TieringPolicy {
            remote_enabled: super::tiering_enabled(&self.broker, self.log().topic(), &c),
            // `cleanup.policy=compact` alone: the remote part lives until
            // compacted away, as the local one does.
            retention_ms: if c.delete_retention_applies {
                c.retention_ms
            } else {
                -1
            },
            retention_bytes: if c.delete_retention_applies {
                c.retention_bytes
            } else {
                -1
            },
            local_retention_ms: c.effective_local_retention_ms(),
            local_retention_bytes: c.effective_local_retention_bytes(),
        }
    }
    fn sealed_segments(&self) -> Vec<LocalSegmentInfo> {
        self.log()
            .sealed_segment_files()
            .into_iter()
            .map(|s| LocalSegmentInfo {
                size_bytes: s.size_bytes,
                retention_timestamp: s.retention_timestamp,
                segment: self.sealed(s),
            })
            .collect()
    }
    fn copy_segment_tail(&self, seg: &SealedSegment, from: i64) -> Result<SealedSegment, String> {
        let dir = self.scratch_dir(from);
        self.log()
            .copy_segment_tail(seg.base_offset, from, &dir)
            .map(|s| self.sealed(s))
            .map_err(|e| e.to_string())
    }
    fn release_copy(&self, copy: &SealedSegment) {
        // Only the copy's own files: the producer snapshot is the log's.
        let mut files = vec![&copy.log, &copy.index, &copy.time_index];
        files.extend(copy.txn_index.as_ref());
        for f in files {
            if let Err(e) = std::fs::remove_file(f) {
                if e.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(file = %f.display(), error = %e, "cannot remove a segment copy");
                }
            }
        }
        let _ = std::fs::remove_dir(self.scratch_dir(copy.base_offset));
    }
    fn local_size_bytes(&self) -> u64 {
        self.log().size_bytes()
    }
    fn roll_if_expired(&self, now_ms: i64) {
        match self.log().roll_if_expired(now_ms) {
            Ok(_) | Err(LogError::Closed) => {}
            Err(e) => {
                tracing::error!(topic = %self.log().topic(), partition = self.log().partition(),
                error = %e, "sealing an expired segment failed")
            }
        }
    }
    fn delete_local_before(&self, offset: i64) -> Result<usize, String> {
        match self.log().delete_segments_before(offset) {
            Ok(n) => Ok(n),
            Err(LogError::Closed) => Ok(0),
            Err(e) => Err(e.to_string()),
        }
    }
    fn set_remote_log_start(&self, offset: Option<i64>) {
        self.log().set_remote_log_start(offset);
    }
    fn remote_log_start_unknown(&self) {
        self.log().mark_remote_log_start_unknown();
    }
    fn deleted_before(&self) -> i64 {
        self.log().deleted_before()
    }
    fn is_closed(&self) -> bool {
        self.log().is_closed()
    }
    /// Only the leader uploads and enforces retention through the
    /// catalog; a follower reads it (docs/tiering-in-a-cluster.md).
    fn is_writer(&self) -> bool {
        self.partition.is_leader()
    }
    fn leader_epoch(&self) -> Option<i32> {
        self.partition.cluster_leader_epoch()
    }
    fn upload_end(&self) -> Option<i64> {
        // A compacted log's segments go to the bucket once cleaned: the
        // bucket's part is always clean when a pass starts.
        self.log()
            .config()
            .compacted
            .then(|| self.log().first_dirty_offset())
    }
}
