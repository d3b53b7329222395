//! The HTTP listener on `--http-listen`: `GET /metrics` (Prometheus text
//! format, `crate::metrics`), `GET /healthz` (liveness: the process
//! answers), `GET /readyz` (readiness: log recovery has finished and the
//! object store answered), and the admin API and console page
//! (`crate::admin`), behind its bearer token. It is served from the start
//! of the process, before the logs are opened, so probes get an answer
//! while a large data directory recovers; until then `/readyz`,
//! `/metrics` and the API answer 503 with the start-up phase.
//!
//! This module owns the listener and the state it serves from; the API's
//! changes are `crate::admin`'s.

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;

pub use crate::admin::state::{BrokerParts, HttpState, MetricSources};

pub fn router(state: HttpState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        // The name this API had before /healthz.
        .route("/health", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .merge(crate::admin::router())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::admin::auth::require_token,
        ))
        .with_state(state)
}

/// Serves until `shutdown` flips to true.
pub async fn serve(listener: TcpListener, state: HttpState, mut shutdown: watch::Receiver<bool>) {
    let stop = async move {
        let _ = shutdown.wait_for(|s| *s).await;
    };
    if let Err(e) = axum::serve(listener, router(state))
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::error!(error = %e, "HTTP API stopped");
    }
}

fn starting(s: &HttpState) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::json!({ "ready": false, "phase": s.phase() }).to_string() + "\n",
    )
        .into_response()
}

async fn metrics(State(s): State<HttpState>) -> Response {
    let Some(p) = s.parts() else {
        return starting(&s);
    };
    let families = p.metrics.families();
    (
        [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
        crate::metrics::encode_text(families),
    )
        .into_response()
}

/// 200 once started. The object store's and the metadata store's health
/// now are reported but do not make the broker unready: it keeps serving
/// the hot path (and existing leaderships) without them, and taking it out
/// of a load balancer would make that worse.
async fn readyz(State(s): State<HttpState>) -> Response {
    let Some(p) = s.parts() else {
        return starting(&s);
    };
    let store = p.remote.as_ref().map(|r| r.manager.store_available());
    let metadata = p.cluster.as_ref().map(|c| c.view.snapshot().connected);
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::json!({
            "ready": true,
            "phase": "ready",
            "object_store_available": store,
            "metadata_store_connected": metadata,
        })
        .to_string()
            + "\n",
    )
        .into_response()
}
