//! Kafka protocol helpers that hold no broker state, shared by the broker
//! and its clients (the `strata` CLI, which may import only these, `tools`
//! and the clock: `scripts/import_graph.py`).

pub mod consumer_protocol;
pub mod error_names;
