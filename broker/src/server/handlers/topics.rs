//! CreateTopics, DeleteTopics and CreatePartitions. Validation errors come
//! back per topic with Kafka's error code and a message.

use std::collections::HashSet;

use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::{blocking, s};
use crate::config::{self, TOPIC_CONFIGS};
use crate::log_manager::TopicError;
use crate::server::Broker;

pub fn error_code(e: &TopicError) -> ResponseError {
    match e {
        TopicError::AlreadyExists(_) => ResponseError::TopicAlreadyExists,
        TopicError::UnknownTopic(_) => ResponseError::UnknownTopicOrPartition,
        TopicError::InvalidName(_) => ResponseError::InvalidTopicException,
        TopicError::InvalidPartitions(_) => ResponseError::InvalidPartitions,
        TopicError::InvalidReplicationFactor(_) => ResponseError::InvalidReplicationFactor,
        TopicError::InvalidConfig(_) => ResponseError::InvalidConfig,
        TopicError::DeletionDisabled => ResponseError::TopicDeletionDisabled,
        TopicError::Io(_)
        | TopicError::Log(_)
        | TopicError::Encode(_)
        | TopicError::Interrupted => ResponseError::KafkaStorageError,
    }
}

fn internal() -> TopicError {
    TopicError::Interrupted
}

pub async fn create_topics(
    req: CreateTopicsRequest,
    version: i16,
    b: &Broker,
) -> CreateTopicsResponse {
    let mut r = CreateTopicsResponse::default();
    let mut seen = HashSet::new();
    let duplicates: HashSet<String> = req
        .topics
        .iter()
        .filter(|t| !seen.insert(t.name.0.to_string()))
        .map(|t| t.name.0.to_string())
        .collect();
    for t in req.topics {
        let name = t.name.0.to_string();
        let mut res = CreatableTopicResult::default();
        res.name = t.name.clone();
        res.num_partitions = -1;
        res.replication_factor = -1;
        let outcome = if duplicates.contains(&name) {
            Err((
                ResponseError::InvalidRequest,
                format!("Create topics request contains topic {name} more than once"),
            ))
        } else {
            let configs = super::values_set(t.configs.iter().map(|c| (&c.name, c.value.as_ref())));
            let (partitions, rf) = match check_assignments(&t, b.node_id) {
                Ok(p) => p,
                Err(m) => {
                    push(
                        &mut r,
                        res,
                        version,
                        Err((ResponseError::InvalidReplicaAssignment, m)),
                    );
                    continue;
                }
            };
            let logs = b.logs.clone();
            let validate_only = req.validate_only;
            let n = name.clone();
            let created =
                blocking(move || logs.create_topic(&n, partitions, rf, configs, validate_only))
                    .await
                    .unwrap_or_else(|| Err(internal()));
            match created {
                Ok(topic) => {
                    res.topic_id = if validate_only { Uuid::nil() } else { topic.id };
                    res.num_partitions = if validate_only {
                        if partitions == -1 {
                            b.config.i32("num.partitions")
                        } else {
                            partitions
                        }
                    } else {
                        topic.partition_count() as i32
                    };
                    res.replication_factor = 1;
                    let overrides = topic.overrides();
                    res.configs = Some(
                        TOPIC_CONFIGS
                            .iter()
                            .map(|d| {
                                let (value, source) =
                                    config::effective(&b.config, &overrides, d.name);
                                let mut c = CreatableTopicConfigs::default();
                                c.name = s(d.name);
                                c.value = Some(s(value));
                                c.config_source = source as i8;
                                c
                            })
                            .collect(),
                    );
                    Ok(())
                }
                Err(e) => Err((error_code(&e), e.to_string())),
            }
        };
        push(&mut r, res, version, outcome);
    }
    r
}

fn push(
    r: &mut CreateTopicsResponse,
    mut res: CreatableTopicResult,
    version: i16,
    outcome: Result<(), (ResponseError, String)>,
) {
    if let Err((code, message)) = outcome {
        res.error_code = code.code();
        res.error_message = Some(s(message));
        res.configs = None;
        res.num_partitions = -1;
        res.replication_factor = -1;
    }
    if version < 5 {
        res.configs = None;
    }
    r.topics.push(res);
}

/// Manual replica assignments must put every partition on this broker and
/// come with partitions/replication factor of -1, as Kafka requires.
fn check_assignments(
    t: &kafka_protocol::messages::create_topics_request::CreatableTopic,
    node: i32,
) -> Result<(i32, i16), String> {
    if t.assignments.is_empty() {
        return Ok((t.num_partitions, t.replication_factor));
    }
    if t.num_partitions != -1 || t.replication_factor != -1 {
        return Err("Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.".into());
    }
    let mut indexes: Vec<i32> = t.assignments.iter().map(|a| a.partition_index).collect();
    indexes.sort_unstable();
    if indexes.iter().enumerate().any(|(i, p)| *p != i as i32) {
        return Err("Partitions in the replica assignment must be 0..n-1 with no gaps".into());
    }
    for a in &t.assignments {
        if a.broker_ids.len() != 1 || a.broker_ids[0].0 != node {
            return Err(format!(
                "Partition {} is assigned to brokers {:?}; this cluster has only broker {node}",
                a.partition_index,
                a.broker_ids.iter().map(|b| b.0).collect::<Vec<_>>()
            ));
        }
    }
    Ok((t.assignments.len() as i32, 1))
}

pub async fn delete_topics(
    req: DeleteTopicsRequest,
    version: i16,
    b: &Broker,
) -> DeleteTopicsResponse {
    let mut r = DeleteTopicsResponse::default();
    let targets: Vec<(Option<String>, Uuid)> = if version >= 6 {
        req.topics
            .into_iter()
            .map(|t| (t.name.map(|n| n.0.to_string()), t.topic_id))
            .collect()
    } else {
        req.topic_names
            .into_iter()
            .map(|n| (Some(n.0.to_string()), Uuid::nil()))
            .collect()
    };
    for (name, id) in targets {
        let mut res = DeletableTopicResult::default();
        res.topic_id = id;
        res.name = name.clone().map(|n| TopicName(s(n)));
        let resolved = match (name, id) {
            (Some(n), _) => Ok(n),
            (None, id) if id != Uuid::nil() => match b.logs.topic_by_id(id) {
                Some(t) => {
                    res.name = Some(TopicName(s(t.name.clone())));
                    Ok(t.name.clone())
                }
                None => Err((
                    ResponseError::UnknownTopicId,
                    format!("Topic id {id} not found"),
                )),
            },
            _ => Err((
                ResponseError::InvalidRequest,
                "topic name or id is required".to_string(),
            )),
        };
        let outcome = match resolved {
            Ok(n) if crate::topic_name::is_coordinator_topic(&n) => Err((
                ResponseError::InvalidRequest,
                format!("Cannot delete internal topic {n}"),
            )),
            Ok(n) => {
                let logs = b.logs.clone();
                match blocking(move || logs.delete_topic(&n))
                    .await
                    .unwrap_or_else(|| Err(internal()))
                {
                    Ok(t) => {
                        b.groups.remove_topic(&t.name);
                        if let Some(r) = &b.remote {
                            r.topic_deleted(t.name.clone(), t.id.to_string());
                        }
                        if version >= 6 {
                            res.topic_id = t.id;
                        }
                        Ok(())
                    }
                    Err(e) => Err((error_code(&e), e.to_string())),
                }
            }
            Err(e) => Err(e),
        };
        if let Err((code, message)) = outcome {
            res.error_code = code.code();
            if version >= 5 {
                res.error_message = Some(s(message));
            }
        }
        r.responses.push(res);
    }
    r
}

pub async fn create_partitions(
    req: CreatePartitionsRequest,
    _version: i16,
    b: &Broker,
) -> CreatePartitionsResponse {
    let mut r = CreatePartitionsResponse::default();
    for t in req.topics {
        let mut res = CreatePartitionsTopicResult::default();
        res.name = t.name.clone();
        let name = t.name.0.to_string();
        let bad_assignment = t.assignments.as_ref().and_then(|a| {
            a.iter()
                .find(|x| x.broker_ids.len() != 1 || x.broker_ids[0].0 != b.node_id)
                .map(|_| {
                    format!(
                        "new partitions must be assigned to broker {} only",
                        b.node_id
                    )
                })
        });
        let outcome = match bad_assignment {
            Some(m) => Err((ResponseError::InvalidReplicaAssignment, m)),
            None => {
                let logs = b.logs.clone();
                let (count, validate_only) = (t.count, req.validate_only);
                blocking(move || logs.create_partitions(&name, count, validate_only))
                    .await
                    .unwrap_or_else(|| Err(internal()))
                    .map_err(|e| (error_code(&e), e.to_string()))
            }
        };
        if let Err((code, message)) = outcome {
            res.error_code = code.code();
            res.error_message = Some(s(message));
        }
        r.results.push(res);
    }
    r
}
