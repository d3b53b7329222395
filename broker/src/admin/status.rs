//! `GET /api/v1/broker`: who this broker is, whether it is ready, the
//! cluster it sees, its stores and its tiering totals. Read-only.

use axum::extract::State;
use axum::Json;
use serde::Serialize;

use super::error::ApiResult;
use super::state::HttpState;
use super::tiering::{self, TieringTotals};

#[derive(Debug, Serialize)]
pub struct BrokerEntry {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct StoreStatus {
    pub enabled: bool,
    pub available: Option<bool>,
}

#[derive(Debug, Serialize)]
pub struct MetadataStatus {
    pub describe: String,
    pub connected: bool,
}

#[derive(Debug, Serialize)]
pub struct BrokerStatus {
    pub node_id: i32,
    pub cluster_id: String,
    pub version: &'static str,
    pub ready: bool,
    pub controller_id: i32,
    pub brokers: Vec<BrokerEntry>,
    pub topics: usize,
    pub partitions: usize,
    pub uptime_seconds: f64,
    pub object_store: StoreStatus,
    pub metadata_store: MetadataStatus,
    pub tiering: TieringTotals,
}

pub async fn get(State(s): State<HttpState>) -> ApiResult<Json<BrokerStatus>> {
    let b = s.broker()?;
    let topics = b.logs.topics();
    let logs: Vec<_> = topics.iter().flat_map(|t| t.logs()).collect();
    let local_bytes: u64 = logs.iter().map(|l| l.size_bytes()).sum();
    let now = b.logs.clock().now_ms();
    Ok(Json(BrokerStatus {
        node_id: b.node_id,
        cluster_id: b.logs.cluster_id().to_string(),
        version: env!("CARGO_PKG_VERSION"),
        ready: true,
        controller_id: b.controller_id(),
        brokers: b
            .live_brokers()
            .into_iter()
            .map(|r| BrokerEntry {
                node_id: r.node_id,
                host: r.host,
                port: r.port,
                rack: r.rack,
            })
            .collect(),
        topics: topics.len(),
        partitions: logs.len(),
        uptime_seconds: s.uptime().as_secs_f64(),
        object_store: StoreStatus {
            enabled: b.remote.is_some(),
            available: b.remote.as_ref().map(|r| r.manager.store_available()),
        },
        metadata_store: MetadataStatus {
            describe: b.cluster.store.describe(),
            connected: b.cluster.view.snapshot().connected,
        },
        tiering: tiering::totals(b.remote.as_deref(), local_bytes, now),
    }))
}
