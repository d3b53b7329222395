//! Reads the topic list out of a consumer's subscription metadata
//! (`ConsumerProtocolSubscription`), which the coordinator otherwise treats
//! as opaque bytes.

use bytes::Bytes;
use kafka_protocol::messages::ConsumerProtocolSubscription;
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
