//! The historical read path's priority classes in the admin API: which
//! class a group (or client id) reads history in, and pausing or resuming
//! the `bulk` class. Changes are the dynamic broker settings
//! `remote.fetch.priority.groups` and `remote.fetch.bulk.paused`, written
//! through the configuration service (`server/config_admin.rs`: validated,
//! persisted and applied to the prefetcher as a Kafka admin client's
//! IncrementalAlterConfigs would be).
//! They are this broker's settings: in a cluster, set them on each broker.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::Json;
use serde::{Deserialize, Serialize};
use strata_prefetch::classes::PriorityClass;

use super::error::{ApiError, ApiResult};
use super::state::HttpState;
use crate::server::config_admin::{self, AlterOp, OP_SET, RESOURCE_BROKER};
use crate::server::Broker;

#[derive(Debug, Serialize)]
pub struct Shares {
    pub critical: u32,
    pub standard: u32,
    pub bulk: u32,
}

#[derive(Debug, Serialize)]
pub struct PriorityClasses {
    pub shares: Shares,
    pub bulk_paused: bool,
    pub groups: BTreeMap<String, &'static str>,
}

fn view(b: &Broker) -> PriorityClasses {
    let p = b.dynamic.settings().class_policy.clone();
    PriorityClasses {
        shares: Shares {
            critical: p.shares[0],
            standard: p.shares[1],
            bulk: p.shares[2],
        },
        bulk_paused: p.bulk_paused,
        groups: p
            .members
            .iter()
            .filter(|(_, c)| **c != PriorityClass::Standard)
            .map(|(g, c)| (g.clone(), c.name()))
            .collect(),
    }
}

/// Sets one dynamic broker setting, as IncrementalAlterConfigs would.
async fn set(b: &Broker, name: &str, value: String) -> ApiResult<()> {
    let ops = [AlterOp {
        name: name.to_string(),
        op: OP_SET,
        value: Some(value),
    }];
    config_admin::alter(
        b,
        RESOURCE_BROKER,
        &b.node_id.to_string(),
        false,
        |current| config_admin::incremental(current, &ops, RESOURCE_BROKER),
    )
    .await
    .map_err(|(code, message)| ApiError::kafka(code.code(), Some(&message)))
}

pub async fn get(State(st): State<HttpState>) -> ApiResult<Json<PriorityClasses>> {
    let b = st.broker()?;
    Ok(Json(view(&b)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetClass {
    pub class: String,
}

async fn put_class(b: &Broker, group: &str, class: PriorityClass) -> ApiResult<()> {
    if group.is_empty() || group.contains([',', '=']) || group.trim() != group {
        return Err(ApiError::bad_request(format!(
            "`{group}` cannot be given a class: remote.fetch.priority.groups lists GROUP=CLASS pairs, so a name may not be empty, contain ',' or '=', or start or end with a space"
        )));
    }
    let mut members = b.dynamic.settings().class_policy.members.clone();
    members.remove(group);
    if class != PriorityClass::Standard {
        members.insert(group.to_string(), class);
    }
    let sorted: BTreeMap<_, _> = members.into_iter().collect();
    let value = sorted
        .iter()
        .map(|(g, c)| format!("{g}={c}"))
        .collect::<Vec<_>>()
        .join(",");
    set(b, "remote.fetch.priority.groups", value).await?;
    tracing::info!(group, class = %class, "priority class set through the admin API");
    Ok(())
}

pub async fn put_group(
    State(st): State<HttpState>,
    Path(group): Path<String>,
    super::ApiJson(body): super::ApiJson<SetClass>,
) -> ApiResult<Json<PriorityClasses>> {
    let b = st.broker()?;
    let class: PriorityClass = body.class.parse().map_err(ApiError::bad_request)?;
    put_class(&b, &group, class).await?;
    Ok(Json(view(&b)))
}

pub async fn delete_group(
    State(st): State<HttpState>,
    Path(group): Path<String>,
) -> ApiResult<Json<PriorityClasses>> {
    let b = st.broker()?;
    put_class(&b, &group, PriorityClass::Standard).await?;
    Ok(Json(view(&b)))
}

pub async fn pause_bulk(State(st): State<HttpState>) -> ApiResult<Json<PriorityClasses>> {
    let b = st.broker()?;
    set(&b, "remote.fetch.bulk.paused", "true".into()).await?;
    Ok(Json(view(&b)))
}

pub async fn resume_bulk(State(st): State<HttpState>) -> ApiResult<Json<PriorityClasses>> {
    let b = st.broker()?;
    set(&b, "remote.fetch.bulk.paused", "false".into()).await?;
    Ok(Json(view(&b)))
}
