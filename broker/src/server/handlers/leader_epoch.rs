//! OffsetForLeaderEpoch (KIP-101, KIP-320): where did leader epoch E end
//! in this partition's log? Consumers ask after a leader change to detect
//! a truncated log (librdkafka's offset validation); followers ask a new
//! leader where their log diverges from its. Only the leader answers; a
//! stale or future `current_leader_epoch` is FENCED_LEADER_EPOCH or
//! UNKNOWN_LEADER_EPOCH, as in Kafka.

use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::*;

use crate::server::Broker;

/// One partition's answer (the replica manager's, `partition/offsets.rs`).
pub fn end_offset(
    b: &Broker,
    topic: &str,
    partition: i32,
    current: i32,
    requested: i32,
) -> EpochEndOffset {
    let mut out = EpochEndOffset::default();
    out.partition = partition;
    out.leader_epoch = -1;
    out.end_offset = -1;
    match b
        .replicas
        .end_offset_for_epoch(topic, partition, current, requested)
    {
        Ok((epoch, end)) => {
            out.leader_epoch = epoch;
            out.end_offset = end;
        }
        Err(code) => out.error_code = code.code(),
    }
    out
}

pub async fn handle(
    req: OffsetForLeaderEpochRequest,
    _version: i16,
    b: &Broker,
) -> OffsetForLeaderEpochResponse {
    let mut r = OffsetForLeaderEpochResponse::default();
    for t in req.topics {
        let mut out = OffsetForLeaderTopicResult::default();
        out.partitions = t
            .partitions
            .iter()
            .map(|p| {
                end_offset(
                    b,
                    &t.topic.0,
                    p.partition,
                    p.current_leader_epoch,
                    p.leader_epoch,
                )
            })
            .collect();
        out.topic = t.topic;
        r.topics.push(out);
    }
    r
}
