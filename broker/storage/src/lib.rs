//! `strata-storage`: the broker's local log, Kafka's `storage` module. One
//! partition's log on disk (`log`: segments, indexes, checkpoints,
//! producer state, transactions' index, the cleaner), the partition above
//! it (`partition`: replica role, ISR, follower progress, the high
//! watermark's bound; Kafka's `kafka.cluster.Partition`) and the data
//! directory that holds them (`log_manager`), with what opening them can
//! fail on (`open_error`, `topic_error`), the open-file budget
//! (`fd_limit`) and the directory's identity (`meta_properties`).
//!
//! It depends on `strata-format` and `strata-common` only: the bucket,
//! replication and the Kafka protocol are the broker's, above it. A tiered
//! log's cleaning reaches the bucket through the traits in
//! `log::tiered_part`, which the broker implements.

pub mod fd_limit;
pub mod log;
pub mod log_manager;
pub mod meta_properties;
pub mod open_error;
pub mod partition;
pub mod topic_error;
