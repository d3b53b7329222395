//! The transactional producer's APIs: AddPartitionsToTxn, AddOffsetsToTxn,
//! TxnOffsetCommit, EndTxn, and the admin views DescribeTransactions and
//! ListTransactions. The coordinator (`crate::txn`) decides; this module
//! decodes, adapts error codes to the request's version (PRODUCER_FENCED
//! is INVALID_PRODUCER_EPOCH to clients from before KIP-588, as in Kafka)
//! and encodes.

use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::describe_transactions_response::{
    TopicData, TransactionState as DescribedState,
};
use kafka_protocol::messages::list_transactions_response::TransactionState as ListedState;
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use super::s;
use crate::group::txn_offsets::TxnOffsetCommitRequest as TxnCommit;
use crate::server::Broker;
use crate::txn::{TxnError, TxnState};

/// `e`'s code at `version` of an API that learnt PRODUCER_FENCED at
/// `fenced_from` (older clients get INVALID_PRODUCER_EPOCH).
fn code_at(e: TxnError, version: i16, fenced_from: i16) -> i16 {
    if e == ResponseError::ProducerFenced && version < fenced_from {
        ResponseError::InvalidProducerEpoch.code()
    } else {
        e.code()
    }
}

fn result_code(r: Result<(), TxnError>, version: i16, fenced_from: i16) -> i16 {
    r.err().map_or(0, |e| code_at(e, version, fenced_from))
}

/// One transaction's AddPartitionsToTxn: unknown partitions fail with
/// UNKNOWN_TOPIC_OR_PARTITION and the others with OPERATION_NOT_ATTEMPTED,
/// as in Kafka; else every partition gets the coordinator's answer.
async fn add_partitions_one(
    b: &Broker,
    id: &str,
    producer_id: i64,
    epoch: i16,
    topics: Vec<AddPartitionsToTxnTopic>,
    verify_only: bool,
    version: i16,
) -> Vec<AddPartitionsToTxnTopicResult> {
    let wanted: Vec<(String, i32)> = topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.name.0.to_string(), *p)))
        .collect();
    // The coordinator need not host the partitions: the store knows them.
    let snap = b.cluster.view.snapshot();
    let unknown = |t: &str, p: i32| !b.replicas.hosts(t, p) && snap.partition(t, p).is_none();
    let any_unknown = wanted.iter().any(|(t, p)| unknown(t, *p));
    // KIP-890: the partitions must already be in the open transaction
    // (a partition leader asks before a producer's first write there).
    let mut verified: Option<Vec<bool>> = None;
    let common = if let Err(e) = b.txns.check_coordinator(id) {
        Some(result_code(Err(e), version, 2))
    } else if any_unknown {
        None
    } else if verify_only {
        match b.txns.verify_partitions(id, producer_id, epoch, &wanted) {
            Ok(v) => {
                verified = Some(v);
                None
            }
            Err(e) => Some(result_code(Err(e), version, 2)),
        }
    } else {
        Some(result_code(
            b.txns.add_partitions(id, producer_id, epoch, wanted).await,
            version,
            2,
        ))
    };
    let mut verified = verified.map(|v| v.into_iter());
    topics
        .into_iter()
        .map(|t| {
            let mut tr = AddPartitionsToTxnTopicResult::default();
            let name = t.name.0.to_string();
            tr.results_by_partition = t
                .partitions
                .iter()
                .map(|p| {
                    let mut pr = AddPartitionsToTxnPartitionResult::default();
                    pr.partition_index = *p;
                    pr.partition_error_code = match (common, verified.as_mut()) {
                        (Some(c), _) => c,
                        // In `wanted`'s order, which is this one.
                        (None, Some(v)) => match v.next() {
                            Some(true) => 0,
                            _ => ResponseError::InvalidTxnState.code(),
                        },
                        (None, None) if unknown(&name, *p) => {
                            ResponseError::UnknownTopicOrPartition.code()
                        }
                        (None, None) => ResponseError::OperationNotAttempted.code(),
                    };
                    pr
                })
                .collect();
            tr.name = t.name;
            tr
        })
        .collect()
}

pub async fn add_partitions_to_txn(
    req: AddPartitionsToTxnRequest,
    version: i16,
    b: &Broker,
) -> AddPartitionsToTxnResponse {
    let mut r = AddPartitionsToTxnResponse::default();
    if version <= 3 {
        r.results_by_topic_v3_and_below = add_partitions_one(
            b,
            &req.v3_and_below_transactional_id,
            req.v3_and_below_producer_id.0,
            req.v3_and_below_producer_epoch,
            req.v3_and_below_topics,
            false,
            version,
        )
        .await;
        return r;
    }
    for t in req.transactions {
        let mut out = AddPartitionsToTxnResult::default();
        out.topic_results = add_partitions_one(
            b,
            &t.transactional_id,
            t.producer_id.0,
            t.producer_epoch,
            t.topics,
            t.verify_only,
            version,
        )
        .await;
        out.transactional_id = t.transactional_id;
        r.results_by_transaction.push(out);
    }
    r
}

pub async fn add_offsets_to_txn(
    req: AddOffsetsToTxnRequest,
    version: i16,
    b: &Broker,
) -> AddOffsetsToTxnResponse {
    let mut r = AddOffsetsToTxnResponse::default();
    r.error_code = if req.group_id.is_empty() {
        ResponseError::InvalidGroupId.code()
    } else {
        result_code(
            b.txns
                .add_offsets(
                    &req.transactional_id,
                    req.producer_id.0,
                    req.producer_epoch,
                    &req.group_id,
                )
                .await,
            version,
            2,
        )
    };
    r
}

pub async fn end_txn(req: EndTxnRequest, version: i16, b: &Broker) -> EndTxnResponse {
    let mut r = EndTxnResponse::default();
    r.producer_id = ProducerId(-1);
    r.producer_epoch = -1;
    r.error_code = result_code(
        b.txns
            .end_txn(
                &req.transactional_id,
                req.producer_id.0,
                req.producer_epoch,
                req.committed,
            )
            .await,
        version,
        2,
    );
    r
}

pub async fn txn_offset_commit(
    req: TxnOffsetCommitRequest,
    _version: i16,
    b: &Broker,
) -> TxnOffsetCommitResponse {
    let mut shape: Vec<(TopicName, Vec<i32>)> = Vec::with_capacity(req.topics.len());
    let mut offsets = Vec::new();
    for t in req.topics {
        let name = t.name.0.to_string();
        shape.push((
            t.name,
            t.partitions.iter().map(|p| p.partition_index).collect(),
        ));
        for p in t.partitions {
            offsets.push(super::offset_commit(
                &name,
                p.partition_index,
                p.committed_offset,
                p.committed_leader_epoch,
                p.committed_metadata,
            ));
        }
    }
    // The producer must be the id's current one, in an open transaction
    // holding the group's offsets partition (AddOffsetsToTxn came first).
    let offsets_partition = b.groups.offsets_partition_of(&req.group_id);
    // Only a broker that coordinates the transactional id as well knows
    // its state; elsewhere the offsets partition's producer state fences a
    // stale producer epoch when the offsets are appended.
    let known = b.txns.check_coordinator(&req.transactional_id).is_ok();
    let check = match b.txns.describe(&req.transactional_id) {
        _ if !known => Ok(()),
        None => Err(ResponseError::InvalidProducerIdMapping),
        Some(m) if m.producer_id != req.producer_id.0 => {
            Err(ResponseError::InvalidProducerIdMapping)
        }
        Some(m) if m.producer_epoch != req.producer_epoch => {
            Err(ResponseError::InvalidProducerEpoch)
        }
        Some(m)
            if m.state != TxnState::Ongoing
                || !m
                    .partitions
                    .contains(&(crate::group::OFFSETS_TOPIC.to_string(), offsets_partition)) =>
        {
            Err(ResponseError::InvalidTxnState)
        }
        Some(_) => Ok(()),
    };
    let check = match b.groups.check_coordinator(&req.group_id) {
        Err(e) => Err(e),
        Ok(()) => check,
    };
    let codes = match check {
        Err(e) => vec![e.code(); offsets.len()],
        Ok(()) => {
            b.groups
                .txn_commit(TxnCommit {
                    group_id: req.group_id.to_string(),
                    producer_id: req.producer_id.0,
                    producer_epoch: req.producer_epoch,
                    generation: req.generation_id,
                    member_id: req.member_id.to_string(),
                    instance_id: req.group_instance_id.map(|s| s.to_string()),
                    offsets,
                })
                .await
        }
    };
    let mut codes = codes.into_iter();
    let mut r = TxnOffsetCommitResponse::default();
    r.topics = shape
        .into_iter()
        .map(|(name, parts)| {
            let mut t = TxnOffsetCommitResponseTopic::default();
            t.name = name;
            t.partitions = parts
                .into_iter()
                .map(|p| {
                    let mut pr = TxnOffsetCommitResponsePartition::default();
                    pr.partition_index = p;
                    pr.error_code = codes.next().unwrap_or(0);
                    pr
                })
                .collect();
            t
        })
        .collect();
    r
}

pub async fn describe_transactions(
    req: DescribeTransactionsRequest,
    _version: i16,
    b: &Broker,
) -> DescribeTransactionsResponse {
    let mut r = DescribeTransactionsResponse::default();
    for id in req.transactional_ids {
        let mut d = DescribedState::default();
        let owned = b.txns.check_coordinator(&id);
        match owned.map(|_| b.txns.describe(&id)) {
            Err(e) => d.error_code = e.code(),
            // Kafka leaves every other field at its default (0).
            Ok(None) => d.error_code = ResponseError::TransactionalIdNotFound.code(),
            Ok(Some(m)) => {
                d.transaction_state = s(m.state.name());
                d.transaction_timeout_ms = m.timeout_ms;
                d.transaction_start_time_ms = m.start_ms;
                d.producer_id = ProducerId(m.producer_id);
                d.producer_epoch = m.producer_epoch;
                let mut topics: Vec<TopicData> = Vec::new();
                for (t, p) in &m.partitions {
                    match topics.last_mut() {
                        Some(last) if last.topic.0.as_str() == t => last.partitions.push(*p),
                        _ => {
                            let mut td = TopicData::default();
                            td.topic = TopicName(s(t.clone()));
                            td.partitions = vec![*p];
                            topics.push(td);
                        }
                    }
                }
                d.topics = topics;
            }
        }
        d.transactional_id = id;
        r.transaction_states.push(d);
    }
    r
}

pub async fn list_transactions(
    req: ListTransactionsRequest,
    version: i16,
    b: &Broker,
) -> ListTransactionsResponse {
    const NAMES: [&str; 8] = [
        "Empty",
        "Ongoing",
        "PrepareCommit",
        "PrepareAbort",
        "CompleteCommit",
        "CompleteAbort",
        "Dead",
        "PrepareEpochFence",
    ];
    let mut r = ListTransactionsResponse::default();
    let states: Vec<String> = req.state_filters.iter().map(|s| s.to_string()).collect();
    r.unknown_state_filters = req
        .state_filters
        .iter()
        .filter(|f| !NAMES.contains(&f.as_str()))
        .cloned()
        .collect();
    let pids: Vec<i64> = req.producer_id_filters.iter().map(|p| p.0).collect();
    let min_duration = if version >= 1 {
        req.duration_filter
    } else {
        -1
    };
    r.transaction_states = b
        .txns
        .list(&states, &pids, min_duration)
        .into_iter()
        .map(|(id, pid, state)| {
            let mut t = ListedState::default();
            t.transactional_id = TransactionalId(s(id));
            t.producer_id = ProducerId(pid);
            t.transaction_state = s(state.name());
            t
        })
        .collect();
    r
}
