//! The consumer-group APIs: JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//! OffsetCommit, OffsetFetch, OffsetDelete, DescribeGroups, ListGroups,
//! DeleteGroups. Wire mapping only; the semantics live in
//! [`GroupCoordinator`](crate::group::GroupCoordinator).

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

use super::{s, NO_AUTHORIZED_OPERATIONS};
use crate::group::{CommittedOffset, JoinRequest, OffsetCommit};
use crate::server::Broker;

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
) -> JoinGroupResponse {
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

pub async fn sync_group(req: SyncGroupRequest, version: i16, b: &Broker) -> SyncGroupResponse {
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

pub async fn heartbeat(req: HeartbeatRequest, _version: i16, b: &Broker) -> HeartbeatResponse {
    let mut out = HeartbeatResponse::default();
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

pub async fn leave_group(req: LeaveGroupRequest, version: i16, b: &Broker) -> LeaveGroupResponse {
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
) -> OffsetCommitResponse {
    let mut commits = Vec::new();
    let mut shape: Vec<(TopicName, Vec<i32>)> = Vec::new();
    for t in req.topics {
        let mut parts = Vec::new();
        for p in t.partitions {
            commits.push(OffsetCommit {
                topic: t.name.to_string(),
                partition: p.partition_index,
                offset: p.committed_offset,
                leader_epoch: p.committed_leader_epoch,
                metadata: p
                    .committed_metadata
                    .map(|m| m.to_string())
                    .unwrap_or_default(),
            });
            parts.push(p.partition_index);
        }
        shape.push((t.name, parts));
    }
    let codes = match not_coordinator(b, &req.group_id) {
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
            .map(|p| {
                let mut r = OffsetCommitResponsePartition::default();
                r.partition_index = p;
                r.error_code = codes.next().unwrap_or(0);
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
) -> OffsetFetchResponse {
    let mut out = OffsetFetchResponse::default();
    if version >= 8 {
        for g in req.groups {
            let wanted = g.topics.map(|ts| {
                ts.into_iter()
                    .map(|t| (t.name.to_string(), t.partition_indexes))
                    .collect()
            });
            let mut group = OffsetFetchResponseGroup::default();
            group.group_id = g.group_id.clone();
            let fetched = match b.groups.fetch_checked(&g.group_id, wanted) {
                Ok(f) => f,
                Err(e) => {
                    group.error_code = e.code();
                    out.groups.push(group);
                    continue;
                }
            };
            for (topic, offsets) in by_topic(fetched) {
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
            out.groups.push(group);
        }
        return out;
    }
    let wanted = req.topics.as_ref().map(|ts| {
        ts.iter()
            .map(|t| (t.name.to_string(), t.partition_indexes.clone()))
            .collect()
    });
    let fetched = b.groups.fetch_checked(&req.group_id, wanted);
    if let Err(e) = fetched {
        // v2+ carry the group's error; v0-1 only a code per partition.
        let code = e.code();
        out.error_code = code;
        for t in req.topics.unwrap_or_default() {
            let mut rt = OffsetFetchResponseTopic::default();
            rt.partitions = t
                .partition_indexes
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
            rt.name = t.name;
            out.topics.push(rt);
        }
        return out;
    }
    for (topic, offsets) in by_topic(fetched.unwrap_or_default()) {
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
    out
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
) -> OffsetDeleteResponse {
    let parts: Vec<(String, i32)> = req
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(move |p| (t.name.to_string(), p.partition_index))
        })
        .collect();
    let mut out = OffsetDeleteResponse::default();
    if let Some(code) = not_coordinator(b, &req.group_id) {
        out.error_code = code;
        return out;
    }
    match b.groups.delete_offsets(&req.group_id, parts).await {
        Err(code) => out.error_code = code,
        Ok(codes) => {
            let mut codes = codes.into_iter();
            for t in req.topics {
                let mut rt = OffsetDeleteResponseTopic::default();
                rt.name = t.name;
                rt.partitions = t
                    .partitions
                    .iter()
                    .map(|p| {
                        let mut rp = OffsetDeleteResponsePartition::default();
                        rp.partition_index = p.partition_index;
                        rp.error_code = codes.next().unwrap_or(0);
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
) -> DescribeGroupsResponse {
    let mut out = DescribeGroupsResponse::default();
    for id in req.groups {
        let mut g = DescribedGroup::default();
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
        g.group_id = id;
        g.group_state = s(d.state);
        g.protocol_type = s(d.protocol_type);
        g.protocol_data = s(d.protocol);
        g.authorized_operations = NO_AUTHORIZED_OPERATIONS;
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

pub async fn list_groups(req: ListGroupsRequest, version: i16, b: &Broker) -> ListGroupsResponse {
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
) -> DeleteGroupsResponse {
    let mut out = DeleteGroupsResponse::default();
    for id in req.groups_names {
        let mut r = DeletableGroupResult::default();
        r.error_code = match not_coordinator(b, &id) {
            Some(code) => code,
            None => b.groups.delete_group(&id).await,
        };
        r.group_id = id;
        out.results.push(r);
    }
    out
}
