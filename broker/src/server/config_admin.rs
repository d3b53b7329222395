//! Configuration administration, for the Kafka handlers (DescribeConfigs,
//! AlterConfigs, IncrementalAlterConfigs) and the admin HTTP API alike:
//! topics (dynamic, persisted, effective immediately) and the broker
//! (described; static, changed with `--set` and a restart, except the few
//! dynamic settings in `DYNAMIC_BROKER_CONFIGS`, persisted and applied at
//! once). Errors are the Kafka code a client is answered with and the
//! message an operator reads.

use std::collections::{BTreeMap, HashSet};

use kafka_protocol::ResponseError;

use super::Broker;
use crate::config::{
    self, ConfigDef, ConfigSource, ConfigType, DYNAMIC_BROKER_CONFIGS, TOPIC_CONFIGS,
};

/// Kafka's config resource types.
pub const RESOURCE_TOPIC: i8 = 2;
pub const RESOURCE_BROKER: i8 = 4;

/// IncrementalAlterConfigs' operations.
pub const OP_SET: i8 = 0;
pub const OP_DELETE: i8 = 1;
pub const OP_APPEND: i8 = 2;
pub const OP_SUBTRACT: i8 = 3;

/// A refused config request: the Kafka error and its message.
pub type ConfigFailure = (ResponseError, String);

/// One described setting.
#[derive(Debug, Clone)]
pub struct DescribedConfig {
    pub def: &'static ConfigDef,
    pub value: Option<String>,
    pub source: ConfigSource,
    /// Kafka's synonym chain: (name, value, source), most specific first.
    pub synonyms: Vec<(String, Option<String>, ConfigSource)>,
    pub read_only: bool,
}

/// One operation of an IncrementalAlterConfigs resource.
#[derive(Debug, Clone)]
pub struct AlterOp {
    pub name: String,
    /// `OP_SET`, `OP_DELETE`, `OP_APPEND` or `OP_SUBTRACT`.
    pub op: i8,
    pub value: Option<String>,
}

/// The settings of a resource (`keys`: only these; None: all).
pub fn describe(
    b: &Broker,
    resource_type: i8,
    resource_name: &str,
    keys: Option<&HashSet<String>>,
) -> Result<Vec<DescribedConfig>, ConfigFailure> {
    let keep = |d: &ConfigDef| keys.is_none_or(|w| w.contains(d.name));
    let mut out = Vec::new();
    match resource_type {
        RESOURCE_TOPIC => {
            let overrides = topic_overrides(b, resource_name)?;
            for d in TOPIC_CONFIGS.iter().filter(|d| keep(d)) {
                let (value, source) = config::effective(&b.config, &overrides, d.name);
                out.push(DescribedConfig {
                    def: d,
                    value: Some(value),
                    source,
                    synonyms: topic_synonyms(d, &overrides, b),
                    read_only: false,
                });
            }
        }
        RESOURCE_BROKER => {
            this_broker(b, resource_name)?;
            for d in config::broker_defs().filter(|d| keep(d)) {
                let dynamic = DYNAMIC_BROKER_CONFIGS.contains(&d.name);
                let (value, source) = b.dynamic.value(d.name);
                let value = (!value.is_empty()).then_some(value);
                let (source, read_only) = if source == ConfigSource::DynamicBrokerConfig {
                    (source, false)
                } else if b.config.is_explicit(d.name) {
                    (ConfigSource::StaticBrokerConfig, !dynamic)
                } else {
                    (ConfigSource::DefaultConfig, !dynamic)
                };
                out.push(DescribedConfig {
                    def: d,
                    synonyms: vec![(d.name.to_string(), value.clone(), source)],
                    value,
                    source,
                    read_only,
                });
            }
        }
        other => {
            return Err((
                ResponseError::InvalidRequest,
                format!("Unsupported resource type {other}"),
            ))
        }
    }
    Ok(out)
}

/// Kafka's synonym chain for a topic setting: topic override, the broker
/// setting it falls back to (if set), then the default.
fn topic_synonyms(
    d: &ConfigDef,
    overrides: &BTreeMap<String, String>,
    b: &Broker,
) -> Vec<(String, Option<String>, ConfigSource)> {
    let mut v = Vec::new();
    if let Some(o) = overrides.get(d.name) {
        v.push((
            d.name.to_string(),
            Some(o.clone()),
            ConfigSource::TopicConfig,
        ));
    }
    if let Some(syn) = d.broker_synonym {
        if b.config.is_explicit(syn) {
            v.push((
                syn.to_string(),
                Some(b.config.value(syn)),
                ConfigSource::StaticBrokerConfig,
            ));
        }
        // Kafka lists the broker synonyms from its primary name on, only
        // those with a value: none when the primary has no default (it is
        // derived from another setting, e.g. log.retention.ms from
        // log.retention.hours).
        if !NO_KAFKA_DEFAULT.contains(&syn) {
            v.push((
                syn.to_string(),
                Some(d.default.to_string()),
                ConfigSource::DefaultConfig,
            ));
        }
    }
    v
}

/// Broker settings a topic setting falls back to whose Kafka definition has
/// no default value (null): Kafka's DescribeConfigs shows no default
/// synonym for them.
const NO_KAFKA_DEFAULT: &[&str] = &[
    "log.retention.ms",
    "log.roll.ms",
    "log.roll.jitter.ms",
    "log.flush.interval.ms",
];

/// A BROKER resource names this broker (or none: the cluster default,
/// answered with this broker's values).
fn this_broker(b: &Broker, resource_name: &str) -> Result<(), ConfigFailure> {
    if !resource_name.is_empty() && resource_name != b.node_id.to_string() {
        return Err((
            ResponseError::InvalidRequest,
            format!(
                "Unexpected broker id {resource_name}; this is broker {}",
                b.node_id
            ),
        ));
    }
    Ok(())
}

/// A topic's overrides, or Kafka's answer for an unknown topic.
fn topic_overrides(b: &Broker, topic: &str) -> Result<BTreeMap<String, String>, ConfigFailure> {
    b.topic_overrides(topic).ok_or_else(|| {
        (
            ResponseError::UnknownTopicOrPartition,
            format!("Topic {topic} does not exist"),
        )
    })
}

fn broker_is_static() -> ConfigFailure {
    (
        ResponseError::InvalidRequest,
        format!(
            "only {} can change at run time; other broker settings are static in Strata: change them with --set or the config file and restart",
            DYNAMIC_BROKER_CONFIGS.join(", ")
        ),
    )
}

async fn apply(
    b: &Broker,
    topic: String,
    overrides: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), ConfigFailure> {
    crate::server::topic_admin::set_topic_configs(b, &topic, overrides, validate_only)
        .await
        .map_err(|e| (crate::server::topic_admin::error_code(&e), e.to_string()))?;
    // A new hot window or retention applies at the tiering manager's next
    // round; run it now rather than at the next interval.
    if !validate_only {
        b.replicas.wake_tiering(&topic);
    }
    Ok(())
}

/// Changes one resource: topic overrides are replaced by what `compute`
/// makes of the current ones; of the broker's settings only the dynamic
/// ones, likewise.
pub async fn alter(
    b: &Broker,
    resource_type: i8,
    resource_name: &str,
    validate_only: bool,
    compute: impl FnOnce(BTreeMap<String, String>) -> Result<BTreeMap<String, String>, ConfigFailure>,
) -> Result<(), ConfigFailure> {
    match resource_type {
        RESOURCE_TOPIC => {
            let current = topic_overrides(b, resource_name)?;
            let overrides = compute(current)?;
            apply(b, resource_name.to_string(), overrides, validate_only).await
        }
        RESOURCE_BROKER => {
            this_broker(b, resource_name)?;
            let values = compute(b.dynamic.values())?;
            for (k, v) in &values {
                if !DYNAMIC_BROKER_CONFIGS.contains(&k.as_str()) {
                    return Err(broker_is_static());
                }
                let def = config::broker_def(k).ok_or_else(broker_is_static)?;
                def.validate(v)
                    .map_err(|m| (ResponseError::InvalidConfig, m))?;
            }
            if validate_only {
                return Ok(());
            }
            b.dynamic
                .replace(values)
                .map_err(|e| (ResponseError::KafkaStorageError, e.to_string()))?;
            if let Some(r) = &b.remote {
                r.apply_dynamic(&b.dynamic.settings());
            }
            tracing::info!(settings = ?b.dynamic.values(), "updated dynamic broker settings");
            Ok(())
        }
        other => Err((
            ResponseError::InvalidRequest,
            format!("Unsupported resource type {other}"),
        )),
    }
}

/// Applies SET / DELETE / APPEND / SUBTRACT to the current overrides.
pub fn incremental(
    mut overrides: BTreeMap<String, String>,
    ops: &[AlterOp],
    resource_type: i8,
) -> Result<BTreeMap<String, String>, ConfigFailure> {
    let mut seen = HashSet::new();
    for op in ops {
        let name = op.name.clone();
        if !seen.insert(name.clone()) {
            return Err((
                ResponseError::InvalidRequest,
                format!("Duplicate config key {name} in request"),
            ));
        }
        if op.op == OP_DELETE && !overrides.contains_key(&name) {
            // Kafka: deleting a setting that is not set changes nothing,
            // whatever its name (`kafka-reassign-partitions --verify`
            // clears replication throttles Strata never sets).
            continue;
        }
        let def = if resource_type == RESOURCE_BROKER {
            config::broker_def(&name)
                .filter(|d| DYNAMIC_BROKER_CONFIGS.contains(&d.name))
                .ok_or_else(broker_is_static)?
        } else {
            config::topic_def(&name).ok_or_else(|| {
                (
                    ResponseError::InvalidConfig,
                    format!("Unknown topic config name: {name}"),
                )
            })?
        };
        let value = op.value.clone();
        match op.op {
            OP_SET => {
                let v = value.ok_or_else(|| {
                    (
                        ResponseError::InvalidRequest,
                        format!("Null value not supported for {name}"),
                    )
                })?;
                overrides.insert(name, v);
            }
            OP_DELETE => {
                overrides.remove(&name);
            }
            OP_APPEND | OP_SUBTRACT => {
                if def.kind != ConfigType::List {
                    return Err((
                        ResponseError::InvalidConfig,
                        format!("Config value append/subtract is not allowed for config key {name} (not a list)"),
                    ));
                }
                let current = overrides
                    .get(&name)
                    .cloned()
                    .unwrap_or_else(|| def.default.to_string());
                let mut items: Vec<String> = current
                    .split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                    .collect();
                for v in value
                    .unwrap_or_default()
                    .split(',')
                    .map(|x| x.trim().to_string())
                    .filter(|x| !x.is_empty())
                {
                    if op.op == OP_APPEND {
                        if !items.contains(&v) {
                            items.push(v);
                        }
                    } else {
                        items.retain(|i| *i != v);
                    }
                }
                overrides.insert(name, items.join(","));
            }
            other => {
                return Err((
                    ResponseError::InvalidRequest,
                    format!("Unknown config operation {other}"),
                ))
            }
        }
    }
    Ok(overrides)
}
