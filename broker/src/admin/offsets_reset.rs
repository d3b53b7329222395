//! `POST /api/v1/groups/{group}/offsets/reset`: what
//! `kafka-consumer-groups.sh --reset-offsets` does. The plan (current and
//! new offset per partition) is computed from ListOffsets answers and
//! returned; only with `execute: true` is it committed, and only while
//! the group has no members (a live consumer would overwrite it). Offsets
//! out of the log's range are clamped to it, as Kafka's tool does.

use std::collections::BTreeSet;

use axum::extract::{Path, State};
use axum::Json;
use kafka_protocol::ResponseError;
use serde::{Deserialize, Serialize};

use super::error::{ApiError, ApiResult};
use super::groups::not_coordinator;
use super::state::HttpState;
use crate::group::offsets::OffsetCommit;
use crate::server::Broker;
pub use crate::tools::{new_offset, parse_datetime, Reset};

const EARLIEST: i64 = -2;
const LATEST: i64 = -1;

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ResetTo {
    Earliest,
    Latest,
    Datetime,
    Offset,
    Shift,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResetOffsets {
    pub to: ResetTo,
    pub topics: Option<Vec<String>>,
    pub partitions: Option<Vec<i32>>,
    pub datetime: Option<String>,
    pub offset: Option<i64>,
    pub shift: Option<i64>,
    #[serde(default)]
    pub execute: bool,
}

#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct PlannedReset {
    pub topic: String,
    pub partition: i32,
    pub current_offset: i64,
    pub new_offset: i64,
}

#[derive(Debug, Serialize)]
pub struct ResetPlan {
    pub group_id: String,
    pub executed: bool,
    pub partitions: Vec<PlannedReset>,
}

/// The replica manager's ListOffsets answer for every partition at one
/// timestamp (or EARLIEST/LATEST).
async fn list_offsets(
    b: &Broker,
    partitions: &[(String, i32)],
    timestamp: i64,
) -> ApiResult<Vec<i64>> {
    let mut out = Vec::with_capacity(partitions.len());
    for (t, p) in partitions {
        match b.replicas.list_offset(t, *p, timestamp, -1, false).await {
            Ok(found) => out.push(found.map_or(-1, |f| f.offset)),
            Err(e) => {
                return Err(ApiError::kafka(
                    e.code(),
                    Some(&format!(
                        "{t}-{p}: {} (offsets can be reset on the broker that leads the partition and coordinates the group)",
                        crate::metrics::errors::error_name(e.code())
                    )),
                ))
            }
        }
    }
    Ok(out)
}

/// The partitions a reset covers.
async fn partitions_of(
    b: &Broker,
    group: &str,
    req: &ResetOffsets,
) -> ApiResult<Vec<(String, i32, i64)>> {
    let committed = b
        .groups
        .fetch_checked(group, None)
        .map_err(|_| not_coordinator(b, group))?;
    let topics: Vec<String> = match &req.topics {
        Some(t) if !t.is_empty() => t.clone(),
        _ => committed
            .iter()
            .map(|c| c.topic.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect(),
    };
    if topics.is_empty() {
        return Err(ApiError::bad_request(format!(
            "group {group} has no committed offsets: name the topics to reset"
        )));
    }
    let snap = b.cluster.view.snapshot();
    let mut out = Vec::new();
    for t in topics {
        let count = match snap.topic(&t) {
            Some(rec) => rec.record.partitions,
            None => match b.logs.topic(&t) {
                Some(lt) => lt.partitions().len() as i32,
                None => {
                    return Err(ApiError::kafka(
                        ResponseError::UnknownTopicOrPartition.code(),
                        Some(&format!("topic {t} does not exist")),
                    ))
                }
            },
        };
        let wanted: Vec<i32> = match &req.partitions {
            Some(ps) if !ps.is_empty() => {
                if let Some(bad) = ps.iter().find(|p| **p < 0 || **p >= count) {
                    return Err(ApiError::kafka(
                        ResponseError::UnknownTopicOrPartition.code(),
                        Some(&format!(
                            "topic {t} has no partition {bad} (it has {count})"
                        )),
                    ));
                }
                ps.clone()
            }
            _ => (0..count).collect(),
        };
        for p in wanted {
            let current = committed
                .iter()
                .find(|c| c.topic == t && c.partition == p)
                .map_or(-1, |c| c.offset);
            out.push((t.clone(), p, current));
        }
    }
    Ok(out)
}

pub async fn plan(b: &Broker, group: &str, req: &ResetOffsets) -> ApiResult<Vec<PlannedReset>> {
    let parts = partitions_of(b, group, req).await?;
    let keys: Vec<(String, i32)> = parts.iter().map(|(t, p, _)| (t.clone(), *p)).collect();
    let earliest = list_offsets(b, &keys, EARLIEST).await?;
    let latest = list_offsets(b, &keys, LATEST).await?;
    let at = match req.to {
        ResetTo::Datetime => {
            let ts = parse_datetime(
                req.datetime
                    .as_deref()
                    .ok_or_else(|| ApiError::bad_request("to=datetime needs `datetime`"))?,
            )
            .map_err(ApiError::bad_request)?;
            Some(list_offsets(b, &keys, ts).await?)
        }
        _ => None,
    };
    let mut out = Vec::with_capacity(parts.len());
    for (i, (topic, partition, current)) in parts.into_iter().enumerate() {
        let reset = match req.to {
            ResetTo::Earliest => Reset::Earliest,
            ResetTo::Latest => Reset::Latest,
            ResetTo::Datetime => Reset::Datetime(at.as_ref().map_or(-1, |a| a[i])),
            ResetTo::Offset => Reset::Offset(
                req.offset
                    .ok_or_else(|| ApiError::bad_request("to=offset needs `offset`"))?,
            ),
            ResetTo::Shift => Reset::Shift(
                req.shift
                    .ok_or_else(|| ApiError::bad_request("to=shift needs `shift`"))?,
            ),
        };
        let committed = (current >= 0).then_some(current);
        out.push(PlannedReset {
            topic,
            partition,
            current_offset: current,
            new_offset: new_offset(reset, earliest[i], latest[i], committed),
        });
    }
    Ok(out)
}

pub async fn reset(
    State(st): State<HttpState>,
    Path(group): Path<String>,
    super::ApiJson(req): super::ApiJson<ResetOffsets>,
) -> ApiResult<Json<ResetPlan>> {
    let b = st.broker()?;
    let d = b
        .groups
        .describe_checked(&group)
        .map_err(|_| not_coordinator(&b, &group))?;
    if !d.members.is_empty() {
        return Err(ApiError::kafka(
            ResponseError::NonEmptyGroup.code(),
            Some(&format!(
                "offsets of group {group} can only be reset while it has no members, but it is {} with {} member(s): stop its consumers first",
                d.state,
                d.members.len()
            )),
        ));
    }
    let partitions = plan(&b, &group, &req).await?;
    if req.execute {
        let offsets: Vec<OffsetCommit> = partitions
            .iter()
            .map(|p| OffsetCommit {
                topic: p.topic.clone(),
                partition: p.partition,
                offset: p.new_offset,
                leader_epoch: -1,
                metadata: String::new(),
            })
            .collect();
        let codes = b.groups.commit(&group, -1, "", None, offsets).await;
        if let Some((i, code)) = codes.iter().enumerate().find(|(_, c)| **c != 0) {
            let p = &partitions[i];
            let mut e = ApiError::kafka(
                *code,
                Some(&format!(
                    "committing {}-{} failed: {}",
                    p.topic,
                    p.partition,
                    crate::metrics::errors::error_name(*code)
                )),
            );
            if *code == ResponseError::UnknownMemberId.code() {
                e = ApiError::kafka(
                    ResponseError::NonEmptyGroup.code(),
                    Some(&format!(
                        "group {group} gained a member during the reset: stop its consumers first"
                    )),
                );
            }
            return Err(e);
        }
        tracing::info!(group = %group, partitions = partitions.len(), "offsets reset through the admin API");
    }
    Ok(Json(ResetPlan {
        group_id: group,
        executed: req.execute,
        partitions,
    }))
}
