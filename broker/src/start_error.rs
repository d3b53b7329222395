//! `StartError`: why the broker could not start: its data directory and
//! logs (`OpenError`, the storage crate's), its consumer groups, or
//! restoring topics from the bucket. One type for the library's `open`
//! functions (only `main.rs` turns it into a message and an exit code);
//! each variant names the file or topic and keeps its source.

use std::io;

use thiserror::Error;

pub use strata_storage::open_error::OpenError;

#[derive(Debug, Error)]
pub enum StartError {
    #[error(transparent)]
    Logs(#[from] OpenError),
    #[error("topic {topic} in the bucket has a bad id {id}")]
    BadTopicId {
        topic: String,
        id: String,
        #[source]
        source: uuid::Error,
    },
    /// Reading the bucket failed; starting again may succeed.
    #[error("reading the bucket: {0}")]
    Catalog(#[from] strata_catalog::CatalogError),
    #[error("reading the bucket: {0}")]
    ObjectStore(#[from] object_store::Error),
    #[error("cannot reserve producer ids: {0}")]
    ProducerIds(#[source] io::Error),
    #[error("start-up task failed")]
    Task(#[from] tokio::task::JoinError),
}

impl StartError {
    pub fn is_retriable(&self) -> bool {
        matches!(self, StartError::Catalog(_) | StartError::ObjectStore(_))
    }
}
