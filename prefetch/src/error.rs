//! Errors at the prefetch crate's boundary.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum PrefetchError {
    /// The segment object is gone (total retention removed it meanwhile).
    #[error("segment object {0} not found")]
    NotFound(String),
    #[error("object store: {0}")]
    ObjectStore(object_store::Error),
    /// An object store error seen by a shared (cached) fetch.
    #[error("object store: {0}")]
    Fetch(String),
    /// A read that was to be answered from memory found a chunk missing.
    #[error("chunk not in memory")]
    NotCached,
    #[error("chunk cache: {0}")]
    Cache(String),
    #[error("prefetch runtime: {0}")]
    Runtime(String),
    #[error("segment object {key} is corrupt at byte {position}: {message}")]
    Corrupt {
        key: String,
        position: u64,
        message: String,
    },
}

impl From<object_store::Error> for PrefetchError {
    fn from(e: object_store::Error) -> Self {
        match e {
            object_store::Error::NotFound { path, .. } => PrefetchError::NotFound(path),
            e => PrefetchError::ObjectStore(e),
        }
    }
}
