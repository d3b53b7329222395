//! ListOffsets: decodes, refuses a special timestamp the request's version
//! does not know (Kafka's UNSUPPORTED_VERSION) and a partition named twice,
//! asks the replica manager (`partition/offsets.rs`) for each partition's
//! offset, and encodes the answers (the leader epoch from v4). With an
//! authorizer, each topic needs DESCRIBE (TOPIC_AUTHORIZATION_FAILED in
//! each of its partitions, before anything else is looked at), as Kafka.

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use strata_security::acl::{AclOperation, ResourceType};

use crate::partition::offsets::{EARLIEST, EARLIEST_LOCAL, LATEST, LATEST_TIERED, MAX_TIMESTAMP};
use crate::server::authz::Caller;
use crate::server::Broker;

pub async fn handle(
    req: ListOffsetsRequest,
    version: i16,
    b: &Broker,
    caller: &Caller,
) -> ListOffsetsResponse {
    let mut r = ListOffsetsResponse::default();
    let read_committed = req.isolation_level == 1;
    let from_client = req.replica_id.0 < 0;
    // Kafka: a partition named more than once gets one INVALID_REQUEST
    // answer (its response is built per distinct partition).
    let mut seen = std::collections::HashMap::<(String, i32), usize>::new();
    for t in &req.topics {
        for p in &t.partitions {
            *seen
                .entry((t.name.0.to_string(), p.partition_index))
                .or_default() += 1;
        }
    }
    for t in req.topics {
        let mut out = ListOffsetsTopicResponse::default();
        out.name = t.name;
        let denied = !caller.may(AclOperation::Describe, ResourceType::Topic, &out.name.0);
        for p in t.partitions {
            let mut pr = ListOffsetsPartitionResponse::default();
            pr.partition_index = p.partition_index;
            pr.timestamp = -1;
            pr.offset = -1;
            // Kafka: -1 unless an offset is found (and before v4, always).
            pr.leader_epoch = -1;
            if denied {
                pr.error_code = ResponseError::TopicAuthorizationFailed.code();
                out.partitions.push(pr);
                continue;
            }
            match seen.get_mut(&(out.name.0.to_string(), p.partition_index)) {
                Some(0) => continue,
                Some(n) if *n > 1 => {
                    *n = 0;
                    pr.error_code = ResponseError::InvalidRequest.code();
                    out.partitions.push(pr);
                    continue;
                }
                _ => {}
            }
            // Strata's own followers ask -4 at v7 (replication::fetcher).
            if from_client && !timestamp_supported(p.timestamp, version) {
                pr.error_code = ResponseError::UnsupportedVersion.code();
                out.partitions.push(pr);
                continue;
            }
            let found = b
                .replicas
                .list_offset(
                    &out.name.0,
                    p.partition_index,
                    p.timestamp,
                    p.current_leader_epoch,
                    read_committed,
                )
                .await;
            match found {
                Ok(Some(f)) => {
                    pr.offset = f.offset;
                    pr.timestamp = f.timestamp;
                    if version >= 4 {
                        pr.leader_epoch = f.leader_epoch;
                    }
                }
                Ok(None) => {}
                Err(code) => pr.error_code = code.code(),
            }
            out.partitions.push(pr);
        }
        r.topics.push(out);
    }
    r
}

/// Whether `version` knows the (special) timestamp: -3 from v7, -4 from v8
/// (KIP-405), -5 from v9 in Kafka (KIP-1005; here still v8, see below);
/// other negative values never. Kafka answers the others UNSUPPORTED_VERSION.
fn timestamp_supported(timestamp: i64, version: i16) -> bool {
    match timestamp {
        0.. | LATEST | EARLIEST => true,
        MAX_TIMESTAMP => version >= 7,
        EARLIEST_LOCAL => version >= 8,
        // KIP-1005: from v9.
        LATEST_TIERED => version >= 9,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_timestamps_need_their_version() {
        assert!(timestamp_supported(-1, 0) && timestamp_supported(-2, 0));
        assert!(timestamp_supported(1_700_000_000_000, 1));
        assert!(!timestamp_supported(MAX_TIMESTAMP, 6) && timestamp_supported(MAX_TIMESTAMP, 7));
        assert!(!timestamp_supported(EARLIEST_LOCAL, 7) && timestamp_supported(EARLIEST_LOCAL, 8));
        assert!(!timestamp_supported(LATEST_TIERED, 8) && timestamp_supported(LATEST_TIERED, 9));
        assert!(!timestamp_supported(-6, 9) && !timestamp_supported(i64::MIN, 9));
    }
}
