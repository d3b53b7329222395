//! DescribeConfigs, AlterConfigs and IncrementalAlterConfigs for topics
//! (dynamic, persisted, effective immediately) and the broker (described;
//! static — changed with `--set` and a restart — except the few dynamic
//! settings in `DYNAMIC_BROKER_CONFIGS`, persisted and applied at once).

use std::collections::{BTreeMap, HashSet};

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::s;
use super::topics::error_code;
use crate::config::{
    self, ConfigDef, ConfigSource, ConfigType, DYNAMIC_BROKER_CONFIGS, TOPIC_CONFIGS,
};
use crate::server::Broker;

const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;

const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;
const OP_APPEND: i8 = 2;
const OP_SUBTRACT: i8 = 3;

pub async fn describe_configs(
    req: DescribeConfigsRequest,
    version: i16,
    b: &Broker,
) -> DescribeConfigsResponse {
    let mut r = DescribeConfigsResponse::default();
    for res in req.resources {
        let mut out = DescribeConfigsResult::default();
        out.resource_type = res.resource_type;
        out.resource_name = res.resource_name.clone();
        let wanted: Option<HashSet<String>> = res
            .configuration_keys
            .as_ref()
            .map(|k| k.iter().map(|x| x.to_string()).collect());
        let keep = |d: &ConfigDef| wanted.as_ref().is_none_or(|w| w.contains(d.name));
        let entry = |d: &ConfigDef,
                     value: Option<String>,
                     source: ConfigSource,
                     synonyms: Vec<DescribeConfigsSynonym>,
                     read_only: bool| {
            let mut c = DescribeConfigsResourceResult::default();
            c.name = s(d.name);
            c.value = value.map(s);
            c.config_source = source as i8;
            c.read_only = read_only;
            if req.include_synonyms {
                c.synonyms = synonyms;
            }
            if version >= 3 {
                c.config_type = d.kind as i8;
                // Kafka: null unless asked for.
                c.documentation = req.include_documentation.then(|| s(d.doc));
            }
            c
        };
        match res.resource_type {
            RESOURCE_TOPIC => match b.topic_overrides(&res.resource_name) {
                None => {
                    out.error_code = ResponseError::UnknownTopicOrPartition.code();
                    out.error_message = Some(s(format!(
                        "Topic {} does not exist",
                        res.resource_name.as_str()
                    )));
                }
                Some(overrides) => {
                    for d in TOPIC_CONFIGS.iter().filter(|d| keep(d)) {
                        let (value, source) = config::effective(&b.config, &overrides, d.name);
                        let synonyms = topic_synonyms(d, &overrides, b);
                        out.configs
                            .push(entry(d, Some(value), source, synonyms, false));
                    }
                }
            },
            RESOURCE_BROKER => {
                let name = res.resource_name.as_str();
                if !name.is_empty() && name != b.node_id.to_string() {
                    out.error_code = ResponseError::InvalidRequest.code();
                    out.error_message = Some(s(format!(
                        "Unexpected broker id {name}; this is broker {}",
                        b.node_id
                    )));
                } else {
                    for d in config::broker_defs().filter(|d| keep(d)) {
                        let dynamic = DYNAMIC_BROKER_CONFIGS.contains(&d.name);
                        let (value, source) = b.dynamic.value(&b.config, d.name);
                        let value = (!value.is_empty()).then_some(value);
                        if source == ConfigSource::DynamicBrokerConfig {
                            let syns = vec![synonym(d.name, value.clone(), source)];
                            out.configs.push(entry(d, value, source, syns, false));
                            continue;
                        }
                        let (source, syns) = if b.config.is_explicit(d.name) {
                            (
                                ConfigSource::StaticBrokerConfig,
                                vec![synonym(
                                    d.name,
                                    value.clone(),
                                    ConfigSource::StaticBrokerConfig,
                                )],
                            )
                        } else {
                            (
                                ConfigSource::DefaultConfig,
                                vec![synonym(d.name, value.clone(), ConfigSource::DefaultConfig)],
                            )
                        };
                        out.configs.push(entry(d, value, source, syns, !dynamic));
                    }
                }
            }
            other => {
                out.error_code = ResponseError::InvalidRequest.code();
                out.error_message = Some(s(format!("Unsupported resource type {other}")));
            }
        }
        r.results.push(out);
    }
    r
}

fn synonym(name: &str, value: Option<String>, source: ConfigSource) -> DescribeConfigsSynonym {
    let mut syn = DescribeConfigsSynonym::default();
    syn.name = s(name);
    syn.value = value.map(s);
    syn.source = source as i8;
    syn
}

/// Kafka's synonym chain for a topic setting: topic override, the broker
/// setting it falls back to (if set), then the default.
fn topic_synonyms(
    d: &ConfigDef,
    overrides: &BTreeMap<String, String>,
    b: &Broker,
) -> Vec<DescribeConfigsSynonym> {
    let mut v = Vec::new();
    if let Some(o) = overrides.get(d.name) {
        v.push(synonym(d.name, Some(o.clone()), ConfigSource::TopicConfig));
    }
    if let Some(syn) = d.broker_synonym {
        if b.config.is_explicit(syn) {
            v.push(synonym(
                syn,
                Some(b.config.value(syn)),
                ConfigSource::StaticBrokerConfig,
            ));
        }
        // Kafka lists the broker synonyms from its primary name on, only
        // those with a value: none when the primary has no default (it is
        // derived from another setting, e.g. log.retention.ms from
        // log.retention.hours).
        if !NO_KAFKA_DEFAULT.contains(&syn) {
            v.push(synonym(
                syn,
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

/// Result of one resource of an alter request.
fn resource_result(
    resource_type: i8,
    name: StrBytes,
    outcome: Result<(), (ResponseError, String)>,
) -> (i16, Option<StrBytes>, i8, StrBytes) {
    match outcome {
        Ok(()) => (0, None, resource_type, name),
        Err((code, message)) => (code.code(), Some(s(message)), resource_type, name),
    }
}

fn broker_is_static() -> (ResponseError, String) {
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
) -> Result<(), (ResponseError, String)> {
    crate::server::topic_admin::set_topic_configs(b, &topic, overrides, validate_only)
        .await
        .map_err(|e| (error_code(&e), e.to_string()))?;
    // A new hot window or retention applies at the tiering manager's next
    // round; run it now rather than at the next interval.
    if let (Some(r), Some(t), false) = (&b.remote, b.logs.topic(&topic), validate_only) {
        for p in 0..t.partition_count() as i32 {
            if let Some(rp) = r.partition(&t, p) {
                rp.wake();
            }
        }
    }
    Ok(())
}

/// One resource of an alter request: topic overrides are replaced by what
/// `compute` makes of the current ones; broker settings are static.
async fn alter_resource(
    b: &Broker,
    resource_type: i8,
    resource_name: &str,
    validate_only: bool,
    compute: impl FnOnce(
        BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, String>, (ResponseError, String)>,
) -> Result<(), (ResponseError, String)> {
    match resource_type {
        RESOURCE_TOPIC => {
            let Some(current) = b.topic_overrides(resource_name) else {
                return Err((
                    ResponseError::UnknownTopicOrPartition,
                    format!("Topic {resource_name} does not exist"),
                ));
            };
            let overrides = compute(current)?;
            apply(b, resource_name.to_string(), overrides, validate_only).await
        }
        RESOURCE_BROKER => {
            if !resource_name.is_empty() && resource_name != b.node_id.to_string() {
                return Err((
                    ResponseError::InvalidRequest,
                    format!(
                        "Unexpected broker id {resource_name}; this is broker {}",
                        b.node_id
                    ),
                ));
            }
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
                r.prefetcher
                    .budget()
                    .set_policy(b.dynamic.class_policy(&b.config));
                r.prefetcher
                    .quota()
                    .set_rate(b.dynamic.fetch_quota_rate(&b.config));
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

/// Fills an alter response entry (the two alter APIs have distinct types).
macro_rules! resource_response {
    ($ty:ty, $res:expr, $outcome:expr) => {{
        let (code, message, rt, name) =
            resource_result($res.resource_type, $res.resource_name, $outcome);
        let mut out = <$ty>::default();
        out.error_code = code;
        out.error_message = message;
        out.resource_type = rt;
        out.resource_name = name;
        out
    }};
}

pub async fn alter_configs(
    req: AlterConfigsRequest,
    _version: i16,
    b: &Broker,
) -> AlterConfigsResponse {
    use kafka_protocol::messages::alter_configs_response::AlterConfigsResourceResponse;
    let mut r = AlterConfigsResponse::default();
    for res in req.resources {
        // Legacy AlterConfigs replaces the whole set of overrides.
        let given = super::values_set(res.configs.iter().map(|c| (&c.name, c.value.as_ref())));
        let outcome = alter_resource(
            b,
            res.resource_type,
            &res.resource_name,
            req.validate_only,
            |_| Ok(given),
        )
        .await;
        r.responses.push(resource_response!(
            AlterConfigsResourceResponse,
            res,
            outcome
        ));
    }
    r
}

pub async fn incremental_alter_configs(
    req: IncrementalAlterConfigsRequest,
    _version: i16,
    b: &Broker,
) -> IncrementalAlterConfigsResponse {
    use kafka_protocol::messages::incremental_alter_configs_response::AlterConfigsResourceResponse;
    let mut r = IncrementalAlterConfigsResponse::default();
    for res in req.resources {
        let outcome = alter_resource(
            b,
            res.resource_type,
            &res.resource_name,
            req.validate_only,
            |current| incremental(current, &res.configs, res.resource_type),
        )
        .await;
        r.responses.push(resource_response!(
            AlterConfigsResourceResponse,
            res,
            outcome
        ));
    }
    r
}

/// Applies SET / DELETE / APPEND / SUBTRACT to the current overrides.
fn incremental(
    mut overrides: BTreeMap<String, String>,
    ops: &[kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig],
    resource_type: i8,
) -> Result<BTreeMap<String, String>, (ResponseError, String)> {
    let mut seen = HashSet::new();
    for op in ops {
        let name = op.name.to_string();
        if !seen.insert(name.clone()) {
            return Err((
                ResponseError::InvalidRequest,
                format!("Duplicate config key {name} in request"),
            ));
        }
        if op.config_operation == OP_DELETE && !overrides.contains_key(&name) {
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
        let value = op.value.as_ref().map(|v| v.to_string());
        match op.config_operation {
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
                    if op.config_operation == OP_APPEND {
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
