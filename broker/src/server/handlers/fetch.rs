//! Fetch: decodes a consumer's or a follower's fetch, hands it to the
//! replica manager (`partition/fetch.rs` for consumers,
//! `partition/replica_fetch.rs` for followers) and encodes its answer. What
//! stays here is the wire: which version names topics by id (v13+,
//! KIP-516), which carries a rack (v11+, KIP-392) or a replica id in
//! `replica_state` (v15+, KIP-903), and fetch sessions (KIP-227), which
//! Strata declines to create. With an authorizer, as Kafka: a consumer
//! needs READ on each topic (TOPIC_AUTHORIZATION_FAILED in its partitions;
//! an id no topic has is UNKNOWN_TOPIC_ID first), a follower CLUSTER_ACTION
//! on the cluster (TOPIC_AUTHORIZATION_FAILED in every partition).

use std::time::Duration;

use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use strata_security::acl::{AclOperation, ResourceType, CLUSTER_NAME};

use crate::partition::fetch::{
    FetchParams, FetchPartition, FetchPartitionData, FetchTopic, TopicRef,
};
use crate::server::authz::Caller;
use crate::server::Broker;

/// A fetch from a client that sent no id (the handler tests).
#[cfg(test)]
pub async fn handle(req: FetchRequest, version: i16, b: &Broker) -> FetchResponse {
    handle_for(req, version, b, &Client::default(), &Caller::unchecked())
        .await
        .response
}

/// A fetch's answer, with how much of it came from remote segments.
pub struct Fetched {
    pub response: FetchResponse,
    /// Record bytes read through the historical read path: a response with
    /// any is encoded and written on the prefetch runtime (see
    /// `dispatch::Outgoing`).
    pub history_bytes: usize,
}

/// Who sent the fetch (for read-ahead streams and priority classes).
#[derive(Debug, Clone, Default)]
pub struct Client {
    pub client_id: String,
    /// `/<ip>`, as the group coordinator records members' hosts.
    pub host: String,
}

/// Fetch on behalf of `client`.
pub async fn handle_for(
    req: FetchRequest,
    version: i16,
    b: &Broker,
    client: &Client,
    caller: &Caller,
) -> Fetched {
    // A follower's fetch (KIP-903 moved its id into `replica_state`).
    let replica = if version >= 15 {
        req.replica_state.replica_id.0
    } else {
        req.replica_id.0
    };
    if let Some(code) = (replica < 0)
        .then(|| session_error(version, req.session_id, req.session_epoch))
        .flatten()
    {
        let mut r = FetchResponse::default();
        r.error_code = code.code();
        return Fetched {
            response: r,
            history_bytes: 0,
        };
    }
    // From v11 (KIP-392) a consumer names its rack and may read from a
    // follower.
    let follower_reads = version >= 11;
    let params = FetchParams {
        max_wait: Duration::from_millis(req.max_wait_ms.max(0) as u64),
        min_bytes: req.min_bytes.max(0) as usize,
        max_bytes: if req.max_bytes <= 0 {
            usize::MAX
        } else {
            req.max_bytes as usize
        },
        read_committed: req.isolation_level == 1,
        follower_reads,
        client_rack: if follower_reads { &req.rack_id } else { "" },
        client_id: &client.client_id,
        host: &client.host,
    };
    // Who may read what (None: the caller is refused the topic).
    let follower_allowed = replica < 0
        || caller.may(
            AclOperation::ClusterAction,
            ResourceType::Cluster,
            CLUSTER_NAME,
        );
    let snap = (caller.is_checked() && version >= 13).then(|| b.cluster.view.snapshot());
    let readable = |t: &kafka_protocol::messages::fetch_request::FetchTopic| -> bool {
        if replica >= 0 {
            return follower_allowed;
        }
        if !caller.is_checked() {
            return true;
        }
        let name = match &snap {
            // An id no topic has: the layer answers UNKNOWN_TOPIC_ID.
            Some(snap) => match snap.topic_by_id(t.topic_id) {
                Some((name, _)) => name.to_string(),
                None => return true,
            },
            None => t.topic.0.to_string(),
        };
        caller.may(AclOperation::Read, ResourceType::Topic, &name)
    };
    // From v13 (KIP-516) topics are named by id only; the response echoes it.
    let mut topics = Vec::with_capacity(req.topics.len());
    let mut asked = Vec::with_capacity(req.topics.len());
    let mut counts = Vec::with_capacity(req.topics.len());
    for t in &req.topics {
        let mut out = FetchableTopicResponse::default();
        out.topic = t.topic.clone();
        if version >= 13 {
            out.topic_id = t.topic_id;
        }
        if !readable(t) {
            out.partitions = t.partitions.iter().map(|p| refused(p.partition)).collect();
            counts.push(0);
            topics.push(out);
            continue;
        }
        counts.push(t.partitions.len());
        asked.push(FetchTopic {
            topic: if version >= 13 {
                TopicRef::Id(t.topic_id)
            } else {
                TopicRef::Name(&t.topic.0)
            },
            partitions: t
                .partitions
                .iter()
                .map(|p| FetchPartition {
                    partition: p.partition,
                    fetch_offset: p.fetch_offset,
                    max_bytes: p.partition_max_bytes.max(0) as usize,
                    current_leader_epoch: p.current_leader_epoch,
                    log_start_offset: p.log_start_offset,
                })
                .collect(),
        });
        topics.push(out);
    }
    let (partitions, history_bytes) = if replica >= 0 {
        let answered = b
            .replicas
            .replica_fetch(replica, &client.host, params, asked)
            .await;
        (answered, 0)
    } else {
        let fetched = b.replicas.fetch(params, asked).await;
        (fetched.partitions, fetched.history_bytes)
    };
    // The layer answers every partition asked for, in request order.
    let mut answers = partitions.into_iter();
    for (out, n) in topics.iter_mut().zip(counts) {
        if n > 0 {
            out.partitions = answers.by_ref().take(n).map(encode).collect();
        }
    }
    let mut r = FetchResponse::default();
    r.responses = topics;
    Fetched {
        response: r,
        history_bytes,
    }
}

/// A partition of a topic the caller may not read, as Kafka answers it:
/// no records, every offset unknown.
fn refused(partition: i32) -> PartitionData {
    let mut pd = PartitionData::default();
    pd.partition_index = partition;
    pd.error_code = ResponseError::TopicAuthorizationFailed.code();
    pd.high_watermark = -1;
    pd.last_stable_offset = -1;
    pd.log_start_offset = -1;
    pd.preferred_read_replica = BrokerId(-1);
    pd.records = Some(Default::default());
    pd
}

fn encode(d: FetchPartitionData) -> PartitionData {
    let mut pd = PartitionData::default();
    pd.partition_index = d.partition;
    pd.error_code = d.error.map_or(0, |e| e.code());
    pd.high_watermark = d.high_watermark;
    pd.last_stable_offset = d.last_stable_offset;
    pd.log_start_offset = d.log_start_offset;
    pd.preferred_read_replica = BrokerId(d.preferred_read_replica);
    pd.aborted_transactions = d.aborted_transactions.map(|all| {
        all.into_iter()
            .map(|t| {
                let mut a = AbortedTransaction::default();
                a.producer_id = ProducerId(t.producer_id);
                a.first_offset = t.first_offset;
                a
            })
            .collect()
    });
    pd.records = Some(d.records);
    pd
}

/// Fetch sessions (KIP-227, v7+): Strata declines to create any (a full
/// fetch is answered with session id 0), so, by Kafka's FetchManager rules,
/// a full fetch (epoch 0, or -1) is served whatever session it names (Kafka
/// closes that session), and an incremental one (any other epoch) names a
/// session this broker does not have: FETCH_SESSION_ID_NOT_FOUND, no
/// partitions, and the client falls back to full fetches.
fn session_error(version: i16, session_id: i32, epoch: i32) -> Option<ResponseError> {
    const INITIAL_EPOCH: i32 = 0;
    const FINAL_EPOCH: i32 = -1;
    let _ = session_id;
    (version >= 7 && epoch != INITIAL_EPOCH && epoch != FINAL_EPOCH)
        .then_some(ResponseError::FetchSessionIdNotFound)
}

#[cfg(test)]
mod session_tests {
    use super::*;

    #[test]
    fn incremental_fetches_name_a_session_strata_never_made() {
        // Full fetches: epoch 0 (would open a session) or -1 (sessionless).
        assert_eq!(session_error(12, 0, -1), None);
        assert_eq!(session_error(12, 0, 0), None);
        assert_eq!(session_error(12, 123, 0), None);
        // Incremental: no such session.
        assert_eq!(
            session_error(12, 123_456, 1),
            Some(ResponseError::FetchSessionIdNotFound)
        );
        assert_eq!(
            session_error(12, 0, 7),
            Some(ResponseError::FetchSessionIdNotFound)
        );
        // Before v7 there are no sessions.
        assert_eq!(session_error(6, 0, 7), None);
    }
}
