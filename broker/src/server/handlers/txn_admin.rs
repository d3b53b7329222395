//! The transaction tools' APIs (what `kafka-transactions.sh describe-producers`,
//! `find-hanging` and `abort` send): DescribeProducers, each partition's
//! producers with their epoch, last sequence and open transaction; and
//! WriteTxnMarkers, markers written on an operator's (or, in a cluster, a
//! coordinator's) request, which is how a hanging transaction is aborted.

use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::write_txn_markers_response::{
    WritableTxnMarkerPartitionResult, WritableTxnMarkerResult, WritableTxnMarkerTopicResult,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use super::s;
use crate::log::control::{Marker, MarkerType};
use crate::log::group_commit::CommitWait;
use crate::log::producer_state::SequenceError;
use crate::log::LogError;
use crate::server::Broker;
use crate::txn::completion::MarkerWriteError;

pub async fn describe_producers(
    req: DescribeProducersRequest,
    _version: i16,
    b: &Broker,
) -> DescribeProducersResponse {
    let mut r = DescribeProducersResponse::default();
    for t in req.topics {
        let mut tr = TopicResponse::default();
        for p in t.partition_indexes {
            let mut pr = PartitionResponse::default();
            pr.partition_index = p;
            match b.logs.partition(&t.name, p) {
                None => {
                    pr.error_code = ResponseError::UnknownTopicOrPartition.code();
                    pr.error_message = Some(s(format!(
                        "This server does not host this topic-partition: {}-{p}",
                        t.name.0
                    )));
                }
                Some(log) => {
                    pr.active_producers = log
                        .active_producers()
                        .into_iter()
                        .map(|a| {
                            let mut ps = ProducerState::default();
                            ps.producer_id = ProducerId(a.producer_id);
                            ps.producer_epoch = a.producer_epoch as i32;
                            ps.last_sequence = a.last_sequence;
                            ps.last_timestamp = a.last_timestamp;
                            ps.coordinator_epoch = a.coordinator_epoch;
                            ps.current_txn_start_offset = a.current_txn_start_offset;
                            ps
                        })
                        .collect();
                }
            }
            tr.partitions.push(pr);
        }
        tr.name = t.name;
        r.topics.push(tr);
    }
    r
}

pub async fn write_txn_markers(
    req: WriteTxnMarkersRequest,
    _version: i16,
    b: &Broker,
) -> WriteTxnMarkersResponse {
    let mut r = WriteTxnMarkersResponse::default();
    let timeout =
        std::time::Duration::from_millis(b.config.i64("offsets.commit.timeout.ms").max(1) as u64);
    for m in req.markers {
        let marker = Marker {
            kind: if m.transaction_result {
                MarkerType::Commit
            } else {
                MarkerType::Abort
            },
            coordinator_epoch: m.coordinator_epoch,
        };
        let mut out = WritableTxnMarkerResult::default();
        out.producer_id = m.producer_id;
        for t in m.topics {
            let mut tr = WritableTxnMarkerTopicResult::default();
            for p in t.partition_indexes {
                // Only the partition's leader writes its marker (a
                // coordinator that asked the wrong broker asks again).
                if let Some(e) = b.not_leader(&t.name, p) {
                    let mut pr = WritableTxnMarkerPartitionResult::default();
                    pr.partition_index = p;
                    pr.error_code = e.code();
                    tr.partitions.push(pr);
                    continue;
                }
                let written =
                    b.txns
                        .write_marker(&t.name, p, m.producer_id.0, m.producer_epoch, marker);
                let code = match written {
                    Ok(Some(w)) => match w.log.wait_committed(w.end, w.leader_epoch, timeout).await
                    {
                        CommitWait::Committed => 0,
                        CommitWait::TimedOut => ResponseError::RequestTimedOut.code(),
                        CommitWait::NotLeader => ResponseError::NotLeaderOrFollower.code(),
                    },
                    Ok(None) => ResponseError::UnknownTopicOrPartition.code(),
                    Err(MarkerWriteError::GroupsLoading(_)) => {
                        ResponseError::CoordinatorLoadInProgress.code()
                    }
                    Err(MarkerWriteError::Log(LogError::Marker(
                        SequenceError::CoordinatorFenced { .. },
                    ))) => ResponseError::TransactionCoordinatorFenced.code(),
                    Err(MarkerWriteError::Log(LogError::Marker(_))) => {
                        ResponseError::InvalidProducerEpoch.code()
                    }
                    Err(MarkerWriteError::Log(LogError::Closed | LogError::NotLeader)) => {
                        ResponseError::NotLeaderOrFollower.code()
                    }
                    Err(e) => {
                        tracing::error!(topic = %t.name.0, partition = p, error = %e, "WriteTxnMarkers failed");
                        ResponseError::KafkaStorageError.code()
                    }
                };
                let mut pr = WritableTxnMarkerPartitionResult::default();
                pr.partition_index = p;
                pr.error_code = code;
                tr.partitions.push(pr);
            }
            tr.name = t.name;
            out.topics.push(tr);
        }
        r.markers.push(out);
    }
    r
}
