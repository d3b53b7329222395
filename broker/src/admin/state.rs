//! What the HTTP listener serves from: the broker's parts once it has
//! started, the start-up phase before, the API's token and the process's
//! start time. Shared by `crate::http` (the listener) and the admin API.

use std::sync::{Arc, Mutex, OnceLock};

use super::error::ApiError;
use super::token::Token;
use crate::metrics::family::{Family, MetricSource};
use crate::remote::TieredStorage;

/// What the API reads once the broker has started.
#[derive(Debug, Clone)]
pub struct BrokerParts {
    /// The components `/metrics` reads, as the node registered them.
    pub metrics: MetricSources,
    pub remote: Option<Arc<TieredStorage>>,
    pub cluster: Option<Arc<crate::cluster::Cluster>>,
    /// What the admin API works through (None in tests of /metrics alone).
    pub broker: Option<Arc<crate::server::Broker>>,
    /// The dead-letter monitor (counts per reason, warnings).
    pub dlq: Option<Arc<crate::dlq::monitor::DlqMonitor>>,
}

/// The components registered for `/metrics`, in the order their families
/// are written.
#[derive(Clone, Default)]
pub struct MetricSources(Vec<Arc<dyn MetricSource>>);

impl MetricSources {
    pub fn register(&mut self, source: Arc<dyn MetricSource>) {
        self.0.push(source);
    }

    /// Every registered component's families, read now.
    pub fn families(&self) -> Vec<Family> {
        self.0.iter().flat_map(|s| s.families()).collect()
    }
}

impl std::fmt::Debug for MetricSources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MetricSources({} registered)", self.0.len())
    }
}

#[derive(Debug, Default)]
struct Inner {
    parts: OnceLock<BrokerParts>,
    /// What the broker is doing before it is ready.
    phase: Mutex<&'static str>,
    token: Token,
    started: OnceLock<std::time::Instant>,
}

/// The API's view of the broker: starting (a phase), then started.
#[derive(Debug, Clone, Default)]
pub struct HttpState {
    inner: Arc<Inner>,
}

impl HttpState {
    /// A broker that is starting, at `phase` ("recovering logs", ...).
    pub fn starting(phase: &'static str, token: Token) -> Self {
        let s = HttpState {
            inner: Arc::new(Inner {
                token,
                ..Default::default()
            }),
        };
        let _ = s.inner.started.set(std::time::Instant::now());
        s.set_phase(phase);
        s
    }

    /// Already started (tests).
    pub fn started(parts: BrokerParts) -> Self {
        let s = HttpState::default();
        s.ready(parts);
        s
    }

    pub fn set_phase(&self, phase: &'static str) {
        *self.inner.phase.lock().unwrap_or_else(|e| e.into_inner()) = phase;
    }

    /// Start-up is over: log recovery finished, the object store answered.
    pub fn ready(&self, parts: BrokerParts) {
        let _ = self.inner.parts.set(parts);
        self.set_phase("ready");
    }

    pub fn parts(&self) -> Option<&BrokerParts> {
        self.inner.parts.get()
    }

    pub fn phase(&self) -> &'static str {
        *self.inner.phase.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn token(&self) -> &Token {
        &self.inner.token
    }

    /// Time since the process began serving HTTP.
    pub fn uptime(&self) -> std::time::Duration {
        self.inner
            .started
            .get()
            .map(|t| t.elapsed())
            .unwrap_or_default()
    }

    /// The started broker, or 503 with the start-up phase.
    pub fn broker(&self) -> Result<Arc<crate::server::Broker>, ApiError> {
        self.parts()
            .and_then(|p| p.broker.clone())
            .ok_or_else(|| ApiError::starting(self.phase()))
    }
}
