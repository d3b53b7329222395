//! Client quotas as Kafka resolves and measures them (`ClientQuotaManager`
//! and its `DefaultQuotaCallback`): which configured quota applies to a
//! request of a (user, client-id), which clients share one measured rate,
//! and how long a client over its quota must wait.
//!
//! Quotas are set on entities: a user, a client id, or both, each either
//! named or `<default>`. For a request of user U with client id C, the
//! first level configured for the quota type wins (Kafka's order):
//! (U, C), (U, <default>), U, (<default>, C), (<default>, <default>),
//! <default> user, C, <default> client id. The level decides who shares a
//! rate: a user-and-client level measures (U, C) together, a user level
//! all of U's clients, a client-id level all users of C; a `<default>` is
//! a size, not a shared pot (every user under `<default>` gets their own).
//!
//! The rates live here, keyed by what shares them. Rates unused for an
//! hour are forgotten (as Kafka's sensors; `record` sweeps once a
//! minute), and at `max_sensors` the least recently used tenth goes at
//! once, so client ids a client makes up cannot grow the broker's memory
//! without bound, nor cost a sweep per request. Time is handed in.

pub mod admin;
pub mod connections;
pub mod rate;

use std::collections::HashMap;

use rate::{Rate, RateConfig};

/// Kafka's client quota types (the `ClientQuotaEntity` config keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum QuotaType {
    ProducerByteRate,
    ConsumerByteRate,
    RequestPercentage,
    ControllerMutationRate,
}

impl QuotaType {
    pub const ALL: &'static [QuotaType] = &[
        QuotaType::ProducerByteRate,
        QuotaType::ConsumerByteRate,
        QuotaType::RequestPercentage,
        QuotaType::ControllerMutationRate,
    ];

    /// The key in AlterClientQuotas and `kafka-configs.sh`.
    pub fn key(self) -> &'static str {
        match self {
            QuotaType::ProducerByteRate => "producer_byte_rate",
            QuotaType::ConsumerByteRate => "consumer_byte_rate",
            QuotaType::RequestPercentage => "request_percentage",
            QuotaType::ControllerMutationRate => "controller_mutation_rate",
        }
    }

    pub fn from_key(key: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|q| q.key() == key)
    }
}

/// A named entity or the `<default>` of its type.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EntityName {
    Named(String),
    Default,
}

/// What a quota is set on: a user, a client id, or both.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QuotaEntity {
    pub user: Option<EntityName>,
    pub client_id: Option<EntityName>,
}

impl QuotaEntity {
    pub fn new(user: Option<EntityName>, client_id: Option<EntityName>) -> Self {
        QuotaEntity { user, client_id }
    }

    fn named(s: &str) -> Option<EntityName> {
        Some(EntityName::Named(s.to_string()))
    }
}

/// Who shares one measured rate: a user, a client id, or both ("" for
/// the part that does not count), as Kafka's quota metric tags.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ShareKey {
    pub user: String,
    pub client_id: String,
}

/// The configured quotas, by type and entity.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QuotaLimits {
    values: HashMap<QuotaType, HashMap<QuotaEntity, f64>>,
}

impl QuotaLimits {
    /// Sets (`Some`) or removes (`None`) one quota.
    pub fn set(&mut self, entity: QuotaEntity, quota: QuotaType, value: Option<f64>) {
        let map = self.values.entry(quota).or_default();
        match value {
            Some(v) => {
                map.insert(entity, v);
            }
            None => {
                map.remove(&entity);
            }
        }
    }

    pub fn get(&self, entity: &QuotaEntity, quota: QuotaType) -> Option<f64> {
        self.values.get(&quota).and_then(|m| m.get(entity)).copied()
    }

    /// Every quota set, sorted by entity and type.
    pub fn entries(&self) -> Vec<(QuotaEntity, QuotaType, f64)> {
        let mut out: Vec<_> = self
            .values
            .iter()
            .flat_map(|(q, m)| m.iter().map(move |(e, v)| (e.clone(), *q, *v)))
            .collect();
        out.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        out
    }

    fn has_type(&self, quota: QuotaType) -> bool {
        self.values.get(&quota).is_some_and(|m| !m.is_empty())
    }

    /// The eight levels for user `user` and client id `client`, highest first.
    fn levels(user: &str, client: &str) -> [QuotaEntity; 8] {
        use EntityName::Default as D;
        [
            QuotaEntity::new(QuotaEntity::named(user), QuotaEntity::named(client)),
            QuotaEntity::new(QuotaEntity::named(user), Some(D)),
            QuotaEntity::new(QuotaEntity::named(user), None),
            QuotaEntity::new(Some(D), QuotaEntity::named(client)),
            QuotaEntity::new(Some(D), Some(D)),
            QuotaEntity::new(Some(D), None),
            QuotaEntity::new(None, QuotaEntity::named(client)),
            QuotaEntity::new(None, Some(D)),
        ]
    }

    /// Who a request of `user` with `client_id` shares its rate with.
    pub fn share_key(&self, quota: QuotaType, user: &str, client_id: &str) -> ShareKey {
        let levels = QuotaLimits::levels(user, client_id);
        let first = levels.iter().position(|e| self.get(e, quota).is_some());
        let (u, c) = match first {
            Some(0 | 1 | 3 | 4) => (user, client_id),
            Some(2 | 5) => (user, ""),
            _ => ("", client_id),
        };
        ShareKey {
            user: u.to_string(),
            client_id: c.to_string(),
        }
    }

    /// The quota of a shared rate, if any applies.
    pub fn limit(&self, quota: QuotaType, key: &ShareKey) -> Option<f64> {
        let levels = QuotaLimits::levels(&key.user, &key.client_id);
        let pick: &[usize] = match (key.user.is_empty(), key.client_id.is_empty()) {
            (false, false) => &[0, 1, 3, 4],
            (false, true) => &[2, 5],
            (true, false) => &[6, 7],
            (true, true) => &[],
        };
        pick.iter().find_map(|i| self.get(&levels[*i], quota))
    }
}

/// One measured rate and when it was last used.
#[derive(Debug)]
struct Sensor {
    rate: Rate,
    last_used_ms: i64,
}

/// The broker's client quota rates: one per quota type and share key.
#[derive(Debug)]
pub struct ClientQuotas {
    config: RateConfig,
    limits: QuotaLimits,
    sensors: HashMap<(QuotaType, ShareKey), Sensor>,
    max_sensors: usize,
    /// When idle rates were last swept.
    swept_at_ms: i64,
}

/// How often `record` sweeps idle rates away.
const SWEEP_EVERY_MS: i64 = 60_000;

/// Rates unused this long are forgotten (Kafka's inactive sensor expiry).
pub const SENSOR_IDLE_MS: i64 = 3_600_000;

impl ClientQuotas {
    pub fn new(config: RateConfig, limits: QuotaLimits, max_sensors: usize) -> Self {
        ClientQuotas {
            config,
            limits,
            sensors: HashMap::new(),
            max_sensors: max_sensors.max(1),
            swept_at_ms: i64::MIN,
        }
    }

    pub fn limits(&self) -> &QuotaLimits {
        &self.limits
    }

    /// New quotas; rates measured so far are kept (only the bounds change).
    pub fn set_limits(&mut self, limits: QuotaLimits) {
        self.limits = limits;
    }

    pub fn sensor_count(&self) -> usize {
        self.sensors.len()
    }

    /// Records `value` (bytes, or request time in percent-seconds) for a
    /// request of `user` with `client_id` at `now_ms`; returns how long the
    /// client must be held back, in milliseconds (0 if within its quota).
    /// Request time is held back at most one window, as in Kafka.
    pub fn record(
        &mut self,
        quota: QuotaType,
        user: &str,
        client_id: &str,
        value: f64,
        now_ms: i64,
    ) -> i64 {
        if !self.limits.has_type(quota) {
            return 0;
        }
        let key = self.limits.share_key(quota, user, client_id);
        let Some(limit) = self.limits.limit(quota, &key) else {
            return 0;
        };
        if now_ms.saturating_sub(self.swept_at_ms) >= SWEEP_EVERY_MS {
            self.expire_idle(now_ms);
        }
        let k = (quota, key);
        if !self.sensors.contains_key(&k) && self.sensors.len() >= self.max_sensors {
            self.make_room();
        }
        let config = self.config;
        let sensor = self.sensors.entry(k).or_insert_with(|| Sensor {
            rate: Rate::new(config),
            last_used_ms: now_ms,
        });
        sensor.last_used_ms = now_ms;
        let wait = sensor.rate.record_and_throttle(value, limit, now_ms);
        match quota {
            QuotaType::RequestPercentage => wait.min(config.window_ms),
            _ => wait,
        }
    }

    /// Forgets rates unused for `SENSOR_IDLE_MS`.
    pub fn expire_idle(&mut self, now_ms: i64) {
        self.swept_at_ms = now_ms;
        self.sensors
            .retain(|_, s| now_ms - s.last_used_ms < SENSOR_IDLE_MS);
    }

    /// At the cap: forgets the least recently used tenth of the rates at
    /// once, so a stream of new client ids costs one sweep per tenth of
    /// the cap rather than one per request.
    fn make_room(&mut self) {
        let mut by_age: Vec<(i64, (QuotaType, ShareKey))> = self
            .sensors
            .iter()
            .map(|(k, s)| (s.last_used_ms, k.clone()))
            .collect();
        let evict = (self.max_sensors / 10).max(1).min(by_age.len());
        if evict < by_age.len() {
            by_age.select_nth_unstable_by_key(evict, |(t, _)| *t);
        }
        for (_, k) in by_age.into_iter().take(evict) {
            self.sensors.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests;
