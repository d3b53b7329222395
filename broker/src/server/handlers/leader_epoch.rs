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
use kafka_protocol::ResponseError;

use crate::log::PartitionLog;
use crate::server::Broker;

/// Checks a request's `current_leader_epoch` (-1: not given) against the
/// epoch this leader appends at.
pub fn check_current_epoch(log: &PartitionLog, current: i32) -> Result<(), ResponseError> {
    let ours = log.leader_epoch();
    match current {
        c if c < 0 || c == ours => Ok(()),
        c if c < ours => Err(ResponseError::FencedLeaderEpoch),
        _ => Err(ResponseError::UnknownLeaderEpoch),
    }
}

/// One partition's answer.
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
    if let Some(code) = b.not_leader(topic, partition) {
        out.error_code = code.code();
        return out;
    }
    let Some(log) = b.logs.partition(topic, partition) else {
        out.error_code = ResponseError::UnknownTopicOrPartition.code();
        return out;
    };
    if let Err(code) = check_current_epoch(&log, current) {
        out.error_code = code.code();
        return out;
    }
    let (epoch, end) = log.end_offset_for_epoch(requested);
    out.leader_epoch = epoch;
    out.end_offset = end;
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
