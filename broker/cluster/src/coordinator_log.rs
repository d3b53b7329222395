//! `CoordinatorLog`: an internal topic a coordinator keeps its state in
//! (`__consumer_offsets` for groups, `__transaction_state` for
//! transactions), compacted and partitioned by key as Kafka does, and which
//! of its partitions this broker coordinates ([`Ownership`]). A write
//! appends one uncompressed batch (transactional when it belongs to a
//! producer's transaction) to a partition coordinated here, at the leader
//! epoch it was loaded at, and is done once the high watermark passes it
//! (acks=all); loading replays one partition in log order, transaction
//! markers included.
//!
//! Knows records, logs and leadership, never a coordinator's semantics.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::records::{Compression, RecordBatchDecoder};
use kafka_protocol::ResponseError;

use crate::coordinator_ownership::{Changes, Ownership};
use strata_common::config::settings::InternalTopicSettings;
use strata_common::config::{BrokerConfig, BrokerSettings};
use strata_storage::log::batch::{self, BatchScanner};
use strata_storage::log::control::{decode_marker, MarkerType};
use strata_storage::log::{AppendOrigin, Isolation, LogError, PartitionLog};
use strata_storage::log_manager::{LogManager, TopicError};
use strata_storage::partition::{CommitWait, Partition};

#[derive(Debug)]
pub struct CoordinatorLog {
    logs: Arc<LogManager>,
    topic: &'static str,
    /// The partition count a new topic gets (the topic's own count rules
    /// once it exists).
    configured_partitions: i32,
    ownership: Ownership,
    /// In a cluster writes need `min.insync.replicas` in sync (a single
    /// broker is its only replica, as before).
    clustered: bool,
}

/// Why a coordinator write was refused.
#[derive(Debug, thiserror::Error)]
pub enum CoordinatorWriteError {
    #[error("partition {0} is not coordinated by this broker")]
    NotCoordinator(i32),
    #[error("partition {0} is still loading")]
    LoadInProgress(i32),
    #[error("{in_sync} replica(s) in sync, min.insync.replicas is {min}")]
    NotEnoughReplicas { in_sync: usize, min: i32 },
    #[error(transparent)]
    Log(#[from] LogError),
}

impl CoordinatorWriteError {
    /// The error a client gets for it (Kafka's mapping for coordinator
    /// writes: a lost leadership sends the client to find the new
    /// coordinator, anything else is retried here).
    pub fn code(&self) -> ResponseError {
        match self {
            CoordinatorWriteError::NotCoordinator(_)
            | CoordinatorWriteError::Log(LogError::NotLeader) => ResponseError::NotCoordinator,
            CoordinatorWriteError::LoadInProgress(_) => ResponseError::CoordinatorLoadInProgress,
            _ => ResponseError::CoordinatorNotAvailable,
        }
    }
}

/// A write that has been appended; `committed` waits for the high
/// watermark (every in-sync replica holds it, fsynced).
pub struct PendingWrite {
    partition: Arc<Partition>,
    end_offset: i64,
    epoch: i32,
}

impl PendingWrite {
    /// Committed, timed out, or lost with the leadership (NotLeader: the
    /// client goes to the new coordinator).
    pub async fn committed(self, timeout: Duration) -> CommitWait {
        self.partition
            .wait_committed(self.end_offset, self.epoch, timeout)
            .await
    }
}

/// What replaying the log finds, in order.
#[derive(Debug)]
pub enum Replayed {
    Record {
        partition: i32,
        /// The producer whose transaction wrote it (None: a plain write).
        transactional_producer: Option<i64>,
        key: Bytes,
        value: Option<Bytes>,
    },
    /// A transaction marker: the producer's pending records are
    /// committed or dropped.
    Marker { producer_id: i64, commit: bool },
}

/// The configs an internal topic is created with: compacted, never
/// deleted by time or size (state is removed by tombstones), and for
/// `__transaction_state` Kafka's `transaction.state.log.min.isr` (never
/// above the replication factor).
pub(crate) fn internal_topic_configs(
    topic: &str,
    broker: &BrokerConfig,
    replication_factor: i32,
) -> BTreeMap<String, String> {
    let mut cfg = BTreeMap::new();
    cfg.insert("cleanup.policy".to_string(), "compact".to_string());
    cfg.insert("retention.ms".to_string(), "-1".to_string());
    cfg.insert("retention.bytes".to_string(), "-1".to_string());
    let internal = internal_topic_settings(topic, broker.settings());
    cfg.insert(
        "segment.bytes".to_string(),
        internal.segment_bytes.to_string(),
    );
    if let Some(min_isr) = internal.min_isr {
        let min_isr = min_isr.clamp(1, replication_factor.max(1));
        cfg.insert("min.insync.replicas".to_string(), min_isr.to_string());
    }
    cfg
}

/// The settings of an internal topic: `__transaction_state`'s, else
/// `__consumer_offsets`'.
pub(crate) fn internal_topic_settings<'a>(
    topic: &str,
    settings: &'a BrokerSettings,
) -> &'a InternalTopicSettings {
    if topic == strata_common::topic_name::TRANSACTION_STATE_TOPIC {
        &settings.transaction_state_log
    } else {
        &settings.offsets_topic
    }
}

impl CoordinatorLog {
    /// Opens `topic`. A single broker creates it (compacted) on first
    /// start; in a cluster the controller creates it in the store and the
    /// reconciler makes the replicas this broker hosts.
    pub fn open(
        logs: Arc<LogManager>,
        topic: &'static str,
        partitions: i32,
        clustered: bool,
    ) -> Result<Self, TopicError> {
        if !clustered {
            match logs.topic(topic) {
                Some(t) => {
                    // A data directory from before the log cleaner took this
                    // topic over: make it compacted, as Kafka's is.
                    if !t.config.get().compacted {
                        let mut o = t.overrides();
                        o.insert("cleanup.policy".to_string(), "compact".to_string());
                        logs.set_topic_overrides(topic, o, false)?;
                    }
                }
                None => {
                    let cfg = internal_topic_configs(topic, logs.broker_config(), 1);
                    logs.create_topic(topic, partitions, 1, cfg, false)?;
                }
            }
        }
        Ok(CoordinatorLog {
            logs,
            topic,
            configured_partitions: partitions,
            ownership: Ownership::default(),
            clustered,
        })
    }

    /// The topic's partition count (keys map to partitions by it).
    pub fn partitions(&self) -> i32 {
        self.logs
            .topic(self.topic)
            .map(|t| t.partition_count() as i32)
            .unwrap_or(self.configured_partitions)
    }

    pub fn topic(&self) -> &'static str {
        self.topic
    }

    pub fn log(&self, partition: i32) -> Option<Arc<PartitionLog>> {
        self.logs.log(self.topic, partition)
    }

    /// The leader epoch `partition` is coordinated at here, or the error a
    /// request for a key in it gets.
    pub fn check(&self, partition: i32) -> Result<i32, ResponseError> {
        self.ownership.check(partition)
    }

    /// The partitions coordinated here (loaded or loading).
    pub fn owned(&self) -> Vec<i32> {
        self.ownership.owned()
    }

    /// What to load and unload to follow the partitions' leadership.
    pub fn leadership_changes(&self) -> Changes {
        let topic = self.logs.topic(self.topic);
        let partitions = topic
            .as_ref()
            .map(|t| t.partition_count() as i32)
            .unwrap_or(0);
        self.ownership.changes(partitions, |p| {
            topic
                .as_ref()
                .and_then(|t| t.partition(p))
                .and_then(|l| l.leading_epoch())
        })
    }

    pub fn begin_load(&self, partition: i32, epoch: i32) {
        self.ownership.begin_load(partition, epoch)
    }

    pub fn finish_load(&self, partition: i32, epoch: i32) -> bool {
        self.ownership.finish_load(partition, epoch)
    }

    pub fn unload(&self, partition: i32) {
        self.ownership.unload(partition)
    }

    /// Appends `records` (key, value; None = tombstone) to `partition`, as
    /// part of `producer`'s transaction (id, epoch) when one is given. Only
    /// to a partition coordinated here, while the log leads at the epoch
    /// it was loaded at and (in a cluster) has `min.insync.replicas` in
    /// sync.
    pub fn append(
        &self,
        partition: i32,
        records: &[(Bytes, Option<Bytes>)],
        producer: Option<(i64, i16)>,
    ) -> Result<PendingWrite, CoordinatorWriteError> {
        self.append_at_epoch(partition, records, producer, None)
    }

    /// [`Self::append`], refused unless `partition` is coordinated at
    /// `expected` (the epoch a change began at), when given.
    pub fn append_at_epoch(
        &self,
        partition: i32,
        records: &[(Bytes, Option<Bytes>)],
        producer: Option<(i64, i16)>,
        expected: Option<i32>,
    ) -> Result<PendingWrite, CoordinatorWriteError> {
        let epoch = self.ownership.check(partition).map_err(|e| match e {
            ResponseError::CoordinatorLoadInProgress => {
                CoordinatorWriteError::LoadInProgress(partition)
            }
            _ => CoordinatorWriteError::NotCoordinator(partition),
        })?;
        if expected.is_some_and(|e| e != epoch) {
            return Err(CoordinatorWriteError::NotCoordinator(partition));
        }
        let part = self
            .logs
            .partition(self.topic, partition)
            .ok_or(CoordinatorWriteError::NotCoordinator(partition))?;
        if !part.leads_at(epoch) {
            return Err(CoordinatorWriteError::NotCoordinator(partition));
        }
        let log = part.log();
        if self.clustered {
            let min = log.config().min_insync_replicas;
            let in_sync = part.in_sync_replicas();
            if (in_sync as i32) < min {
                return Err(CoordinatorWriteError::NotEnoughReplicas { in_sync, min });
            }
        }
        let now = log.clock().now_ms();
        let plain: Vec<_> = records
            .iter()
            .map(|(k, v)| (Some(k.clone()), v.clone(), now))
            .collect();
        let buf = batch::encode_records_for(&plain, Compression::None, producer)
            .map_err(|e| LogError::Io(std::io::Error::other(e)))?;
        let headers = batch::validate_all(&buf).map_err(LogError::from)?;
        let info = part.append_from(&buf, &headers, AppendOrigin::Coordinator)?;
        Ok(PendingWrite {
            partition: part,
            end_offset: info.last_offset + 1,
            epoch: info.leader_epoch,
        })
    }

    /// Every record and marker of `partition`, in log order, up to the log
    /// end (a new leader's whole log is what its followers will hold).
    /// Returns the number of records.
    pub fn replay_partition(
        &self,
        p: i32,
        mut apply: impl FnMut(Replayed),
    ) -> Result<usize, LogError> {
        let mut count = 0;
        let Some(log) = self.log(p) else {
            return Ok(0);
        };
        let mut offset = log.local_log_start_offset();
        loop {
            let end = log.log_end_offset();
            if offset >= end {
                break;
            }
            let read = log.read_below(offset, 4 << 20, true, Isolation::LogEnd)?;
            if read.records.is_empty() {
                break;
            }
            let mut next = offset;
            for (pos, h) in BatchScanner::new(&read.records, true) {
                next = h.next_offset();
                let bytes = read.records.slice(pos..pos + h.size);
                if h.is_control() {
                    if let Some(m) = decode_marker(&h, &bytes) {
                        apply(Replayed::Marker {
                            producer_id: h.producer_id,
                            commit: m.kind == MarkerType::Commit,
                        });
                    }
                    continue;
                }
                let mut one = bytes;
                let set = match RecordBatchDecoder::decode(&mut one) {
                    Ok(s) => s,
                    Err(e) => {
                        tracing::warn!(topic = self.topic, partition = p, offset = h.base_offset, error = %e,
                            "skipping undecodable batch in an internal topic");
                        continue;
                    }
                };
                let transactional_producer = h.is_transactional().then_some(h.producer_id);
                for r in set.records {
                    let Some(key) = r.key else { continue };
                    apply(Replayed::Record {
                        partition: p,
                        transactional_producer,
                        key,
                        value: r.value,
                    });
                    count += 1;
                }
            }
            if next <= offset {
                break;
            }
            offset = next;
        }
        Ok(count)
    }
}
