//! `strata-common`: the floor every part of the broker stands on, and that
//! knows none of them. The broker's and topics' settings under Kafka's
//! names, typed and parsed once (`config`); the injected clock (`clock`);
//! Kafka's topic-name rules (`topic_name`); crash-safe small files
//! (`durable_file`); a metric family read at scrape time
//! (`metrics_family`), which each component builds from its own state. It depends on `strata-format` and, for the typed
//! history-read settings, `strata-prefetch`; nothing of the broker.

pub mod clock;
pub mod config;
pub mod durable_file;
pub mod metrics_family;
pub mod topic_name;
