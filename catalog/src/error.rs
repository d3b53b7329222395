//! Errors at the catalog's boundary.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum CatalogError {
    /// Another writer claimed the partition with a newer epoch: this one
    /// must stop writing (and must not delete local data on the strength of
    /// a write it believed succeeded).
    #[error(
        "fenced: this writer has epoch {mine}, the catalog is owned by epoch {current} ({owner})"
    )]
    Fenced {
        mine: u64,
        current: u64,
        owner: String,
    },
    /// A claim at a partition leader epoch older than the one the catalog
    /// was claimed at: a newer leader owns the partition.
    #[error(
        "fenced: this broker leads at epoch {mine}, the catalog was claimed at leader epoch {current} ({owner})"
    )]
    StaleLeaderEpoch {
        mine: i32,
        current: i32,
        owner: String,
    },
    #[error("manifest {key} is corrupt: {message}")]
    Corrupt { key: String, message: String },
    #[error("segment {base_offset} does not follow the catalog's last offset {last_offset}")]
    NotContiguous { base_offset: i64, last_offset: i64 },
    #[error("object store: {0}")]
    ObjectStore(#[from] object_store::Error),
}
