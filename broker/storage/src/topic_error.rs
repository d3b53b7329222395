//! `TopicError`: why a topic could not be created, changed, deleted or
//! found. Each variant maps to one Kafka error code (the handlers' job) and
//! carries the message Kafka would send; storage failures keep their source.

use std::io;

use thiserror::Error;

use crate::log::LogError;
use strata_common::topic_name::InvalidTopicName;

#[derive(Debug, Error)]
pub enum TopicError {
    #[error("Topic '{0}' already exists.")]
    AlreadyExists(String),
    #[error("This server does not host this topic-partition: {0}")]
    UnknownTopic(String),
    #[error("{0}")]
    InvalidName(String),
    #[error("{0}")]
    InvalidPartitions(String),
    #[error("{0}")]
    InvalidReplicationFactor(String),
    #[error("{0}")]
    InvalidConfig(String),
    #[error("Topic deletion is disabled (delete.topic.enable=false)")]
    DeletionDisabled,
    /// A coordinator's internal topic, which no client may delete.
    #[error("Cannot delete internal topic {0}")]
    InternalTopic(String),
    /// The cluster's metadata store did not answer.
    #[error("the cluster metadata store is unavailable: {0}")]
    Unavailable(String),
    #[error("storage error: {0}")]
    Io(#[from] io::Error),
    #[error("storage error: {0}")]
    Log(#[from] LogError),
    #[error("cannot encode topic metadata: {0}")]
    Encode(#[source] serde_json::Error),
    /// The blocking task doing the work did not finish (the broker is
    /// stopping).
    #[error("internal task failed")]
    Interrupted,
}

impl From<InvalidTopicName> for TopicError {
    fn from(e: InvalidTopicName) -> Self {
        TopicError::InvalidName(e.0)
    }
}
