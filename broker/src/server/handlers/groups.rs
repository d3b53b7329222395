//! The consumer-group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//! OffsetCommit, OffsetFetch, OffsetDelete, DescribeGroups, ListGroups,
//! DeleteGroups. Wire mapping only; the semantics live in
//! [`GroupCoordinator`](crate::group::GroupCoordinator).
//!
//! With an authorizer, as Kafka: the member APIs and OffsetCommit need READ
//! on the group (GROUP_AUTHORIZATION_FAILED), OffsetCommit and OffsetDelete
//! READ on each topic (TOPIC_AUTHORIZATION_FAILED in its partitions),
//! OffsetFetch and DescribeGroups DESCRIBE on each group and OffsetFetch
//! on each topic (a request for every topic leaves the others out),
//! OffsetDelete and DeleteGroups DELETE on the group; ListGroups lists
//! every group to a caller that may DESCRIBE the cluster, and otherwise
//! only the groups it may describe.

use std::collections::BTreeMap;

use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use strata_security::acl::{AclOperation, ResourceType, CLUSTER_NAME};
use strata_security::authorizer::all_operations;

use super::{s, NO_AUTHORIZED_OPERATIONS};
use crate::group::{CommittedOffset, JoinRequest};
use crate::server::authz::Caller;
use crate::server::Broker;

const GROUP_DENIED: ResponseError = ResponseError::GroupAuthorizationFailed;
const TOPIC_DENIED: ResponseError = ResponseError::TopicAuthorizationFailed;

fn may_read_group(caller: &Caller, group: &str) -> bool {
    caller.may(AclOperation::Read, ResourceType::Group, group)
}

/// The error a request for `group` gets on a broker that does not
/// coordinate it (NOT_COORDINATOR, or COORDINATOR_LOAD_IN_PROGRESS while
/// its partition loads): the client asks FindCoordinator again.
fn not_coordinator(b: &Broker, group: &str) -> Option<i16> {
    b.groups.check_coordinator(group).err().map(|e| e.code())
}

pub async fn join_group(
    req: JoinGroupRequest,
    version: i16,
    b: &Broker,
    client_id: &str,
    client_host: &str,
    caller: &Caller,
) -> JoinGroupResponse {
    if !may_read_group(caller, &req.group_id) {
        let mut out = JoinGroupResponse::default();
        out.error_code = GROUP_DENIED.code();
        out.generation_id = -1;
        out.member_id = s("");
        out.protocol_name = (version < 7).then(|| s(""));
        return out;
    }
    if let Some(code) = not_coordinator(b, &req.group_id) {
        let mut out = JoinGroupResponse::default();
        out.error_code = code;
        out.generation_id = -1;
        out.member_id = req.member_id;
        out.protocol_name = (version < 7).then(|| s(""));
        return out;
    }
    let r = b
        .groups
        .join(JoinRequest {
            group_id: req.group_id.to_string(),
            member_id: req.member_id.to_string(),
            group_instance_id: req.group_instance_id.map(|i| i.to_string()),
            client_id: client_id.to_string(),
            client_host: client_host.to_string(),
            session_timeout_ms: req.session_timeout_ms,
            // v0 has no rebalance timeout: Kafka uses the session timeout.
            rebalance_timeout_ms: if version >= 1 {
                req.rebalance_timeout_ms
            } else {
                req.session_timeout_ms
            },
            protocol_type: req.protocol_type.to_string(),
            protocols: req
                .protocols
                .into_iter()
                .map(|p| (p.name.to_string(), p.metadata))
                .collect(),
            require_known_member_id: version >= 4,
            supports_skip_assignment: version >= 9,
        })
        .await;
    let mut out = JoinGroupResponse::default();
    out.error_code = r.error;
    out.generation_id = r.generation;
    if version >= 7 {
        out.protocol_type = r.protocol_type.map(s);
    }
    out.protocol_name = if version >= 7 {
        r.protocol_name.map(s)
    } else {
        Some(s(r.protocol_name.unwrap_or_default()))
    };
    out.leader = s(r.leader);
    out.member_id = s(r.member_id);
    if version >= 9 {
        out.skip_assignment = r.skip_assignment;
    }
    out.members = r
        .members
        .into_iter()
        .map(|(id, instance, metadata)| {
            let mut m = JoinGroupResponseMember::default();
            m.member_id = s(id);
            if version >= 5 {
                m.group_instance_id = instance.map(s);
            }
            m.metadata = metadata;
            m
        })
        .collect();
    out
}

pub async fn sync_group(
    req: SyncGroupRequest,
    version: i16,
    b: &Broker,
    caller: &Caller,
) -> SyncGroupResponse {
    if !may_read_group(caller, &req.group_id) {
        let mut out = SyncGroupResponse::default();
        out.error_code = GROUP_DENIED.code();
        return out;
    }
    if let Some(code) = not_coordinator(b, &req.group_id) {
        let mut out = SyncGroupResponse::default();
        // As Kafka: a loading coordinator sends the member to rejoin (the
        // Java consumer treats COORDINATOR_LOAD_IN_PROGRESS here as fatal).
        out.error_code = if code == ResponseError::CoordinatorLoadInProgress.code() {
            ResponseError::RebalanceInProgress.code()
        } else {
            code
        };
        return out;
    }
    let r = b
        .groups
        .sync(
            &req.group_id,
            &req.member_id,
            req.group_instance_id.as_deref(),
            req.generation_id,
            req.protocol_type.as_deref(),
            req.protocol_name.as_deref(),
            req.assignments
                .into_iter()
                .map(|a| (a.member_id.to_string(), a.assignment))
                .collect(),
        )
        .await;
    let mut out = SyncGroupResponse::default();
    out.error_code = r.error;
    if version >= 5 {
        out.protocol_type = r.protocol_type.map(s);
        out.protocol_name = r.protocol_name.map(s);
    }
    out.assignment = r.assignment;
    out
}

pub async fn heartbeat(
    req: HeartbeatRequest,
    _version: i16,
    b: &Broker,
    caller: &Caller,
) -> HeartbeatResponse {
    let mut out = HeartbeatResponse::default();
    if !may_read_group(caller, &req.group_id) {
        out.error_code = GROUP_DENIED.code();
        return out;
    }
    if let Some(code) = not_coordinator(b, &req.group_id) {
        // As Kafka: a heartbeat during the load is accepted (the member
        // keeps its session; the loaded group decides what comes next).
        if code != ResponseError::CoordinatorLoadInProgress.code() {
            out.error_code = code;
        }
        return out;
    }
    out.error_code = b.groups.heartbeat(
        &req.group_id,
        &req.member_id,
        req.group_instance_id.as_deref(),
        req.generation_id,
    );
    out
}

pub async fn leave_group(
    req: LeaveGroupRequest,
    version: i16,
    b: &Broker,
    caller: &Caller,
) -> LeaveGroupResponse {
    if !may_read_group(caller, &req.group_id) {
        let mut out = LeaveGroupResponse::default();
        out.error_code = GROUP_DENIED.code();
        return out;
    }
    let members: Vec<(String, Option<String>)> = if version >= 3 {
        req.members
            .iter()
            .map(|m| {
                (
                    m.member_id.to_string(),
                    m.group_instance_id.as_ref().map(|i| i.to_string()),
                )
            })
            .collect()
    } else {
        vec![(req.member_id.to_string(), None)]
    };
    let mut out = LeaveGroupResponse::default();
    if let Some(code) = not_coordinator(b, &req.group_id) {
        out.error_code = code;
        return out;
    }
    match b.groups.leave(&req.group_id, &members) {
        // Kafka (v3+): an unknown group answers each member
        // UNKNOWN_MEMBER_ID, the request itself succeeds.
        Err(code) if version >= 3 && code == ResponseError::UnknownMemberId.code() => {
            out.members = members
                .into_iter()
                .map(|(id, instance)| {
                    let mut m = MemberResponse::default();
                    m.member_id = s(id);
                    m.group_instance_id = instance.map(s);
                    m.error_code = code;
                    m
                })
                .collect();
        }
        Err(code) => out.error_code = code,
        Ok(codes) => {
            if version >= 3 {
                out.members = members
                    .into_iter()
                    .zip(codes)
                    .map(|((id, instance), code)| {
                        let mut m = MemberResponse::default();
                        m.member_id = s(id);
                        m.group_instance_id = instance.map(s);
                        m.error_code = code;
                        m
                    })
                    .collect();
            } else {
                out.error_code = codes.first().copied().unwrap_or(0);
            }
        }
    }
    out
}

pub async fn offset_commit(
    req: OffsetCommitRequest,
    _version: i16,
    b: &Broker,
    caller: &Caller,
) -> OffsetCommitResponse {
    // Kafka: a group the caller may not read fails every partition; a
    // topic it may not read, that topic's partitions (not committed).
    let group_denied = !may_read_group(caller, &req.group_id);
    let mut commits = Vec::new();
    let mut shape: Vec<(TopicName, Vec<(i32, Option<i16>)>)> = Vec::new();
    for t in req.topics {
        let refused = if group_denied {
            Some(GROUP_DENIED.code())
        } else if !caller.may(AclOperation::Read, ResourceType::Topic, &t.name) {
            Some(TOPIC_DENIED.code())
        } else {
            None
        };
        let mut parts = Vec::new();
        for p in t.partitions {
            if refused.is_none() {
                commits.push(super::offset_commit(
                    &t.name,
                    p.partition_index,
                    p.committed_offset,
                    p.committed_leader_epoch,
                    p.committed_metadata,
                ));
            }
            parts.push((p.partition_index, refused));
        }
        shape.push((t.name, parts));
    }
    let codes = match not_coordinator(b, &req.group_id) {
        _ if group_denied => Vec::new(),
        Some(code) => vec![code; commits.len()],
        None => {
            b.groups
                .commit(
                    &req.group_id,
                    req.generation_id_or_member_epoch,
                    &req.member_id,
                    req.group_instance_id.as_deref(),
                    commits,
                )
                .await
        }
    };
    let mut codes = codes.into_iter();
    let mut out = OffsetCommitResponse::default();
    for (name, parts) in shape {
        let mut t = OffsetCommitResponseTopic::default();
        t.name = name;
        t.partitions = parts
            .into_iter()
            .map(|(p, refused)| {
                let mut r = OffsetCommitResponsePartition::default();
                r.partition_index = p;
                r.error_code = refused.unwrap_or_else(|| codes.next().unwrap_or(0));
                r
            })
            .collect();
        out.topics.push(t);
    }
    out
}

fn by_topic(offsets: Vec<CommittedOffset>) -> BTreeMap<String, Vec<CommittedOffset>> {
    let mut m: BTreeMap<String, Vec<CommittedOffset>> = BTreeMap::new();
    for o in offsets {
        m.entry(o.topic.clone()).or_default().push(o);
    }
    m
}

pub async fn offset_fetch(
    req: OffsetFetchRequest,
    version: i16,
    b: &Broker,
    caller: &Caller,
) -> OffsetFetchResponse {
    let may_describe_group = |g: &str| caller.may(AclOperation::Describe, ResourceType::Group, g);
    let may_describe_topic = |t: &str| caller.may(AclOperation::Describe, ResourceType::Topic, t);
    let mut out = OffsetFetchResponse::default();
    if version >= 8 {
        for g in req.groups {
            let mut group = OffsetFetchResponseGroup::default();
            group.group_id = g.group_id.clone();
            if !may_describe_group(&g.group_id) {
                group.error_code = GROUP_DENIED.code();
                out.groups.push(group);
                continue;
            }
            // Named topics the caller may not describe are refused, not
            // asked; with every topic asked for, they are left out.
            let mut refused = Vec::new();
            let wanted = g.topics.map(|ts| {
                ts.into_iter()
                    .filter_map(|t| {
                        if may_describe_topic(&t.name) {
                            Some((t.name.to_string(), t.partition_indexes))
                        } else {
                            refused.push((t.name, t.partition_indexes));
                            None
                        }
                    })
                    .collect()
            });
            let every_topic = wanted.is_none();
            let fetched = match b.groups.fetch_checked(&g.group_id, wanted) {
                Ok(f) => f,
                Err(e) => {
                    group.error_code = e.code();
                    out.groups.push(group);
                    continue;
                }
            };
            for (topic, offsets) in by_topic(fetched) {
                if every_topic && !may_describe_topic(&topic) {
                    continue;
                }
                let mut t = OffsetFetchResponseTopics::default();
                t.name = TopicName(s(topic.clone()));
                t.partitions = offsets
                    .into_iter()
                    .map(|o| {
                        let mut p = OffsetFetchResponsePartitions::default();
                        p.partition_index = o.partition;
                        if unstable(b, req.require_stable, &g.group_id, &topic, o.partition) {
                            p.error_code = ResponseError::UnstableOffsetCommit.code();
                            p.committed_offset = -1;
                            p.committed_leader_epoch = -1;
                            return p;
                        }
                        p.committed_offset = o.offset;
                        p.committed_leader_epoch = o.leader_epoch;
                        p.metadata = Some(s(o.metadata));
                        p
                    })
                    .collect();
                group.topics.push(t);
            }
            for (name, parts) in refused {
                let mut t = OffsetFetchResponseTopics::default();
                t.name = name;
                t.partitions = parts
                    .into_iter()
                    .map(|index| {
                        let mut p = OffsetFetchResponsePartitions::default();
                        p.partition_index = index;
                        p.committed_offset = -1;
                        p.committed_leader_epoch = -1;
                        p.error_code = TOPIC_DENIED.code();
                        p
                    })
                    .collect();
                group.topics.push(t);
            }
            out.groups.push(group);
        }
        return out;
    }
    if !may_describe_group(&req.group_id) {
        return group_error(GROUP_DENIED.code(), req.topics);
    }
    let mut refused = Vec::new();
    let wanted = req.topics.as_ref().map(|ts| {
        ts.iter()
            .filter_map(|t| {
                if may_describe_topic(&t.name) {
                    Some((t.name.to_string(), t.partition_indexes.clone()))
                } else {
                    refused.push((t.name.clone(), t.partition_indexes.clone()));
                    None
                }
            })
            .collect()
    });
    let every_topic = wanted.is_none();
    let fetched = b.groups.fetch_checked(&req.group_id, wanted);
    let fetched = match fetched {
        Ok(f) => f,
        Err(e) => return group_error(e.code(), req.topics),
    };
    for (topic, offsets) in by_topic(fetched) {
        if every_topic && !may_describe_topic(&topic) {
            continue;
        }
        let mut t = OffsetFetchResponseTopic::default();
        t.name = TopicName(s(topic.clone()));
        t.partitions = offsets
            .into_iter()
            .map(|o| {
                let mut p = OffsetFetchResponsePartition::default();
                p.partition_index = o.partition;
                // v7+ (KIP-447): a commit a transaction holds is not stable.
                if version >= 7
                    && unstable(b, req.require_stable, &req.group_id, &topic, o.partition)
                {
                    p.error_code = ResponseError::UnstableOffsetCommit.code();
                    p.committed_offset = -1;
                    return p;
                }
                p.committed_offset = o.offset;
                if version >= 5 {
                    p.committed_leader_epoch = o.leader_epoch;
                }
                p.metadata = Some(s(o.metadata));
                p
            })
            .collect();
        out.topics.push(t);
    }
    for (name, parts) in refused {
        out.topics
            .push(partitions_with(name, &parts, TOPIC_DENIED.code()));
    }
    out
}

/// OffsetFetch before v8 for a group that failed: the error at the top
/// (v2+) and in each requested partition (v0-1 have only those).
fn group_error(
    code: i16,
    topics: Option<Vec<kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic>>,
) -> OffsetFetchResponse {
    let mut out = OffsetFetchResponse::default();
    out.error_code = code;
    for t in topics.unwrap_or_default() {
        out.topics
            .push(partitions_with(t.name, &t.partition_indexes, code));
    }
    out
}

/// A topic of an OffsetFetch answer (before v8) whose partitions all carry
/// `code`, offset -1.
fn partitions_with(name: TopicName, partitions: &[i32], code: i16) -> OffsetFetchResponseTopic {
    let mut rt = OffsetFetchResponseTopic::default();
    rt.partitions = partitions
        .iter()
        .map(|p| {
            let mut rp = OffsetFetchResponsePartition::default();
            rp.partition_index = *p;
            rp.committed_offset = -1;
            rp.committed_leader_epoch = -1;
            rp.error_code = code;
            rp
        })
        .collect();
    rt.name = name;
    rt
}

/// OffsetFetch with `require_stable`: an offset an open transaction has
/// committed is not answered (UNSTABLE_OFFSET_COMMIT; the client retries).
fn unstable(b: &Broker, require_stable: bool, group: &str, topic: &str, partition: i32) -> bool {
    require_stable && b.groups.has_pending_txn_offset(group, topic, partition)
}

pub async fn offset_delete(
    req: OffsetDeleteRequest,
    _version: i16,
    b: &Broker,
    caller: &Caller,
) -> OffsetDeleteResponse {
    let mut out = OffsetDeleteResponse::default();
    if !caller.may(AclOperation::Delete, ResourceType::Group, &req.group_id) {
        out.error_code = GROUP_DENIED.code();
        return out;
    }
    // Kafka: READ (not DELETE) on each topic; a refused one is not asked.
    let readable: Vec<bool> = req
        .topics
        .iter()
        .map(|t| caller.may(AclOperation::Read, ResourceType::Topic, &t.name))
        .collect();
    let parts: Vec<(String, i32)> = req
        .topics
        .iter()
        .zip(&readable)
        .filter(|(_, ok)| **ok)
        .flat_map(|(t, _)| {
            t.partitions
                .iter()
                .map(move |p| (t.name.to_string(), p.partition_index))
        })
        .collect();
    if let Some(code) = not_coordinator(b, &req.group_id) {
        out.error_code = code;
        return out;
    }
    match b.groups.delete_offsets(&req.group_id, parts).await {
        Err(code) => out.error_code = code,
        Ok(codes) => {
            let mut codes = codes.into_iter();
            for (t, ok) in req.topics.into_iter().zip(readable) {
                let mut rt = OffsetDeleteResponseTopic::default();
                rt.name = t.name;
                rt.partitions = t
                    .partitions
                    .iter()
                    .map(|p| {
                        let mut rp = OffsetDeleteResponsePartition::default();
                        rp.partition_index = p.partition_index;
                        rp.error_code = if ok {
                            codes.next().unwrap_or(0)
                        } else {
                            TOPIC_DENIED.code()
                        };
                        rp
                    })
                    .collect();
                out.topics.push(rt);
            }
        }
    }
    out
}

pub async fn describe_groups(
    req: DescribeGroupsRequest,
    version: i16,
    b: &Broker,
    caller: &Caller,
) -> DescribeGroupsResponse {
    let mut out = DescribeGroupsResponse::default();
    for id in req.groups {
        let mut g = DescribedGroup::default();
        if !caller.may(AclOperation::Describe, ResourceType::Group, &id) {
            g.error_code = GROUP_DENIED.code();
            g.group_id = id;
            g.authorized_operations = NO_AUTHORIZED_OPERATIONS;
            out.groups.push(g);
            continue;
        }
        let d = match b.groups.describe_checked(&id) {
            Ok(d) => d,
            Err(_) if id.is_empty() => b.groups.describe(&id),
            Err(e) => {
                g.error_code = e.code();
                g.group_id = id;
                g.authorized_operations = NO_AUTHORIZED_OPERATIONS;
                out.groups.push(g);
                continue;
            }
        };
        if id.is_empty() {
            g.error_code = ResponseError::InvalidGroupId.code();
        } else if version >= 6 && d.state == crate::group::group::GroupState::Dead.name() {
            // KIP-1043: v6 names an unknown group instead of describing
            // it as Dead with no error.
            g.error_code = ResponseError::GroupIdNotFound.code();
            g.error_message = Some(s(format!("Group {} not found.", id.0)));
        }
        // KIP-430 (v3+): asked for, on a group answered without error.
        g.authorized_operations = if req.include_authorized_operations && g.error_code == 0 {
            caller.operations(
                ResourceType::Group,
                &id,
                all_operations(ResourceType::Group),
            )
        } else {
            NO_AUTHORIZED_OPERATIONS
        };
        g.group_id = id;
        g.group_state = s(d.state);
        g.protocol_type = s(d.protocol_type);
        g.protocol_data = s(d.protocol);
        g.members = d
            .members
            .into_iter()
            .map(|(id, instance, client, host, metadata, assignment)| {
                let mut m = DescribedGroupMember::default();
                m.member_id = s(id);
                if version >= 4 {
                    m.group_instance_id = instance.map(s);
                }
                m.client_id = s(client);
                m.client_host = s(host);
                m.member_metadata = metadata;
                m.member_assignment = assignment;
                m
            })
            .collect();
        out.groups.push(g);
    }
    out
}

pub async fn list_groups(
    req: ListGroupsRequest,
    version: i16,
    b: &Broker,
    caller: &Caller,
) -> ListGroupsResponse {
    // Kafka: DESCRIBE on the cluster lists every group; otherwise the
    // groups the caller may describe, the others left out silently.
    let every_group =
        caller.may_quietly(AclOperation::Describe, ResourceType::Cluster, CLUSTER_NAME);
    let states: Vec<String> = req
        .states_filter
        .iter()
        .map(|s| s.to_string().to_ascii_lowercase())
        .collect();
    let types: Vec<String> = req
        .types_filter
        .iter()
        .map(|s| s.to_string().to_ascii_lowercase())
        .collect();
    let mut out = ListGroupsResponse::default();
    for (id, protocol_type, state) in b.groups.list_typed("") {
        if !states.is_empty() && !states.contains(&state.to_ascii_lowercase()) {
            continue;
        }
        if !every_group && !caller.may_quietly(AclOperation::Describe, ResourceType::Group, &id) {
            continue;
        }
        // Every group here is a classic group.
        if !types.is_empty() && !types.iter().any(|t| t == "classic") {
            continue;
        }
        let mut g = ListedGroup::default();
        g.group_id = GroupId(s(id));
        g.protocol_type = s(protocol_type);
        if version >= 4 {
            g.group_state = s(state);
        }
        if version >= 5 {
            g.group_type = s("classic");
        }
        out.groups.push(g);
    }
    out
}

pub async fn delete_groups(
    req: DeleteGroupsRequest,
    _version: i16,
    b: &Broker,
    caller: &Caller,
) -> DeleteGroupsResponse {
    let mut out = DeleteGroupsResponse::default();
    for id in req.groups_names {
        let mut r = DeletableGroupResult::default();
        r.error_code = if !caller.may(AclOperation::Delete, ResourceType::Group, &id) {
            GROUP_DENIED.code()
        } else {
            match not_coordinator(b, &id) {
                Some(code) => code,
                None => b.groups.delete_group(&id).await,
            }
        };
        r.group_id = id;
        out.results.push(r);
    }
    out
}
