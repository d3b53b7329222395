//! The broker's Prometheus metrics, written by the Prometheus client
//! library (`prometheus-client`, text format 0.0.4): live instruments
//! recorded on the request path (`requests`; error codes in responses,
//! `errors`; connections and authentications per listener, `connections`), and families each component reads from its own state at
//! each scrape (`family::MetricSource`: the log manager's partitions and
//! cleaner in `log_manager/metrics.rs`, the coordinators' in
//! `group/metrics.rs` and `txn/metrics.rs`, tiering and the historical
//! read path in `remote/metrics.rs`, the cluster's in `cluster/metrics.rs`,
//! the commit latency and the DLQ monitor's). The node registers the
//! components; `/metrics` asks each. Names are `strata_*` with their unit
//! in the name, as Prometheus asks.
//!
//! It only reads: no scrape changes broker state.

pub mod connections;
pub mod errors;
pub use strata_common::metrics_family as family;
pub mod requests;

use prometheus_client::registry::Registry;

use family::{Family, Scraped};

/// The `Content-Type` of what [`encode_text`] writes.
pub const CONTENT_TYPE: &str = prometheus_client::encoding::prometheus_text::CONTENT_TYPE;

/// The request instruments and `families`, in the Prometheus text format.
pub fn encode_text(families: Vec<Family>) -> String {
    let mut registry = Registry::default();
    requests::REQUESTS.register(&mut registry);
    errors::register(&mut registry);
    connections::register(&mut registry);
    registry.register_collector(Box::new(Scraped(families)));
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = prometheus_client::encoding::prometheus_text::encode(&mut out, &registry);
    out
}

#[cfg(test)]
mod tests {
    use super::family::{HistogramSample, Kind};
    use super::*;

    #[test]
    fn families_are_written_in_the_text_format_with_their_names() {
        let mut g = Family::gauge("strata_log_end_offset", "Next offset.");
        g.push(family::partition_labels("a\"b", 3), 42.0);
        let c = Family::one(Kind::Counter, "strata_x_total", "Xs.", 7.0);
        let h = Family::histogram(
            "strata_commit_seconds",
            "Commits.",
            HistogramSample::from_cumulative(&[(0.001, 2), (0.002, 5)], 0.006, 5),
        );
        let out = encode_text(vec![g, c, h]);
        assert!(
            out.contains("# TYPE strata_log_end_offset gauge\n"),
            "{out}"
        );
        assert!(
            out.contains("strata_log_end_offset{topic=\"a\\\"b\",partition=\"3\"} 42"),
            "{out}"
        );
        // The counter keeps the name it was given.
        assert!(out.contains("# TYPE strata_x_total counter\n"), "{out}");
        assert!(out.contains("\nstrata_x_total 7"), "{out}");
        // Buckets are cumulative again, with +Inf.
        assert!(
            out.contains("strata_commit_seconds_bucket{le=\"0.002\"} 5"),
            "{out}"
        );
        assert!(
            out.contains("strata_commit_seconds_bucket{le=\"+Inf\"} 5"),
            "{out}"
        );
        assert!(out.contains("strata_commit_seconds_count 5"), "{out}");
    }

    #[test]
    fn observed_requests_count_per_api() {
        use kafka_protocol::messages::ApiKey;
        let r = &requests::REQUESTS;
        r.observe(
            ApiKey::Metadata,
            100,
            Some(300),
            std::time::Duration::from_millis(2),
        );
        r.observe(ApiKey::Metadata, 20, None, std::time::Duration::ZERO);
        let out = encode_text(Vec::new());
        assert!(
            out.contains("strata_requests_total{api=\"Metadata\"}"),
            "{out}"
        );
        assert!(
            out.contains("strata_requests_refused_total{api=\"Metadata\"}"),
            "{out}"
        );
        assert!(
            out.contains("strata_request_duration_seconds_count{api=\"Metadata\"} "),
            "{out}"
        );
        assert_eq!(requests::api_name(ApiKey::ApiVersions), "ApiVersions");
    }
}
