//! Dead-letter queues: the header names pipelines use for a dead letter's
//! reason and origin (`reasons`), and the broker's monitor that counts
//! dead letters per reason and warns when a dead-letter topic can lose
//! them (`monitor`). The CLI's `strata dlq` tools share `reasons`.

pub mod monitor;
pub use strata_protocol::dlq_reasons as reasons;

#[cfg(test)]
mod tests {
    /// The default of `dlq.reason.headers` is the list `reasons` names.
    #[test]
    fn the_reason_headers_setting_defaults_to_the_conventional_names() {
        let default = crate::config::broker_def("dlq.reason.headers").map(|d| d.default);
        let names = crate::config::parse_list(default.unwrap_or_default());
        assert_eq!(names, super::reasons::DEFAULT_REASON_HEADERS);
    }
}
