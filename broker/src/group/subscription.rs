//! Reads the topic list out of a consumer's subscription metadata
//! (`ConsumerProtocolSubscription`) and the partitions out of its
//! assignment (`ConsumerProtocolAssignment`), which the coordinator
//! otherwise treats as opaque bytes.

use bytes::Bytes;
use kafka_protocol::messages::{ConsumerProtocolAssignment, ConsumerProtocolSubscription};
use kafka_protocol::protocol::Decodable;

/// Topics a consumer subscribed to, or None if the bytes do not parse.
pub fn topics(metadata: &Bytes) -> Option<Vec<String>> {
    if metadata.len() < 2 {
        return None;
    }
    let version = i16::from_be_bytes([metadata[0], metadata[1]]);
    let mut body = metadata.slice(2..);
    let sub = ConsumerProtocolSubscription::decode(&mut body, version.clamp(0, 3)).ok()?;
    Some(sub.topics.iter().map(|t| t.to_string()).collect())
}

/// Whether a consumer's assignment includes `topic`/`partition` (false if
/// the bytes do not parse).
pub fn assigned(assignment: &Bytes, topic: &str, partition: i32) -> bool {
    if assignment.len() < 2 {
        return false;
    }
    let version = i16::from_be_bytes([assignment[0], assignment[1]]);
    let mut body = assignment.slice(2..);
    let Ok(a) = ConsumerProtocolAssignment::decode(&mut body, version.clamp(0, 3)) else {
        return false;
    };
    a.assigned_partitions
        .iter()
        .any(|tp| tp.topic.as_str() == topic && tp.partitions.contains(&partition))
}
