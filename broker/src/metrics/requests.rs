//! Kafka protocol requests as the Prometheus client library's live
//! instruments: per API, how many were answered, how long each took from
//! its frame being read to its response being handed to the connection's
//! writer, and the bytes that came in and went out. Kafka's own
//! `RequestsPerSec`, `TotalTimeMs` and `BytesIn/OutPerSec`, by API key.
//!
//! The connection loop records into it (`observe`); `/metrics` registers
//! it. It never touches a request or a response.

use std::sync::LazyLock;
use std::time::Duration;

use kafka_protocol::messages::ApiKey;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// `[("api", "Produce")]`.
type ApiLabel = [(&'static str, &'static str); 1];
type Latency = Family<ApiLabel, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 100 µs to ~52 s by doubling: a Produce waits for an fsync, a Fetch
    // long-polls for up to its max_wait_ms.
    Histogram::new(exponential_buckets(0.0001, 2.0, 20))
}

#[derive(Debug)]
pub struct RequestMetrics {
    answered: Family<ApiLabel, Counter>,
    closed: Family<ApiLabel, Counter>,
    latency: Latency,
    bytes_in: Family<ApiLabel, Counter>,
    bytes_out: Family<ApiLabel, Counter>,
}

pub static REQUESTS: LazyLock<RequestMetrics> = LazyLock::new(|| RequestMetrics {
    answered: Family::default(),
    closed: Family::default(),
    latency: Family::new_with_constructor(latency_histogram as fn() -> Histogram),
    bytes_in: Family::default(),
    bytes_out: Family::default(),
});

/// The API's name as Kafka spells it (`Produce`, `ApiVersions`, ...).
pub fn api_name(api: ApiKey) -> &'static str {
    // `ApiKey`'s variants are Kafka's names; Debug prints them.
    static NAMES: LazyLock<std::collections::HashMap<i16, &'static str>> = LazyLock::new(|| {
        (0..=i16::MAX)
            .take(200)
            .filter_map(|k| ApiKey::try_from(k).ok())
            .map(|a| (a as i16, &*Box::leak(format!("{a:?}").into_boxed_str())))
            .collect()
    });
    NAMES.get(&(api as i16)).copied().unwrap_or("Unknown")
}

impl RequestMetrics {
    /// A request of `api` whose frame was `request_bytes` long was
    /// answered with `response_bytes` (0: no response, acks=0) after
    /// `elapsed`; or, with `response_bytes` None, refused and its
    /// connection closed.
    pub fn observe(
        &self,
        api: ApiKey,
        request_bytes: usize,
        response_bytes: Option<usize>,
        elapsed: Duration,
    ) {
        let label = [("api", api_name(api))];
        self.bytes_in
            .get_or_create(&label)
            .inc_by(request_bytes as u64);
        match response_bytes {
            Some(n) => {
                self.answered.get_or_create(&label).inc();
                self.bytes_out.get_or_create(&label).inc_by(n as u64);
                self.latency
                    .get_or_create(&label)
                    .observe(elapsed.as_secs_f64());
            }
            None => {
                self.closed.get_or_create(&label).inc();
            }
        }
    }

    /// Adds the instruments to a scrape's registry (they are shared: the
    /// registry reads the live values). The library ends each help text
    /// with a period.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "strata_requests",
            "Kafka protocol requests answered, per API",
            self.answered.clone(),
        );
        registry.register(
            "strata_requests_refused",
            "Requests refused by closing their connection (malformed, out of bounds, unsupported), per API",
            self.closed.clone(),
        );
        registry.register(
            "strata_request_duration_seconds",
            "Time from a request's frame being read to its response being ready to write, per API (a Produce's wait for durability and a Fetch's long poll included)",
            self.latency.clone(),
        );
        registry.register(
            "strata_network_received_bytes",
            "Bytes of request frames received, per API",
            self.bytes_in.clone(),
        );
        registry.register(
            "strata_network_sent_bytes",
            "Bytes of response frames sent, per API",
            self.bytes_out.clone(),
        );
    }
}
