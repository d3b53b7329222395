//! Produce's appends (Kafka's `ReplicaManager.appendRecords`): validate
//! each partition's batch as Kafka's `LogValidator` does
//! (`strata_format::validator`: CRC, structure, every record, timestamps,
//! the true max timestamp), verify a transaction's first write to a
//! partition with its coordinator (KIP-890), re-encode for a topic
//! `compression.type`, check `min.insync.replicas`, append with
//! broker-assigned offsets, and for acks=all wait until the high watermark
//! passes it. Nothing of a refused batch is stored. Two phases, so the
//! connection appends pipelined requests in order while their acks waits
//! overlap.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::ResponseError;
use strata_format::batch::BatchHeader;
use strata_format::transcode;
use strata_format::validator::{self, AppendPolicy, TimestampPolicy, ValidationError};

use super::errors::{self, AppendFailure};
use super::ReplicaManager;
use crate::config::TimestampType;
use crate::log::AppendOrigin;
use strata_storage::partition::CommitWait;
use strata_storage::partition::Partition;

/// A batch's records may inflate to at most this many times the topic's
/// `max.message.bytes` (at least 1 MiB): 1 GiB by default, far beyond what
/// producers send (their own batch and record limits apply to uncompressed
/// bytes), and a bound on the CPU one decompression bomb can cost.
const INFLATION_BOUND: u64 = 1024;
/// Compressed batches larger than this are validated with the runtime told
/// that this worker blocks, so other connections' tasks move elsewhere.
const BLOCKING_VALIDATION_BYTES: usize = 256 << 10;

/// One Produce request's appends.
pub struct AppendRequest {
    /// -1 (all in-sync replicas), 0 or 1; anything else is refused.
    pub acks: i16,
    /// How long an acks=all append may wait for the in-sync replicas.
    pub timeout: Duration,
    /// The request's transactional id (Produce v3+).
    pub transactional_id: Option<String>,
    /// (topic, partition, records), in request order.
    pub entries: Vec<(String, i32, Option<Bytes>)>,
}

/// One partition's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppendOutcome {
    Appended {
        base_offset: i64,
        /// The broker's timestamp when the topic uses LogAppendTime, else -1.
        log_append_time: i64,
        log_start_offset: i64,
    },
    Failed(AppendFailure),
}

/// The appends of one request, done; what remains is the acks=all wait.
pub struct PendingAppend {
    acks: i16,
    timeout: Duration,
    outcomes: Vec<AppendOutcome>,
    /// (entry, partition, end offset to wait for, leader epoch appended at).
    waits: Vec<(usize, Arc<Partition>, i64, i32)>,
}

impl PendingAppend {
    /// Waits for durability (acks=all) and answers each entry in request
    /// order; None for acks=0 (no response).
    pub async fn complete(self) -> Option<Vec<AppendOutcome>> {
        let PendingAppend {
            acks,
            timeout,
            mut outcomes,
            waits,
        } = self;
        if acks == 0 {
            return None;
        }
        for (i, partition, end, epoch) in waits {
            let failed = match partition.wait_committed(end, epoch, timeout).await {
                CommitWait::Committed => {
                    // The ISR shrank below the minimum while the batch was
                    // copied: it is in the log, but not as safe as acks=all
                    // promised.
                    let (in_sync, min) = (
                        partition.in_sync_replicas() as i32,
                        partition.log().config().min_insync_replicas,
                    );
                    (in_sync < min).then(|| {
                        AppendFailure::new(
                            ResponseError::NotEnoughReplicasAfterAppend,
                            format!(
                                "the batch was appended but only {in_sync} replica(s) are in sync (min.insync.replicas is {min})"
                            ),
                        )
                    })
                }
                CommitWait::TimedOut => Some(AppendFailure::new(
                    ResponseError::RequestTimedOut,
                    format!(
                        "the batch was appended but not copied to every in-sync replica within {} ms",
                        timeout.as_millis()
                    ),
                )),
                CommitWait::NotLeader => Some(AppendFailure::new(
                    ResponseError::NotLeaderOrFollower,
                    "this broker stopped leading the partition before the batch was committed",
                )),
            };
            if let Some(f) = failed {
                outcomes[i] = AppendOutcome::Failed(f);
            }
        }
        Some(outcomes)
    }
}

impl ReplicaManager {
    /// Phase one, run in request order on the connection: verify
    /// transactional batches with their coordinator (KIP-890), then
    /// validate and append every partition's batch. Appends of pipelined
    /// requests must hit the log in the order the client sent them, or
    /// per-partition ordering breaks.
    pub async fn append_records(&self, req: AppendRequest) -> PendingAppend {
        let AppendRequest {
            acks,
            timeout,
            transactional_id,
            entries,
        } = req;
        let valid_acks = matches!(acks, -1..=1);
        let mut verdicts = if valid_acks {
            self.verify_transactional(transactional_id.as_deref(), &entries)
                .await
        } else {
            HashMap::new()
        };
        let mut outcomes = Vec::with_capacity(entries.len());
        let mut waits = Vec::new();
        for (i, (topic, partition, records)) in entries.into_iter().enumerate() {
            let verdict = verdicts.remove(&i);
            let appended = if !valid_acks {
                Err(AppendFailure::new(
                    ResponseError::InvalidRequiredAcks,
                    format!("acks must be -1, 0 or 1, got {acks}"),
                ))
            } else if let Some(code) = self.not_leader(&topic, partition) {
                Err(AppendFailure::new(
                    code,
                    format!(
                        "Broker {} is not the leader of {topic}-{partition}",
                        self.node_id
                    ),
                ))
            } else {
                match self.logs.partition(&topic, partition) {
                    None => Err(AppendFailure::new(
                        ResponseError::UnknownTopicOrPartition,
                        format!(
                            "This server does not host this topic-partition: {topic}-{partition}"
                        ),
                    )),
                    Some(_) if crate::topic_name::is_coordinator_topic(&topic) => {
                        Err(AppendFailure::new(
                            ResponseError::InvalidTopicException,
                            format!("Cannot append to internal topic {topic}"),
                        ))
                    }
                    Some(log) => match verdict {
                        Some(Err(refusal)) => Err(refusal),
                        Some(Ok(origin)) => checked_append(&log, records.as_deref(), acks, origin),
                        // Not asked about (this broker did not lead the
                        // partition then): a transactional batch may only
                        // continue a transaction already open here.
                        None if self.verifier.enabled()
                            && transactional_producer(records.as_deref()).is_some() =>
                        {
                            checked_append(
                                &log,
                                records.as_deref(),
                                acks,
                                AppendOrigin::VerifiedClient(None),
                            )
                        }
                        None => {
                            checked_append(&log, records.as_deref(), acks, AppendOrigin::Client)
                        }
                    },
                }
            };
            match appended {
                Ok((outcome, wait)) => {
                    if let Some((log, end, epoch)) = wait {
                        waits.push((outcomes.len(), log, end, epoch));
                    }
                    outcomes.push(outcome);
                }
                Err(f) => outcomes.push(AppendOutcome::Failed(f)),
            }
        }
        PendingAppend {
            acks,
            timeout,
            outcomes,
            waits,
        }
    }

    /// KIP-890 part 1, before anything is appended: each partition this
    /// broker leads that would open a producer's transaction is checked
    /// with the transaction coordinator (Kafka's ReplicaManager with
    /// `transaction.partition.verification.enable`), keyed by the entry's
    /// index (a request may name a partition twice).
    async fn verify_transactional(
        &self,
        transactional_id: Option<&str>,
        entries: &[(String, i32, Option<Bytes>)],
    ) -> HashMap<usize, Verdict> {
        let mut verdicts = HashMap::new();
        // (producer id, epoch) -> the partitions to ask about, each with its
        // log and verification guard.
        let mut pending: BTreeMap<(i64, i16), Vec<Guarded>> = BTreeMap::new();
        let id = transactional_id.filter(|t| !t.is_empty());
        for (i, (topic, partition, records)) in entries.iter().enumerate() {
            let Some((pid, epoch)) = transactional_producer(records.as_deref()) else {
                continue;
            };
            if crate::topic_name::is_coordinator_topic(topic) {
                continue;
            }
            if id.is_none() {
                // Kafka refuses transactional records without a
                // transactional id as unauthorized for it.
                verdicts.insert(
                    i,
                    Err(AppendFailure::new(
                        ResponseError::TransactionalIdAuthorizationFailed,
                        "transactional records need the request's transactional id",
                    )),
                );
                continue;
            }
            if !self.verifier.enabled() || self.not_leader(topic, *partition).is_some() {
                continue;
            }
            let Some(log) = self.logs.log(topic, *partition) else {
                continue;
            };
            match log.begin_txn_verification(pid, epoch) {
                None => {
                    verdicts.insert(i, Ok(AppendOrigin::VerifiedClient(None)));
                }
                Some(token) => pending.entry((pid, epoch)).or_default().push((
                    i,
                    (topic.clone(), *partition),
                    token,
                )),
            }
        }
        let Some(id) = id else {
            return verdicts;
        };
        for ((pid, epoch), parts) in pending {
            let keys: Vec<(String, i32)> = parts.iter().map(|(_, k, _)| k.clone()).collect();
            let answers = self
                .verifier
                .verify(
                    &self.txns,
                    || self.transaction_coordinator(id),
                    id,
                    pid,
                    epoch,
                    &keys,
                )
                .await;
            for ((i, _, token), answer) in parts.into_iter().zip(answers) {
                let verdict = match answer {
                    Ok(()) => Ok(AppendOrigin::VerifiedClient(Some(token))),
                    Err((code, message)) => Err(AppendFailure::new(code, message)),
                };
                verdicts.insert(i, verdict);
            }
        }
        verdicts
    }
}

/// What KIP-890 verification decided for one partition's transactional
/// batch: append with this origin, or refuse.
type Verdict = Result<AppendOrigin, AppendFailure>;

/// A partition awaiting verification: the entry's index, (topic,
/// partition) and the guard's token.
type Guarded = (usize, (String, i32), u64);

/// An append that went through: its answer and, for acks=all, the log,
/// the end offset to wait for and the leader epoch appended at.
type Appended = (AppendOutcome, Option<(Arc<Partition>, i64, i32)>);

/// The producer id and epoch of a transactional v2 batch (the request's
/// first batch: v3+ allows one per partition), read from its header.
fn transactional_producer(records: Option<&[u8]>) -> Option<(i64, i16)> {
    let r = records?;
    if r.len() < 61 || r[16] != 2 {
        return None;
    }
    let attributes = i16::from_be_bytes([r[21], r[22]]);
    if attributes & 0x10 == 0 {
        return None;
    }
    let pid = i64::from_be_bytes(r[43..51].try_into().ok()?);
    let epoch = i16::from_be_bytes([r[51], r[52]]);
    Some((pid, epoch))
}

/// Kafka's `ProduceRequest.validateRecords` (v3+): a partition's records
/// must be exactly one magic-2 batch; anything else is INVALID_RECORD,
/// refused before the log is looked at (so no log start offset).
fn precheck(records: Option<&[u8]>) -> Option<String> {
    let records = records?;
    if records.is_empty() {
        return Some("produce requests must have at least one record batch per partition".into());
    }
    // The magic byte sits at offset 16 in both a v2 batch header and a
    // legacy message set entry.
    match records.get(16) {
        Some(2) | None => None,
        Some(m) => Some(format!(
            "produce requests are only allowed to contain record batches with magic version 2, got {m}"
        )),
    }
}

/// [`append_partition`] with Kafka's request-level checks first and its
/// log start offset on error answers.
fn checked_append(
    partition: &Arc<Partition>,
    records: Option<&[u8]>,
    acks: i16,
    origin: AppendOrigin,
) -> Result<Appended, AppendFailure> {
    if let Some(message) = precheck(records) {
        return Err(AppendFailure::new(ResponseError::InvalidRecord, message));
    }
    append_partition(partition, records, acks, origin).map_err(|mut f| {
        if f.reports_log_start() {
            f.log_start_offset = partition.log().log_start_offset();
        }
        f
    })
}

fn append_partition(
    partition: &Arc<Partition>,
    records: Option<&[u8]>,
    acks: i16,
    origin: AppendOrigin,
) -> Result<Appended, AppendFailure> {
    let log = partition.log();
    let Some(records) = records else {
        return Err(AppendFailure::new(
            ResponseError::CorruptMessage,
            "produce request has no records",
        ));
    };
    let cfg = log.config();
    // Before anything is inflated, as Kafka checks the size first.
    if records.len() > cfg.max_message_bytes {
        return Err(AppendFailure::new(
            ResponseError::MessageTooLarge,
            format!(
                "record batch of {} bytes exceeds the topic's max.message.bytes ({})",
                records.len(),
                cfg.max_message_bytes
            ),
        ));
    }
    let policy = AppendPolicy {
        now_ms: log.clock().now_ms(),
        timestamps: match cfg.message_timestamp_type {
            TimestampType::LogAppendTime => TimestampPolicy::LogAppendTime,
            TimestampType::CreateTime => TimestampPolicy::CreateTime {
                before_max_ms: cfg.message_timestamp_before_max_ms,
                after_max_ms: cfg.message_timestamp_after_max_ms,
            },
        },
        compacted: cfg.compacted,
        max_inflated_bytes: (cfg.max_message_bytes.max(1 << 20) as u64)
            .saturating_mul(INFLATION_BOUND),
    };
    let header = validate(records, &policy).map_err(|e| {
        tracing::debug!(topic = %log.topic(), partition = log.partition(), error = %e, "produced batch refused");
        errors::refused(&e)
    })?;
    // Kafka's LogValidator: a v2 batch from a client starts at offset 0
    // (the broker assigns offsets).
    if header.base_offset != 0 {
        return Err(AppendFailure::new(
            ResponseError::InvalidRecord,
            format!(
                "the base offset of the record batch should be 0, but it is {}",
                header.base_offset
            ),
        ));
    }
    let transcoded;
    let target = cfg
        .compression
        .filter(|t| transcode::needs_transcode(&header, Some(*t)));
    let (records, header) = if let Some(target) = target {
        match reencode(records, header, target, cfg.max_message_bytes, &policy) {
            Ok((bytes, h)) => {
                transcoded = bytes;
                (&transcoded[..], h)
            }
            Err(transcode::TranscodeError::TooLarge { codec, limit }) => {
                return Err(AppendFailure::new(
                    ResponseError::MessageTooLarge,
                    format!("record batch re-encoded as {codec} (the topic's compression.type) exceeds the topic's max.message.bytes ({limit})"),
                ))
            }
            Err(e) => {
                tracing::warn!(topic = %log.topic(), partition = log.partition(), error = %e, "re-encoding a validated batch failed");
                return Err(AppendFailure::new(ResponseError::InvalidRecord, e.to_string()));
            }
        }
    } else {
        (records, header)
    };
    let headers = [header];
    if acks == -1 {
        let in_sync = partition.in_sync_replicas();
        if (in_sync as i32) < cfg.min_insync_replicas {
            return Err(AppendFailure::new(
                ResponseError::NotEnoughReplicas,
                format!(
                    "min.insync.replicas is {} but {in_sync} replica(s) are in sync",
                    cfg.min_insync_replicas
                ),
            ));
        }
    }
    match partition.append_from(records, &headers, origin) {
        Ok(info) => Ok((
            AppendOutcome::Appended {
                base_offset: info.base_offset,
                log_append_time: info.log_append_time,
                log_start_offset: info.log_start_offset,
            },
            (acks == -1).then(|| (partition.clone(), info.last_offset + 1, info.leader_epoch)),
        )),
        Err(e) => {
            let f = errors::append(e);
            if f.error == ResponseError::KafkaStorageError {
                tracing::error!(topic = %log.topic(), partition = log.partition(), error = %f.message, "append failed");
            }
            Err(f)
        }
    }
}

/// Runs the validator; a large compressed batch (seconds of inflation at
/// worst) runs as blocking work on a multi-threaded runtime.
fn validate(records: &[u8], policy: &AppendPolicy) -> Result<BatchHeader, ValidationError> {
    let compressed =
        BatchHeader::parse_header_only(records).is_ok_and(|h| h.attributes & 0x07 != 0);
    let run = || validator::validate_produced(records, policy);
    if compressed && records.len() > BLOCKING_VALIDATION_BYTES {
        blocking(run)
    } else {
        run()
    }
}

/// Runs `f` telling a multi-threaded runtime that this worker blocks, so
/// other connections' tasks move to another worker.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(f)
    } else {
        f()
    }
}

/// Re-encodes a validated batch with the topic's codec, as Kafka does when
/// `compression.type` names one the producer did not use. The header keeps
/// the validator's max timestamp. Blocking work on a multi-threaded runtime
/// (the whole records section is inflated and compressed again).
fn reencode(
    records: &[u8],
    validated: BatchHeader,
    target: transcode::Encoding,
    max_message_bytes: usize,
    policy: &AppendPolicy,
) -> Result<(Vec<u8>, BatchHeader), transcode::TranscodeError> {
    let run = || {
        let out = transcode::transcode(
            records,
            target,
            policy.max_inflated_bytes,
            max_message_bytes,
        )?;
        let mut h = BatchHeader::parse_header_only(&out)
            .map_err(|e| transcode::TranscodeError::Scan(e.into()))?;
        h.max_timestamp = validated.max_timestamp;
        Ok((out, h))
    };
    blocking(run)
}
