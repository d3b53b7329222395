//! Produce (API 0): decode, hand the partitions' batches to the replica
//! manager (`crate::partition::append`: validation, transaction
//! verification, the appends and the acks=all wait), encode its answers.
//! Split in two phases so the connection can append pipelined requests in
//! order while their waits overlap.

use std::time::Duration;

use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use super::s;
use crate::partition::{AppendOutcome, AppendRequest, PendingAppend};
use crate::server::Broker;

/// A produce request whose batches are appended and which now waits for
/// durability (acks=all) before it can be answered.
pub struct PendingProduce {
    version: i16,
    /// The request's topics and their partitions, in request order.
    shape: Vec<(TopicName, Vec<i32>)>,
    pending: PendingAppend,
}

/// Phase one, run in request order on the connection: the appends.
pub async fn append(req: ProduceRequest, version: i16, b: &Broker) -> PendingProduce {
    let mut shape = Vec::with_capacity(req.topic_data.len());
    let mut entries = Vec::new();
    for td in req.topic_data {
        let name = td.name.0.to_string();
        let mut indexes = Vec::with_capacity(td.partition_data.len());
        for pd in td.partition_data {
            indexes.push(pd.index);
            entries.push((name.clone(), pd.index, pd.records));
        }
        shape.push((td.name, indexes));
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
    for (name, indexes) in shape {
        let mut t = TopicProduceResponse::default();
        t.name = name;
        t.partition_responses = indexes
            .into_iter()
            .map(|index| encode(index, outcomes.next(), version))
            .collect();
        r.responses.push(t);
    }
    Some(r)
}

/// Both phases back to back (for callers that need no pipelining).
pub async fn handle(req: ProduceRequest, version: i16, b: &Broker) -> Option<ProduceResponse> {
    complete(append(req, version, b).await).await
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
