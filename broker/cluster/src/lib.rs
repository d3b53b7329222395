//! `strata-cluster`: several brokers as one cluster. The metadata store on
//! etcd (or embedded, for one broker) and what is kept in it (`cluster`:
//! membership, the controller, topics, assignments, elections,
//! reassignment, producer-id blocks), Kafka's ISR replication
//! (`replication`: the followers' fetchers, the ISR, the inter-broker
//! client, KIP-392 reads from a follower), the broker's producer ids
//! (`producer_ids`), the internal topics the coordinators write
//! (`coordinator_log`, `coordinator_ownership`), and the security values
//! every broker shares (`security_store`: SCRAM users; `acl_store`: ACL
//! bindings; both on `stored_value`).
//!
//! It stands on `strata-storage` (the logs it replicates) and
//! `strata-common`; the bucket, the coordinators and the Kafka server are
//! the broker's, above it.

pub mod acl_store;
pub mod cluster;
pub mod coordinator_log;
pub(crate) mod coordinator_ownership;
pub mod producer_ids;
pub mod replication;
pub mod security_store;
pub mod stored_value;
