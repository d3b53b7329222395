//! Metadata: brokers, topics and partitions, with auto-creation of
//! requested topics when `auto.create.topics.enable` is on. With an
//! authorizer, as Kafka: a topic needs DESCRIBE (an all-topics request
//! leaves out the others silently; a named one answers
//! TOPIC_AUTHORIZATION_FAILED whether it exists or not), auto-creation
//! CREATE on the cluster or the topic, and the KIP-430 fields carry the
//! caller's allowed operations.

use std::collections::BTreeMap;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;
use uuid::Uuid;

use strata_security::acl::{AclOperation, ResourceType, CLUSTER_NAME};

use super::{s, NO_AUTHORIZED_OPERATIONS};
use crate::cluster::records::TopicRecord;
use crate::cluster::view::ClusterSnapshot;
use crate::server::authz::Caller;
use crate::server::{topic_admin, Broker};
use crate::topic_error::TopicError;
use crate::topic_name::validate_topic_name;

/// Every operation Kafka supports on a topic (READ, WRITE, CREATE, DELETE,
/// ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS), as the bit field a
/// broker without an authorizer answers: everything is allowed.
pub(crate) const ALL_TOPIC_OPERATIONS: i32 =
    (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11);
/// The same for the cluster (CREATE, ALTER, DESCRIBE, CLUSTER_ACTION,
/// DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE).
pub(crate) const ALL_CLUSTER_OPERATIONS: i32 =
    (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);

pub async fn handle(
    req: MetadataRequest,
    version: i16,
    b: &Broker,
    listener: &str,
    caller: &Caller,
) -> MetadataResponse {
    // KIP-430: asked for, the operations allowed (without an authorizer:
    // all of them), on the topics found.
    let topic_ops = version >= 8 && req.include_topic_authorized_operations;
    let cluster_ops = (8..=10).contains(&version) && req.include_cluster_authorized_operations;
    let mut r = handle_topics(req, version, b, listener, caller).await;
    if topic_ops {
        for t in r.topics.iter_mut().filter(|t| t.error_code == 0) {
            let name = t.name.as_ref().map(|n| n.0.as_str()).unwrap_or("");
            t.topic_authorized_operations =
                caller.operations(ResourceType::Topic, name, ALL_TOPIC_OPERATIONS);
        }
    }
    if cluster_ops {
        r.cluster_authorized_operations =
            caller.operations(ResourceType::Cluster, CLUSTER_NAME, ALL_CLUSTER_OPERATIONS);
    }
    r
}

fn topic_denied(name: Option<String>, id: Uuid) -> MetadataResponseTopic {
    error_topic(name, id, ResponseError::TopicAuthorizationFailed.code())
}

async fn handle_topics(
    req: MetadataRequest,
    version: i16,
    b: &Broker,
    listener: &str,
    caller: &Caller,
) -> MetadataResponse {
    let mut r = MetadataResponse::default();
    r.brokers = b
        .live_brokers_on(listener)
        .into_iter()
        .map(|reg| {
            let mut broker = MetadataResponseBroker::default();
            broker.node_id = BrokerId(reg.node_id);
            broker.host = s(reg.host);
            broker.port = reg.port;
            broker.rack = reg.rack.map(s);
            broker
        })
        .collect();
    if version >= 2 {
        r.cluster_id = Some(b.cluster_id());
    }
    r.controller_id = BrokerId(b.controller_id());
    r.cluster_authorized_operations = NO_AUTHORIZED_OPERATIONS;

    let requested = match req.topics {
        None => None,
        Some(t) if t.is_empty() && version == 0 => None,
        Some(t) => Some(t),
    };
    let Some(requested) = requested else {
        let snap = b.cluster.view.snapshot();
        r.topics = snap
            .topics
            .iter()
            .filter(|(name, _)| {
                caller.may_quietly(AclOperation::Describe, ResourceType::Topic, name)
            })
            .map(|(name, t)| describe(name, &t.record, &snap))
            .collect();
        return r;
    };
    let auto_create = b.config.settings().auto_create_topics_enable
        && (version < 4 || req.allow_auto_topic_creation);
    for t in requested {
        let name = match (&t.name, t.topic_id) {
            (Some(n), _) => n.0.to_string(),
            (None, id) if id != Uuid::nil() => {
                let snap = b.cluster.view.snapshot();
                match snap.topic_by_id(id) {
                    // Kafka: the id echoed, the name not told.
                    Some((name, _))
                        if !caller.may(AclOperation::Describe, ResourceType::Topic, name) =>
                    {
                        r.topics.push(topic_denied(None, id))
                    }
                    Some((name, topic)) => r.topics.push(describe(name, &topic.record, &snap)),
                    None => {
                        r.topics
                            .push(error_topic(None, id, ResponseError::UnknownTopicId.code()))
                    }
                }
                continue;
            }
            _ => {
                r.topics.push(error_topic(
                    None,
                    Uuid::nil(),
                    ResponseError::InvalidRequest.code(),
                ));
                continue;
            }
        };
        // Before existence: a topic the caller may not describe is
        // refused whether it exists or not.
        if !caller.may(AclOperation::Describe, ResourceType::Topic, &name) {
            r.topics.push(topic_denied(Some(name), Uuid::nil()));
            continue;
        }
        let snap = b.cluster.view.snapshot();
        if let Some(topic) = snap.topic(&name) {
            r.topics.push(describe(&name, &topic.record, &snap));
            continue;
        }
        if validate_topic_name(&name).is_err() {
            r.topics.push(error_topic(
                Some(name),
                Uuid::nil(),
                ResponseError::InvalidTopicException.code(),
            ));
            continue;
        }
        if !auto_create {
            r.topics.push(error_topic(
                Some(name),
                Uuid::nil(),
                ResponseError::UnknownTopicOrPartition.code(),
            ));
            continue;
        }
        if !caller.may_quietly(AclOperation::Create, ResourceType::Cluster, CLUSTER_NAME)
            && !caller.may(AclOperation::Create, ResourceType::Topic, &name)
        {
            r.topics.push(topic_denied(Some(name), Uuid::nil()));
            continue;
        }
        let created =
            topic_admin::create_topic(b, &name, -1, -1, None, BTreeMap::new(), false).await;
        let snap = b.cluster.view.snapshot();
        match (created, snap.topic(&name)) {
            (Ok(_), Some(topic)) | (Err(TopicError::AlreadyExists(_)), Some(topic)) => {
                r.topics.push(describe(&name, &topic.record, &snap))
            }
            // Created, but not visible here yet: the client asks again.
            (Ok(_), None) | (Err(TopicError::AlreadyExists(_)), None) => {
                r.topics.push(error_topic(
                    Some(name),
                    Uuid::nil(),
                    ResponseError::LeaderNotAvailable.code(),
                ))
            }
            (Err(e), _) => {
                tracing::warn!(topic = %name, error = %e, "auto-create failed");
                r.topics.push(error_topic(
                    Some(name),
                    Uuid::nil(),
                    crate::server::topic_admin::error_code(&e).code(),
                ));
            }
        }
    }
    r
}

fn error_topic(name: Option<String>, id: Uuid, code: i16) -> MetadataResponseTopic {
    let mut t = MetadataResponseTopic::default();
    t.error_code = code;
    t.name = name.map(|n| TopicName(s(n)));
    t.topic_id = id;
    t.topic_authorized_operations = NO_AUTHORIZED_OPERATIONS;
    t
}

/// A topic as the cluster store knows it (`topic_admin::topic_view`).
fn describe(name: &str, topic: &TopicRecord, snap: &ClusterSnapshot) -> MetadataResponseTopic {
    let view = topic_admin::topic_view(name, topic, snap);
    let mut t = error_topic(Some(view.name), view.id, 0);
    t.is_internal = view.internal;
    t.partitions = view
        .partitions
        .into_iter()
        .map(|p| {
            let mut mp = MetadataResponsePartition::default();
            mp.partition_index = p.partition;
            mp.leader_id = BrokerId(p.leader);
            mp.leader_epoch = p.leader_epoch;
            mp.replica_nodes = p.replicas.into_iter().map(BrokerId).collect();
            mp.isr_nodes = p.isr.into_iter().map(BrokerId).collect();
            mp.offline_replicas = p.offline.into_iter().map(BrokerId).collect();
            if p.leader < 0 {
                mp.error_code = ResponseError::LeaderNotAvailable.code();
            }
            mp
        })
        .collect();
    t
}

#[cfg(test)]
mod ops_tests {
    #[test]
    fn all_topic_operations_is_kafkas_bit_field() {
        // Kafka 4.4 without an authorizer answers 3576 for a topic.
        assert_eq!(super::ALL_TOPIC_OPERATIONS, 3576);
        assert_eq!(super::ALL_CLUSTER_OPERATIONS, 8096);
    }
}
