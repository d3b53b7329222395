//! `strata-tiering`: the tiering manager (Kafka's `RemoteLogManager`).
//!
//! [`manager::RemoteLogManager`] runs one task per partition: it seals idle
//! active segments after `segment.ms`, uploads sealed segments with
//! [`upload::upload_segment`] (multipart for large files, retried with
//! backoff, verified by size and CRC32C, then recorded in the partition's
//! catalog), deletes local segments that are recorded and outside the hot
//! window (`local.retention.ms` / `local.retention.bytes`), and applies total
//! retention to the remote part ([`policy`]). The bucket itself is opened
//! by `strata_catalog::bucket`.
//!
//! [`compaction::CompactionLease`] is the bucket's side of compacting a
//! tiered partition: the broker's cleaner reads, rewrites and swaps remote
//! segments through it.
//!
//! It must never delete a local segment the catalog has not recorded, and it
//! uses `catalog` only; the partition log is reached through
//! [`manager::LocalLog`].

pub mod clock;
pub mod compaction;
pub mod error;
pub mod manager;
pub mod policy;
pub mod upload;

pub use clock::{SystemWallClock, WallClock};
pub use compaction::CompactionLease;
pub use error::TieringError;
pub use manager::{LocalLog, ManagerOptions, PartitionStats, RemoteLogManager, RemotePartition};
pub use policy::{LocalSegmentInfo, TieringPolicy};
pub use upload::{upload_segment, SealedSegment, UploadOptions};
