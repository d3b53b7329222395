//! DeleteRecords (`kafka-delete-records.sh`, `Admin.deleteRecords`): the
//! leader raises a partition's log start offset to the requested offset
//! (-1: the high watermark), so the records below are never served again,
//! locally or from the bucket (`log/records_deleted.rs`). As Kafka's
//! `DelayedDeleteRecords`, the answer waits, within the request's timeout,
//! until every replica on a live broker reports a log start at or above
//! it (the low watermark) and, for a tiered partition, until the bucket's
//! catalog says so too: what was deleted stays deleted after a failover or
//! a rebuild from the bucket. The local checkpoint is written before the
//! answer for the same reason.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::log::{LogError, PartitionLog};
use crate::server::Broker;

/// The request's offset that stands for the high watermark.
const HIGH_WATERMARK: i64 = -1;

/// How often a waiting request looks at the replicas and the catalog.
const POLL: Duration = Duration::from_millis(20);

/// A partition whose deletion was accepted and is now awaited.
struct Pending {
    topic: usize,
    partition: usize,
    log: Arc<PartitionLog>,
    offset: i64,
    catalog: Option<Arc<strata_tiering::RemotePartition>>,
}

pub async fn handle(req: DeleteRecordsRequest, _version: i16, b: &Broker) -> DeleteRecordsResponse {
    let mut r = DeleteRecordsResponse::default();
    let mut pending = Vec::new();
    for (ti, t) in req.topics.into_iter().enumerate() {
        let mut out = DeleteRecordsTopicResult::default();
        out.name = t.name;
        let name = out.name.0.to_string();
        let topic = b.logs.topic(&name);
        for (pi, p) in t.partitions.into_iter().enumerate() {
            let mut pr = DeleteRecordsPartitionResult::default();
            pr.partition_index = p.partition_index;
            pr.low_watermark = -1;
            match start_one(b, &name, topic.as_deref(), p.partition_index, p.offset) {
                Ok((log, offset)) => {
                    let catalog = awaited_catalog(b, topic.as_deref(), &log, offset);
                    if let Some(rp) = &catalog {
                        rp.wake();
                    }
                    pending.push(Pending {
                        topic: ti,
                        partition: pi,
                        log,
                        offset,
                        catalog,
                    });
                }
                Err(e) => {
                    pr.error_code = e.code();
                    tracing::debug!(topic = %name, partition = p.partition_index, offset = p.offset,
                        error = ?e, "DeleteRecords refused");
                }
            }
            out.partitions.push(pr);
        }
        r.topics.push(out);
    }
    if pending.is_empty() {
        return r;
    }
    // Durable on this broker before anyone is told.
    let logs = b.logs.clone();
    match tokio::task::spawn_blocking(move || logs.write_checkpoints()).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            tracing::error!(error = %e, "writing the log start checkpoint after DeleteRecords failed");
            for p in &pending {
                r.topics[p.topic].partitions[p.partition].error_code =
                    ResponseError::KafkaStorageError.code();
            }
            return r;
        }
        Err(e) => tracing::error!(error = %e, "checkpoint task failed"),
    }
    let deadline = Instant::now() + Duration::from_millis(req.timeout_ms.max(0) as u64);
    loop {
        let mut waiting = false;
        for p in &pending {
            let low = low_watermark(b, &p.log);
            let pr = &mut r.topics[p.topic].partitions[p.partition];
            pr.low_watermark = low;
            if low < p.offset || !catalog_caught_up(p) {
                waiting = true;
            }
        }
        if !waiting || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    for p in &pending {
        let pr = &mut r.topics[p.topic].partitions[p.partition];
        if pr.low_watermark < p.offset || !catalog_caught_up(p) {
            pr.error_code = ResponseError::RequestTimedOut.code();
        }
    }
    r
}

/// Validates one partition's deletion and applies it on this leader;
/// returns its log and the offset deleted up to.
fn start_one(
    b: &Broker,
    name: &str,
    topic: Option<&crate::log_manager::Topic>,
    partition: i32,
    requested: i64,
) -> Result<(Arc<PartitionLog>, i64), ResponseError> {
    if crate::topic_name::is_internal(name) {
        // Kafka: "Cannot delete records of internal topic".
        return Err(ResponseError::InvalidTopicException);
    }
    if let Some(e) = b.not_leader(name, partition) {
        return Err(e);
    }
    let log = topic
        .and_then(|t| t.partition(partition))
        .ok_or(ResponseError::UnknownTopicOrPartition)?;
    if !log.config().delete_retention_applies {
        // Kafka: records of a compact-only topic cannot be deleted.
        return Err(ResponseError::PolicyViolation);
    }
    let offset = if requested == HIGH_WATERMARK {
        log.high_watermark()
    } else {
        requested
    };
    match log.delete_records_before(offset) {
        Ok(_) => Ok((log, offset)),
        Err(LogError::OffsetOutOfRange { .. }) => Err(ResponseError::OffsetOutOfRange),
        Err(LogError::Closed) => Err(ResponseError::NotLeaderOrFollower),
        Err(e) => {
            tracing::error!(topic = %name, partition, offset, error = %e, "DeleteRecords failed");
            Err(ResponseError::KafkaStorageError)
        }
    }
}

/// The tiered view whose catalog must record the new log start before the
/// answer: the partition is tiered (or the bucket holds part of it) and
/// the catalog's log start is below the offset.
fn awaited_catalog(
    b: &Broker,
    topic: Option<&crate::log_manager::Topic>,
    log: &PartitionLog,
    offset: i64,
) -> Option<Arc<strata_tiering::RemotePartition>> {
    let rp = b.remote.as_ref()?.partition(topic?, log.partition())?;
    let m = rp.manifest();
    let tiered = crate::config::tiering_enabled(&b.config, log.topic(), &log.config());
    (m.log_start_offset < offset && (tiered || !m.segments.is_empty())).then_some(rp)
}

fn catalog_caught_up(p: &Pending) -> bool {
    p.catalog
        .as_ref()
        .is_none_or(|rp| rp.manifest().log_start_offset >= p.offset)
}

/// Kafka's `lowWatermarkIfLeader`: the smallest log start among this
/// leader and the followers on live brokers (a follower that has not
/// reported one yet counts as -1).
fn low_watermark(b: &Broker, log: &PartitionLog) -> i64 {
    let mut low = log.log_start_offset();
    let followers = log.follower_progress();
    if followers.is_empty() {
        return low;
    }
    let snap = b.cluster.view.snapshot();
    let replicas = snap
        .partition(log.topic(), log.partition())
        .map(|e| e.state.replicas.clone())
        .unwrap_or_default();
    let live = b.live_brokers();
    for (id, progress) in followers {
        if replicas.contains(&id) && live.iter().any(|r| r.node_id == id) {
            low = low.min(progress.log_start);
        }
    }
    low
}
