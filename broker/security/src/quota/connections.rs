//! Connection limits as Kafka's `ConnectionQuotas` applies them at
//! accept: `max.connections` and `max.connection.creation.rate` (broker
//! wide and per listener), `max.connections.per.ip` with its overrides,
//! and the per-IP `connection_creation_rate` quota. Time is handed in; the
//! accept loop does the waiting and the closing.
//!
//! What each limit does to a connection over it, as in Kafka:
//! - the broker's and a listener's count and creation rate hold the
//!   accept loop (new connections wait in the kernel's backlog) until the
//!   rate allows and a slot is free; they never close a connection;
//! - the per-IP count closes the new connection at once;
//! - the per-IP creation rate holds the connection unserved and closes it
//!   when the throttle time has passed, uncounted.
//!
//! The inter-broker listener, when the broker has more than one, is
//! protected: it is held only by its own listener's limits, not by the
//! broker-wide count and rate (the per-IP limits apply to every listener).

use std::collections::HashMap;
use std::net::IpAddr;

use super::admin::IpQuotas;
use super::rate::{Rate, RateConfig};
use super::EntityName;

/// The static limits (Kafka's defaults are "none": `Int.MaxValue`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConnectionLimits {
    /// `max.connections`.
    pub max_connections: Option<u32>,
    /// `max.connection.creation.rate`, connections a second.
    pub max_creation_rate: Option<f64>,
    /// `listener.name.<l>.max.connections` and `.max.connection.creation.rate`.
    pub listeners: HashMap<String, ListenerLimits>,
    /// `max.connections.per.ip`.
    pub max_per_ip: Option<u32>,
    /// `max.connections.per.ip.overrides`, resolved to addresses.
    pub per_ip_overrides: HashMap<IpAddr, u32>,
    /// The inter-broker listener (protected when there is more than one).
    pub inter_broker_listener: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListenerLimits {
    pub max_connections: Option<u32>,
    pub max_creation_rate: Option<f64>,
}

/// `max.connections.per.ip.overrides` that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("max.connections.per.ip.overrides: {0}")]
pub struct OverridesError(String);

/// Parses `host:count,host:count`. Host names are left to the caller to
/// resolve (`resolve`); an address stands for itself.
pub fn parse_overrides(
    value: &str,
    resolve: impl Fn(&str) -> Option<IpAddr>,
) -> Result<HashMap<IpAddr, u32>, OverridesError> {
    let mut out = HashMap::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (host, count) = entry
            .rsplit_once(':')
            .ok_or_else(|| OverridesError(format!("`{entry}` is not host:count")))?;
        let count: u32 = count
            .trim()
            .parse()
            .map_err(|_| OverridesError(format!("`{entry}`: the count is not a whole number")))?;
        let host = host.trim().trim_start_matches('[').trim_end_matches(']');
        let addr = host
            .parse::<IpAddr>()
            .ok()
            .or_else(|| resolve(host))
            .ok_or_else(|| OverridesError(format!("`{entry}`: {host} does not resolve")))?;
        out.insert(addr, count);
    }
    Ok(out)
}

/// What the accept loop does with a new connection from an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpAdmission {
    /// Serve it (it is counted until `release`).
    Admit,
    /// Close it now: the address has its most connections.
    CloseNow,
    /// Hold it unserved and close it at this time: the address opens
    /// connections faster than its `connection_creation_rate`.
    CloseAt(i64),
}

/// Rates unused this long are forgotten (per-IP ones, as Kafka's).
const IP_RATE_IDLE_MS: i64 = 3_600_000;

/// The broker's connection counts and creation rates.
#[derive(Debug)]
pub struct ConnectionQuotas {
    limits: ConnectionLimits,
    ip_quotas: IpQuotas,
    config: RateConfig,
    total: u32,
    per_listener: HashMap<String, u32>,
    per_ip: HashMap<IpAddr, u32>,
    broker_rate: Rate,
    listener_rates: HashMap<String, Rate>,
    ip_rates: HashMap<IpAddr, (Rate, i64)>,
    /// When unused per-IP rates were last swept (once a minute).
    swept_at_ms: i64,
}

impl ConnectionQuotas {
    pub fn new(limits: ConnectionLimits, ip_quotas: IpQuotas, config: RateConfig) -> Self {
        ConnectionQuotas {
            limits,
            ip_quotas,
            config,
            total: 0,
            per_listener: HashMap::new(),
            per_ip: HashMap::new(),
            broker_rate: Rate::new(config),
            listener_rates: HashMap::new(),
            ip_rates: HashMap::new(),
            swept_at_ms: i64::MIN,
        }
    }

    /// New limits or IP quotas (dynamic settings); counts and rates stay.
    pub fn reconfigure(&mut self, limits: ConnectionLimits, ip_quotas: IpQuotas) {
        self.limits = limits;
        self.ip_quotas = ip_quotas;
    }

    fn protected(&self, listener: &str) -> bool {
        self.limits.inter_broker_listener.as_deref() == Some(listener)
            && self.limits.listeners.len() > 1
    }

    /// Step one at accept: records a new connection on the listener and
    /// answers until when the accept loop must wait for the creation rates
    /// (`None`: no wait). The loop then also waits for `slot_available`.
    pub fn record_creation(&mut self, listener: &str, now_ms: i64) -> Option<i64> {
        let window = self.config.window_ms;
        let mut wait = 0;
        if !self.protected(listener) {
            if let Some(rate) = self.limits.max_creation_rate {
                wait = wait.max(
                    self.broker_rate
                        .record_and_throttle(1.0, rate, now_ms)
                        .min(window),
                );
            } else {
                self.broker_rate.record(1.0, now_ms);
            }
        }
        let config = self.config;
        let listener_rate = self
            .listener_rates
            .entry(listener.to_string())
            .or_insert_with(|| Rate::new(config));
        match self
            .limits
            .listeners
            .get(listener)
            .and_then(|l| l.max_creation_rate)
        {
            Some(rate) => {
                wait = wait.max(
                    listener_rate
                        .record_and_throttle(1.0, rate, now_ms)
                        .min(window),
                )
            }
            None => listener_rate.record(1.0, now_ms),
        }
        (wait > 0).then_some(now_ms + wait)
    }

    /// Whether the listener may take one more connection (its own count,
    /// and the broker's unless the listener is protected).
    pub fn slot_available(&self, listener: &str) -> bool {
        let here = self.per_listener.get(listener).copied().unwrap_or(0);
        let listener_ok = self
            .limits
            .listeners
            .get(listener)
            .and_then(|l| l.max_connections)
            .is_none_or(|m| here < m);
        let broker_ok =
            self.protected(listener) || self.limits.max_connections.is_none_or(|m| self.total < m);
        listener_ok && broker_ok
    }

    /// How many connections the broker holds beyond `max.connections`
    /// (protected ones can push it over; the server then closes its least
    /// recently used client connections, as Kafka does).
    pub fn excess(&self) -> u32 {
        self.limits
            .max_connections
            .map_or(0, |m| self.total.saturating_sub(m))
    }

    fn ip_rate_quota(&self, ip: &IpAddr) -> Option<f64> {
        let rates = &self.ip_quotas.rates;
        rates
            .get(&EntityName::Named(ip.to_string()))
            .or_else(|| rates.get(&EntityName::Default))
            .copied()
    }

    /// Step two at accept, once the wait is over: the per-IP limits, then
    /// the count. A connection admitted here is counted until `release`.
    pub fn admit_ip(&mut self, listener: &str, ip: IpAddr, now_ms: i64) -> IpAdmission {
        if let Some(quota) = self.ip_rate_quota(&ip) {
            if now_ms.saturating_sub(self.swept_at_ms) >= 60_000 {
                self.swept_at_ms = now_ms;
                self.ip_rates
                    .retain(|_, (_, used)| now_ms - *used < IP_RATE_IDLE_MS);
            }
            let config = self.config;
            let (rate, used) = self
                .ip_rates
                .entry(ip)
                .or_insert_with(|| (Rate::new(config), now_ms));
            *used = now_ms;
            let wait = rate
                .record_and_throttle(1.0, quota, now_ms)
                .min(config.window_ms);
            if wait > 0 {
                // Un-record it: a connection closed unserved is no connection.
                rate.record(-1.0, now_ms);
                if !self.protected(listener) {
                    self.broker_rate.record(-1.0, now_ms);
                }
                if let Some(r) = self.listener_rates.get_mut(listener) {
                    r.record(-1.0, now_ms);
                }
                return IpAdmission::CloseAt(now_ms + wait);
            }
        }
        let here = self.per_ip.get(&ip).copied().unwrap_or(0);
        let max = self
            .limits
            .per_ip_overrides
            .get(&ip)
            .copied()
            .or(self.limits.max_per_ip);
        if max.is_some_and(|m| here >= m) {
            return IpAdmission::CloseNow;
        }
        *self.per_ip.entry(ip).or_insert(0) += 1;
        *self.per_listener.entry(listener.to_string()).or_insert(0) += 1;
        self.total += 1;
        IpAdmission::Admit
    }

    /// A connection `admit_ip` admitted has closed.
    pub fn release(&mut self, listener: &str, ip: IpAddr) {
        if let Some(n) = self.per_ip.get_mut(&ip) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.per_ip.remove(&ip);
            }
        }
        if let Some(n) = self.per_listener.get_mut(listener) {
            *n = n.saturating_sub(1);
        }
        self.total = self.total.saturating_sub(1);
    }

    pub fn total(&self) -> u32 {
        self.total
    }

    pub fn from_ip(&self, ip: &IpAddr) -> u32 {
        self.per_ip.get(ip).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));

    fn quotas(limits: ConnectionLimits) -> ConnectionQuotas {
        ConnectionQuotas::new(limits, IpQuotas::default(), RateConfig::default())
    }

    #[test]
    fn per_ip_counts_close_at_once_and_overrides_win() {
        let limits = ConnectionLimits {
            max_per_ip: Some(2),
            per_ip_overrides: HashMap::from([(B, 3)]),
            ..Default::default()
        };
        let mut q = quotas(limits);
        for _ in 0..2 {
            assert_eq!(q.admit_ip("CLIENT", A, 0), IpAdmission::Admit);
        }
        assert_eq!(q.admit_ip("CLIENT", A, 0), IpAdmission::CloseNow);
        for _ in 0..3 {
            assert_eq!(q.admit_ip("CLIENT", B, 0), IpAdmission::Admit);
        }
        assert_eq!(q.admit_ip("CLIENT", B, 0), IpAdmission::CloseNow);
        assert_eq!((q.from_ip(&A), q.total()), (2, 5));
        q.release("CLIENT", A);
        assert_eq!(q.admit_ip("CLIENT", A, 0), IpAdmission::Admit);
    }

    #[test]
    fn broker_and_listener_counts_hold_accept_and_protect_the_inter_broker_listener() {
        let limits = ConnectionLimits {
            max_connections: Some(2),
            listeners: HashMap::from([
                (
                    "CLIENT".to_string(),
                    ListenerLimits {
                        max_connections: Some(5),
                        max_creation_rate: None,
                    },
                ),
                ("BROKER".to_string(), ListenerLimits::default()),
            ]),
            inter_broker_listener: Some("BROKER".into()),
            ..Default::default()
        };
        let mut q = quotas(limits);
        for _ in 0..2 {
            assert!(q.slot_available("CLIENT"));
            q.admit_ip("CLIENT", A, 0);
        }
        assert!(!q.slot_available("CLIENT"), "the broker is full");
        // The inter-broker listener is not held by the broker-wide count…
        assert!(q.slot_available("BROKER"));
        q.admit_ip("BROKER", B, 0);
        // …and the excess is what the server closes among clients.
        assert_eq!(q.excess(), 1);
        q.release("CLIENT", A);
        q.release("CLIENT", A);
        assert!(q.slot_available("CLIENT"));
    }

    #[test]
    fn creation_rates_hold_accept_for_at_most_a_window() {
        let limits = ConnectionLimits {
            max_creation_rate: Some(2.0),
            ..Default::default()
        };
        let mut q = quotas(limits);
        // Twenty connections at once are 2/s over the ten-second span.
        for _ in 0..20 {
            assert_eq!(q.record_creation("CLIENT", 0), None);
        }
        let wait = q.record_creation("CLIENT", 0).expect("over the rate");
        assert!(wait > 0 && wait <= 1_000, "{wait}");
    }

    #[test]
    fn per_ip_creation_rate_closes_late_and_uncounted() {
        let mut ips = IpQuotas::default();
        ips.rates.insert(EntityName::Default, 1.0);
        let mut q = ConnectionQuotas::new(ConnectionLimits::default(), ips, RateConfig::default());
        for _ in 0..10 {
            assert_eq!(q.admit_ip("CLIENT", A, 0), IpAdmission::Admit);
        }
        let IpAdmission::CloseAt(at) = q.admit_ip("CLIENT", A, 0) else {
            panic!("over the rate")
        };
        assert!(at > 0 && at <= 1_000);
        assert_eq!(q.from_ip(&A), 10, "a throttled connection is not counted");
        // Another address has its own rate.
        assert_eq!(q.admit_ip("CLIENT", B, 0), IpAdmission::Admit);
    }

    #[test]
    fn overrides_parse_as_kafka_writes_them() {
        let resolve = |h: &str| (h == "broker.local").then_some(B);
        let o = parse_overrides(" 10.0.0.1:100, broker.local:5,[::1]:7 ,", resolve).expect("valid");
        assert_eq!(o.get(&A), Some(&100));
        assert_eq!(o.get(&B), Some(&5));
        assert_eq!(o.get(&"::1".parse::<IpAddr>().expect("v6")), Some(&7));
        assert!(parse_overrides("10.0.0.1", resolve).is_err());
        assert!(parse_overrides("10.0.0.1:x", resolve).is_err());
        assert!(parse_overrides("nowhere:1", resolve).is_err());
        assert!(parse_overrides("", resolve).expect("empty").is_empty());
    }
}
