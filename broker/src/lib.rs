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
//!
//! Its public surface is what the `strata` binary and the fuzz targets
//! use: `node`, `config`, `clock`, `admin::token`, `parse_add_scram` and
//! `fuzz_targets`.
//! Every other module is `pub(crate)`, so an item nothing calls is
//! reported as dead code rather than kept alive by being public.

/// `--add-scram`'s syntax, for the binary.
pub use strata_cluster::security_store::parse_add_scram;
pub(crate) use strata_cluster::{cluster, producer_ids, replication};
pub(crate) use strata_common::topic_name;
pub use strata_common::{clock, config};
pub(crate) use strata_coordinators::{group, txn};
pub(crate) use strata_protocol::{decode_bounds, tools};
pub(crate) use strata_storage::{fd_limit, log, log_manager, meta_properties, topic_error};
/// Kafka protocol helpers that hold no broker state, shared with the CLI.
pub(crate) mod protocol {
    pub use strata_protocol::error_names;
}

pub mod admin;
pub(crate) mod commit_latency;
pub(crate) mod dlq;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzz_targets;
pub(crate) mod http;
pub(crate) mod metrics;
pub mod node;
pub(crate) mod partition;
pub(crate) mod remote;
pub(crate) mod server;
pub(crate) mod start_error;
