//! Replication between brokers (docs/replication.md): followers copy
//! their leaders' logs over the Kafka protocol (Fetch with a replica id),
//! leaders track them and keep the ISR in the store. The per-partition
//! state (roles, follower progress, the high watermark's bound) lives in
//! the partition above each log (`strata_storage::partition`); this
//! module owns the network side and the ISR writes.

pub mod client;
pub mod fetcher;
pub mod isr;
pub mod manager;
pub mod read_replica;
pub mod tiered_start;

#[cfg(test)]
mod tests;
