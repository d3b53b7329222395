//! Tiering status as the admin API shows it: per partition, what is in
//! the object store and what still waits for upload; and the totals of
//! this broker. Read-only views of the tiering manager's state.

use std::sync::atomic::Ordering;

use serde::Serialize;
use strata_tiering::RemotePartition;

use crate::remote::TieredStorage;

#[derive(Debug, Clone, Serialize, Default)]
pub struct PartitionTiering {
    pub remote_log_start_offset: i64,
    pub remote_log_end_offset: i64,
    pub remote_bytes: u64,
    pub remote_segments: u64,
    pub copy_lag_bytes: u64,
    pub copy_lag_segments: u64,
    pub oldest_untiered_seconds: f64,
    pub upload_errors: u64,
    pub fenced: bool,
}

/// Age of the oldest sealed segment not yet uploaded, in seconds.
pub fn oldest_untiered_seconds(p: &RemotePartition, now_ms: i64) -> f64 {
    match p.stats.copy_lag_oldest_timestamp_ms.load(Ordering::Relaxed) {
        0 => 0.0,
        t => (now_ms - t as i64).max(0) as f64 / 1e3,
    }
}

pub fn of(p: &RemotePartition, now_ms: i64) -> PartitionTiering {
    let m = p.manifest();
    PartitionTiering {
        remote_log_start_offset: m.earliest_offset().unwrap_or(-1),
        remote_log_end_offset: m.next_offset().unwrap_or(-1),
        remote_bytes: m.segments.iter().map(|s| s.size_bytes).sum(),
        remote_segments: m.segments.len() as u64,
        copy_lag_bytes: p.stats.copy_lag_bytes.load(Ordering::Relaxed),
        copy_lag_segments: p.stats.copy_lag_segments.load(Ordering::Relaxed),
        oldest_untiered_seconds: oldest_untiered_seconds(p, now_ms),
        upload_errors: p.stats.upload_errors.load(Ordering::Relaxed),
        fenced: p.stats.fenced.load(Ordering::Relaxed),
    }
}

/// The partitions this broker tiers, by (topic, partition): built once per
/// request, so a listing of many partitions does not scan them all for each.
pub fn index(
    remote: Option<&TieredStorage>,
) -> std::collections::HashMap<(String, i32), std::sync::Arc<RemotePartition>> {
    remote
        .map(|r| r.manager.partitions())
        .unwrap_or_default()
        .into_iter()
        .map(|p| ((p.topic.clone(), p.partition), p))
        .collect()
}

#[derive(Debug, Clone, Serialize, Default)]
pub struct TieringTotals {
    pub partitions: u64,
    pub local_bytes: u64,
    pub remote_bytes: u64,
    pub copy_lag_bytes: u64,
    pub copy_lag_segments: u64,
    pub oldest_untiered_seconds: f64,
}

pub fn totals(remote: Option<&TieredStorage>, local_bytes: u64, now_ms: i64) -> TieringTotals {
    let mut t = TieringTotals {
        local_bytes,
        ..Default::default()
    };
    for p in remote.map(|r| r.manager.partitions()).unwrap_or_default() {
        let s = of(&p, now_ms);
        t.partitions += 1;
        t.remote_bytes += s.remote_bytes;
        t.copy_lag_bytes += s.copy_lag_bytes;
        t.copy_lag_segments += s.copy_lag_segments;
        t.oldest_untiered_seconds = t.oldest_untiered_seconds.max(s.oldest_untiered_seconds);
    }
    t
}
