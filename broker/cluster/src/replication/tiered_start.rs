//! Where a replica that starts empty, or too far behind for the leader's
//! local log, begins: the bucket's end (KIP-1023), not the leader's first
//! local offset. Everything below is in the bucket already, so the
//! follower copies only what has not been tiered: replacing a broker
//! costs its hot tail, not its history.
//!
//! This file only names what the fetcher needs ([`TieredEndSource`]); the
//! bucket side is `remote::tiered_end`. It never reads the bucket itself.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use strata_storage::log::PartitionLog;

/// The end of a partition's tiered part, as its catalog records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TieredEnd {
    /// The offset after the last tiered record: where the follower starts.
    pub offset: i64,
    /// The leader epoch of the last tiered batch (seeds the epoch cache).
    pub last_epoch: i32,
    /// The producer state uploaded with the last tiered segment.
    pub producer_snapshot: Option<Vec<u8>>,
}

/// Reads a partition's tiered end from the bucket.
pub trait TieredEndSource: Send + Sync + 'static {
    /// Ok(None): the partition is not tiered (or nothing is in the bucket).
    fn tiered_end(
        &self,
        log: Arc<PartitionLog>,
    ) -> BoxFuture<'static, Result<Option<TieredEnd>, String>>;
}
