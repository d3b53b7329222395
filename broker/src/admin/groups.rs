//! Consumer groups in the admin API: the groups this broker coordinates,
//! and per group its members and, per partition, the committed offset,
//! lag in records and in seconds, the consume and produce rates and the
//! catch-up estimate (from the coordinator's lag tracker,
//! `group/lag.rs`). A group coordinated elsewhere answers 421 naming its
//! coordinator. Read-only.

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::Json;
use kafka_protocol::ResponseError;
use serde::Serialize;

use super::error::{ApiError, ApiResult};
use super::state::HttpState;
use crate::group::lag::{CatchUp, PartitionLag};
use crate::server::Broker;

#[derive(Debug, Clone, Serialize)]
pub struct CatchUpView {
    pub state: &'static str,
    pub seconds: Option<f64>,
}

impl From<CatchUp> for CatchUpView {
    fn from(c: CatchUp) -> Self {
        match c {
            CatchUp::CaughtUp => CatchUpView {
                state: "caught_up",
                seconds: Some(0.0),
            },
            CatchUp::Draining { seconds } => CatchUpView {
                state: "catching_up",
                seconds: Some(seconds),
            },
            CatchUp::NotCatchingUp => CatchUpView {
                state: "not_catching_up",
                seconds: None,
            },
            CatchUp::Unknown => CatchUpView {
                state: "unknown",
                seconds: None,
            },
        }
    }
}

#[derive(Debug, Serialize)]
pub struct GroupPartition {
    pub topic: String,
    pub partition: i32,
    pub committed_offset: i64,
    pub high_watermark: Option<i64>,
    pub lag_records: Option<i64>,
    pub lag_seconds: Option<f64>,
    pub consume_rate: Option<f64>,
    pub produce_rate: Option<f64>,
    pub catch_up: CatchUpView,
}

#[derive(Debug, Serialize)]
pub struct Assigned {
    pub topic: String,
    pub partitions: Vec<i32>,
}

#[derive(Debug, Serialize)]
pub struct GroupMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub assignment: Vec<Assigned>,
}

#[derive(Debug, Serialize)]
pub struct GroupDetail {
    pub group_id: String,
    pub state: &'static str,
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<GroupMember>,
    pub partitions: Vec<GroupPartition>,
    pub lag_records: i64,
    pub priority_class: &'static str,
}

#[derive(Debug, Serialize)]
pub struct GroupSummary {
    pub group_id: String,
    pub state: &'static str,
    pub protocol_type: String,
    pub members: usize,
    pub lag_records: i64,
    pub partitions_not_catching_up: usize,
    pub priority_class: &'static str,
}

#[derive(Debug, Serialize)]
pub struct GroupList {
    pub groups: Vec<GroupSummary>,
}

pub fn priority_class(b: &Broker, group: &str) -> &'static str {
    b.dynamic
        .settings()
        .class_policy
        .class_of(Some(group), "")
        .name()
}

/// NOT_COORDINATOR, naming the broker that coordinates `group`.
pub fn not_coordinator(b: &Broker, group: &str) -> ApiError {
    let coordinator = b.coordinator_for("__consumer_offsets", group).ok();
    let mut e = ApiError::kafka(
        ResponseError::NotCoordinator.code(),
        Some(&match &coordinator {
            Some(r) => format!(
                "group {group} is coordinated by broker {} ({}:{}); ask its admin API",
                r.node_id, r.host, r.port
            ),
            None => format!(
                "this broker does not coordinate group {group}, and no broker does right now"
            ),
        }),
    );
    e.coordinator = coordinator.map(|r| r.node_id);
    e
}

fn lag_by_partition(b: &Broker, group: &str) -> HashMap<(String, i32), PartitionLag> {
    b.groups
        .lag
        .snapshot(b.logs.clock().now_ms())
        .into_iter()
        .filter(|((g, _, _), _)| g == group)
        .map(|((_, t, p), l)| ((t, p), l))
        .collect()
}

/// A group's standing, partition by partition.
pub fn detail(b: &Broker, group: &str) -> ApiResult<GroupDetail> {
    let d = b
        .groups
        .describe_checked(group)
        .map_err(|_| not_coordinator(b, group))?;
    let committed = b
        .groups
        .fetch_checked(group, None)
        .map_err(|_| not_coordinator(b, group))?;
    if d.state == "Dead" && committed.is_empty() {
        return Err(ApiError::kafka(
            ResponseError::GroupIdNotFound.code(),
            Some(&format!("group {group} does not exist")),
        ));
    }
    let lags = lag_by_partition(b, group);
    let mut partitions: Vec<GroupPartition> = committed
        .into_iter()
        .map(|c| {
            let key = (c.topic.clone(), c.partition);
            match lags.get(&key).filter(|l| l.committed == c.offset) {
                Some(l) => GroupPartition {
                    topic: c.topic,
                    partition: c.partition,
                    committed_offset: c.offset,
                    high_watermark: Some(l.high_watermark),
                    lag_records: Some(l.lag_records),
                    lag_seconds: l.lag_seconds,
                    consume_rate: l.consume_rate,
                    produce_rate: l.produce_rate,
                    catch_up: l.catch_up.into(),
                },
                // Not sampled yet (or committed since): the lag now, the
                // rates unknown.
                None => {
                    let hw = b
                        .logs
                        .log(&c.topic, c.partition)
                        .map(|l| l.high_watermark());
                    let lag = hw.map(|hw| (hw - c.offset.max(0)).max(0));
                    GroupPartition {
                        topic: c.topic,
                        partition: c.partition,
                        committed_offset: c.offset,
                        high_watermark: hw,
                        lag_records: lag,
                        lag_seconds: lag.filter(|l| *l == 0).map(|_| 0.0),
                        consume_rate: lags.get(&key).and_then(|l| l.consume_rate),
                        produce_rate: lags.get(&key).and_then(|l| l.produce_rate),
                        catch_up: if lag == Some(0) {
                            CatchUp::CaughtUp.into()
                        } else {
                            CatchUp::Unknown.into()
                        },
                    }
                }
            }
        })
        .collect();
    partitions.sort_by(|a, b| (&a.topic, a.partition).cmp(&(&b.topic, b.partition)));
    let members = d
        .members
        .into_iter()
        .map(
            |(member_id, group_instance_id, client_id, client_host, _, assignment)| GroupMember {
                member_id,
                group_instance_id,
                client_id,
                client_host,
                assignment: crate::group::subscription::assignment(&assignment)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|(topic, partitions)| Assigned { topic, partitions })
                    .collect(),
            },
        )
        .collect();
    Ok(GroupDetail {
        lag_records: partitions.iter().filter_map(|p| p.lag_records).sum(),
        priority_class: priority_class(b, group),
        group_id: d.group_id,
        state: d.state,
        protocol_type: d.protocol_type,
        protocol: d.protocol,
        members,
        partitions,
    })
}

pub async fn describe(
    State(st): State<HttpState>,
    Path(group): Path<String>,
) -> ApiResult<Json<GroupDetail>> {
    let b = st.broker()?;
    Ok(Json(detail(&b, &group)?))
}

pub async fn list(State(st): State<HttpState>) -> ApiResult<Json<GroupList>> {
    let b = st.broker()?;
    let mut groups = Vec::new();
    for (id, protocol_type, state) in b.groups.list() {
        // A group whose coordinator moved away meanwhile is left out.
        let Ok(d) = detail(&b, &id) else { continue };
        groups.push(GroupSummary {
            members: d.members.len(),
            lag_records: d.lag_records,
            partitions_not_catching_up: d
                .partitions
                .iter()
                .filter(|p| p.catch_up.state == "not_catching_up")
                .count(),
            priority_class: d.priority_class,
            group_id: id,
            state,
            protocol_type,
        });
    }
    groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    Ok(Json(GroupList { groups }))
}
