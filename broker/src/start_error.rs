//! `StartError`: why the broker could not open its data directory, its
//! consumer groups or restore topics from the bucket at start. One type for
//! the library's `open` functions (only `main.rs` turns it into a message
//! and an exit code); each variant names the file or topic and keeps its
//! source.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use crate::log::LogError;
use crate::topic_error::TopicError;

#[derive(Debug, Error)]
pub enum StartError {
    #[error("data directory {}: {source}", dir.display())]
    DataDir {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("data directory {} is in use by another broker process", .0.display())]
    Locked(PathBuf),
    /// `log.segment.open.files.max` and `ulimit -n` do not fit together.
    #[error("{0}")]
    FdLimit(String),
    #[error("corrupt topic metadata {}: {source}", path.display())]
    CorruptTopic {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "{what}: {partitions} partitions: corrupt, or more than this broker can keep open \
         within its file descriptor limit (ulimit -n {limit}); raise the limit"
    )]
    TooManyPartitions {
        what: String,
        partitions: u32,
        limit: u64,
    },
    #[error("partition {topic}-{partition}: {source}")]
    Partition {
        topic: String,
        partition: i32,
        #[source]
        source: LogError,
    },
    #[error("replaying {topic}: {source}")]
    Replay {
        topic: String,
        #[source]
        source: LogError,
    },
    #[error("cannot open {topic}: {source}")]
    Topic {
        topic: String,
        #[source]
        source: TopicError,
    },
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
    /// Whether starting again with the same settings and files may work:
    /// only the bucket's troubles pass by themselves.
    pub fn is_retriable(&self) -> bool {
        matches!(self, StartError::Catalog(_) | StartError::ObjectStore(_))
    }

    pub(crate) fn data_dir(dir: &std::path::Path) -> impl FnOnce(io::Error) -> StartError + '_ {
        move |source| StartError::DataDir {
            dir: dir.to_path_buf(),
            source,
        }
    }
}
