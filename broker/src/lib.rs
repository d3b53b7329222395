//! Strata's broker: the Kafka protocol server, request handlers, the
//! partition log and the topic registry. It depends on `catalog`, `format`,
//! `tiering` and `prefetch`; nothing depends on it.

pub mod admin;
pub mod cli;
pub mod clock;
pub mod cluster;
pub mod config;
pub mod coordinator_log;
pub mod coordinator_ownership;
pub mod coordinators;
pub mod decode_bounds;
pub mod dlq;
pub mod durable_file;
pub mod fd_limit;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz_targets;
pub mod group;
pub mod http;
pub mod log;
pub mod log_manager;
pub mod meta_properties;
pub mod metrics;
pub mod node;
pub mod partition;
pub mod producer_ids;
pub mod protocol;
pub mod remote;
pub mod replication;
pub mod server;
pub mod start_error;
pub mod tools;
pub mod topic_error;
pub mod topic_name;
pub mod txn;
