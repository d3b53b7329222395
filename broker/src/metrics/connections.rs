//! Connections and authentication, per listener, as Kafka's
//! `successful-authentication-total` / `failed-authentication-total` and
//! `connection-creation-total` (per listener there too): counted by the
//! connection loop (`server::connection`). Labels are bounded by the
//! configuration: listener names, the enabled mechanisms (a mechanism a
//! client names that is not enabled counts as `unsupported`).

use std::sync::LazyLock;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

type Labels = Vec<(&'static str, String)>;

static ACCEPTED: LazyLock<Family<Labels, Counter>> = LazyLock::new(Family::default);
static TLS_FAILED: LazyLock<Family<Labels, Counter>> = LazyLock::new(Family::default);
static AUTHENTICATIONS: LazyLock<Family<Labels, Counter>> = LazyLock::new(Family::default);

/// A connection accepted on `listener`.
pub fn accepted(listener: &str) {
    ACCEPTED
        .get_or_create(&vec![("listener", listener.to_string())])
        .inc();
}

/// A TLS handshake that failed (`error`) or did not finish (`timeout`).
pub fn tls_failed(listener: &str, reason: &'static str) {
    TLS_FAILED
        .get_or_create(&vec![
            ("listener", listener.to_string()),
            ("reason", reason.to_string()),
        ])
        .inc();
}

/// A SASL authentication (or re-authentication) that ended.
pub fn authentication(listener: &str, mechanism: &str, succeeded: bool) {
    AUTHENTICATIONS
        .get_or_create(&vec![
            ("listener", listener.to_string()),
            ("mechanism", mechanism.to_string()),
            (
                "result",
                if succeeded { "success" } else { "failure" }.to_string(),
            ),
        ])
        .inc();
}

pub fn register(registry: &mut Registry) {
    registry.register(
        "strata_connections_accepted",
        "Connections accepted, per listener",
        ACCEPTED.clone(),
    );
    registry.register(
        "strata_tls_handshake_failures",
        "TLS handshakes that failed (error) or did not finish in 10 s (timeout), per listener",
        TLS_FAILED.clone(),
    );
    registry.register(
        "strata_sasl_authentications",
        "SASL authentications and re-authentications that ended, per listener, mechanism and result (success, failure)",
        AUTHENTICATIONS.clone(),
    );
}
