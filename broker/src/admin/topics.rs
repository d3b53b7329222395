//! Topics in the admin API: list, describe (configs with their source,
//! and per partition the leader, replicas, ISR, offsets, local bytes and
//! tiering status), create, alter configs (the hot window among them) and
//! delete. Configs are read and changed through the configuration service
//! (`server/config_admin.rs`), topics through the topic service
//! (`server/topic_admin.rs`) and local logs through the replica manager,
//! all of which the Kafka handlers use too; the admin API never calls a
//! handler. A change is validated and replicated exactly as a Kafka
//! client's would be.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::Json;
use serde::{Deserialize, Serialize};

use super::error::{ApiError, ApiResult};
use super::state::HttpState;
use super::tiering::{self, PartitionTiering};
use crate::server::config_admin::{self, AlterOp, OP_DELETE, OP_SET, RESOURCE_TOPIC};
use crate::server::topic_admin;
use crate::server::Broker;
use crate::tools::source_name;

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

fn remote_enabled(b: &Broker, name: &str) -> bool {
    !crate::topic_name::is_internal(name)
        && b.remote.is_some()
        && b.topic_overrides(name)
            .and_then(|o| o.get("remote.storage.enable").cloned())
            .is_none_or(|v| v == "true")
}

pub async fn list(State(st): State<HttpState>) -> ApiResult<Json<TopicList>> {
    let b = st.broker()?;
    let now = b.logs.clock().now_ms();
    let tiered = tiering::index(b.remote.as_deref());
    let mut topics: Vec<TopicSummary> = topic_admin::all_topics(&b)
        .into_iter()
        .map(|t| {
            let name = t.name.clone();
            let local_bytes = t
                .partitions
                .iter()
                .filter_map(|p| b.replicas.local_log_status(&name, p.partition))
                .map(|l| l.local_bytes)
                .sum();
            let remote_bytes = t
                .partitions
                .iter()
                .filter_map(|p| tiered.get(&(name.clone(), p.partition)))
                .map(|t| tiering::of(t, now).remote_bytes)
                .sum();
            TopicSummary {
                remote_storage_enable: remote_enabled(&b, &name),
                partitions: t.partitions.len(),
                replication_factor: t.replication_factor(),
                internal: t.internal,
                name,
                local_bytes,
                remote_bytes,
            }
        })
        .collect();
    topics.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Json(TopicList { topics }))
}

async fn configs(b: &Broker, name: &str) -> ApiResult<Vec<ConfigEntry>> {
    let described = config_admin::describe(b, RESOURCE_TOPIC, name, None)
        .map_err(|(code, message)| ApiError::kafka(code.code(), Some(&message)))?;
    let mut v: Vec<ConfigEntry> = described
        .into_iter()
        .map(|c| ConfigEntry {
            name: c.def.name.to_string(),
            value: c.value,
            source: source_name(c.source as i8),
            read_only: c.read_only,
            sensitive: false,
        })
        .collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(v)
}

/// The topic as the API describes it.
pub async fn detail(b: &Broker, name: &str) -> ApiResult<TopicDetail> {
    let t = match topic_admin::find_topic(b, name) {
        Ok(t) => t,
        Err(e) => {
            let code = topic_admin::error_code(&e).code();
            return Err(ApiError::kafka(
                code,
                Some(&format!(
                    "topic {name}: {}",
                    crate::metrics::errors::error_name(code)
                )),
            ));
        }
    };
    let configs = configs(b, name).await?;
    let now = b.logs.clock().now_ms();
    let tiered = tiering::index(b.remote.as_deref());
    let mut partitions: Vec<PartitionDetail> = t
        .partitions
        .iter()
        .map(|p| {
            let local = b
                .replicas
                .local_log_status(name, p.partition)
                .map(|l| LocalLog {
                    log_start_offset: l.log_start_offset,
                    local_log_start_offset: l.local_log_start_offset,
                    high_watermark: l.high_watermark,
                    log_end_offset: l.log_end_offset,
                    local_bytes: l.local_bytes,
                    local_segments: l.local_segments,
                    tiering: tiered
                        .get(&(name.to_string(), p.partition))
                        .map(|t| tiering::of(t, now)),
                });
            PartitionDetail {
                partition: p.partition,
                leader: p.leader,
                leader_epoch: p.leader_epoch,
                replicas: p.replicas.clone(),
                isr: p.isr.clone(),
                local,
            }
        })
        .collect();
    partitions.sort_by_key(|p| p.partition);
    Ok(TopicDetail {
        name: name.to_string(),
        topic_id: t.id.to_string(),
        internal: t.internal,
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
    let existing = topic_admin::existing_topic_names(&b);
    if let Some(other) = topic_admin::colliding(&body.name, &existing) {
        return Err(ApiError::kafka(
            kafka_protocol::ResponseError::InvalidTopicException.code(),
            Some(&format!(
                "Topic '{}' collides with existing topic: {other}",
                body.name
            )),
        ));
    }
    topic_admin::create_topic(
        &b,
        &body.name,
        body.partitions.unwrap_or(-1),
        body.replication_factor.unwrap_or(-1) as i32,
        None,
        body.configs.clone(),
        false,
    )
    .await
    .map_err(|e| ApiError::kafka(topic_admin::error_code(&e).code(), Some(&e.to_string())))?;
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
    let ops: Vec<AlterOp> = body
        .set
        .iter()
        .map(|(k, v)| AlterOp {
            name: k.clone(),
            op: OP_SET,
            value: Some(v.clone()),
        })
        .chain(body.delete.iter().map(|k| AlterOp {
            name: k.clone(),
            op: OP_DELETE,
            value: None,
        }))
        .collect();
    config_admin::alter(&b, RESOURCE_TOPIC, &topic, body.validate_only, |current| {
        config_admin::incremental(current, &ops, RESOURCE_TOPIC)
    })
    .await
    .map_err(|(code, message)| ApiError::kafka(code.code(), Some(&message)))?;
    Ok(Json(detail(&b, &topic).await?))
}

pub async fn delete(
    State(st): State<HttpState>,
    Path(topic): Path<String>,
) -> ApiResult<StatusCode> {
    let b = st.broker()?;
    topic_admin::delete_topic(&b, &topic)
        .await
        .map_err(|e| ApiError::kafka(topic_admin::error_code(&e).code(), Some(&e.to_string())))?;
    Ok(StatusCode::NO_CONTENT)
}
