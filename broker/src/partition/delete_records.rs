//! DeleteRecords (Kafka's `ReplicaManager.deleteRecords` and
//! `DelayedDeleteRecords`): the leader raises a partition's log start
//! offset to the requested offset (-1: the high watermark), so the records
//! below are never served again, locally or from the bucket
//! (`log/records_deleted.rs`). The answer waits, within the request's
//! timeout, until every replica on a live broker reports a log start at or
//! above it (the low watermark) and, for a tiered partition, until the
//! bucket's catalog says so too: what was deleted stays deleted after a
//! failover or a rebuild from the bucket. The local checkpoint is written
//! before the answer for the same reason.

use std::sync::Arc;
use std::time::{Duration, Instant};

use kafka_protocol::ResponseError;

use super::ReplicaManager;
use crate::log::PartitionLog;
use strata_catalog::ManifestView;
use strata_storage::partition::Partition;

/// One partition to delete records of, below `offset`.
#[derive(Debug, Clone)]
pub struct DeleteRecordsPartition {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
}

/// One partition's answer: the error, if any, and the low watermark (-1
/// when unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeleteRecordsAnswer {
    pub error: Option<ResponseError>,
    pub low_watermark: i64,
}

/// The request's offset that stands for the high watermark.
const HIGH_WATERMARK: i64 = -1;

/// How often a waiting request looks at the replicas and the catalog.
const POLL: Duration = Duration::from_millis(20);

/// A partition whose deletion was accepted and is now awaited.
struct Pending {
    /// Its index in the request.
    slot: usize,
    partition: Arc<Partition>,
    offset: i64,
    /// The catalog's shared view (`strata_catalog::ManifestView`), when
    /// the bucket must record the new log start before the answer.
    catalog: Option<Arc<ManifestView>>,
}

impl ReplicaManager {
    /// Deletes the records below each partition's offset and waits, at
    /// most `timeout`, for the replicas and the catalog; answers every
    /// partition, in request order.
    pub async fn delete_records(
        &self,
        partitions: Vec<DeleteRecordsPartition>,
        timeout: Duration,
    ) -> Vec<DeleteRecordsAnswer> {
        let mut answers = vec![
            DeleteRecordsAnswer {
                error: None,
                low_watermark: -1,
            };
            partitions.len()
        ];
        let mut pending = Vec::new();
        for (slot, p) in partitions.iter().enumerate() {
            match self.start_one(&p.topic, p.partition, p.offset) {
                Ok((partition, offset)) => {
                    let catalog = self.awaited_catalog(partition.log(), offset);
                    if catalog.is_some() {
                        // Its uploader records the new log start now.
                        self.wake_uploader(partition.log());
                    }
                    pending.push(Pending {
                        slot,
                        partition,
                        offset,
                        catalog,
                    });
                }
                Err(e) => {
                    answers[slot].error = Some(e);
                    tracing::debug!(topic = %p.topic, partition = p.partition, offset = p.offset,
                        error = ?e, "DeleteRecords refused");
                }
            }
        }
        if pending.is_empty() {
            return answers;
        }
        // Durable on this broker before anyone is told.
        let logs = self.logs.clone();
        match tokio::task::spawn_blocking(move || logs.write_checkpoints()).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::error!(error = %e, "writing the log start checkpoint after DeleteRecords failed");
                for p in &pending {
                    answers[p.slot].error = Some(ResponseError::KafkaStorageError);
                }
                return answers;
            }
            Err(e) => tracing::error!(error = %e, "checkpoint task failed"),
        }
        let deadline = Instant::now() + timeout;
        loop {
            let mut waiting = false;
            for p in &pending {
                let low = self.low_watermark(&p.partition);
                answers[p.slot].low_watermark = low;
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
            let a = &mut answers[p.slot];
            if a.low_watermark < p.offset || !catalog_caught_up(p) {
                a.error = Some(ResponseError::RequestTimedOut);
            }
        }
        answers
    }

    /// Validates one partition's deletion and applies it on this leader;
    /// returns the partition and the offset deleted up to.
    fn start_one(
        &self,
        name: &str,
        partition: i32,
        requested: i64,
    ) -> Result<(Arc<Partition>, i64), ResponseError> {
        if crate::topic_name::is_internal(name) {
            // Kafka: "Cannot delete records of internal topic".
            return Err(ResponseError::InvalidTopicException);
        }
        if let Some(e) = self.not_leader(name, partition) {
            return Err(e);
        }
        let replica = self
            .logs
            .partition(name, partition)
            .ok_or(ResponseError::UnknownTopicOrPartition)?;
        let log = replica.log();
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
            Ok(_) => Ok((replica, offset)),
            Err(e) => {
                let code = super::errors::delete_records(&e);
                if code == ResponseError::KafkaStorageError {
                    tracing::error!(topic = %name, partition, offset, error = %e, "DeleteRecords failed");
                }
                Err(code)
            }
        }
    }

    /// The tiered view whose catalog must record the new log start before the
    /// answer: the partition is tiered (or the bucket holds part of it) and
    /// the catalog's log start is below the offset.
    fn awaited_catalog(&self, log: &PartitionLog, offset: i64) -> Option<Arc<ManifestView>> {
        let topic = self.logs.topic(log.topic())?;
        let view = self
            .remote
            .as_ref()?
            .manifest_view(&topic, log.partition())?;
        let m = view.current();
        let tiered = crate::config::tiering_enabled(&self.config, log.topic(), &log.config());
        (m.log_start_offset < offset && (tiered || !m.segments.is_empty())).then_some(view)
    }

    fn wake_uploader(&self, log: &PartitionLog) {
        if let (Some(remote), Some(topic)) = (&self.remote, self.logs.topic(log.topic())) {
            remote.wake(&topic, log.partition());
        }
    }

    /// Kafka's `lowWatermarkIfLeader`: the smallest log start among this
    /// leader and the followers on live brokers (a follower that has not
    /// reported one yet counts as -1).
    fn low_watermark(&self, partition: &Partition) -> i64 {
        let log = partition.log();
        let mut low = log.log_start_offset();
        let followers = partition.follower_progress();
        if followers.is_empty() {
            return low;
        }
        let snap = self.cluster.view.snapshot();
        let replicas = snap
            .partition(log.topic(), log.partition())
            .map(|e| e.state.replicas.clone())
            .unwrap_or_default();
        // Followers are never this broker, which is live.
        let live = self.cluster.live_brokers();
        for (id, progress) in followers {
            if replicas.contains(&id) && live.iter().any(|r| r.node_id == id) {
                low = low.min(progress.log_start);
            }
        }
        low
    }
}

fn catalog_caught_up(p: &Pending) -> bool {
    p.catalog
        .as_ref()
        .is_none_or(|view| view.current().log_start_offset >= p.offset)
}
