//! `OpenError`: why the log manager could not open the data directory or
//! a topic's logs in it. Each variant names the file or topic and keeps
//! its source; the broker wraps it in its `StartError`.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

use crate::log::LogError;
use crate::topic_error::TopicError;

#[derive(Debug, Error)]
pub enum OpenError {
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
}

impl OpenError {
    pub(crate) fn data_dir(dir: &std::path::Path) -> impl FnOnce(io::Error) -> OpenError + '_ {
        move |source| OpenError::DataDir {
            dir: dir.to_path_buf(),
            source,
        }
    }
}
