//! `strata-tiering`: the tiering manager (Kafka's `RemoteLogManager`).
//!
//! Built so far: [`upload::upload_segment`], which copies one sealed
//! segment (log, indexes, producer snapshot) to object storage — multipart
//! for large files, retried with backoff, verified by size and CRC32C before
//! it counts — and then records it in the partition's catalog. Still to come
//! (issue 4): choosing what to upload, the hot window
//! (`local.retention.ms` / `local.retention.bytes`) and total retention.
//!
//! It must never delete a local segment the catalog has not recorded, and it
//! uses `catalog` only.

pub mod error;
pub mod store_url;
pub mod upload;

pub use error::TieringError;
pub use upload::{upload_segment, SealedSegment, UploadOptions};
