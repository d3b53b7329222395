//! Dead-letter queues: the header names pipelines use for a dead letter's
//! reason and origin (`reasons`), and the broker's monitor that counts
//! dead letters per reason and warns when a dead-letter topic can lose
//! them (`monitor`). The CLI's `strata dlq` tools share `reasons`.

pub mod monitor;
pub mod reasons;
