//! Produce (API 0): decode, hand the partitions' batches to the replica
//! manager (`crate::partition::append`: validation, transaction
//! verification, the appends and the acks=all wait), encode its answers.
//! Split in two phases so the connection can append pipelined requests in
//! order while their waits overlap. With an authorizer, as Kafka: a
//! transactional request needs WRITE on its transactional id
//! (TRANSACTIONAL_ID_AUTHORIZATION_FAILED in every partition), and each
//! topic WRITE (TOPIC_AUTHORIZATION_FAILED in its partitions, whether it
//! exists or not); refused partitions are not appended.

use std::time::Duration;

use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use strata_security::acl::{AclOperation, ResourceType};

use super::s;
use crate::partition::{AppendOutcome, AppendRequest, PendingAppend};
use crate::server::authz::Caller;
use crate::server::Broker;

/// A produce request whose batches are appended and which now waits for
/// durability (acks=all) before it can be answered.
pub struct PendingProduce {
    version: i16,
    /// The request's topics and their partitions, in request order, and
    /// the error of a topic the caller may not write (not appended).
    shape: Vec<(TopicName, Vec<i32>, Option<ResponseError>)>,
    pending: PendingAppend,
}

/// Phase one, run in request order on the connection: the appends.
pub async fn append(
    req: ProduceRequest,
    version: i16,
    b: &Broker,
    caller: &Caller,
) -> PendingProduce {
    let txn_denied = req
        .transactional_id
        .as_ref()
        .is_some_and(|id| !caller.may(AclOperation::Write, ResourceType::TransactionalId, &id.0));
    let mut shape = Vec::with_capacity(req.topic_data.len());
    let mut entries = Vec::new();
    for td in req.topic_data {
        let name = td.name.0.to_string();
        let denied = if txn_denied {
            Some(ResponseError::TransactionalIdAuthorizationFailed)
        } else if !caller.may(AclOperation::Write, ResourceType::Topic, &name) {
            Some(ResponseError::TopicAuthorizationFailed)
        } else {
            None
        };
        let mut indexes = Vec::with_capacity(td.partition_data.len());
        for pd in td.partition_data {
            indexes.push(pd.index);
            if denied.is_none() {
                entries.push((name.clone(), pd.index, pd.records));
            }
        }
        shape.push((td.name, indexes, denied));
    }
    let pending = b
        .replicas
        .append_records(AppendRequest {
            acks: req.acks,
            timeout: Duration::from_millis(req.timeout_ms.max(0) as u64),
            transactional_id: req.transactional_id.map(|t| t.0.to_string()),
            entries,
        })
        .await;
    PendingProduce {
        version,
        shape,
        pending,
    }
}

/// Phase two, concurrent with later requests: wait for durability and build
/// the response (none for acks=0).
pub async fn complete(p: PendingProduce) -> Option<ProduceResponse> {
    let PendingProduce {
        version,
        shape,
        pending,
    } = p;
    let mut outcomes = pending.complete().await?.into_iter();
    let mut r = ProduceResponse::default();
    for (name, indexes, denied) in shape {
        let mut t = TopicProduceResponse::default();
        t.name = name;
        t.partition_responses = indexes
            .into_iter()
            .map(|index| match denied {
                Some(error) => refused(index, error),
                None => encode(index, outcomes.next(), version),
            })
            .collect();
        r.responses.push(t);
    }
    Some(r)
}

/// Both phases back to back (for callers that need no pipelining).
pub async fn handle(
    req: ProduceRequest,
    version: i16,
    b: &Broker,
    caller: &Caller,
) -> Option<ProduceResponse> {
    complete(append(req, version, b, caller).await).await
}

/// A partition of a topic the caller may not write: nothing appended.
fn refused(index: i32, error: ResponseError) -> PartitionProduceResponse {
    let mut p = PartitionProduceResponse::default();
    p.index = index;
    p.error_code = error.code();
    p.base_offset = -1;
    p.log_append_time_ms = -1;
    p.log_start_offset = -1;
    p
}

/// One partition's answer at `version`: the message and the failing
/// records are v8+.
fn encode(index: i32, outcome: Option<AppendOutcome>, version: i16) -> PartitionProduceResponse {
    let mut p = PartitionProduceResponse::default();
    p.index = index;
    match outcome {
        Some(AppendOutcome::Appended {
            base_offset,
            log_append_time,
            log_start_offset,
        }) => {
            p.base_offset = base_offset;
            p.log_append_time_ms = log_append_time;
            p.log_start_offset = log_start_offset;
        }
        Some(AppendOutcome::Failed(f)) => {
            p.error_code = f.error.code();
            p.base_offset = -1;
            p.log_append_time_ms = -1;
            p.log_start_offset = f.log_start_offset;
            if version >= 8 {
                p.error_message = Some(s(f.message));
                p.record_errors = f
                    .record_errors
                    .into_iter()
                    .map(|(i, m)| {
                        let mut b = BatchIndexAndErrorMessage::default();
                        b.batch_index = i;
                        b.batch_index_error_message = Some(s(m));
                        b
                    })
                    .collect();
            }
        }
        // The replica manager answers every entry; never reached.
        None => {
            p.error_code = ResponseError::UnknownServerError.code();
            p.base_offset = -1;
            p.log_append_time_ms = -1;
            p.log_start_offset = -1;
        }
    }
    p
}
