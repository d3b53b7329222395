//! Topics in the admin API: list, describe (configs with their source,
//! and per partition the leader, replicas, ISR, offsets, local bytes and
//! tiering status), create, alter configs (the hot window among them) and
//! delete. Changes go through the same handlers as CreateTopics,
//! IncrementalAlterConfigs and DeleteTopics, so they are validated and
//! replicated exactly as a Kafka client's would be.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use serde::{Deserialize, Serialize};

use super::error::{ApiError, ApiResult};
use super::state::HttpState;
use super::tiering::{self, PartitionTiering};
use crate::server::handlers;
use crate::server::Broker;

const RESOURCE_TOPIC: i8 = 2;
const OP_SET: i8 = 0;
const OP_DELETE: i8 = 1;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

#[derive(Debug, Serialize)]
pub struct TopicSummary {
    pub name: String,
    pub partitions: usize,
    pub replication_factor: usize,
    pub internal: bool,
    pub remote_storage_enable: bool,
    pub local_bytes: u64,
    pub remote_bytes: u64,
}

#[derive(Debug, Serialize)]
pub struct ConfigEntry {
    pub name: String,
    pub value: Option<String>,
    pub source: &'static str,
    pub read_only: bool,
    pub sensitive: bool,
}

#[derive(Debug, Serialize)]
pub struct LocalLog {
    pub log_start_offset: i64,
    pub local_log_start_offset: i64,
    pub high_watermark: i64,
    pub log_end_offset: i64,
    pub local_bytes: u64,
    pub local_segments: usize,
    pub tiering: Option<PartitionTiering>,
}

#[derive(Debug, Serialize)]
pub struct PartitionDetail {
    pub partition: i32,
    pub leader: i32,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub local: Option<LocalLog>,
}

#[derive(Debug, Serialize)]
pub struct TopicDetail {
    pub name: String,
    pub topic_id: String,
    pub internal: bool,
    pub configs: Vec<ConfigEntry>,
    pub partitions: Vec<PartitionDetail>,
}

#[derive(Debug, Serialize)]
pub struct TopicList {
    pub topics: Vec<TopicSummary>,
}

/// Metadata of every topic, or of one (as a Kafka client sees it).
async fn metadata(b: &Broker, topic: Option<&str>) -> MetadataResponse {
    let mut req = MetadataRequest::default();
    req.topics = topic.map(|t| {
        let mut rt = MetadataRequestTopic::default();
        rt.name = Some(TopicName(s(t)));
        vec![rt]
    });
    req.allow_auto_topic_creation = false;
    handlers::metadata::handle(req, 12, b).await
}

fn remote_enabled(b: &Broker, name: &str) -> bool {
    !crate::topic_name::is_internal(name)
        && b.remote.is_some()
        && b.topic_overrides(name)
            .and_then(|o| o.get("remote.storage.enable").cloned())
            .is_none_or(|v| v == "true")
}

pub async fn list(State(st): State<HttpState>) -> ApiResult<Json<TopicList>> {
    let b = st.broker()?;
    let md = metadata(&b, None).await;
    let now = crate::clock::now_ms();
    let tiered = tiering::index(b.remote.as_deref());
    let mut topics: Vec<TopicSummary> = md
        .topics
        .iter()
        .filter(|t| t.error_code == 0)
        .filter_map(|t| {
            let name = t.name.as_ref()?.0.to_string();
            let local = b.logs.topic(&name);
            let local_bytes = local
                .map(|t| t.partitions().iter().map(|l| l.size_bytes()).sum())
                .unwrap_or(0);
            let remote_bytes = t
                .partitions
                .iter()
                .filter_map(|p| tiered.get(&(name.clone(), p.partition_index)))
                .map(|t| tiering::of(t, now).remote_bytes)
                .sum();
            Some(TopicSummary {
                remote_storage_enable: remote_enabled(&b, &name),
                partitions: t.partitions.len(),
                replication_factor: replication_factor(t),
                internal: t.is_internal,
                name,
                local_bytes,
                remote_bytes,
            })
        })
        .collect();
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(TopicList { topics }))
}

/// A topic's replication factor as Metadata shows it: its partitions'
/// largest replica count.
pub fn replication_factor(
    t: &kafka_protocol::messages::metadata_response::MetadataResponseTopic,
) -> usize {
    t.partitions
        .iter()
        .map(|p| p.replica_nodes.len())
        .max()
        .unwrap_or(0)
}

/// Kafka's DescribeConfigs config source, by name.
pub fn source_name(code: i8) -> &'static str {
    match code {
        1 => "topic",
        2 | 3 => "broker_dynamic",
        4 => "broker_static",
        5 => "default",
        _ => "unknown",
    }
}

async fn configs(b: &Broker, name: &str) -> ApiResult<Vec<ConfigEntry>> {
    let mut req = DescribeConfigsRequest::default();
    let mut res = DescribeConfigsResource::default();
    res.resource_type = RESOURCE_TOPIC;
    res.resource_name = s(name);
    res.configuration_keys = None;
    req.resources.push(res);
    let r = handlers::configs::describe_configs(req, 4, b).await;
    let Some(out) = r.results.into_iter().next() else {
        return Err(ApiError::kafka(
            -1,
            Some("DescribeConfigs answered nothing"),
        ));
    };
    if out.error_code != 0 {
        return Err(ApiError::kafka(
            out.error_code,
            out.error_message.as_deref(),
        ));
    }
    let mut v: Vec<ConfigEntry> = out
        .configs
        .into_iter()
        .map(|c| ConfigEntry {
            name: c.name.to_string(),
            value: c.value.map(|v| v.to_string()),
            source: source_name(c.config_source),
            read_only: c.read_only,
            sensitive: c.is_sensitive,
        })
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(v)
}

/// The topic as the API describes it.
pub async fn detail(b: &Broker, name: &str) -> ApiResult<TopicDetail> {
    let md = metadata(b, Some(name)).await;
    let Some(t) = md.topics.into_iter().next() else {
        return Err(ApiError::not_found(format!("topic {name} does not exist")));
    };
    if t.error_code != 0 {
        return Err(ApiError::kafka(
            t.error_code,
            Some(&format!(
                "topic {name}: {}",
                crate::metrics::errors::error_name(t.error_code)
            )),
        ));
    }
    let configs = configs(b, name).await?;
    let now = crate::clock::now_ms();
    let tiered = tiering::index(b.remote.as_deref());
    let mut partitions: Vec<PartitionDetail> = t
        .partitions
        .iter()
        .map(|p| {
            let local = b.logs.partition(name, p.partition_index).map(|l| LocalLog {
                log_start_offset: l.log_start_offset(),
                local_log_start_offset: l.local_log_start_offset(),
                high_watermark: l.high_watermark(),
                log_end_offset: l.log_end_offset(),
                local_bytes: l.size_bytes(),
                local_segments: l.segment_count(),
                tiering: tiered
                    .get(&(name.to_string(), p.partition_index))
                    .map(|t| tiering::of(t, now)),
            });
            PartitionDetail {
                partition: p.partition_index,
                leader: p.leader_id.0,
                leader_epoch: p.leader_epoch,
                replicas: p.replica_nodes.iter().map(|r| r.0).collect(),
                isr: p.isr_nodes.iter().map(|r| r.0).collect(),
                local,
            }
        })
        .collect();
    partitions.sort_by_key(|p| p.partition);
    Ok(TopicDetail {
        name: name.to_string(),
        topic_id: t.topic_id.to_string(),
        internal: t.is_internal,
        configs,
        partitions,
    })
}

pub async fn describe(
    State(st): State<HttpState>,
    Path(topic): Path<String>,
) -> ApiResult<Json<TopicDetail>> {
    let b = st.broker()?;
    Ok(Json(detail(&b, &topic).await?))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateTopic {
    pub name: String,
    pub partitions: Option<i32>,
    pub replication_factor: Option<i16>,
    #[serde(default)]
    pub configs: BTreeMap<String, String>,
}

pub async fn create(
    State(st): State<HttpState>,
    super::ApiJson(body): super::ApiJson<CreateTopic>,
) -> ApiResult<(StatusCode, Json<TopicDetail>)> {
    let b = st.broker()?;
    let mut t = CreatableTopic::default();
    t.name = TopicName(s(&body.name));
    t.num_partitions = body.partitions.unwrap_or(-1);
    t.replication_factor = body.replication_factor.unwrap_or(-1);
    for (k, v) in &body.configs {
        let mut c = CreatableTopicConfig::default();
        c.name = s(k);
        c.value = Some(s(v));
        t.configs.push(c);
    }
    let mut req = CreateTopicsRequest::default();
    req.topics.push(t);
    req.timeout_ms = 30_000;
    let r = handlers::topics::create_topics(req, 7, &b).await;
    if let Some(res) = r.topics.first() {
        if res.error_code != 0 {
            return Err(ApiError::kafka(
                res.error_code,
                res.error_message.as_deref(),
            ));
        }
    }
    // In a cluster the controller creates the partitions a moment later.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match detail(&b, &body.name).await {
            Ok(d) if !d.partitions.is_empty() => return Ok((StatusCode::CREATED, Json(d))),
            Ok(d) if tokio::time::Instant::now() >= deadline => {
                return Ok((StatusCode::CREATED, Json(d)))
            }
            Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
            _ => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AlterConfigs {
    #[serde(default)]
    pub set: BTreeMap<String, String>,
    #[serde(default)]
    pub delete: Vec<String>,
    #[serde(default)]
    pub validate_only: bool,
}

pub async fn alter_configs(
    State(st): State<HttpState>,
    Path(topic): Path<String>,
    super::ApiJson(body): super::ApiJson<AlterConfigs>,
) -> ApiResult<Json<TopicDetail>> {
    let b = st.broker()?;
    if body.set.is_empty() && body.delete.is_empty() {
        return Err(ApiError::bad_request(
            "nothing to change: give `set` (name: value) and/or `delete` (names)",
        ));
    }
    let mut res = AlterConfigsResource::default();
    res.resource_type = RESOURCE_TOPIC;
    res.resource_name = s(&topic);
    for (k, v) in &body.set {
        let mut c = AlterableConfig::default();
        c.name = s(k);
        c.config_operation = OP_SET;
        c.value = Some(s(v));
        res.configs.push(c);
    }
    for k in &body.delete {
        let mut c = AlterableConfig::default();
        c.name = s(k);
        c.config_operation = OP_DELETE;
        res.configs.push(c);
    }
    let mut req = IncrementalAlterConfigsRequest::default();
    req.resources.push(res);
    req.validate_only = body.validate_only;
    let r = handlers::configs::incremental_alter_configs(req, 1, &b).await;
    if let Some(out) = r.responses.first() {
        if out.error_code != 0 {
            return Err(ApiError::kafka(
                out.error_code,
                out.error_message.as_deref(),
            ));
        }
    }
    Ok(Json(detail(&b, &topic).await?))
}

pub async fn delete(
    State(st): State<HttpState>,
    Path(topic): Path<String>,
) -> ApiResult<StatusCode> {
    let b = st.broker()?;
    let mut req = DeleteTopicsRequest::default();
    let mut t = kafka_protocol::messages::delete_topics_request::DeleteTopicState::default();
    t.name = Some(TopicName(s(&topic)));
    req.topics.push(t);
    req.timeout_ms = 30_000;
    let r = handlers::topics::delete_topics(req, 6, &b).await;
    if let Some(res) = r.responses.first() {
        if res.error_code != 0 {
            return Err(ApiError::kafka(
                res.error_code,
                res.error_message.as_deref(),
            ));
        }
    }
    Ok(StatusCode::NO_CONTENT)
}
