//! Errors at the prefetch crate's boundary. Each keeps its source, and
//! [`PrefetchError::is_retriable`] says whether asking again can help.

use std::path::PathBuf;
use std::sync::Arc;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum PrefetchError {
    /// The segment object is gone (total retention removed it meanwhile).
    #[error("segment object {0} not found")]
    NotFound(String),
    #[error("object store: {0}")]
    ObjectStore(#[source] object_store::Error),
    /// The error of a read or GET shared by several readers: each gets the
    /// same one.
    #[error(transparent)]
    Shared(Arc<PrefetchError>),
    /// A read that was to be answered from memory found a chunk missing.
    #[error("chunk not in memory")]
    NotCached,
    #[error("cannot create the chunk cache directory {}", dir.display())]
    CacheDir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("chunk cache: {0}")]
    Cache(#[source] foyer::Error),
    #[error("cannot start the prefetch runtime or its threads")]
    Runtime(#[source] std::io::Error),
    #[error("prefetch task failed")]
    Task(#[from] tokio::task::JoinError),
    /// The read was dropped before it answered (the broker is stopping).
    #[error("the prefetch runtime stopped before the read answered")]
    Stopped,
    #[error("segment object {key} is corrupt at byte {position}: {message}")]
    Corrupt {
        key: String,
        position: u64,
        message: String,
    },
}

impl PrefetchError {
    /// Whether a client asking again may succeed: the object store's and
    /// the cache's troubles pass; a missing or corrupt object and a stopped
    /// broker do not.
    pub fn is_retriable(&self) -> bool {
        match self {
            PrefetchError::ObjectStore(_) | PrefetchError::NotCached | PrefetchError::Cache(_) => {
                true
            }
            PrefetchError::Shared(e) => e.is_retriable(),
            PrefetchError::NotFound(_)
            | PrefetchError::CacheDir { .. }
            | PrefetchError::Runtime(_)
            | PrefetchError::Task(_)
            | PrefetchError::Stopped
            | PrefetchError::Corrupt { .. } => false,
        }
    }

    /// The error itself, looking through shared ones.
    pub fn root(&self) -> &PrefetchError {
        match self {
            PrefetchError::Shared(e) => e.root(),
            e => e,
        }
    }

    /// The key of a missing object, looking through shared errors.
    pub fn not_found_key(&self) -> Option<&str> {
        match self {
            PrefetchError::NotFound(k) => Some(k),
            PrefetchError::Shared(e) => e.not_found_key(),
            _ => None,
        }
    }
}

impl From<object_store::Error> for PrefetchError {
    fn from(e: object_store::Error) -> Self {
        match e {
            object_store::Error::NotFound { path, .. } => PrefetchError::NotFound(path),
            e => PrefetchError::ObjectStore(e),
        }
    }
}

/// A [`PrefetchError`] shared through the chunk cache's single-flight GET
/// (which takes any error and hands the same one to every waiter).
#[derive(Debug, Error)]
#[error(transparent)]
pub(crate) struct SharedError(pub Arc<PrefetchError>);
