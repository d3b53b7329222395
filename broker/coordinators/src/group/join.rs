//! JoinGroup and the join phase of a rebalance: KIP-394 member ids, static
//! members taking over their identity (KIP-345), starting a rebalance, and
//! completing the join phase (generation, protocol, leader) — part of the
//! [`GroupCoordinator`].

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::coordinator::{code, current_join_result, sync_error, GroupCoordinator, JoinRequest};
use super::group::{Group, GroupState, JoinResult, Member};

enum Join {
    Now(JoinResult),
    Parked(oneshot::Receiver<JoinResult>),
}

impl GroupCoordinator {
    pub async fn join(&self, req: JoinRequest) -> JoinResult {
        match self.join_now(req) {
            Join::Now(r) => r,
            Join::Parked(rx) => rx.await.unwrap_or_else(|_| {
                JoinResult::error(code(ResponseError::RebalanceInProgress), String::new())
            }),
        }
    }

    fn join_now(&self, req: JoinRequest) -> Join {
        let err = |e: ResponseError| Join::Now(JoinResult::error(code(e), req.member_id.clone()));
        if req.group_id.is_empty() {
            return err(ResponseError::InvalidGroupId);
        }
        if req.session_timeout_ms < self.cfg.min_session_timeout_ms
            || req.session_timeout_ms > self.cfg.max_session_timeout_ms
        {
            return err(ResponseError::InvalidSessionTimeout);
        }
        let now = self.clock.now();
        let mut groups = self.lock();
        let group = groups
            .entry(req.group_id.clone())
            .or_insert_with(|| Group::new(&req.group_id));
        let known = !req.member_id.is_empty()
            && (group.members.contains_key(&req.member_id)
                || group.pending_members.contains_key(&req.member_id));
        if !group.accepts(&req.protocol_type, &req.protocols)
            && !(known && group.members.len() == 1 && group.members.contains_key(&req.member_id))
        {
            return err(ResponseError::InconsistentGroupProtocol);
        }
        let new_member = |id: &str, req: &JoinRequest, assignment: Bytes| Member {
            member_id: id.to_string(),
            group_instance_id: req.group_instance_id.clone(),
            client_id: req.client_id.clone(),
            client_host: req.client_host.clone(),
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            session_timeout_ms: req.session_timeout_ms,
            protocol_type: req.protocol_type.clone(),
            protocols: req.protocols.clone(),
            assignment,
            last_heartbeat: now,
            awaiting_join: None,
            awaiting_sync: None,
        };

        if req.member_id.is_empty() {
            let id = format!(
                "{}-{}",
                if req.client_id.is_empty() {
                    "member"
                } else {
                    &req.client_id
                },
                uuid::Uuid::new_v4()
            );
            if let Some(instance) = &req.group_instance_id {
                if let Some(old_id) = group.static_members.get(instance).cloned() {
                    // A static member restarted: it takes over its old
                    // identity (position, leadership, assignment) under a new
                    // member id; the old member id is fenced.
                    let Some(mut old) = group.members.remove(&old_id) else {
                        group.static_members.remove(instance);
                        group.add_member(new_member(&id, &req, Bytes::new()));
                        return self.park_join(group, &id, now);
                    };
                    if let Some(tx) = old.awaiting_join.take() {
                        let _ = tx.send(JoinResult::error(
                            code(ResponseError::FencedInstanceId),
                            old_id.clone(),
                        ));
                    }
                    if let Some(tx) = old.awaiting_sync.take() {
                        let _ = tx.send(sync_error(ResponseError::FencedInstanceId));
                    }
                    let was_leader = group.leader.as_deref() == Some(old_id.as_str());
                    let mut member = new_member(&id, &req, old.assignment.clone());
                    if group.state == GroupState::CompletingRebalance
                        || group.state == GroupState::PreparingRebalance
                    {
                        member.assignment = Bytes::new();
                    }
                    group.members.insert(id.clone(), member);
                    group.static_members.insert(instance.clone(), id.clone());
                    for slot in group.join_order.iter_mut() {
                        if *slot == old_id {
                            *slot = id.clone();
                        }
                    }
                    if was_leader {
                        group.leader = Some(id.clone());
                    }
                    // As Kafka: no rebalance unless the protocol the group
                    // would select changes (metadata bytes do not matter).
                    if group.state == GroupState::Stable
                        && group.select_protocol() == group.protocol_name
                    {
                        tracing::info!(group = %group.id, instance = %instance, member = %id, leader = was_leader,
                            "static member rejoined; no rebalance");
                        let skip = was_leader && req.supports_skip_assignment;
                        let mut result = current_join_result(group, &id, skip);
                        result.skip_assignment = skip;
                        self.persist_group(group);
                        return Join::Now(result);
                    }
                    return self.park_join(group, &id, now);
                }
                group.add_member(new_member(&id, &req, Bytes::new()));
                return self.park_join(group, &id, now);
            }
            if req.require_known_member_id {
                group.pending_members.insert(id.clone(), now);
                return Join::Now(JoinResult::error(code(ResponseError::MemberIdRequired), id));
            }
            group.add_member(new_member(&id, &req, Bytes::new()));
            return self.park_join(group, &id, now);
        }

        if group.pending_members.remove(&req.member_id).is_some() {
            group.add_member(new_member(&req.member_id, &req, Bytes::new()));
            return self.park_join(group, &req.member_id, now);
        }
        if let Some(instance) = &req.group_instance_id {
            if group
                .static_members
                .get(instance)
                .is_some_and(|id| *id != req.member_id)
            {
                return err(ResponseError::FencedInstanceId);
            }
        }
        let Some(member) = group.members.get_mut(&req.member_id) else {
            return err(ResponseError::UnknownMemberId);
        };
        let same = member.same_protocols(&req.protocols);
        member.protocols = req.protocols.clone();
        member.session_timeout_ms = req.session_timeout_ms;
        member.rebalance_timeout_ms = req.rebalance_timeout_ms;
        member.last_heartbeat = now;
        let is_leader = group.leader.as_deref() == Some(req.member_id.as_str());
        match group.state {
            GroupState::CompletingRebalance if same => {
                Join::Now(current_join_result(group, &req.member_id, is_leader))
            }
            GroupState::Stable if same && !is_leader => {
                Join::Now(current_join_result(group, &req.member_id, false))
            }
            _ => self.park_join(group, &req.member_id, now),
        }
    }

    /// Parks the member's join, starting a rebalance if none is running.
    fn park_join(&self, group: &mut Group, member_id: &str, now: Instant) -> Join {
        let (tx, rx) = oneshot::channel();
        if let Some(m) = group.members.get_mut(member_id) {
            m.awaiting_join = Some(tx);
            m.last_heartbeat = now;
        }
        match group.state {
            GroupState::PreparingRebalance => {
                if group.join_not_before.is_some() {
                    // Still in the initial delay: give late joiners time.
                    let limit =
                        now + Duration::from_millis(group.max_rebalance_timeout_ms().max(0) as u64);
                    let delayed = now
                        + Duration::from_millis(self.cfg.initial_rebalance_delay_ms.max(0) as u64);
                    group.join_not_before = Some(delayed.min(limit));
                }
            }
            _ => self.prepare_rebalance(group, now),
        }
        self.maybe_complete_join(group, now);
        Join::Parked(rx)
    }

    pub(super) fn prepare_rebalance(&self, group: &mut Group, now: Instant) {
        let from_empty = group.state == GroupState::Empty;
        for m in group.members.values_mut() {
            if let Some(tx) = m.awaiting_sync.take() {
                let _ = tx.send(sync_error(ResponseError::RebalanceInProgress));
            }
        }
        group.state = GroupState::PreparingRebalance;
        group.state_timestamp_ms = self.clock.now_ms();
        group.phase_deadline =
            Some(now + Duration::from_millis(group.max_rebalance_timeout_ms().max(0) as u64));
        group.join_not_before = if from_empty && self.cfg.initial_rebalance_delay_ms > 0 {
            Some(now + Duration::from_millis(self.cfg.initial_rebalance_delay_ms as u64))
        } else {
            None
        };
        tracing::info!(group = %group.id, generation = group.generation, members = group.members.len(), "preparing rebalance");
    }

    /// Ends the join phase when every member has rejoined (or the rebalance
    /// timeout passed, dropping those who did not), then answers the joins.
    pub(super) fn maybe_complete_join(&self, group: &mut Group, now: Instant) {
        if group.state != GroupState::PreparingRebalance {
            return;
        }
        let timed_out = group.phase_deadline.is_some_and(|d| now >= d);
        if !timed_out {
            if !group.all_joined() {
                return;
            }
            if group.join_not_before.is_some_and(|t| now < t) {
                return;
            }
        }
        // Static members that did not rejoin stay (their session timeout
        // decides); dynamic ones are removed, as in Kafka's onCompleteJoin.
        let laggards: Vec<String> = group
            .members
            .values()
            .filter(|m| m.awaiting_join.is_none() && m.group_instance_id.is_none())
            .map(|m| m.member_id.clone())
            .collect();
        for id in laggards {
            tracing::info!(group = %group.id, member = %id, "member did not rejoin within the rebalance timeout; removed");
            group.remove_member(&id);
        }
        group.pending_members.clear();
        group.join_not_before = None;
        group.generation += 1;
        group.rebalances += 1;
        group.state_timestamp_ms = self.clock.now_ms();
        if group.members.is_empty() {
            group.state = GroupState::Empty;
            group.protocol_name = None;
            group.leader = None;
            group.phase_deadline = None;
            self.persist_group(group);
            return;
        }
        group.protocol_name = group.select_protocol();
        if group
            .leader
            .as_ref()
            .is_none_or(|l| !group.members.contains_key(l))
        {
            group.leader = group.join_order.first().cloned();
        }
        group.state = GroupState::CompletingRebalance;
        group.phase_deadline =
            Some(now + Duration::from_millis(group.max_rebalance_timeout_ms().max(0) as u64));
        tracing::info!(group = %group.id, generation = group.generation, members = group.members.len(),
            protocol = group.protocol_name.as_deref().unwrap_or(""), "join phase complete");
        let leader = group.leader.clone().unwrap_or_default();
        let ids: Vec<String> = group.join_order.clone();
        for id in ids {
            let result = current_join_result(group, &id, id == leader);
            if let Some(tx) = group
                .members
                .get_mut(&id)
                .and_then(|m| m.awaiting_join.take())
            {
                let _ = tx.send(result);
            }
        }
    }
}
