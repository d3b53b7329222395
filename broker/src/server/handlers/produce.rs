//! Produce: validate each partition's batch as Kafka's `LogValidator` does
//! (`strata_format::validator`: CRC, structure, every record, timestamps,
//! the true max timestamp), verify a transaction's first write to a
//! partition with its coordinator (KIP-890), append it with
//! broker-assigned offsets, and for
//! acks=all wait until it is durable (the high watermark passes it). Nothing of a rejected batch is
//! stored. Split in two phases so the connection can append pipelined
//! requests in order while their fsync waits overlap.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use super::s;
use crate::clock::now_ms;
use crate::config::TimestampType;
use crate::log::group_commit::CommitWait;
use crate::log::producer_state::SequenceError;
use crate::log::{AppendOrigin, LogError, PartitionLog};
use crate::server::Broker;
use crate::txn::TRANSACTION_STATE_TOPIC;
use strata_format::transcode;
use strata_format::validator::{self, AppendPolicy, TimestampPolicy, ValidationError};

/// Outcome of appending to one partition, before the acks wait.
struct Appended {
    response: PartitionProduceResponse,
    /// The log, the end offset to wait for and the leader epoch appended at.
    wait_for: Option<(Arc<PartitionLog>, i64, i32)>,
}

fn error(
    index: i32,
    err: ResponseError,
    message: String,
    version: i16,
) -> PartitionProduceResponse {
    let mut p = PartitionProduceResponse::default();
    p.index = index;
    p.error_code = err.code();
    p.base_offset = -1;
    p.log_append_time_ms = -1;
    p.log_start_offset = -1;
    if version >= 8 {
        p.error_message = Some(s(message));
    }
    p
}

/// A batch's records may inflate to at most this many times the topic's
/// `max.message.bytes` (at least 1 MiB): 1 GiB by default, far beyond what
/// producers send (their own batch and record limits apply to uncompressed
/// bytes), and a bound on the CPU one decompression bomb can cost.
const INFLATION_BOUND: u64 = 1024;
/// Compressed batches larger than this are validated with the runtime told
/// that this worker blocks, so other connections' tasks move elsewhere.
const BLOCKING_VALIDATION_BYTES: usize = 256 << 10;

/// Runs the validator; a large compressed batch (seconds of inflation at
/// worst) runs as blocking work on a multi-threaded runtime.
fn validate(
    records: &[u8],
    policy: &AppendPolicy,
) -> Result<strata_format::batch::BatchHeader, ValidationError> {
    let compressed = strata_format::batch::BatchHeader::parse_header_only(records)
        .is_ok_and(|h| h.attributes & 0x07 != 0);
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
    validated: strata_format::batch::BatchHeader,
    target: transcode::Encoding,
    max_message_bytes: usize,
    policy: &AppendPolicy,
) -> Result<(Vec<u8>, strata_format::batch::BatchHeader), transcode::TranscodeError> {
    let run = || {
        let out = transcode::transcode(
            records,
            target,
            policy.max_inflated_bytes,
            max_message_bytes,
        )?;
        let mut h = strata_format::batch::BatchHeader::parse_header_only(&out)
            .map_err(|e| transcode::TranscodeError::Scan(e.into()))?;
        h.max_timestamp = validated.max_timestamp;
        Ok((out, h))
    };
    blocking(run)
}

/// The response to a batch the validator refused, as Kafka gives it: the
/// error code, the message (v8+) and each failing record (v8+
/// `record_errors`).
fn refused(index: i32, e: &ValidationError, version: i16) -> Appended {
    let code = match e {
        ValidationError::Corrupt(_) => ResponseError::CorruptMessage,
        ValidationError::InvalidTimestamps(_) => ResponseError::InvalidTimestamp,
        ValidationError::InvalidBatch(_) | ValidationError::InvalidRecords(_) => {
            ResponseError::InvalidRecord
        }
    };
    let mut response = error(index, code, e.to_string(), version);
    if version >= 8 {
        response.record_errors = e
            .record_errors()
            .iter()
            .map(|r| {
                let mut b = BatchIndexAndErrorMessage::default();
                b.batch_index = r.index;
                b.batch_index_error_message = Some(s(r.message.clone()));
                b
            })
            .collect();
    }
    Appended {
        response,
        wait_for: None,
    }
}

/// A produce request whose batches are appended and which now waits for
/// durability (acks=all) before it can be answered.
pub struct PendingProduce {
    acks: i16,
    timeout: Duration,
    version: i16,
    topics: Vec<TopicProduceResponse>,
    waits: Vec<(usize, usize, (Arc<PartitionLog>, i64, i32))>,
}

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

/// What KIP-890 verification decided for one partition's transactional
/// batch: append with this origin, or refuse.
type Verdict = Result<AppendOrigin, (ResponseError, String)>;

/// KIP-890 part 1, before anything is appended: each partition this
/// broker leads that would open a producer's transaction is checked with
/// the transaction coordinator (Kafka's ReplicaManager with
/// `transaction.partition.verification.enable`). Partitions not in the
/// map append as a plain client's.
async fn verify_transactional(req: &ProduceRequest, b: &Broker) -> HashMap<(String, i32), Verdict> {
    let mut verdicts = HashMap::new();
    let mut pending: BTreeMap<(i64, i16), Vec<((String, i32), Arc<PartitionLog>, u64)>> =
        BTreeMap::new();
    let id = req
        .transactional_id
        .as_ref()
        .map(|t| t.0.to_string())
        .filter(|t| !t.is_empty());
    for td in &req.topic_data {
        let name = td.name.0.to_string();
        for pd in &td.partition_data {
            let Some((pid, epoch)) = transactional_producer(pd.records.as_deref()) else {
                continue;
            };
            if crate::topic_name::is_coordinator_topic(&name) {
                continue;
            }
            let key = (name.clone(), pd.index);
            if id.is_none() {
                // Kafka refuses transactional records without a
                // transactional id as unauthorized for it.
                verdicts.insert(
                    key,
                    Err((
                        ResponseError::TransactionalIdAuthorizationFailed,
                        "transactional records need the request's transactional id".into(),
                    )),
                );
                continue;
            }
            if !b.txn_verifier.enabled() || b.not_leader(&name, pd.index).is_some() {
                continue;
            }
            let Some(log) = b.logs.partition(&name, pd.index) else {
                continue;
            };
            match log.begin_txn_verification(pid, epoch) {
                None => {
                    verdicts.insert(key, Ok(AppendOrigin::VerifiedClient(None)));
                }
                Some(token) => pending
                    .entry((pid, epoch))
                    .or_default()
                    .push((key, log, token)),
            }
        }
    }
    let Some(id) = id else {
        return verdicts;
    };
    for ((pid, epoch), parts) in pending {
        let keys: Vec<(String, i32)> = parts.iter().map(|(k, _, _)| k.clone()).collect();
        let answers = b
            .txn_verifier
            .verify(
                &b.txns,
                || b.coordinator_for(TRANSACTION_STATE_TOPIC, &id),
                &id,
                pid,
                epoch,
                &keys,
            )
            .await;
        for ((key, log, token), answer) in parts.into_iter().zip(answers) {
            let verdict = match answer {
                Ok(()) => Ok(AppendOrigin::VerifiedClient(Some(token))),
                Err(refusal) => {
                    log.end_txn_verification(pid, token);
                    Err(refusal)
                }
            };
            verdicts.insert(key, verdict);
        }
    }
    verdicts
}

/// Phase one, run in request order on the connection: verify transactional
/// batches with their coordinator (KIP-890), then validate and append every
/// partition's batches. Appends of pipelined requests must hit the log in
/// the order the client sent them, or per-partition ordering breaks.
pub async fn append(req: ProduceRequest, version: i16, b: &Broker) -> PendingProduce {
    let acks = req.acks;
    let timeout = Duration::from_millis(req.timeout_ms.max(0) as u64);
    let mut verdicts = if matches!(acks, -1..=1) {
        verify_transactional(&req, b).await
    } else {
        HashMap::new()
    };
    let mut topics = Vec::with_capacity(req.topic_data.len());
    let mut waits = Vec::new();
    for td in req.topic_data {
        let name = td.name.0.to_string();
        let topic = b.logs.topic(&name);
        let mut partitions = Vec::with_capacity(td.partition_data.len());
        for pd in td.partition_data {
            let verdict = verdicts.remove(&(name.clone(), pd.index));
            let appended = if !matches!(acks, -1..=1) {
                Appended {
                    response: error(
                        pd.index,
                        ResponseError::InvalidRequiredAcks,
                        format!("acks must be -1, 0 or 1, got {acks}"),
                        version,
                    ),
                    wait_for: None,
                }
            } else if let Some(code) = b.not_leader(&name, pd.index) {
                Appended {
                    response: error(
                        pd.index,
                        code,
                        format!(
                            "Broker {} is not the leader of {name}-{}",
                            b.node_id, pd.index
                        ),
                        version,
                    ),
                    wait_for: None,
                }
            } else {
                match topic.as_ref().and_then(|t| t.partition(pd.index)) {
                    Some(_) if crate::topic_name::is_coordinator_topic(&name) => Appended {
                        response: error(
                            pd.index,
                            ResponseError::InvalidTopicException,
                            format!("Cannot append to internal topic {name}"),
                            version,
                        ),
                        wait_for: None,
                    },
                    None => Appended {
                        response: error(
                            pd.index,
                            ResponseError::UnknownTopicOrPartition,
                            format!(
                                "This server does not host this topic-partition: {name}-{}",
                                pd.index
                            ),
                            version,
                        ),
                        wait_for: None,
                    },
                    Some(log) => match verdict {
                        Some(Err((code, message))) => Appended {
                            response: error(pd.index, code, message, version),
                            wait_for: None,
                        },
                        Some(Ok(origin)) => checked_append(
                            &log,
                            pd.index,
                            pd.records.as_deref(),
                            acks,
                            version,
                            origin,
                        ),
                        None => checked_append(
                            &log,
                            pd.index,
                            pd.records.as_deref(),
                            acks,
                            version,
                            AppendOrigin::Client,
                        ),
                    },
                }
            };
            if let Some(w) = appended.wait_for {
                waits.push((topics.len(), partitions.len(), w));
            }
            partitions.push(appended.response);
        }
        let mut t = TopicProduceResponse::default();
        t.name = td.name;
        t.partition_responses = partitions;
        topics.push(t);
    }
    PendingProduce {
        acks,
        timeout,
        version,
        topics,
        waits,
    }
}

/// Phase two, concurrent with later requests: wait for durability and build
/// the response (none for acks=0).
pub async fn complete(p: PendingProduce) -> Option<ProduceResponse> {
    let PendingProduce {
        acks,
        timeout,
        version,
        mut topics,
        waits,
    } = p;
    if acks == 0 {
        return None;
    }
    for (ti, pi, (log, end, epoch)) in waits {
        let p = &mut topics[ti].partition_responses[pi];
        let index = p.index;
        match log.wait_committed(end, epoch, timeout).await {
            CommitWait::Committed => {}
            CommitWait::TimedOut => {
                *p = error(
                    index,
                    ResponseError::RequestTimedOut,
                    format!(
                        "the batch was appended but not copied to every in-sync replica within {} ms",
                        timeout.as_millis()
                    ),
                    version,
                );
                continue;
            }
            CommitWait::NotLeader => {
                *p = error(
                    index,
                    ResponseError::NotLeaderOrFollower,
                    "this broker stopped leading the partition before the batch was committed"
                        .to_string(),
                    version,
                );
                continue;
            }
        }
        // The ISR shrank below the minimum while the batch was copied: it
        // is in the log, but not as safe as acks=all promised.
        let (in_sync, min) = (
            log.in_sync_replicas() as i32,
            log.config().min_insync_replicas,
        );
        if in_sync < min {
            *p = error(
                index,
                ResponseError::NotEnoughReplicasAfterAppend,
                format!(
                    "the batch was appended but only {in_sync} replica(s) are in sync (min.insync.replicas is {min})"
                ),
                version,
            );
        }
    }
    let mut r = ProduceResponse::default();
    r.responses = topics;
    Some(r)
}

/// Both phases back to back (for callers that need no pipelining).
pub async fn handle(req: ProduceRequest, version: i16, b: &Broker) -> Option<ProduceResponse> {
    complete(append(req, version, b).await).await
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

/// Whether Kafka's answer to a refused append carries the partition's log
/// start offset: all errors except the ones its ReplicaManager reports with
/// the unknown append info (corrupt or too large records, not leader,
/// unknown partition, storage errors).
fn reports_log_start(code: i16) -> bool {
    ![
        ResponseError::CorruptMessage,
        ResponseError::MessageTooLarge,
        ResponseError::RecordListTooLarge,
        ResponseError::NotLeaderOrFollower,
        ResponseError::UnknownTopicOrPartition,
        ResponseError::KafkaStorageError,
    ]
    .iter()
    .any(|e| e.code() == code)
}

/// [`append_partition`] with Kafka's request-level checks first and its
/// log start offset on error answers.
fn checked_append(
    log: &Arc<PartitionLog>,
    index: i32,
    records: Option<&[u8]>,
    acks: i16,
    version: i16,
    origin: AppendOrigin,
) -> Appended {
    if let Some(message) = precheck(records) {
        return Appended {
            response: error(index, ResponseError::InvalidRecord, message, version),
            wait_for: None,
        };
    }
    let mut appended = append_partition(log, index, records, acks, version, origin);
    let r = &mut appended.response;
    if r.error_code != 0 && reports_log_start(r.error_code) {
        r.log_start_offset = log.log_start_offset();
    }
    appended
}

fn append_partition(
    log: &Arc<PartitionLog>,
    index: i32,
    records: Option<&[u8]>,
    acks: i16,
    version: i16,
    origin: AppendOrigin,
) -> Appended {
    let fail = |e: ResponseError, m: String| Appended {
        response: error(index, e, m, version),
        wait_for: None,
    };
    let Some(records) = records else {
        return fail(
            ResponseError::CorruptMessage,
            "produce request has no records".into(),
        );
    };
    let cfg = log.config();
    // Before anything is inflated, as Kafka checks the size first.
    if records.len() > cfg.max_message_bytes {
        return fail(
            ResponseError::MessageTooLarge,
            format!(
                "record batch of {} bytes exceeds the topic's max.message.bytes ({})",
                records.len(),
                cfg.max_message_bytes
            ),
        );
    }
    let policy = AppendPolicy {
        now_ms: now_ms(),
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
    let header = match validate(records, &policy) {
        Ok(h) => h,
        Err(e) => {
            tracing::debug!(topic = %log.topic(), partition = index, error = %e, "produced batch refused");
            return refused(index, &e, version);
        }
    };
    // Kafka's LogValidator: a v2 batch from a client starts at offset 0
    // (the broker assigns offsets).
    if header.base_offset != 0 {
        return fail(
            ResponseError::InvalidRecord,
            format!(
                "the base offset of the record batch should be 0, but it is {}",
                header.base_offset
            ),
        );
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
                return fail(
                    ResponseError::MessageTooLarge,
                    format!("record batch re-encoded as {codec} (the topic's compression.type) exceeds the topic's max.message.bytes ({limit})"),
                )
            }
            Err(e) => {
                tracing::warn!(topic = %log.topic(), partition = index, error = %e, "re-encoding a validated batch failed");
                return fail(ResponseError::InvalidRecord, e.to_string());
            }
        }
    } else {
        (records, header)
    };
    let headers = [header];
    if acks == -1 {
        let in_sync = log.in_sync_replicas();
        if (in_sync as i32) < cfg.min_insync_replicas {
            return fail(
                ResponseError::NotEnoughReplicas,
                format!(
                    "min.insync.replicas is {} but {in_sync} replica(s) are in sync",
                    cfg.min_insync_replicas
                ),
            );
        }
    }
    match log.append_from(records, &headers, origin) {
        Ok(info) => {
            let mut p = PartitionProduceResponse::default();
            p.index = index;
            p.base_offset = info.base_offset;
            p.log_append_time_ms = info.log_append_time;
            p.log_start_offset = info.log_start_offset;
            Appended {
                response: p,
                wait_for: (acks == -1)
                    .then(|| (log.clone(), info.last_offset + 1, info.leader_epoch)),
            }
        }
        Err(LogError::MessageTooLarge { size, max }) => fail(
            ResponseError::MessageTooLarge,
            format!("record batch of {size} bytes exceeds the topic's max.message.bytes ({max})"),
        ),
        Err(LogError::Sequence(e)) => {
            let (code, message) = match e {
                SequenceError::InvalidProducerEpoch { current, got } => (
                    ResponseError::InvalidProducerEpoch,
                    format!("producer epoch {got} is older than the current epoch {current}"),
                ),
                SequenceError::OutOfOrder { expected, got } => (
                    ResponseError::OutOfOrderSequenceNumber,
                    format!("expected sequence {expected}, got {got}"),
                ),
                SequenceError::InvalidTxnState => (
                    ResponseError::InvalidTxnState,
                    "a non-transactional batch from a producer with an open transaction"
                        .to_string(),
                ),
                SequenceError::NotInTransaction => (
                    ResponseError::InvalidTxnState,
                    "Record was not part of an ongoing transaction (its transaction ended while the partition was verified)"
                        .to_string(),
                ),
                SequenceError::CoordinatorFenced { current, got } => (
                    ResponseError::TransactionCoordinatorFenced,
                    format!("coordinator epoch {got} is older than {current}"),
                ),
                SequenceError::UnknownProducerId => (
                    ResponseError::UnknownProducerId,
                    "no state for this producer id and the batch does not start at sequence 0"
                        .to_string(),
                ),
            };
            fail(code, message)
        }
        // Deleted or shutting down: retriable, the client refreshes metadata.
        Err(LogError::NotLeader) => fail(
            ResponseError::NotLeaderOrFollower,
            "this broker no longer leads the partition".into(),
        ),
        Err(LogError::Closed) => fail(
            ResponseError::NotLeaderOrFollower,
            "the partition is being deleted or the broker is shutting down".into(),
        ),
        Err(e) => {
            tracing::error!(topic = %log.topic(), partition = index, error = %e, "append failed");
            fail(ResponseError::KafkaStorageError, e.to_string())
        }
    }
}
