//! `strata tiering status [TOPIC]`: per partition, what is on the
//! broker's disk, what is in the object store, and what waits for upload.
//! Only Strata knows this, so it comes from the admin API.

use serde::Serialize;
use serde_json::Value;

use super::admin_http::{segment, AdminClient};
use super::output::{self, Format, Table};
use super::{CliResult, Target};

#[derive(Debug, Serialize)]
struct PartitionStatus {
    topic: String,
    partition: i32,
    leader: i64,
    log_start_offset: Option<i64>,
    local_log_start_offset: Option<i64>,
    log_end_offset: Option<i64>,
    local_bytes: Option<u64>,
    remote_log_start_offset: Option<i64>,
    remote_log_end_offset: Option<i64>,
    remote_bytes: Option<u64>,
    remote_segments: Option<u64>,
    copy_lag_segments: Option<u64>,
    copy_lag_bytes: Option<u64>,
    oldest_untiered_seconds: Option<f64>,
    upload_errors: Option<u64>,
    fenced: Option<bool>,
}

#[derive(Debug, Serialize)]
struct Status {
    broker: Value,
    partitions: Vec<PartitionStatus>,
}

fn partition_rows(topic: &Value) -> Vec<PartitionStatus> {
    let name = topic["name"].as_str().unwrap_or_default().to_string();
    topic["partitions"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| {
                    let l = &p["local"];
                    let t = &l["tiering"];
                    PartitionStatus {
                        topic: name.clone(),
                        partition: p["partition"].as_i64().unwrap_or(-1) as i32,
                        leader: p["leader"].as_i64().unwrap_or(-1),
                        log_start_offset: l["log_start_offset"].as_i64(),
                        local_log_start_offset: l["local_log_start_offset"].as_i64(),
                        log_end_offset: l["log_end_offset"].as_i64(),
                        local_bytes: l["local_bytes"].as_u64(),
                        remote_log_start_offset: t["remote_log_start_offset"].as_i64(),
                        remote_log_end_offset: t["remote_log_end_offset"].as_i64(),
                        remote_bytes: t["remote_bytes"].as_u64(),
                        remote_segments: t["remote_segments"].as_u64(),
                        copy_lag_segments: t["copy_lag_segments"].as_u64(),
                        copy_lag_bytes: t["copy_lag_bytes"].as_u64(),
                        oldest_untiered_seconds: t["oldest_untiered_seconds"].as_f64(),
                        upload_errors: t["upload_errors"].as_u64(),
                        fenced: t["fenced"].as_bool(),
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

pub async fn status(topic: Option<String>, target: &Target) -> CliResult<()> {
    let api = AdminClient::new(&target.admin_url);
    let broker = api.get("/api/v1/broker").await?;
    let names: Vec<String> = match topic {
        Some(t) => vec![t],
        None => api.get("/api/v1/topics").await?["topics"]
            .as_array()
            .map(|ts| {
                ts.iter()
                    .filter(|t| t["remote_storage_enable"].as_bool() == Some(true))
                    .filter_map(|t| t["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
    };
    let bar = (target.output == Format::Table && names.len() > 20)
        .then(|| output::progress(names.len() as u64, "reading topics"));
    let mut partitions = Vec::new();
    for n in &names {
        let t = api.get(&format!("/api/v1/topics/{}", segment(n))).await?;
        partitions.extend(partition_rows(&t));
        if let Some(b) = &bar {
            b.inc(1);
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if target.output == Format::Json {
        return Ok(output::json(&Status { broker, partitions })?);
    }
    let tot = &broker["tiering"];
    let mut text = format!(
        "Broker {}: {} local, {} in the object store ({}), {} sealed segments ({}) awaiting upload, oldest waiting {}.\n\n",
        broker["node_id"],
        output::bytes(tot["local_bytes"].as_u64().unwrap_or(0)),
        output::bytes(tot["remote_bytes"].as_u64().unwrap_or(0)),
        match broker["object_store"]["available"].as_bool() {
            Some(true) => "available",
            Some(false) => "UNAVAILABLE",
            None => "tiering off",
        },
        tot["copy_lag_segments"].as_u64().unwrap_or(0),
        output::bytes(tot["copy_lag_bytes"].as_u64().unwrap_or(0)),
        output::seconds(tot["oldest_untiered_seconds"].as_f64().unwrap_or(0.0)),
    );
    let mut t = Table::new(&[
        "TOPIC",
        "PARTITION",
        "LOG-START",
        "LOCAL-START",
        "LOG-END",
        "LOCAL-BYTES",
        "REMOTE-START",
        "REMOTE-END",
        "REMOTE-BYTES",
        "AWAITING-UPLOAD",
        "OLDEST-WAITING",
        "ERRORS",
    ]);
    for p in &partitions {
        let awaiting = match (p.copy_lag_segments, p.copy_lag_bytes) {
            (Some(s), Some(b)) => format!("{s} ({})", output::bytes(b)),
            _ => "-".into(),
        };
        let remote = |o: Option<i64>| match o {
            Some(-1) => "none".to_string(),
            o => output::opt(o),
        };
        t.row(vec![
            p.topic.clone(),
            p.partition.to_string(),
            output::opt(p.log_start_offset),
            output::opt(p.local_log_start_offset),
            output::opt(p.log_end_offset),
            p.local_bytes
                .map(output::bytes)
                .unwrap_or_else(|| format!("on broker {}", p.leader)),
            remote(p.remote_log_start_offset),
            remote(p.remote_log_end_offset),
            output::opt(p.remote_bytes.map(output::bytes)),
            awaiting,
            output::opt(p.oldest_untiered_seconds.map(output::seconds)),
            match p.fenced {
                Some(true) => "FENCED".into(),
                _ => output::opt(p.upload_errors),
            },
        ]);
    }
    text.push_str(&t.render());
    Ok(output::print(&text)?)
}
