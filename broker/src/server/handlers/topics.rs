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

use super::s;
use crate::config::{self, TOPIC_CONFIGS};
use crate::server::topic_admin::error_code;
use crate::server::{topic_admin, Broker};

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
    // Names already answered (a duplicate gets one result, as in Kafka).
    let mut answered = HashSet::new();
    // Existing topics, for Kafka's '.'/'_' collision rule.
    let existing = topic_admin::existing_topic_names(b);
    for t in req.topics {
        let name = t.name.0.to_string();
        if !answered.insert(name.clone()) {
            continue;
        }
        let mut res = CreatableTopicResult::default();
        res.name = t.name.clone();
        res.num_partitions = -1;
        res.replication_factor = -1;
        let null_config = t.configs.iter().find(|c| c.value.is_none());
        let outcome = if duplicates.contains(&name) {
            Err((
                ResponseError::InvalidRequest,
                format!("Create topics request contains topic {name} more than once"),
            ))
        } else if let Some(c) = null_config {
            Err((
                ResponseError::InvalidConfig,
                format!("Null value not supported for topic configs: {}", c.name),
            ))
        } else if let Some(other) = topic_admin::colliding(&name, &existing) {
            Err((
                ResponseError::InvalidTopicException,
                format!("Topic '{name}' collides with existing topic: {other}"),
            ))
        } else {
            let configs = super::values_set(t.configs.iter().map(|c| (&c.name, c.value.as_ref())));
            let assignment = match check_assignments(&t, b) {
                Ok(a) => a,
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
            let created = topic_admin::create_topic(
                b,
                &name,
                t.num_partitions,
                t.replication_factor as i32,
                assignment,
                configs,
                req.validate_only,
            )
            .await;
            match created {
                Ok(topic) => {
                    // Kafka names a validated-only topic with the id it
                    // would have had.
                    res.topic_id = if topic.id.is_nil() && req.validate_only {
                        Uuid::new_v4()
                    } else {
                        topic.id
                    };
                    res.num_partitions = topic.partitions;
                    res.replication_factor = topic.replication_factor as i16;
                    res.configs = Some(
                        TOPIC_CONFIGS
                            .iter()
                            .map(|d| {
                                let (value, source) =
                                    config::effective(&b.config, &topic.overrides, d.name);
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

#[cfg(test)]
mod collision_tests {
    #[test]
    fn period_and_underscore_collide() {
        let existing = vec!["a.b".to_string(), "c_d".to_string()];
        assert_eq!(
            crate::server::topic_admin::colliding("a_b", &existing),
            Some("a.b")
        );
        assert_eq!(
            crate::server::topic_admin::colliding("c.d", &existing),
            Some("c_d")
        );
        assert_eq!(
            crate::server::topic_admin::colliding("a.b", &existing),
            None
        );
        assert_eq!(
            crate::server::topic_admin::colliding("x_y", &existing),
            None
        );
    }
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
        // Kafka sends an empty list (v5+), not null.
        res.configs = Some(Vec::new());
        res.num_partitions = -1;
        res.replication_factor = -1;
    }
    if version < 5 {
        res.configs = None;
    }
    r.topics.push(res);
}

/// Manual replica assignments come with partitions/replication factor of
/// -1, as Kafka requires, cover partitions 0..n-1 and name live brokers.
fn check_assignments(
    t: &kafka_protocol::messages::create_topics_request::CreatableTopic,
    b: &Broker,
) -> Result<Option<Vec<Vec<i32>>>, String> {
    if t.assignments.is_empty() {
        return Ok(None);
    }
    if t.num_partitions != -1 || t.replication_factor != -1 {
        return Err("Both numPartitions or replicationFactor and replicasAssignments were set. Both cannot be used at the same time.".into());
    }
    let mut sorted: Vec<_> = t.assignments.iter().collect();
    sorted.sort_by_key(|a| a.partition_index);
    if sorted
        .iter()
        .enumerate()
        .any(|(i, a)| a.partition_index != i as i32)
    {
        return Err("Partitions in the replica assignment must be 0..n-1 with no gaps".into());
    }
    let assignment: Vec<Vec<i32>> = sorted
        .iter()
        .map(|a| a.broker_ids.iter().map(|b| b.0).collect())
        .collect();
    topic_admin::check_assignment(b, &assignment)?;
    Ok(Some(assignment))
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
            (None, id) if id != Uuid::nil() => match b.cluster.view.snapshot().topic_by_id(id) {
                Some((n, _)) => {
                    res.name = Some(TopicName(s(n)));
                    Ok(n.to_string())
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
            Ok(n) => match topic_admin::delete_topic(b, &n).await {
                Ok(id) => {
                    if version >= 6 {
                        res.topic_id = id;
                    }
                    Ok(())
                }
                Err(e) => Err((error_code(&e), e.to_string())),
            },
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
        let assignment: Option<Vec<Vec<i32>>> = t.assignments.as_ref().map(|a| {
            a.iter()
                .map(|x| x.broker_ids.iter().map(|b| b.0).collect())
                .collect()
        });
        let bad_assignment = assignment
            .as_ref()
            .and_then(|a| topic_admin::check_assignment(b, a).err());
        let outcome = match bad_assignment {
            Some(m) => Err((ResponseError::InvalidReplicaAssignment, m)),
            None => {
                topic_admin::create_partitions(b, &name, t.count, assignment, req.validate_only)
                    .await
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
