//! [`TieredPart`]: what a partition log knows of its remote side, so that
//! a cleaning pass can cover the bucket's segments (`cleaner_remote.rs`).
//! Traits and plain values only: the log knows no bucket, no catalog and
//! no tiering manager; the broker's tiering glue implements them
//! (`remote/compaction_part.rs`). Owns no files and does no I/O.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// A segment in the bucket's part of a log, as the cleaner sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteSegmentInfo {
    pub base_offset: i64,
    pub last_offset: i64,
    /// Largest record timestamp in the segment.
    pub max_timestamp: i64,
    pub size_bytes: u64,
    pub leader_epoch: i32,
    /// The segment has a `.txnindex` (aborted transactions).
    pub has_txn_index: bool,
}

impl RemoteSegmentInfo {
    pub fn next_offset(&self) -> i64 {
        self.last_offset + 1
    }
}

/// The files of a cleaned segment to upload in place of a remote one.
#[derive(Debug, Clone)]
pub struct CleanedSegmentFiles {
    pub max_timestamp: i64,
    pub log: PathBuf,
    pub index: PathBuf,
    pub time_index: PathBuf,
}

/// Why the bucket's side failed (the message names the object store's
/// error).
pub type RemotePartError = String;

/// A tiered log's remote side, attached by the broker's tiering sync.
pub trait TieredPart: Send + Sync + std::fmt::Debug {
    /// The segments the catalog lists now (to judge how dirty the log is).
    fn segments(&self) -> Vec<RemoteSegmentInfo>;
    /// The catalog's writer for a cleaning pass; None while a tiering
    /// round holds it (or the partition is fenced).
    fn try_lease(&self) -> Option<Box<dyn RemoteLease>>;
    /// The first offset the bucket holds, once a pass changed it.
    fn earliest_offset(&self) -> Option<i64>;
}

/// The catalog's writer, held for one cleaning pass: uploads and
/// retention wait for it. Each call blocks the calling (cleaner) thread.
pub trait RemoteLease: Send {
    /// Nothing in the bucket and remote storage off: the log is all local.
    fn nothing_remote(&self) -> bool;
    /// The catalog's segments; None when the catalog is not claimed yet.
    fn segments(&self) -> Option<Vec<RemoteSegmentInfo>>;
    /// The bytes of `seg`'s `.txnindex` object (empty when it has none).
    fn txn_index(&self, seg: &RemoteSegmentInfo) -> Result<Vec<u8>, RemotePartError>;
    /// Reads `seg`'s `.log` object whole into `dest`.
    fn download(&self, seg: &RemoteSegmentInfo, dest: &Path) -> Result<(), RemotePartError>;
    /// Uploads the cleaned version of `original` under new keys; the
    /// catalog does not list it until [`RemoteLease::replace`].
    fn upload_cleaned(
        &mut self,
        original: &RemoteSegmentInfo,
        cleaned: &CleanedSegmentFiles,
    ) -> Result<RemoteSegmentInfo, RemotePartError>;
    /// Swaps the cleaned segments in (None: the original is dropped) with
    /// one conditional write of the manifest; returns how many changed.
    fn replace(
        &mut self,
        replacements: Vec<(RemoteSegmentInfo, Option<RemoteSegmentInfo>)>,
        delete_delay: Duration,
    ) -> Result<usize, RemotePartError>;
}
