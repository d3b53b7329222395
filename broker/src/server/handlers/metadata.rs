//! Metadata: brokers, topics and partitions, with auto-creation of
//! requested topics when `auto.create.topics.enable` is on.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::{blocking, s, NO_AUTHORIZED_OPERATIONS};
use crate::log_manager::{validate_topic_name, Topic, TopicError};
use crate::server::Broker;

pub async fn handle(req: MetadataRequest, version: i16, b: &Broker) -> MetadataResponse {
    let mut r = MetadataResponse::default();
    r.brokers = b
        .live_brokers()
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
        r.topics = b.logs.topics().iter().map(|t| describe(t, b)).collect();
        return r;
    };
    let auto_create = b.config.bool("auto.create.topics.enable")
        && (version < 4 || req.allow_auto_topic_creation);
    for t in requested {
        let name = match (&t.name, t.topic_id) {
            (Some(n), _) => n.0.to_string(),
            (None, id) if id != Uuid::nil() => match b.logs.topic_by_id(id) {
                Some(topic) => {
                    r.topics.push(describe(&topic, b));
                    continue;
                }
                None => {
                    r.topics
                        .push(error_topic(None, id, ResponseError::UnknownTopicId.code()));
                    continue;
                }
            },
            _ => {
                r.topics.push(error_topic(
                    None,
                    Uuid::nil(),
                    ResponseError::InvalidRequest.code(),
                ));
                continue;
            }
        };
        if let Some(topic) = b.logs.topic(&name) {
            r.topics.push(describe(&topic, b));
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
        let logs = b.logs.clone();
        let n = name.clone();
        let created = blocking(move || logs.create_topic(&n, -1, -1, BTreeMap::new(), false)).await;
        match created {
            Some(Ok(topic)) => r.topics.push(describe(&topic, b)),
            // Another request created it first.
            Some(Err(TopicError::AlreadyExists(_))) => match b.logs.topic(&name) {
                Some(topic) => r.topics.push(describe(&topic, b)),
                None => r.topics.push(error_topic(
                    Some(name),
                    Uuid::nil(),
                    ResponseError::LeaderNotAvailable.code(),
                )),
            },
            Some(Err(e)) => {
                tracing::warn!(topic = %name, error = %e, "auto-create failed");
                r.topics.push(error_topic(
                    Some(name),
                    Uuid::nil(),
                    ResponseError::UnknownServerError.code(),
                ));
            }
            None => r.topics.push(error_topic(
                Some(name),
                Uuid::nil(),
                ResponseError::UnknownServerError.code(),
            )),
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

fn describe(topic: &Arc<Topic>, b: &Broker) -> MetadataResponseTopic {
    let mut t = error_topic(Some(topic.name.clone()), topic.id, 0);
    t.is_internal = crate::topic_name::is_coordinator_topic(&topic.name);
    t.partitions = (0..topic.partition_count() as i32)
        .map(|p| {
            let mut mp = MetadataResponsePartition::default();
            mp.partition_index = p;
            mp.leader_id = BrokerId(b.node_id);
            mp.leader_epoch = crate::log::partition_log::LEADER_EPOCH;
            mp.replica_nodes = vec![BrokerId(b.node_id)];
            mp.isr_nodes = vec![BrokerId(b.node_id)];
            mp
        })
        .collect();
    t
}
