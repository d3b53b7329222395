//! The consumer protocol's embedded messages: reads the topic list out of
//! a consumer's subscription metadata
//! (`ConsumerProtocolSubscription`) and the partitions out of its
//! assignment (`ConsumerProtocolAssignment`), which the coordinator
//! otherwise treats as opaque bytes.

use bytes::Bytes;
use kafka_protocol::messages::{ConsumerProtocolAssignment, ConsumerProtocolSubscription};
use kafka_protocol::protocol::Decodable;

use crate::decode_bounds::{check_assignment, check_subscription};

/// Topics a consumer subscribed to, or None if the bytes do not parse.
pub fn topics(metadata: &Bytes) -> Option<Vec<String>> {
    if metadata.len() < 2 {
        return None;
    }
    let version = i16::from_be_bytes([metadata[0], metadata[1]]).clamp(0, 3);
    let mut body = metadata.slice(2..);
    check_subscription(version, &body).ok()?;
    let sub = ConsumerProtocolSubscription::decode(&mut body, version).ok()?;
    Some(sub.topics.iter().map(|t| t.to_string()).collect())
}

/// Whether a consumer's assignment includes `topic`/`partition` (false if
/// the bytes do not parse).
pub fn assigned(assignment: &Bytes, topic: &str, partition: i32) -> bool {
    if assignment.len() < 2 {
        return false;
    }
    let version = i16::from_be_bytes([assignment[0], assignment[1]]).clamp(0, 3);
    let mut body = assignment.slice(2..);
    if check_assignment(version, &body).is_err() {
        return false;
    }
    let Ok(a) = ConsumerProtocolAssignment::decode(&mut body, version) else {
        return false;
    };
    a.assigned_partitions
        .iter()
        .any(|tp| tp.topic.as_str() == topic && tp.partitions.contains(&partition))
}

/// The partitions a consumer's assignment holds, by topic (None if the
/// bytes do not parse).
pub fn assignment(assignment: &Bytes) -> Option<Vec<(String, Vec<i32>)>> {
    if assignment.len() < 2 {
        return None;
    }
    let version = i16::from_be_bytes([assignment[0], assignment[1]]).clamp(0, 3);
    let mut body = assignment.slice(2..);
    check_assignment(version, &body).ok()?;
    let a = ConsumerProtocolAssignment::decode(&mut body, version).ok()?;
    Some(
        a.assigned_partitions
            .iter()
            .map(|tp| (tp.topic.to_string(), tp.partitions.clone()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscription_topics_are_read() {
        // v0: topics ["orders"], user data null.
        let mut m = vec![0, 0, 0, 0, 0, 1, 0, 6];
        m.extend_from_slice(b"orders");
        m.extend_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(topics(&Bytes::from(m)), Some(vec!["orders".to_string()]));
    }

    #[test]
    fn counts_beyond_the_payload_are_refused_not_allocated() {
        // A subscription claiming 2^31-1 topics in 6 bytes.
        let m = Bytes::from_static(&[0, 1, 0x7f, 0xff, 0xff, 0xff]);
        assert_eq!(topics(&m), None);
        // An assignment claiming 2^31-1 partitions of one topic.
        let mut a = vec![0, 0, 0, 0, 0, 1, 0, 1, b't'];
        a.extend_from_slice(&0x7fff_ffffi32.to_be_bytes());
        assert!(!assigned(&Bytes::from(a), "t", 0));
    }
}
