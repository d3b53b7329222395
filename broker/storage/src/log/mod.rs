//! The partition log: Kafka's on-disk layout of segments, indexes and
//! checkpoints, owned per partition by [`PartitionLog`].

pub(crate) mod aborted_ranges;
pub mod batch;
pub mod checkpoint;
pub mod cleaner;
pub(crate) mod cleaner_checkpoint;
pub(crate) mod cleaner_remote;
pub mod cleaner_state;
pub(crate) mod cleaner_threads;
pub mod control;
pub mod ends;
pub mod epochs;
pub(crate) mod file_pool;
pub mod follower;
pub mod group_commit;
pub mod hydration;
pub mod index;
pub mod leader_epoch;
pub(crate) mod offset_map;
pub mod partition_log;
pub mod producer_state;
pub mod read;
pub mod records_deleted;
pub mod retention;
pub mod sealed;
pub mod segment;
#[cfg(test)]
pub(crate) mod test_logs;
pub mod tiered_part;
pub mod timestamps;
pub mod transactions;
pub mod txn_index;

pub use partition_log::{
    AppendInfo, AppendOrigin, LogError, PartitionLog, ReadResult, SharedConfig,
};
pub use read::Isolation;
