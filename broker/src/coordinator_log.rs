//! `CoordinatorLog`: an internal topic a coordinator keeps its state in
//! (`__consumer_offsets` for groups, `__transaction_state` for
//! transactions), compacted and partitioned by key as Kafka does. A write
//! appends one uncompressed batch (transactional when it belongs to a
//! producer's transaction); loading replays every partition in log order,
//! transaction markers included.
//!
//! Knows records and logs, never a coordinator's semantics.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::records::{Compression, RecordBatchDecoder};

use crate::clock::now_ms;
use crate::log::batch::{self, BatchScanner};
use crate::log::control::{decode_marker, MarkerType};
use crate::log::{AppendOrigin, LogError, PartitionLog};
use crate::log_manager::{LogManager, TopicError};

#[derive(Debug)]
pub struct CoordinatorLog {
    logs: Arc<LogManager>,
    topic: &'static str,
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

impl CoordinatorLog {
    /// Opens `topic`, creating it compacted on first start.
    pub fn open(
        logs: Arc<LogManager>,
        topic: &'static str,
        partitions: i32,
        segment_bytes: i32,
    ) -> Result<Self, TopicError> {
        let partitions = match logs.topic(topic) {
            Some(t) => {
                // A data directory from before the log cleaner took this
                // topic over: make it compacted, as Kafka's is.
                if !t.config.get().compacted {
                    let mut o = t.overrides();
                    o.insert("cleanup.policy".to_string(), "compact".to_string());
                    logs.set_topic_overrides(topic, o, false)?;
                }
                t.partition_count() as i32
            }
            None => {
                let mut cfg = BTreeMap::new();
                // The log cleaner keeps the latest record of each key
                // (docs/compaction.md); state never ages out by time or
                // size, it is removed by tombstones.
                cfg.insert("cleanup.policy".to_string(), "compact".to_string());
                cfg.insert("retention.ms".to_string(), "-1".to_string());
                cfg.insert("retention.bytes".to_string(), "-1".to_string());
                cfg.insert("segment.bytes".to_string(), segment_bytes.to_string());
                logs.create_topic(topic, partitions, 1, cfg, false)?
                    .partition_count() as i32
            }
        };
        Ok(CoordinatorLog {
            logs,
            topic,
            partitions,
        })
    }

    pub fn partitions(&self) -> i32 {
        self.partitions
    }

    pub fn topic(&self) -> &'static str {
        self.topic
    }

    pub fn log(&self, partition: i32) -> Option<Arc<PartitionLog>> {
        self.logs.partition(self.topic, partition)
    }

    /// Appends `records` (key, value; None = tombstone) to `partition`, as
    /// part of `producer`'s transaction (id, epoch) when one is given.
    pub fn append(
        &self,
        partition: i32,
        records: &[(Bytes, Option<Bytes>)],
        producer: Option<(i64, i16)>,
    ) -> Result<PendingWrite, LogError> {
        let log = self.log(partition).ok_or(LogError::Closed)?;
        let now = now_ms();
        let plain: Vec<_> = records
            .iter()
            .map(|(k, v)| (Some(k.clone()), v.clone(), now))
            .collect();
        let buf = batch::encode_records_for(&plain, Compression::None, producer)
            .map_err(|e| LogError::Io(std::io::Error::other(e)))?;
        let headers = batch::validate_all(&buf)?;
        let info = log.append_from(&buf, &headers, AppendOrigin::Coordinator)?;
        Ok(PendingWrite {
            log,
            end_offset: info.last_offset + 1,
        })
    }

    /// Every record and marker of every partition, in log order per
    /// partition. Returns the number of records.
    pub fn replay(&self, mut apply: impl FnMut(Replayed)) -> Result<usize, LogError> {
        let mut count = 0;
        for p in 0..self.partitions {
            let Some(log) = self.log(p) else {
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
        }
        Ok(count)
    }
}
