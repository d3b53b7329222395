//! The bucket's part in a cleaning pass over a tiered, compacted log
//! (docs/compaction.md, "Tiered compaction"). A tiered log's whole log is
//! its remote segments (the catalog's copies are the ones that count; local
//! copies inside the hot window are only read, never cleaned) followed by
//! the local segments not uploaded yet. A pass holds the partition's catalog
//! writer through a [`CompactionLease`], so uploads and retention wait for
//! it; it reads a remote segment from its local copy when one is on disk,
//! else with one GET into `cleaner.remote/`; a remote segment the pass
//! changes is uploaded under new keys, the local copies of everything
//! replaced are dropped, and one conditional PUT of the manifest swaps the
//! cleaned segments in.
//!
//! Owns the download directory; the bucket is reached through the
//! [`TieredPart`] the broker attached to the log's cleaner state
//! (`cleaner_state.rs`) and the pass is handed (the log knows no tiering
//! crate and holds no part).
//! Never decides which records stay (that is `cleaner.rs` and
//! `strata_format::compaction`).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::partition_log::{LogError, PartitionLog};
use super::segment::{file_stem, SegmentSlice, INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX};
pub use super::tiered_part::{
    CleanedSegmentFiles, RemoteLease, RemotePartError, RemoteSegmentInfo, TieredPart,
};

/// Where remote segments are downloaded for a pass (removed at each start).
pub(crate) const DOWNLOAD_DIR: &str = "cleaner.remote";

impl PartitionLog {
    /// The first offset the cleaner has not deduplicated yet: a compacted
    /// tiered log uploads only segments below it.
    pub fn first_dirty_offset(&self) -> i64 {
        super::cleaner_checkpoint::CleanerCheckpoint::load(self.dir()).first_dirty
    }
}

/// One pass's hold on the remote part.
pub(super) struct RemotePass {
    part: Arc<dyn TieredPart>,
    lease: Box<dyn RemoteLease>,
    downloads: PathBuf,
}

/// A segment's bytes as the pass reads them; a downloaded file goes when
/// this is dropped.
pub(super) struct OpenedSegment {
    pub slice: SegmentSlice,
    temp: Option<PathBuf>,
}

impl OpenedSegment {
    pub(super) fn local(slice: SegmentSlice) -> Self {
        OpenedSegment { slice, temp: None }
    }
}

impl Drop for OpenedSegment {
    fn drop(&mut self) {
        if let Some(p) = &self.temp {
            let _ = fs::remove_file(p);
        }
    }
}

/// What a pass knows of the remote part when it starts.
pub(super) enum RemoteView {
    /// The log is all local: nothing in the bucket and remote storage off.
    /// The lease is held for the pass, so tiering cannot start under it.
    Local(Box<dyn RemoteLease>),
    /// These remote segments come first in the log.
    Segments(RemotePass, Vec<RemoteSegmentInfo>),
    /// The catalog is not claimed yet, or a tiering round holds it: no
    /// pass now.
    NotReady,
}

impl RemotePass {
    /// Takes the partition's catalog writer (not ready while a tiering
    /// round holds it).
    pub(super) fn begin(part: Arc<dyn TieredPart>, dir: &Path) -> io::Result<RemoteView> {
        let Some(lease) = part.try_lease() else {
            return Ok(RemoteView::NotReady);
        };
        if lease.nothing_remote() {
            return Ok(RemoteView::Local(lease));
        }
        let Some(segments) = lease.segments() else {
            return Ok(RemoteView::NotReady);
        };
        let downloads = dir.join(DOWNLOAD_DIR);
        let _ = fs::remove_dir_all(&downloads);
        fs::create_dir_all(&downloads)?;
        Ok(RemoteView::Segments(
            RemotePass {
                part,
                lease,
                downloads,
            },
            segments,
        ))
    }

    /// The aborted transactions recorded in the remote segments'
    /// `.txnindex` objects (one GET for each segment that has one).
    pub(super) fn aborted_transactions(
        &self,
        segments: &[RemoteSegmentInfo],
    ) -> Result<Vec<super::txn_index::AbortedTxn>, LogError> {
        let mut out = Vec::new();
        for seg in segments.iter().filter(|s| s.has_txn_index) {
            let bytes = self.lease.txn_index(seg).map_err(remote_error)?;
            out.extend(super::txn_index::decode_entries(&bytes));
        }
        Ok(out)
    }

    /// The bytes of `seg`: its local copy if there is one, else the object.
    pub(super) fn open(
        &self,
        seg: &RemoteSegmentInfo,
        local_copy: Option<&SegmentSlice>,
    ) -> Result<OpenedSegment, LogError> {
        if let Some(slice) = local_copy {
            return Ok(OpenedSegment {
                slice: slice.clone(),
                temp: None,
            });
        }
        let path = self
            .downloads
            .join(format!("{}{LOG_SUFFIX}", file_stem(seg.base_offset)));
        let downloaded = self.lease.download(seg, &path);
        if let Err(e) = downloaded {
            let _ = fs::remove_file(&path);
            return Err(remote_error(e));
        }
        Ok(OpenedSegment {
            slice: SegmentSlice {
                file: Arc::new(fs::File::open(&path)?),
                end: seg.size_bytes,
            },
            temp: Some(path),
        })
    }

    /// Uploads the cleaned version of `original`, whose `.log` and indexes
    /// are in `dir` (named by its base offset).
    pub(super) fn upload(
        &mut self,
        original: &RemoteSegmentInfo,
        dir: &Path,
        max_timestamp: i64,
    ) -> Result<RemoteSegmentInfo, LogError> {
        let stem = file_stem(original.base_offset);
        let cleaned = CleanedSegmentFiles {
            max_timestamp,
            log: dir.join(format!("{stem}{LOG_SUFFIX}")),
            index: dir.join(format!("{stem}{INDEX_SUFFIX}")),
            time_index: dir.join(format!("{stem}{TIME_INDEX_SUFFIX}")),
        };
        self.lease
            .upload_cleaned(original, &cleaned)
            .map_err(remote_error)
    }

    /// Swaps the cleaned segments into the catalog. The local copies of the
    /// replaced segments are deleted first: from then on reads of those
    /// offsets go to the bucket, where the old objects serve until the swap
    /// and the cleaned ones after it.
    pub(super) fn commit(
        &mut self,
        log: &PartitionLog,
        replacements: Vec<(RemoteSegmentInfo, Option<RemoteSegmentInfo>)>,
        delete_delay: Duration,
    ) -> Result<usize, LogError> {
        let Some(copies_end) = replacements.iter().map(|(o, _)| o.next_offset()).max() else {
            return Ok(0);
        };
        log.delete_segments_before(copies_end)?;
        let changed = self
            .lease
            .replace(replacements, delete_delay)
            .map_err(remote_error)?;
        log.set_remote_log_start(self.part.earliest_offset());
        Ok(changed)
    }
}

impl Drop for RemotePass {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.downloads);
    }
}

fn remote_error(e: RemotePartError) -> LogError {
    LogError::Io(io::Error::other(format!("remote part: {e}")))
}
