//! Strata's broker, the server: the Kafka protocol server and its
//! handlers, the partition layer (`partition/`: the replica manager),
//! tiering's wiring and the history reader (`remote/`), the admin API and
//! console, `/metrics`, the dead-letter monitor, and the node that starts
//! and stops them all (`node.rs`); the `strata` binary (`main.rs`) adds
//! the CLI (`strata-cli`).
//!
//! It stands on its crates inside `broker/`: `strata-common` (settings,
//! clock, topic names), `strata-storage` (the local log and the log
//! manager), `strata-cluster` (the metadata store, the controller, ISR
//! replication), `strata-coordinators` (the group and transaction
//! coordinators) and `strata-protocol` (what the broker and its CLI share
//! about Kafka's protocol); and on `catalog`, `format`, `tiering` and
//! `prefetch`. Nothing depends on it.
//!
//! The lower crates' modules are re-exported under the names they had
//! here (`crate::log`, `crate::config`, ...), so a path reads the same on
//! every floor.

pub use strata_cluster::{
    cluster, coordinator_log, coordinator_ownership, producer_ids, replication,
};
pub use strata_common::{clock, config, durable_file, topic_name};
pub use strata_coordinators::{group, txn};
pub use strata_protocol::{decode_bounds, tools};
pub use strata_storage::{fd_limit, log, log_manager, meta_properties, topic_error};
/// Kafka protocol helpers that hold no broker state, shared with the CLI.
pub mod protocol {
    pub use strata_protocol::{consumer_protocol, error_names};
}

pub mod admin;
pub mod commit_latency;
pub mod dlq;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz_targets;
pub mod http;
pub mod metrics;
pub mod node;
pub mod partition;
pub mod remote;
pub mod server;
pub mod start_error;
