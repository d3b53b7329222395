//! ListOffsets v0 (Kafka 0.8's OffsetRequest), still used by lag monitors:
//! per partition a timestamp (-1 latest, -2 earliest, or a time) and how
//! many offsets to return; answered with segment start offsets before that
//! time, newest first, as Kafka 3.9 does (`PartitionLog::offsets_before`).

use kafka_protocol::ResponseError;

use strata_security::acl::{AclOperation, ResourceType};

use super::codec::{LegacyDecodeError, Reader, Writer};
use crate::server::authz::Caller;
use crate::server::Broker;

struct Partition {
    index: i32,
    timestamp: i64,
    max_num_offsets: i32,
}

/// Decodes the request and writes the response body.
pub fn handle(body: &[u8], b: &Broker, caller: &Caller) -> Result<Writer, LegacyDecodeError> {
    let mut r = Reader::new(body);
    let _replica_id = r.i32("ReplicaId")?;
    let topics = r.elements("Topics", 6, |r| {
        let name = r.string("Name")?;
        let partitions = r.elements("Partitions", 16, |r| {
            Ok(Partition {
                index: r.i32("PartitionIndex")?,
                timestamp: r.i64("Timestamp")?,
                max_num_offsets: r.i32("MaxNumOffsets")?,
            })
        })?;
        Ok((name, partitions))
    })?;
    r.finish()?;
    let mut w = Writer::default();
    // With an authorizer: DESCRIBE on each topic, before existence.
    let denied: std::collections::HashSet<String> = topics
        .iter()
        .map(|(name, _)| name)
        .filter(|name| !caller.may(AclOperation::Describe, ResourceType::Topic, name))
        .cloned()
        .collect();
    w.topics(&topics, |w, name, p| {
        w.i32(p.index);
        if denied.contains(name) {
            w.i16(ResponseError::TopicAuthorizationFailed.code())
                .array_len(0);
            return;
        }
        match b.logs.log(name, p.index) {
            None => {
                w.i16(ResponseError::UnknownTopicOrPartition.code())
                    .array_len(0);
            }
            Some(_) if p.max_num_offsets < 0 => {
                w.i16(ResponseError::InvalidRequest.code()).array_len(0);
            }
            Some(log) => {
                let offsets = log.offsets_before(p.timestamp, p.max_num_offsets as usize);
                w.i16(0).array_len(offsets.len());
                for o in offsets {
                    w.i64(o);
                }
            }
        }
    });
    Ok(w)
}
