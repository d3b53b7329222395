//! ElectLeaders (`kafka-leader-election.sh`, `Admin.electLeaders`): the
//! preferred replica leads again, or an offline partition takes any live
//! replica (unclean). Any broker answers: the election is a guarded write
//! of the partition's state in the store (its key's revision, so it never
//! overwrites a concurrent controller change), and the answer comes once
//! this broker's view holds it. A single broker always leads: every
//! election is ELECTION_NOT_NEEDED.

use std::time::Duration;

use kafka_protocol::messages::elect_leaders_response::{PartitionResult, ReplicaElectionResult};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use super::s;
use crate::cluster::elections::{operator_election, ElectionRefused, ElectionType};
use crate::cluster::partition_writes::{change_with_retries, Retried};
use crate::cluster::quorum;
use crate::server::Broker;

type Refusal = (ResponseError, Option<&'static str>);

pub async fn handle(req: ElectLeadersRequest, version: i16, b: &Broker) -> ElectLeadersResponse {
    let mut r = ElectLeadersResponse::default();
    let kind = match (version, req.election_type) {
        (0, _) | (_, 0) => ElectionType::Preferred,
        (_, 1) => ElectionType::Unclean,
        (_, t) => {
            r.error_code = ResponseError::InvalidRequest.code();
            tracing::debug!(election_type = t, "unknown election type");
            return r;
        }
    };
    let snap = b.cluster.view.snapshot();
    // None: every partition; then, as Kafka, those that needed no
    // election are left out of the answer.
    let all = req.topic_partitions.is_none();
    let wanted: Vec<(String, Vec<i32>)> = match req.topic_partitions {
        Some(list) => list
            .into_iter()
            .map(|t| (t.topic.0.to_string(), t.partitions))
            .collect(),
        None => snap.all_partitions(),
    };
    let mut written = 0i64;
    for (topic, partitions) in wanted {
        let mut result = ReplicaElectionResult::default();
        result.topic = TopicName(s(topic.clone()));
        for p in partitions {
            let mut pr = PartitionResult::default();
            pr.partition_id = p;
            match elect_one(b, &topic, p, kind).await {
                Ok(rev) => written = written.max(rev),
                Err((ResponseError::ElectionNotNeeded, _)) if all => continue,
                Err((e, why)) => {
                    pr.error_code = e.code();
                    pr.error_message = why.map(s);
                }
            }
            result.partition_result.push(pr);
        }
        if !result.partition_result.is_empty() {
            r.replica_election_results.push(result);
        }
    }
    if written > 0 {
        let wait = Duration::from_millis(req.timeout_ms.clamp(0, 60_000) as u64);
        b.cluster.view.caught_up_to(written, wait).await;
    }
    r
}

/// One partition's election: the store revision of the write.
async fn elect_one(b: &Broker, topic: &str, p: i32, kind: ElectionType) -> Result<i64, Refusal> {
    if !b.cluster.clustered {
        return match b.cluster.view.snapshot().partition(topic, p) {
            Some(_) => Err((ResponseError::ElectionNotNeeded, None)),
            None => Err((ResponseError::UnknownTopicOrPartition, None)),
        };
    }
    let outcome = change_with_retries(
        b.cluster.store.as_ref(),
        &b.cluster.view,
        topic,
        p,
        |snap| {
            let Some(e) = snap.partition(topic, p) else {
                return Err((ResponseError::UnknownTopicOrPartition, None));
            };
            let live = snap.live_broker_ids();
            let draining = snap.draining_broker_ids();
            if quorum::is_quorum_topic(snap, topic) && e.state.leader < 0 {
                // A fenced quorum partition: its leader comes from the
                // replicas' reports; unclean takes a live replica without
                // that proof (docs/quorum-acks.md).
                if kind != ElectionType::Unclean {
                    return Err((ResponseError::PreferredLeaderNotAvailable,
                        Some("the partition has no leader yet: its replicas are reporting their logs")));
                }
                let reports = quorum::reports_for(snap, topic, p);
                let default = b.config.settings().min_insync_replicas;
                return match quorum::choose_leader(&e.state, &reports, &snap.brokers, &draining,
                    quorum::min_insync(snap, topic, default), quorum::Unclean::Now)
                {
                    Some(next) => Ok(Some((e.mod_revision, next))),
                    None => Err((ResponseError::EligibleLeadersNotAvailable, Some("no live replica"))),
                };
            }
            match operator_election(&e.state, &live, &draining, kind) {
                Ok(next) if quorum::is_quorum_topic(snap, topic) => {
                    Ok(quorum::fence_instead(&e.state, &next, &snap.brokers).map(|f| (e.mod_revision, f)))
                }
                Ok(next) => Ok(Some((e.mod_revision, next))),
                Err(ElectionRefused::NotNeeded) => Err((ResponseError::ElectionNotNeeded, None)),
                Err(ElectionRefused::PreferredNotAvailable) => Err((
                    ResponseError::PreferredLeaderNotAvailable,
                    Some("the preferred replica is not live, in sync and staying"),
                )),
                Err(ElectionRefused::NoEligibleLeader) => Err((
                    ResponseError::EligibleLeadersNotAvailable,
                    Some("no live replica"),
                )),
            }
        },
    )
    .await;
    match outcome {
        Retried::Written(revision, next) => {
            tracing::info!(
                topic,
                partition = p,
                leader = next.leader,
                leader_epoch = next.leader_epoch,
                "leader elected on request (ElectLeaders)"
            );
            Ok(revision)
        }
        // An election always has something to write.
        Retried::Unchanged => Err((ResponseError::ElectionNotNeeded, None)),
        Retried::Refused(refusal) => Err(refusal),
        Retried::StoreFailed(err) => {
            tracing::warn!(topic, partition = p, error = %err, "election write failed");
            Err((
                ResponseError::RequestTimedOut,
                Some("the metadata store did not answer"),
            ))
        }
        Retried::KeptChanging => Err((
            ResponseError::RequestTimedOut,
            Some("the partition kept changing; try again"),
        )),
    }
}
