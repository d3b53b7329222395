//! AlterPartitionReassignments and ListPartitionReassignments (KIP-455:
//! `kafka-reassign-partitions.sh --execute/--verify/--cancel`,
//! `Admin.alterPartitionReassignments`). Any broker answers: a
//! reassignment is a guarded write of the partition's state in the store
//! (its key's revision, so it never overwrites a concurrent election or
//! ISR change), and the answer comes once this broker's view holds it. The
//! controller completes it when the new replicas are in sync
//! (`cluster/reassignment.rs`, docs/reassignment.md).

use std::time::Duration;

use kafka_protocol::messages::alter_partition_reassignments_response::{
    ReassignablePartitionResponse, ReassignableTopicResponse,
};
use kafka_protocol::messages::list_partition_reassignments_response::{
    OngoingPartitionReassignment, OngoingTopicReassignment,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use super::s;
use crate::cluster::partition_writes::{change_with_retries, Retried};
use crate::cluster::reassignment::{reassign, ReassignRefused};
use crate::server::Broker;

type Refusal = (ResponseError, String);

pub async fn alter(
    req: AlterPartitionReassignmentsRequest,
    _version: i16,
    b: &Broker,
) -> AlterPartitionReassignmentsResponse {
    let mut r = AlterPartitionReassignmentsResponse::default();
    let mut written = 0i64;
    for t in req.topics {
        let mut tr = ReassignableTopicResponse::default();
        tr.name = t.name.clone();
        for p in t.partitions {
            let mut pr = ReassignablePartitionResponse::default();
            pr.partition_index = p.partition_index;
            let target: Option<Vec<i32>> = p
                .replicas
                .map(|ids| ids.into_iter().map(|id| id.0).collect());
            match reassign_one(b, &t.name.0, p.partition_index, target.as_deref()).await {
                Ok(rev) => written = written.max(rev),
                Err((e, why)) => {
                    tracing::info!(topic = %t.name.0, partition = p.partition_index,
                        error = ?e, reason = %why, "reassignment refused");
                    pr.error_code = e.code();
                    pr.error_message = Some(s(why));
                }
            }
            tr.partitions.push(pr);
        }
        r.responses.push(tr);
    }
    if written > 0 {
        let wait = Duration::from_millis(req.timeout_ms.clamp(0, 60_000) as u64);
        b.cluster.view.caught_up_to(written, wait).await;
    }
    r
}

/// One partition's change: the store revision of the write (0 when
/// nothing needed writing).
async fn reassign_one(
    b: &Broker,
    topic: &str,
    p: i32,
    target: Option<&[i32]>,
) -> Result<i64, Refusal> {
    // A single broker's partitions have it as their only replica, and it
    // is the only live broker: every change is refused.
    let outcome = change_with_retries(
        b.cluster.store.as_ref(),
        &b.cluster.view,
        topic,
        p,
        |snap| {
            let Some(e) = snap.partition(topic, p) else {
                return Err((
                    ResponseError::UnknownTopicOrPartition,
                    format!("{topic}-{p} does not exist"),
                ));
            };
            if crate::cluster::quorum::is_quorum_topic(snap, topic) {
                return Err((
                    ResponseError::InvalidReplicaAssignment,
                    format!("{topic} acknowledges at a quorum (quorum.ack.enable): reassigning its partitions is not supported yet"),
                ));
            }
            match reassign(&e.state, target, &snap.live_broker_ids()) {
                Ok(next) => Ok(next.map(|n| (e.mod_revision, n))),
                Err(ReassignRefused::Invalid(why)) => {
                    Err((ResponseError::InvalidReplicaAssignment, why))
                }
                Err(ReassignRefused::NoReassignmentInProgress) => Err((
                    ResponseError::NoReassignmentInProgress,
                    format!("{topic}-{p} is not being reassigned"),
                )),
            }
        },
    )
    .await;
    match outcome {
        Retried::Written(revision, next) => {
            tracing::info!(topic, partition = p, replicas = ?next.replicas,
                adding = ?next.adding_replicas, removing = ?next.removing_replicas,
                "partition reassignment written");
            Ok(revision)
        }
        Retried::Unchanged => Ok(0),
        Retried::Refused(refusal) => Err(refusal),
        Retried::StoreFailed(err) => {
            tracing::warn!(topic, partition = p, error = %err, "reassignment write failed");
            Err((
                ResponseError::RequestTimedOut,
                "the metadata store did not answer".to_string(),
            ))
        }
        Retried::KeptChanging => Err((
            ResponseError::RequestTimedOut,
            "the partition kept changing; try again".to_string(),
        )),
    }
}

/// The reassignments under way, of every partition (no topics named) or
/// of the partitions named; partitions that do not exist or are not being
/// reassigned are left out, as Kafka does.
pub async fn list(
    req: ListPartitionReassignmentsRequest,
    _version: i16,
    b: &Broker,
) -> ListPartitionReassignmentsResponse {
    let snap = b.cluster.view.snapshot();
    let wanted: Vec<(String, Vec<i32>)> = match req.topics {
        Some(list) => list
            .into_iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes))
            .collect(),
        None => snap.all_partitions(),
    };
    let mut r = ListPartitionReassignmentsResponse::default();
    for (topic, partitions) in wanted {
        let mut tr = OngoingTopicReassignment::default();
        tr.name = TopicName(s(topic.clone()));
        for p in partitions {
            let Some(e) = snap.partition(&topic, p) else {
                continue;
            };
            if !e.state.reassigning() {
                continue;
            }
            let ids = |v: &[i32]| v.iter().map(|id| BrokerId(*id)).collect::<Vec<_>>();
            let mut pr = OngoingPartitionReassignment::default();
            pr.partition_index = p;
            pr.replicas = ids(&e.state.replicas);
            pr.adding_replicas = ids(&e.state.adding_replicas);
            pr.removing_replicas = ids(&e.state.removing_replicas);
            tr.partitions.push(pr);
        }
        if !tr.partitions.is_empty() {
            r.topics.push(tr);
        }
    }
    r
}
