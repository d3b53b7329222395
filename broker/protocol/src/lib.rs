//! `strata-protocol`: what the broker and its clients share about Kafka's
//! protocol beyond the `kafka-protocol` codec, holding no broker state.
//! The bounds every request is checked against before it is decoded
//! (`decode_bounds`), the consumer protocol's embedded messages
//! (`consumer_protocol`), Kafka's names of its error codes
//! (`error_names`), what Kafka's tools compute on the client side
//! (`tools`), and the header names of dead letters (`dlq_reasons`).
//!
//! The `strata` CLI, a pure Kafka client, stands on this crate alone; the
//! broker re-exports its modules under the names they had there
//! (`crate::protocol::consumer_protocol`, `crate::decode_bounds`).

pub mod consumer_protocol;
pub mod decode_bounds;
pub mod dlq_reasons;
pub mod error_names;
pub mod tools;
