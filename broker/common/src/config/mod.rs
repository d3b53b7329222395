//! Broker and topic configuration under Kafka's setting names.
//!
//! `BrokerConfig` holds the values an operator set (TOML file, then `--set`);
//! `TopicConfig` is a topic's effective, typed configuration: its overrides,
//! else the broker's synonym, else the default. This module parses and
//! validates; it never reads or writes topic state on disk.

pub mod checks;
pub(crate) mod cluster_defs;
pub(crate) mod defs;
pub mod dynamic;
pub mod reference;
pub mod security;
pub(crate) mod security_defs;
pub mod settings;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use strata_format::transcode::{Codec, Encoding};
use thiserror::Error;

pub use defs::{
    topic_def, ConfigDef, ConfigType, BROKER_CONFIGS, DYNAMIC_BROKER_CONFIGS, TOPIC_CONFIGS,
};
pub use settings::BrokerSettings;

/// A `LIST` setting's value (Kafka's `ConfigDef.Type.LIST`): comma
/// separated, each entry trimmed, empty entries dropped.
pub fn parse_list(csv: &str) -> Vec<String> {
    csv.split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect()
}

/// STRATA_SET's settings: split at each ';' that a `NAME=` (or the end)
/// follows, so a value may hold ';'; a JAAS line (`…sasl.jaas.config`)
/// keeps the ';' it ends with.
pub fn split_env_sets(value: &str) -> Vec<String> {
    let starts_setting = |rest: &str| {
        let rest = rest.trim_start();
        rest.find('=').is_some_and(|i| {
            i > 0
                && rest[..i]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
        })
    };
    let mut out: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut rest = value;
    while let Some(i) = rest.find(';') {
        let (head, tail) = (&rest[..i], &rest[i + 1..]);
        current.push_str(head);
        if starts_setting(tail) || tail.trim().is_empty() {
            let name = current.split('=').next().unwrap_or("").trim();
            if name.ends_with("sasl.jaas.config") && !current.trim_end().ends_with(';') {
                current.push(';');
            }
            out.push(std::mem::take(&mut current));
        } else {
            current.push(';');
        }
        rest = tail;
    }
    current.push_str(rest);
    out.push(current);
    out.into_iter()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

pub fn broker_def(name: &str) -> Option<&'static ConfigDef> {
    broker_defs().find(|d| d.name == name)
}

/// Every broker-level setting: the main table and the cluster layer's.
pub fn broker_defs() -> impl Iterator<Item = &'static ConfigDef> {
    BROKER_CONFIGS
        .iter()
        .chain(cluster_defs::CLUSTER_BROKER_CONFIGS.iter())
        .chain(security_defs::SECURITY_BROKER_CONFIGS.iter())
}

#[derive(Debug, Error)]
pub enum ConfigError {
    #[error("unknown setting `{0}`")]
    Unknown(String),
    #[error("{0}")]
    Invalid(String),
    #[error("cannot read config file {path}: {message}")]
    File { path: String, message: String },
}

/// Where an effective value came from (Kafka's `ConfigSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    TopicConfig = 1,
    DynamicBrokerConfig = 2,
    StaticBrokerConfig = 4,
    DefaultConfig = 5,
}

/// Values the operator set for the broker, by name (for DescribeConfigs),
/// and the typed settings parsed from them once (`settings()`).
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    values: Values,
    settings: Arc<BrokerSettings>,
}

/// The operator's values by name, with Kafka's fallbacks. `Debug` hides
/// secrets (keys, JAAS lines).
#[derive(Clone, Default)]
struct Values(BTreeMap<String, String>);

impl std::fmt::Debug for Values {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.iter().map(|(k, v)| {
                let shown = if is_sensitive(k) {
                    "[hidden]"
                } else {
                    v.as_str()
                };
                (k, shown)
            }))
            .finish()
    }
}

/// Whether a setting holds a secret: its value is never shown
/// (DescribeConfigs answers it as sensitive, logs and `Debug` hide it).
pub fn is_sensitive(name: &str) -> bool {
    match security::listener_setting(name) {
        Some((_, security::PerListener::Jaas(_))) => true,
        Some((_, security::PerListener::Setting(def))) => def.kind == ConfigType::Password,
        None => broker_def(name).is_some_and(|d| d.kind == ConfigType::Password),
    }
}

impl Values {
    fn explicit(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    fn value(&self, name: &str) -> String {
        if let Some(v) = self.explicit(name) {
            return v.to_string();
        }
        match name {
            "log.retention.ms" => {
                if let Some(m) = self.explicit("log.retention.minutes") {
                    return scale(m, 60_000);
                }
                if let Some(h) = self.explicit("log.retention.hours") {
                    return scale(h, 3_600_000);
                }
            }
            "log.roll.ms" => {
                if let Some(h) = self.explicit("log.roll.hours") {
                    return scale(h, 3_600_000);
                }
            }
            _ => {}
        }
        broker_def(name)
            .map(|d| d.default.to_string())
            .unwrap_or_default()
    }

    fn is_explicit(&self, name: &str) -> bool {
        self.explicit(name).is_some()
            || (name == "log.retention.ms"
                && (self.explicit("log.retention.minutes").is_some()
                    || self.explicit("log.retention.hours").is_some()))
            || (name == "log.roll.ms" && self.explicit("log.roll.hours").is_some())
    }

    /// Validates and records one operator value.
    fn set(&mut self, name: &str, value: &str) -> Result<(), ConfigError> {
        match security::listener_setting(name) {
            Some((_, security::PerListener::Setting(def))) => {
                def.validate(value).map_err(ConfigError::Invalid)?
            }
            Some((_, security::PerListener::Jaas(_))) => {
                security::check_jaas(name, value).map_err(ConfigError::Invalid)?
            }
            None => {
                let def = broker_def(name).ok_or_else(|| ConfigError::Unknown(name.to_string()))?;
                def.validate(value).map_err(ConfigError::Invalid)?;
            }
        }
        self.0.insert(name.to_string(), value.trim().to_string());
        Ok(())
    }

    /// A listener's value of `name`: `listener.name.<listener>.<name>` if
    /// set, else the broker-wide value (Kafka's order).
    fn for_listener(&self, listener: &str, name: &str) -> String {
        let prefixed = format!("listener.name.{}.{name}", listener.to_ascii_lowercase());
        match self.explicit(&prefixed) {
            Some(v) => v.to_string(),
            None => self.value(name),
        }
    }
}

impl BrokerConfig {
    /// Builds the config from an optional TOML file and `NAME=VALUE` pairs
    /// (later ones win). Unknown names and invalid values are errors.
    pub fn load(file: Option<&Path>, sets: &[String]) -> Result<Self, ConfigError> {
        let mut values = Values::default();
        if let Some(path) = file {
            let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
                path: path.display().to_string(),
                message: e.to_string(),
            })?;
            let table: toml::Table =
                text.parse()
                    .map_err(|e: toml::de::Error| ConfigError::File {
                        path: path.display().to_string(),
                        message: e.to_string(),
                    })?;
            let mut flat = BTreeMap::new();
            flatten("", &toml::Value::Table(table), &mut flat);
            for (k, v) in flat {
                values.set(&k, &v)?;
            }
        }
        for s in sets {
            let (k, v) = s.split_once('=').ok_or_else(|| {
                ConfigError::Invalid(format!("--set expects NAME=VALUE, got `{s}`"))
            })?;
            values.set(k.trim(), v.trim())?;
        }
        let settings = Arc::new(BrokerSettings::parse(&values)?);
        Ok(BrokerConfig { values, settings })
    }

    /// The broker's settings, typed (parsed when the config was loaded).
    pub fn settings(&self) -> &BrokerSettings {
        &self.settings
    }

    /// Effective value of a broker setting by name, as DescribeConfigs
    /// shows it, with Kafka's hour/minute fallbacks for `log.retention.ms`
    /// and `log.roll.ms`. Code that acts on a setting reads `settings()`.
    pub fn value(&self, name: &str) -> String {
        self.values.value(name)
    }

    /// Whether the operator set this setting (directly or by a fallback).
    pub fn is_explicit(&self, name: &str) -> bool {
        self.values.is_explicit(name)
    }

    /// `node.id`.
    pub fn node_id(&self) -> i32 {
        self.settings.node_id
    }
}

fn scale(v: &str, factor: i64) -> String {
    match v.parse::<i64>() {
        Ok(n) if n < 0 => "-1".to_string(),
        Ok(n) => n.saturating_mul(factor).to_string(),
        Err(_) => v.to_string(),
    }
}

fn flatten(prefix: &str, v: &toml::Value, out: &mut BTreeMap<String, String>) {
    match v {
        toml::Value::Table(t) => {
            for (k, v) in t {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, out);
            }
        }
        toml::Value::String(s) => {
            out.insert(prefix.to_string(), s.clone());
        }
        toml::Value::Array(a) => {
            let items: Vec<String> = a
                .iter()
                .map(|i| match i {
                    toml::Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            out.insert(prefix.to_string(), items.join(","));
        }
        other => {
            out.insert(prefix.to_string(), other.to_string());
        }
    }
}

/// `message.timestamp.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimestampType {
    CreateTime,
    LogAppendTime,
}

/// A topic's effective configuration, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicConfig {
    pub index_interval_bytes: u64,
    pub max_message_bytes: usize,
    pub message_timestamp_type: TimestampType,
    pub min_insync_replicas: i32,
    /// `quorum.ack.enable`: acks=all completes at `min_insync_replicas`
    /// copies rather than the whole ISR (in a cluster; docs/quorum-acks.md).
    pub quorum_ack: bool,
    pub retention_bytes: i64,
    pub retention_ms: i64,
    pub segment_bytes: u64,
    pub segment_index_bytes: usize,
    pub segment_ms: i64,
    pub remote_storage_enable: bool,
    /// `local.retention.ms` as set (-2: same as `retention_ms`).
    pub local_retention_ms: i64,
    /// `local.retention.bytes` as set (-2: same as `retention_bytes`).
    pub local_retention_bytes: i64,
    /// `message.timestamp.before.max.ms`, or the deprecated
    /// `message.timestamp.difference.max.ms` where it is left at its default.
    pub message_timestamp_before_max_ms: i64,
    /// `message.timestamp.after.max.ms`, likewise.
    pub message_timestamp_after_max_ms: i64,
    /// `cleanup.policy` includes `compact` (records need keys).
    pub compacted: bool,
    /// `cleanup.policy` includes `delete` (retention applies).
    pub delete_retention_applies: bool,
    pub min_cleanable_dirty_ratio: f64,
    pub min_compaction_lag_ms: i64,
    pub max_compaction_lag_ms: i64,
    pub delete_retention_ms: i64,
    /// `file.delete.delay.ms`: how long objects a cleaning pass replaced
    /// stay in the bucket for reads already planned.
    pub file_delete_delay_ms: i64,
    /// `compression.type` with its codec's level; `None` for `producer`
    /// (batches are stored as the producer compressed them).
    pub compression: Option<Encoding>,
}

/// `message.timestamp.after.max.ms`'s default (Kafka 4, KIP-937).
const AFTER_MAX_DEFAULT_MS: i64 = 3_600_000;

impl TopicConfig {
    /// Resolves overrides over broker values over defaults. Overrides must
    /// already be validated (see [`validate_overrides`]).
    pub fn resolve(broker: &BrokerConfig, overrides: &BTreeMap<String, String>) -> Self {
        let get = |name: &str| -> String { effective(broker, overrides, name).0 };
        let num = |name: &str| -> i64 { get(name).trim().parse().unwrap_or(0) };
        TopicConfig {
            index_interval_bytes: num("index.interval.bytes").max(0) as u64,
            max_message_bytes: num("max.message.bytes").max(0) as usize,
            message_timestamp_type: if get("message.timestamp.type") == "LogAppendTime" {
                TimestampType::LogAppendTime
            } else {
                TimestampType::CreateTime
            },
            min_insync_replicas: num("min.insync.replicas") as i32,
            quorum_ack: get("quorum.ack.enable").eq_ignore_ascii_case("true"),
            retention_bytes: num("retention.bytes"),
            retention_ms: num("retention.ms"),
            segment_bytes: num("segment.bytes").max(14) as u64,
            segment_index_bytes: num("segment.index.bytes").max(4) as usize,
            segment_ms: num("segment.ms").max(1),
            remote_storage_enable: get("remote.storage.enable").eq_ignore_ascii_case("true"),
            local_retention_ms: num("local.retention.ms"),
            local_retention_bytes: num("local.retention.bytes"),
            // Kafka 3.9's transition rule: the deprecated difference bound
            // applies to whichever side is left at Long.MAX_VALUE.
            message_timestamp_before_max_ms: match num("message.timestamp.before.max.ms") {
                i64::MAX => num("message.timestamp.difference.max.ms"),
                n => n,
            },
            // After: Kafka 4's default is an hour (KIP-937); a difference
            // bound set explicitly still applies where after is left at
            // that default or at Long.MAX_VALUE.
            message_timestamp_after_max_ms: match (
                num("message.timestamp.after.max.ms"),
                num("message.timestamp.difference.max.ms"),
            ) {
                (AFTER_MAX_DEFAULT_MS, d) if d != i64::MAX => d,
                (i64::MAX, d) => d,
                (n, _) => n,
            },
            compacted: get("cleanup.policy")
                .split(',')
                .any(|p| p.trim() == "compact"),
            delete_retention_applies: get("cleanup.policy")
                .split(',')
                .any(|p| p.trim() == "delete"),
            min_cleanable_dirty_ratio: get("min.cleanable.dirty.ratio")
                .trim()
                .parse()
                .unwrap_or(0.5),
            min_compaction_lag_ms: num("min.compaction.lag.ms"),
            max_compaction_lag_ms: num("max.compaction.lag.ms"),
            delete_retention_ms: num("delete.retention.ms"),
            file_delete_delay_ms: num("file.delete.delay.ms").max(0),
            compression: Codec::from_name(&get("compression.type")).map(|codec| Encoding {
                codec,
                level: match codec {
                    Codec::Gzip => num("compression.gzip.level") as i32,
                    Codec::Lz4 => num("compression.lz4.level") as i32,
                    Codec::Zstd => num("compression.zstd.level") as i32,
                    Codec::None | Codec::Snappy => 0,
                },
            }),
        }
    }

    /// The hot window in milliseconds (-1: unlimited).
    /// Kafka's `maxSegmentMs`: the age at which the active segment is
    /// rolled. `segment.ms`, or on a compacted topic `max.compaction.lag.ms`
    /// when that is smaller, so the cleaner can take every record in time.
    pub fn max_segment_ms(&self) -> i64 {
        if self.compacted {
            self.segment_ms.min(self.max_compaction_lag_ms.max(1))
        } else {
            self.segment_ms
        }
    }

    pub fn effective_local_retention_ms(&self) -> i64 {
        if self.local_retention_ms == -2 {
            self.retention_ms
        } else {
            self.local_retention_ms
        }
    }

    /// The hot window in bytes (-1: unlimited).
    pub fn effective_local_retention_bytes(&self) -> i64 {
        if self.local_retention_bytes == -2 {
            self.retention_bytes
        } else {
            self.local_retention_bytes
        }
    }

    /// Checks settings against each other (Kafka's rule: the hot window
    /// cannot be larger than total retention).
    pub fn check_consistency(&self) -> Result<(), String> {
        let check = |name: &str, local: i64, total: i64, total_name: &str| {
            if local == -2 || total == -1 {
                return Ok(());
            }
            if local == -1 {
                return Err(format!(
                    "Invalid value -1 for configuration {name}: Value must not be -1 as {total_name} value is set as {total}."
                ));
            }
            if local > total {
                return Err(format!(
                    "Invalid value {local} for configuration {name}: Value must not be more than {total_name} property value: {total}"
                ));
            }
            Ok(())
        };
        check(
            "local.retention.ms",
            self.local_retention_ms,
            self.retention_ms,
            "retention.ms",
        )?;
        check(
            "local.retention.bytes",
            self.local_retention_bytes,
            self.retention_bytes,
            "retention.bytes",
        )
    }
}

/// Effective value and source of one topic setting.
pub fn effective(
    broker: &BrokerConfig,
    overrides: &BTreeMap<String, String>,
    name: &str,
) -> (String, ConfigSource) {
    if let Some(v) = overrides.get(name) {
        return (v.clone(), ConfigSource::TopicConfig);
    }
    let def = topic_def(name);
    if let Some(syn) = def.and_then(|d| d.broker_synonym) {
        if broker.is_explicit(syn) {
            return (broker.value(syn), ConfigSource::StaticBrokerConfig);
        }
    }
    (
        def.map(|d| d.default.to_string()).unwrap_or_default(),
        ConfigSource::DefaultConfig,
    )
}

/// Whether `topic`'s sealed segments go to the object store: tiering on
/// for the broker and the topic, and not an internal topic.
pub fn tiering_enabled(broker: &BrokerConfig, topic: &str, cfg: &TopicConfig) -> bool {
    broker.settings().remote_log_storage_system_enable
        && cfg.remote_storage_enable
        && !crate::topic_name::is_internal(topic)
}

/// Checks topic overrides: known names, valid values. The error message
/// names the offending setting.
pub fn validate_overrides(overrides: &BTreeMap<String, String>) -> Result<(), String> {
    for (k, v) in overrides {
        let def = topic_def(k).ok_or_else(|| format!("Unknown topic config name: {k}"))?;
        def.validate(v)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence_override_broker_default() {
        let broker = BrokerConfig::load(None, &["log.retention.hours=1".into()]).unwrap();
        let mut o = BTreeMap::new();
        assert_eq!(
            effective(&broker, &o, "retention.ms"),
            ("3600000".into(), ConfigSource::StaticBrokerConfig)
        );
        assert_eq!(
            effective(&broker, &o, "segment.bytes"),
            ("1073741824".into(), ConfigSource::DefaultConfig)
        );
        o.insert("retention.ms".into(), "5".into());
        assert_eq!(TopicConfig::resolve(&broker, &o).retention_ms, 5);
    }

    #[test]
    fn hot_window_cannot_exceed_total_retention() {
        let broker = BrokerConfig::load(None, &[]).unwrap();
        let cfg = |pairs: &[(&str, &str)]| {
            let o: BTreeMap<String, String> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            TopicConfig::resolve(&broker, &o)
        };
        let c = cfg(&[]);
        assert!(c.check_consistency().is_ok());
        assert_eq!(c.effective_local_retention_ms(), c.retention_ms);
        assert!(cfg(&[("local.retention.ms", "1000")])
            .check_consistency()
            .is_ok());
        let err = cfg(&[("retention.ms", "1000"), ("local.retention.ms", "2000")])
            .check_consistency()
            .unwrap_err();
        assert!(
            err.contains("local.retention.ms") && err.contains("retention.ms property value: 1000"),
            "{err}"
        );
        assert!(cfg(&[("local.retention.ms", "-1")])
            .check_consistency()
            .is_err());
        assert!(cfg(&[("retention.ms", "-1"), ("local.retention.ms", "-1")])
            .check_consistency()
            .is_ok());
        assert!(
            cfg(&[("retention.bytes", "100"), ("local.retention.bytes", "200")])
                .check_consistency()
                .is_err()
        );
        assert_eq!(
            cfg(&[("retention.bytes", "100")]).effective_local_retention_bytes(),
            100
        );
    }

    #[test]
    fn rejects_unknown_and_invalid() {
        assert!(matches!(
            BrokerConfig::load(None, &["no.such.thing=1".into()]),
            Err(ConfigError::Unknown(_))
        ));
        assert!(BrokerConfig::load(None, &["num.partitions=zero".into()]).is_err());
        let mut o = BTreeMap::new();
        o.insert("retention.ms".into(), "x".into());
        assert!(validate_overrides(&o).is_err());
    }

    #[test]
    fn toml_dotted_keys_flatten() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("strata.toml");
        std::fs::write(
            &p,
            "num.partitions = 6\n\"log.segment.bytes\" = 1048576\n[log.retention]\nms = 1000\n",
        )
        .unwrap();
        let c = BrokerConfig::load(Some(&p), &["num.partitions=3".into()]).unwrap();
        assert_eq!(c.settings().num_partitions, 3);
        assert_eq!(c.value("log.segment.bytes"), "1048576");
        assert_eq!(c.value("log.retention.ms"), "1000");
    }
}

#[cfg(test)]
mod env_tests {
    use super::split_env_sets;

    #[test]
    fn strata_set_splits_between_settings_only() {
        assert_eq!(split_env_sets("a.b=1;c=2;"), vec!["a.b=1", "c=2"]);
        let jaas = "listener.name.x.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"p;w\";";
        let v = split_env_sets(&format!("num.partitions=3;{jaas};log.retention.ms=5"));
        assert_eq!(v, vec!["num.partitions=3", jaas, "log.retention.ms=5"]);
        assert_eq!(split_env_sets(jaas), vec![jaas]);
        assert!(split_env_sets(" ; ").is_empty());
    }
}
