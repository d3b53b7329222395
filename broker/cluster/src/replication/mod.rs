//! Replication between brokers (docs/replication.md): followers copy
//! their leaders' logs over the Kafka protocol (Fetch with a replica id),
//! leaders track them and keep the ISR in the store. The per-partition
//! state (roles, follower progress, high watermark) lives with the log
//! (`log::replica_state`); this module owns the network side and the ISR
//! writes.

pub mod client;
pub mod fetcher;
pub mod isr;
pub mod manager;
pub mod read_replica;
pub mod tiered_start;

#[cfg(test)]
mod tests;
