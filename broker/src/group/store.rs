//! `OffsetsLog`: persistence of the group coordinator in the internal
//! `__consumer_offsets` topic, partitioned by group as Kafka does. Writes
//! append one uncompressed batch; loading replays every partition.
//!
//! Knows records and logs, not group semantics.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::records::{Compression, RecordBatchDecoder};

use super::records::{partition_for, RecordKey};
use crate::clock::now_ms;
use crate::log::batch::{self, BatchScanner};
use crate::log::{LogError, PartitionLog};
use crate::log_manager::{LogManager, TopicError};

pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

#[derive(Debug)]
pub struct OffsetsLog {
    logs: Arc<LogManager>,
    partitions: i32,
}

/// A write that has been appended; `durable` waits for its fsync.
pub struct PendingWrite {
    log: Arc<PartitionLog>,
    end_offset: i64,
}

impl PendingWrite {
    pub async fn durable(self, timeout: Duration) -> bool {
        self.log.wait_durable(self.end_offset, timeout).await
    }
}

impl OffsetsLog {
    /// Opens the internal topic, creating it on first start.
    pub fn open(
        logs: Arc<LogManager>,
        partitions: i32,
        segment_bytes: i32,
    ) -> Result<Self, TopicError> {
        let partitions = match logs.topic(OFFSETS_TOPIC) {
            Some(t) => {
                // A data directory from before the log cleaner took this
                // topic over: make it compacted, as Kafka's is.
                if !t.config.get().compacted {
                    let mut o = t.overrides();
                    o.insert("cleanup.policy".to_string(), "compact".to_string());
                    logs.set_topic_overrides(OFFSETS_TOPIC, o, false)?;
                }
                t.partition_count() as i32
            }
            None => {
                let mut cfg = BTreeMap::new();
                // The log cleaner keeps the latest record of each key
                // (docs/compaction.md); offsets never age out by time or
                // size, they are removed by tombstones.
                cfg.insert("cleanup.policy".to_string(), "compact".to_string());
                cfg.insert("retention.ms".to_string(), "-1".to_string());
                cfg.insert("retention.bytes".to_string(), "-1".to_string());
                cfg.insert("segment.bytes".to_string(), segment_bytes.to_string());
                logs.create_topic(OFFSETS_TOPIC, partitions, 1, cfg, false)?
                    .partition_count() as i32
            }
        };
        Ok(OffsetsLog { logs, partitions })
    }

    pub fn partitions(&self) -> i32 {
        self.partitions
    }

    pub fn log(&self, partition: i32) -> Option<Arc<PartitionLog>> {
        self.logs.partition(OFFSETS_TOPIC, partition)
    }

    pub fn partition_of(&self, group: &str) -> i32 {
        partition_for(group, self.partitions)
    }

    /// Appends `records` (key, value; None = tombstone) for one group.
    pub fn append(
        &self,
        group: &str,
        records: &[(RecordKey, Option<Bytes>)],
    ) -> Result<PendingWrite, LogError> {
        let log = self
            .logs
            .partition(OFFSETS_TOPIC, self.partition_of(group))
            .ok_or(LogError::Closed)?;
        let now = now_ms();
        let plain: Vec<_> = records
            .iter()
            .map(|(k, v)| (Some(k.encode()), v.clone(), now))
            .collect();
        let buf = batch::encode_records(&plain, Compression::None)
            .map_err(|e| LogError::Io(std::io::Error::other(e)))?;
        let headers = batch::validate_all(&buf)?;
        let info = log.append(&buf, &headers)?;
        Ok(PendingWrite {
            log,
            end_offset: info.last_offset + 1,
        })
    }

    /// Every record of every partition, in log order per partition.
    pub fn replay(
        &self,
        mut apply: impl FnMut(RecordKey, Option<Bytes>),
    ) -> Result<usize, LogError> {
        let mut count = 0;
        for p in 0..self.partitions {
            let Some(log) = self.logs.partition(OFFSETS_TOPIC, p) else {
                continue;
            };
            let mut offset = log.local_log_start_offset();
            let end = log.high_watermark();
            while offset < end {
                let read = log.read(offset, 4 << 20, true)?;
                if read.records.is_empty() {
                    break;
                }
                let mut next = offset;
                for (pos, h) in BatchScanner::new(&read.records, true) {
                    next = h.next_offset();
                    let mut one = read.records.slice(pos..pos + h.size);
                    let set = match RecordBatchDecoder::decode(&mut one) {
                        Ok(s) => s,
                        Err(e) => {
                            tracing::warn!(partition = p, offset = h.base_offset, error = %e, "skipping undecodable batch in __consumer_offsets");
                            continue;
                        }
                    };
                    for r in set.records {
                        let Some(key) = r.key else { continue };
                        match RecordKey::decode(key) {
                            Ok(k) => {
                                apply(k, r.value);
                                count += 1;
                            }
                            Err(e) => {
                                tracing::warn!(partition = p, offset = r.offset, error = %e, "skipping unknown record in __consumer_offsets")
                            }
                        }
                    }
                }
                if next <= offset {
                    break;
                }
                offset = next;
            }
        }
        Ok(count)
    }
}
