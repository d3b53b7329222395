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

use super::s;
use crate::partition::admin::MarkerRequest;
use crate::server::Broker;

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
            match b.replicas.describe_producers(&t.name, p) {
                Err((code, message)) => {
                    pr.error_code = code.code();
                    pr.error_message = Some(s(message));
                }
                Ok(producers) => {
                    pr.active_producers = producers
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
    let timeout = b.config.settings().offsets_commit_timeout;
    for m in req.markers {
        let marker = MarkerRequest {
            producer_id: m.producer_id.0,
            producer_epoch: m.producer_epoch,
            commit: m.transaction_result,
            coordinator_epoch: m.coordinator_epoch,
        };
        let mut out = WritableTxnMarkerResult::default();
        out.producer_id = m.producer_id;
        for t in m.topics {
            let mut tr = WritableTxnMarkerTopicResult::default();
            for p in t.partition_indexes {
                let written = b
                    .replicas
                    .write_txn_marker(&t.name, p, marker, timeout)
                    .await;
                let mut pr = WritableTxnMarkerPartitionResult::default();
                pr.partition_index = p;
                pr.error_code = written.err().map_or(0, |e| e.code());
                tr.partitions.push(pr);
            }
            tr.name = t.name;
            out.topics.push(tr);
        }
        r.markers.push(out);
    }
    r
}
