//! `GroupCoordinator`: Kafka's classic consumer-group protocol for every
//! group on this broker — membership (KIP-394 member ids, KIP-345 static
//! members), rebalances with generations, leader and protocol selection,
//! session and rebalance timeouts, and committed offsets persisted in
//! `__consumer_offsets` and rebuilt from it on start.
//!
//! Requests that must wait for a rebalance park a oneshot sender on their
//! member; `tick` drives every timeout. Assignment stays client-side.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::group::{Group, GroupState, JoinResult, Member, SyncResult};
use super::records::{GroupValue, MemberRecord, OffsetValue, RecordKey};
use super::store::{OffsetsLog, PendingWrite};
use crate::config::BrokerConfig;
use crate::log_manager::LogManager;

/// Coordinator settings, under Kafka's broker setting names.
#[derive(Debug, Clone)]
pub struct CoordinatorConfig {
    pub min_session_timeout_ms: i32,
    pub max_session_timeout_ms: i32,
    pub initial_rebalance_delay_ms: i32,
    pub offsets_retention_ms: i64,
    pub offset_metadata_max_bytes: usize,
    pub commit_timeout: Duration,
}

impl CoordinatorConfig {
    pub fn from_broker(c: &BrokerConfig) -> Self {
        CoordinatorConfig {
            min_session_timeout_ms: c.i32("group.min.session.timeout.ms"),
            max_session_timeout_ms: c.i32("group.max.session.timeout.ms"),
            initial_rebalance_delay_ms: c.i32("group.initial.rebalance.delay.ms"),
            offsets_retention_ms: c.i64("offsets.retention.minutes").saturating_mul(60_000),
            offset_metadata_max_bytes: c.i32("offset.metadata.max.bytes").max(0) as usize,
            commit_timeout: Duration::from_millis(c.i64("offsets.commit.timeout.ms").max(1) as u64),
        }
    }
}

/// A JoinGroup request, decoded.
#[derive(Debug)]
pub struct JoinRequest {
    pub group_id: String,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    pub protocols: Vec<(String, Bytes)>,
    /// JoinGroup v4+: a new dynamic member first gets MEMBER_ID_REQUIRED.
    pub require_known_member_id: bool,
    /// JoinGroup v9+ (KIP-814): a rejoining static leader can be told to
    /// skip computing an assignment.
    pub supports_skip_assignment: bool,
}

/// One partition's committed offset, as OffsetFetch returns it.
#[derive(Debug, Clone)]
pub struct CommittedOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

/// One partition of an OffsetCommit.
#[derive(Debug, Clone)]
pub struct OffsetCommit {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

/// DescribeGroups' view of a group.
#[derive(Debug, Clone)]
pub struct GroupDescription {
    pub group_id: String,
    pub state: &'static str,
    pub protocol_type: String,
    pub protocol: String,
    /// (member id, instance id, client id, client host, metadata, assignment)
    pub members: Vec<(String, Option<String>, String, String, Bytes, Bytes)>,
}

#[derive(Debug)]
pub struct GroupCoordinator {
    groups: Mutex<HashMap<String, Group>>,
    store: OffsetsLog,
    logs: Arc<LogManager>,
    cfg: CoordinatorConfig,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn code(e: ResponseError) -> i16 {
    e.code()
}

enum Join {
    Now(JoinResult),
    Parked(oneshot::Receiver<JoinResult>),
}

enum Sync {
    Now(SyncResult),
    Parked(oneshot::Receiver<SyncResult>),
}

impl GroupCoordinator {
    /// Opens `__consumer_offsets` and rebuilds every group from it.
    pub fn open(logs: Arc<LogManager>, broker: &BrokerConfig) -> anyhow::Result<Arc<Self>> {
        let store = OffsetsLog::open(
            logs.clone(),
            broker.i32("offsets.topic.num.partitions"),
            broker.i32("offsets.topic.segment.bytes"),
        )
        .map_err(|e| anyhow::anyhow!("cannot open __consumer_offsets: {e}"))?;
        let mut groups: HashMap<String, Group> = HashMap::new();
        let now = Instant::now();
        let started = Instant::now();
        let records = store.replay(|key, value| {
            let group = key.group().to_string();
            match (key, value) {
                (
                    RecordKey::Offset {
                        topic, partition, ..
                    },
                    Some(v),
                ) => {
                    if let Ok(v) = OffsetValue::decode(v) {
                        groups
                            .entry(group.clone())
                            .or_insert_with(|| Group::new(&group))
                            .offsets
                            .insert((topic, partition), v);
                    }
                }
                (
                    RecordKey::Offset {
                        topic, partition, ..
                    },
                    None,
                ) => {
                    if let Some(g) = groups.get_mut(&group) {
                        g.offsets.remove(&(topic, partition));
                    }
                }
                (RecordKey::Group { .. }, Some(v)) => {
                    if let Ok(v) = GroupValue::decode(v) {
                        let g = groups
                            .entry(group.clone())
                            .or_insert_with(|| Group::new(&group));
                        restore_group(g, v, now);
                    }
                }
                (RecordKey::Group { .. }, None) => {
                    groups.remove(&group);
                }
            }
        })?;
        groups.retain(|_, g| !g.members.is_empty() || !g.offsets.is_empty() || g.generation > 0);
        tracing::info!(
            groups = groups.len(),
            records,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "loaded consumer groups"
        );
        Ok(Arc::new(GroupCoordinator {
            groups: Mutex::new(groups),
            store,
            logs,
            cfg: CoordinatorConfig::from_broker(broker),
        }))
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Group>> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn partition_of(&self, group: &str) -> i32 {
        self.store.partition_of(group)
    }

    // ---------------------------------------------------------------- join

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
        let now = Instant::now();
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

    fn prepare_rebalance(&self, group: &mut Group, now: Instant) {
        let from_empty = group.state == GroupState::Empty;
        for m in group.members.values_mut() {
            if let Some(tx) = m.awaiting_sync.take() {
                let _ = tx.send(sync_error(ResponseError::RebalanceInProgress));
            }
        }
        group.state = GroupState::PreparingRebalance;
        group.state_timestamp_ms = now_ms();
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
    fn maybe_complete_join(&self, group: &mut Group, now: Instant) {
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
        group.state_timestamp_ms = now_ms();
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

    // ---------------------------------------------------------------- sync

    #[allow(clippy::too_many_arguments)]
    pub async fn sync(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
        protocol_type: Option<&str>,
        protocol_name: Option<&str>,
        assignments: Vec<(String, Bytes)>,
    ) -> SyncResult {
        let parked = {
            let mut groups = self.lock();
            let Some(group) = groups.get_mut(group_id) else {
                return sync_error(ResponseError::UnknownMemberId);
            };
            if let Some(e) = check_member(group, member_id, instance_id) {
                return sync_error(e);
            }
            if generation != group.generation {
                return sync_error(ResponseError::IllegalGeneration);
            }
            if protocol_type.is_some_and(|t| Some(t) != group.protocol_type.as_deref())
                || protocol_name.is_some_and(|n| Some(n) != group.protocol_name.as_deref())
            {
                return sync_error(ResponseError::InconsistentGroupProtocol);
            }
            match group.state {
                GroupState::Empty | GroupState::Dead => {
                    return sync_error(ResponseError::UnknownMemberId)
                }
                GroupState::PreparingRebalance => {
                    return sync_error(ResponseError::RebalanceInProgress)
                }
                GroupState::Stable => {
                    let m = &group.members[member_id];
                    Sync::Now(SyncResult {
                        error: 0,
                        protocol_type: group.protocol_type.clone(),
                        protocol_name: group.protocol_name.clone(),
                        assignment: m.assignment.clone(),
                    })
                }
                GroupState::CompletingRebalance => {
                    let (tx, rx) = oneshot::channel();
                    if let Some(m) = group.members.get_mut(member_id) {
                        m.awaiting_sync = Some(tx);
                        m.last_heartbeat = Instant::now();
                    }
                    if group.leader.as_deref() == Some(member_id) {
                        let mut by_member: HashMap<String, Bytes> =
                            assignments.into_iter().collect();
                        for m in group.members.values_mut() {
                            m.assignment = by_member.remove(&m.member_id).unwrap_or_default();
                        }
                        group.state = GroupState::Stable;
                        group.phase_deadline = None;
                        group.state_timestamp_ms = now_ms();
                        self.persist_group(group);
                        tracing::info!(group = %group.id, generation = group.generation, "group is stable");
                        let (pt, pn) = (group.protocol_type.clone(), group.protocol_name.clone());
                        for m in group.members.values_mut() {
                            if let Some(tx) = m.awaiting_sync.take() {
                                let _ = tx.send(SyncResult {
                                    error: 0,
                                    protocol_type: pt.clone(),
                                    protocol_name: pn.clone(),
                                    assignment: m.assignment.clone(),
                                });
                            }
                        }
                    }
                    Sync::Parked(rx)
                }
            }
        };
        match parked {
            Sync::Now(r) => r,
            Sync::Parked(rx) => rx
                .await
                .unwrap_or_else(|_| sync_error(ResponseError::RebalanceInProgress)),
        }
    }

    // ----------------------------------------------------- heartbeat, leave

    pub fn heartbeat(
        &self,
        group_id: &str,
        member_id: &str,
        instance_id: Option<&str>,
        generation: i32,
    ) -> i16 {
        let mut groups = self.lock();
        let Some(group) = groups.get_mut(group_id) else {
            return code(ResponseError::UnknownMemberId);
        };
        if let Some(e) = check_member(group, member_id, instance_id) {
            return code(e);
        }
        if let Some(m) = group.members.get_mut(member_id) {
            m.last_heartbeat = Instant::now();
        }
        match group.state {
            GroupState::Empty | GroupState::Dead => code(ResponseError::UnknownMemberId),
            _ if generation != group.generation => code(ResponseError::IllegalGeneration),
            GroupState::PreparingRebalance => code(ResponseError::RebalanceInProgress),
            _ => 0,
        }
    }

    /// Removes members; returns a per-member error code.
    pub fn leave(
        &self,
        group_id: &str,
        members: &[(String, Option<String>)],
    ) -> Result<Vec<i16>, i16> {
        let mut groups = self.lock();
        let Some(group) = groups.get_mut(group_id) else {
            return Err(code(ResponseError::UnknownMemberId));
        };
        let now = Instant::now();
        let mut out = Vec::with_capacity(members.len());
        let mut removed = false;
        for (member_id, instance) in members {
            let id = match instance {
                Some(i) => match group.static_members.get(i) {
                    Some(id) if member_id.is_empty() || id == member_id => id.clone(),
                    Some(_) => {
                        out.push(code(ResponseError::FencedInstanceId));
                        continue;
                    }
                    None => {
                        out.push(code(ResponseError::UnknownMemberId));
                        continue;
                    }
                },
                None => member_id.clone(),
            };
            match group.remove_member(&id) {
                Some(mut m) => {
                    if let Some(tx) = m.awaiting_join.take() {
                        let _ = tx.send(JoinResult::error(
                            code(ResponseError::UnknownMemberId),
                            id.clone(),
                        ));
                    }
                    tracing::info!(group = %group.id, member = %id, "member left the group");
                    removed = true;
                    out.push(0);
                }
                None => out.push(code(ResponseError::UnknownMemberId)),
            }
        }
        if removed {
            self.after_member_removed(group, now);
        }
        Ok(out)
    }

    fn after_member_removed(&self, group: &mut Group, now: Instant) {
        match group.state {
            GroupState::Stable | GroupState::CompletingRebalance => {
                if group.members.is_empty() {
                    group.state = GroupState::PreparingRebalance;
                    group.phase_deadline = Some(now);
                }
                if group.state != GroupState::PreparingRebalance {
                    self.prepare_rebalance(group, now);
                }
                self.maybe_complete_join(group, now);
            }
            GroupState::PreparingRebalance => self.maybe_complete_join(group, now),
            _ => {}
        }
    }

    /// Drives timeouts: member sessions, KIP-394 pending members, the join
    /// and sync phases, the initial rebalance delay.
    pub fn tick(&self) {
        let now = Instant::now();
        let mut groups = self.lock();
        for group in groups.values_mut() {
            group.pending_members.retain(|_, since| {
                now.duration_since(*since)
                    < Duration::from_millis(self.cfg.max_session_timeout_ms.max(0) as u64)
            });
            let expired: Vec<String> = group
                .members
                .values()
                .filter(|m| m.awaiting_join.is_none())
                .filter(|m| {
                    now.duration_since(m.last_heartbeat)
                        > Duration::from_millis(m.session_timeout_ms.max(0) as u64)
                })
                .map(|m| m.member_id.clone())
                .collect();
            for id in &expired {
                tracing::info!(group = %group.id, member = %id, "member session expired; removed");
                group.remove_member(id);
            }
            if !expired.is_empty() {
                self.after_member_removed(group, now);
            }
            if group.state == GroupState::CompletingRebalance
                && group.phase_deadline.is_some_and(|d| now >= d)
            {
                let unsynced: Vec<String> = group
                    .members
                    .values()
                    .filter(|m| m.awaiting_sync.is_none())
                    .map(|m| m.member_id.clone())
                    .collect();
                for id in unsynced {
                    tracing::info!(group = %group.id, member = %id, "member did not sync within the rebalance timeout; removed");
                    group.remove_member(&id);
                }
                self.prepare_rebalance(group, now);
            }
            self.maybe_complete_join(group, now);
        }
    }

    // -------------------------------------------------------------- offsets

    /// Commits offsets; returns one error code per entry of `offsets`, or a
    /// group-level error applied to all.
    pub async fn commit(
        &self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
        offsets: Vec<OffsetCommit>,
    ) -> Vec<i16> {
        let all = |e: ResponseError| vec![code(e); offsets.len()];
        if group_id.is_empty() {
            return all(ResponseError::InvalidGroupId);
        }
        let pending: Option<(PendingWrite, Vec<usize>)>;
        let mut result = vec![0i16; offsets.len()];
        {
            let mut groups = self.lock();
            let exists = groups.contains_key(group_id);
            if generation < 0 && member_id.is_empty() {
                // A commit from outside the group protocol (admin tools,
                // manual assignment): only while the group has no members.
                if groups.get(group_id).is_some_and(|g| !g.is_empty()) {
                    return all(ResponseError::UnknownMemberId);
                }
            } else {
                let Some(group) = groups.get_mut(group_id) else {
                    return all(ResponseError::IllegalGeneration);
                };
                if let Some(e) = check_member(group, member_id, instance_id) {
                    return all(e);
                }
                if generation != group.generation {
                    return all(ResponseError::IllegalGeneration);
                }
                if group.state == GroupState::CompletingRebalance {
                    return all(ResponseError::RebalanceInProgress);
                }
                if let Some(m) = group.members.get_mut(member_id) {
                    m.last_heartbeat = Instant::now();
                }
            }
            let now = now_ms();
            let mut records = Vec::new();
            let mut written = Vec::new();
            for (i, o) in offsets.iter().enumerate() {
                if self.logs.partition(&o.topic, o.partition).is_none() {
                    result[i] = code(ResponseError::UnknownTopicOrPartition);
                    continue;
                }
                if o.metadata.len() > self.cfg.offset_metadata_max_bytes {
                    result[i] = code(ResponseError::OffsetMetadataTooLarge);
                    continue;
                }
                let value = OffsetValue {
                    offset: o.offset,
                    leader_epoch: o.leader_epoch,
                    metadata: o.metadata.clone(),
                    commit_timestamp: now,
                };
                records.push((
                    RecordKey::Offset {
                        group: group_id.to_string(),
                        topic: o.topic.clone(),
                        partition: o.partition,
                    },
                    Some(value.encode()),
                ));
                written.push(i);
            }
            if records.is_empty() {
                return result;
            }
            match self.store.append(group_id, &records) {
                Ok(w) => {
                    if !exists {
                        groups.insert(group_id.to_string(), Group::new(group_id));
                    }
                    if let Some(group) = groups.get_mut(group_id) {
                        for &i in &written {
                            let o = &offsets[i];
                            group.offsets.insert(
                                (o.topic.clone(), o.partition),
                                OffsetValue {
                                    offset: o.offset,
                                    leader_epoch: o.leader_epoch,
                                    metadata: o.metadata.clone(),
                                    commit_timestamp: now,
                                },
                            );
                        }
                    }
                    pending = Some((w, written));
                }
                Err(e) => {
                    tracing::error!(group = group_id, error = %e, "writing offsets failed");
                    for &i in &written {
                        result[i] = code(ResponseError::CoordinatorNotAvailable);
                    }
                    pending = None;
                }
            }
        }
        if let Some((w, written)) = pending {
            if !w.durable(self.cfg.commit_timeout).await {
                for i in written {
                    result[i] = code(ResponseError::RequestTimedOut);
                }
            }
        }
        result
    }

    /// Committed offsets of a group: all of them, or those asked for (-1
    /// for partitions without a commit).
    pub fn fetch(
        &self,
        group_id: &str,
        wanted: Option<Vec<(String, Vec<i32>)>>,
    ) -> Vec<CommittedOffset> {
        let groups = self.lock();
        let group = groups.get(group_id);
        let get = |t: &str, p: i32| group.and_then(|g| g.offsets.get(&(t.to_string(), p)));
        match wanted {
            None => group
                .map(|g| {
                    g.offsets
                        .iter()
                        .map(|((t, p), v)| CommittedOffset {
                            topic: t.clone(),
                            partition: *p,
                            offset: v.offset,
                            leader_epoch: v.leader_epoch,
                            metadata: v.metadata.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            Some(w) => w
                .into_iter()
                .flat_map(|(t, ps)| ps.into_iter().map(move |p| (t.clone(), p)))
                .map(|(t, p)| match get(&t, p) {
                    Some(v) => CommittedOffset {
                        topic: t,
                        partition: p,
                        offset: v.offset,
                        leader_epoch: v.leader_epoch,
                        metadata: v.metadata.clone(),
                    },
                    None => CommittedOffset {
                        topic: t,
                        partition: p,
                        offset: -1,
                        leader_epoch: -1,
                        metadata: String::new(),
                    },
                })
                .collect(),
        }
    }

    /// OffsetDelete: refused for topics the live group is subscribed to.
    pub async fn delete_offsets(
        &self,
        group_id: &str,
        partitions: Vec<(String, i32)>,
    ) -> Result<Vec<i16>, i16> {
        let pending = {
            let mut groups = self.lock();
            let Some(group) = groups.get_mut(group_id) else {
                return Err(code(ResponseError::GroupIdNotFound));
            };
            if group.state != GroupState::Empty
                && group.protocol_type.as_deref() != Some("consumer")
                && !group.members.is_empty()
            {
                return Err(code(ResponseError::NonEmptyGroup));
            }
            let subscribed = if group.members.is_empty() {
                Some(Default::default())
            } else {
                group.subscribed_topics()
            };
            let mut out = Vec::with_capacity(partitions.len());
            let mut deletable = Vec::new();
            for (t, p) in &partitions {
                if subscribed
                    .as_ref()
                    .is_none_or(|s: &std::collections::HashSet<String>| s.contains(t))
                {
                    out.push(code(ResponseError::GroupSubscribedToTopic));
                    continue;
                }
                deletable.push((t.clone(), *p));
                out.push(0);
            }
            let records = remove_offsets(group, &deletable);
            let w = if records.is_empty() {
                None
            } else {
                self.store.append(group_id, &records).ok()
            };
            (out, w)
        };
        let (out, w) = pending;
        if let Some(w) = w {
            w.durable(self.cfg.commit_timeout).await;
        }
        Ok(out)
    }

    // ------------------------------------------------------ describe, list

    pub fn describe(&self, group_id: &str) -> GroupDescription {
        let groups = self.lock();
        match groups.get(group_id) {
            None => GroupDescription {
                group_id: group_id.to_string(),
                state: GroupState::Dead.name(),
                protocol_type: String::new(),
                protocol: String::new(),
                members: Vec::new(),
            },
            Some(g) => {
                let proto = g.protocol_name.clone().unwrap_or_default();
                let stable = g.state == GroupState::Stable;
                GroupDescription {
                    group_id: g.id.clone(),
                    state: g.state.name(),
                    protocol_type: g.protocol_type.clone().unwrap_or_default(),
                    protocol: if stable { proto.clone() } else { String::new() },
                    members: g
                        .join_order
                        .iter()
                        .filter_map(|id| g.members.get(id))
                        .map(|m| {
                            (
                                m.member_id.clone(),
                                m.group_instance_id.clone(),
                                m.client_id.clone(),
                                m.client_host.clone(),
                                if stable {
                                    m.metadata_for(&proto)
                                } else {
                                    Bytes::new()
                                },
                                if stable {
                                    m.assignment.clone()
                                } else {
                                    Bytes::new()
                                },
                            )
                        })
                        .collect(),
                }
            }
        }
    }

    /// (group id, protocol type, state) of every group.
    pub fn list(&self) -> Vec<(String, String, &'static str)> {
        let groups = self.lock();
        let mut v: Vec<_> = groups
            .values()
            .map(|g| {
                (
                    g.id.clone(),
                    g.protocol_type.clone().unwrap_or_else(|| {
                        if g.offsets.is_empty() {
                            String::new()
                        } else {
                            "consumer".into()
                        }
                    }),
                    g.state.name(),
                )
            })
            .collect();
        v.sort();
        v
    }

    /// DeleteGroups: only groups without members; removes their offsets.
    pub async fn delete_group(&self, group_id: &str) -> i16 {
        let w = {
            let mut groups = self.lock();
            let Some(group) = groups.get_mut(group_id) else {
                return code(ResponseError::GroupIdNotFound);
            };
            if !group.members.is_empty() {
                return code(ResponseError::NonEmptyGroup);
            }
            let keys: Vec<(String, i32)> = group.offsets.keys().cloned().collect();
            let mut records = remove_offsets(group, &keys);
            records.push((
                RecordKey::Group {
                    group: group_id.to_string(),
                },
                None,
            ));
            groups.remove(group_id);
            self.store.append(group_id, &records)
        };
        match w {
            Ok(w) => {
                w.durable(self.cfg.commit_timeout).await;
                tracing::info!(group = group_id, "deleted group");
                0
            }
            Err(e) => {
                tracing::error!(group = group_id, error = %e, "writing group tombstones failed");
                code(ResponseError::CoordinatorNotAvailable)
            }
        }
    }

    /// A topic was deleted: its committed offsets go too.
    pub fn remove_topic(&self, topic: &str) {
        let mut groups = self.lock();
        for group in groups.values_mut() {
            let keys: Vec<(String, i32)> = group
                .offsets
                .keys()
                .filter(|(t, _)| t == topic)
                .cloned()
                .collect();
            if keys.is_empty() {
                continue;
            }
            let records = remove_offsets(group, &keys);
            if let Err(e) = self.store.append(&group.id, &records) {
                tracing::error!(group = %group.id, error = %e, "writing offset tombstones failed");
            }
        }
    }

    /// Expires offsets of empty groups older than `offsets.retention.minutes`
    /// (counted from the later of the commit and the group becoming empty).
    pub fn expire_offsets(&self) {
        if self.cfg.offsets_retention_ms <= 0 {
            return;
        }
        let now = now_ms();
        let mut groups = self.lock();
        let mut dead = Vec::new();
        for group in groups.values_mut() {
            if !group.members.is_empty() || group.state != GroupState::Empty {
                continue;
            }
            let since = group.state_timestamp_ms;
            let keys: Vec<(String, i32)> = group
                .offsets
                .iter()
                .filter(|(_, v)| {
                    v.commit_timestamp.max(since) + self.cfg.offsets_retention_ms < now
                })
                .map(|(k, _)| k.clone())
                .collect();
            let mut records = remove_offsets(group, &keys);
            if group.offsets.is_empty() {
                records.push((
                    RecordKey::Group {
                        group: group.id.clone(),
                    },
                    None,
                ));
                dead.push(group.id.clone());
            }
            if !keys.is_empty() {
                tracing::info!(group = %group.id, expired = keys.len(), "expired committed offsets of an empty group");
            }
            if !records.is_empty() {
                if let Err(e) = self.store.append(&group.id, &records) {
                    tracing::error!(group = %group.id, error = %e, "writing expiry tombstones failed");
                }
            }
        }
        for id in dead {
            groups.remove(&id);
        }
    }

    /// Starts the timeout and offset-expiry loops.
    pub fn start_background(self: &Arc<Self>, retention_check: Duration) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                me.tick();
            }
        });
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(retention_check);
            tick.tick().await;
            loop {
                tick.tick().await;
                let m = me.clone();
                let done = tokio::task::spawn_blocking(move || {
                    m.expire_offsets();
                    m.compact()
                })
                .await;
                match done {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => {
                        tracing::error!(error = %e, "compacting __consumer_offsets failed")
                    }
                    Err(e) => tracing::error!(error = %e, "offsets maintenance task failed"),
                }
            }
        });
    }

    /// Compacts `__consumer_offsets`: for each partition holding more than
    /// one segment, seals the active segment, rewrites the live state of the
    /// partition's groups (committed offsets and membership) after it, makes
    /// that durable, and deletes everything before it. Replaying the
    /// partition then yields exactly the live state, as after Kafka's log
    /// cleaner. Holds the coordinator lock throughout, so no commit
    /// interleaves. Blocking (fsync): run off the async workers.
    pub fn compact(&self) -> Result<usize, crate::log::LogError> {
        let groups = self.lock();
        let mut compacted = 0;
        for p in 0..self.store.partitions() {
            let Some(log) = self.store.log(p) else {
                continue;
            };
            if log.segment_count() < 2 {
                continue;
            }
            let before = log.size_bytes();
            let start = log.roll()?;
            let mut live = 0usize;
            for g in groups
                .values()
                .filter(|g| self.store.partition_of(&g.id) == p)
            {
                let mut records: Vec<(RecordKey, Option<Bytes>)> = g
                    .offsets
                    .iter()
                    .map(|((t, part), v)| {
                        (
                            RecordKey::Offset {
                                group: g.id.clone(),
                                topic: t.clone(),
                                partition: *part,
                            },
                            Some(v.encode()),
                        )
                    })
                    .collect();
                if g.generation > 0 || !g.members.is_empty() {
                    records.push((
                        RecordKey::Group {
                            group: g.id.clone(),
                        },
                        Some(group_value(g).encode()),
                    ));
                }
                live += records.len();
                if !records.is_empty() {
                    self.store.append(&g.id, &records)?;
                }
            }
            log.flush()?;
            let deleted = log.delete_before(start)?;
            compacted += 1;
            tracing::info!(
                partition = p,
                live_records = live,
                segments_deleted = deleted,
                bytes_before = before,
                bytes_after = log.size_bytes(),
                "compacted __consumer_offsets partition"
            );
        }
        Ok(compacted)
    }

    /// Writes the group's membership (after a rebalance completes or the
    /// group empties) so a restart restores it without a rebalance.
    fn persist_group(&self, group: &Group) {
        let value = group_value(group);
        if let Err(e) = self.store.append(
            &group.id,
            &[(
                RecordKey::Group {
                    group: group.id.clone(),
                },
                Some(value.encode()),
            )],
        ) {
            tracing::error!(group = %group.id, error = %e, "writing group metadata failed");
        }
    }
}

/// A group's membership as stored in `__consumer_offsets`.
fn group_value(group: &Group) -> GroupValue {
    GroupValue {
        protocol_type: group.protocol_type.clone().unwrap_or_default(),
        generation: group.generation,
        protocol: group.protocol_name.clone(),
        leader: group.leader.clone(),
        state_timestamp: group.state_timestamp_ms,
        members: group
            .join_order
            .iter()
            .filter_map(|id| group.members.get(id))
            .map(|m| MemberRecord {
                member_id: m.member_id.clone(),
                group_instance_id: m.group_instance_id.clone(),
                client_id: m.client_id.clone(),
                client_host: m.client_host.clone(),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                session_timeout_ms: m.session_timeout_ms,
                subscription: group
                    .protocol_name
                    .as_deref()
                    .map(|p| m.metadata_for(p))
                    .unwrap_or_default(),
                assignment: m.assignment.clone(),
            })
            .collect(),
    }
}

/// Removes committed offsets from a group and returns their tombstones.
fn remove_offsets(group: &mut Group, keys: &[(String, i32)]) -> Vec<(RecordKey, Option<Bytes>)> {
    keys.iter()
        .filter(|k| group.offsets.remove(*k).is_some())
        .map(|(t, p)| {
            let key = RecordKey::Offset {
                group: group.id.clone(),
                topic: t.clone(),
                partition: *p,
            };
            (key, None)
        })
        .collect()
}

fn sync_error(e: ResponseError) -> SyncResult {
    SyncResult {
        error: e.code(),
        protocol_type: None,
        protocol_name: None,
        assignment: Bytes::new(),
    }
}

/// Membership checks shared by sync, heartbeat and commit.
fn check_member(
    group: &Group,
    member_id: &str,
    instance_id: Option<&str>,
) -> Option<ResponseError> {
    if let Some(i) = instance_id {
        match group.static_members.get(i) {
            Some(id) if id != member_id => return Some(ResponseError::FencedInstanceId),
            _ => {}
        }
    }
    if !group.members.contains_key(member_id) {
        return Some(ResponseError::UnknownMemberId);
    }
    None
}

fn current_join_result(group: &Group, member_id: &str, with_members: bool) -> JoinResult {
    let proto = group.protocol_name.clone().unwrap_or_default();
    JoinResult {
        error: 0,
        generation: group.generation,
        protocol_type: group.protocol_type.clone(),
        protocol_name: group.protocol_name.clone(),
        leader: group.leader.clone().unwrap_or_default(),
        member_id: member_id.to_string(),
        members: if with_members {
            group
                .join_order
                .iter()
                .filter_map(|id| group.members.get(id))
                .map(|m| {
                    (
                        m.member_id.clone(),
                        m.group_instance_id.clone(),
                        m.metadata_for(&proto),
                    )
                })
                .collect()
        } else {
            Vec::new()
        },
        skip_assignment: false,
    }
}

/// Rebuilds membership from a stored `GroupValue`: members get a fresh
/// session to reconnect, and keep their generation and assignment.
fn restore_group(g: &mut Group, v: GroupValue, now: Instant) {
    g.members.clear();
    g.join_order.clear();
    g.static_members.clear();
    g.generation = v.generation;
    g.protocol_name = v.protocol.clone();
    g.leader = v.leader;
    g.state_timestamp_ms = v.state_timestamp;
    g.protocol_type = if v.protocol_type.is_empty() {
        None
    } else {
        Some(v.protocol_type.clone())
    };
    for m in v.members {
        let protocols = v
            .protocol
            .as_ref()
            .map(|p| vec![(p.clone(), m.subscription.clone())])
            .unwrap_or_default();
        g.add_member(Member {
            member_id: m.member_id,
            group_instance_id: m.group_instance_id,
            client_id: m.client_id,
            client_host: m.client_host,
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            session_timeout_ms: m.session_timeout_ms,
            protocol_type: v.protocol_type.clone(),
            protocols,
            assignment: m.assignment,
            last_heartbeat: now,
            awaiting_join: None,
            awaiting_sync: None,
        });
    }
    g.state = if g.members.is_empty() {
        GroupState::Empty
    } else {
        GroupState::Stable
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn setup(
        sets: &[&str],
    ) -> (
        tempfile::TempDir,
        Arc<LogManager>,
        Arc<GroupCoordinator>,
        BrokerConfig,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let mut all = vec![
            "offsets.topic.num.partitions=3".to_string(),
            "group.initial.rebalance.delay.ms=0".to_string(),
        ];
        all.extend(sets.iter().map(|s| s.to_string()));
        let cfg = BrokerConfig::load(None, &all).unwrap();
        let logs = LogManager::open(dir.path(), Arc::new(cfg.clone())).unwrap();
        logs.create_topic("t", 2, 1, BTreeMap::new(), false)
            .unwrap();
        let c = GroupCoordinator::open(logs.clone(), &cfg).unwrap();
        (dir, logs, c, cfg)
    }

    fn join_req(member: &str, instance: Option<&str>) -> JoinRequest {
        JoinRequest {
            group_id: "g".into(),
            member_id: member.into(),
            group_instance_id: instance.map(String::from),
            client_id: "c".into(),
            client_host: "/127.0.0.1".into(),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 10_000,
            protocol_type: "consumer".into(),
            protocols: vec![("range".into(), Bytes::from_static(b"m"))],
            require_known_member_id: true,
            supports_skip_assignment: false,
        }
    }

    /// Runs the KIP-394 handshake for a new dynamic member.
    async fn join_new(c: &GroupCoordinator) -> JoinResult {
        let first = c.join(join_req("", None)).await;
        assert_eq!(first.error, ResponseError::MemberIdRequired.code());
        c.join(join_req(&first.member_id, None)).await
    }

    #[tokio::test]
    async fn two_members_join_sync_and_commit() {
        let (_d, _l, c, _) = setup(&[]);
        let a = join_new(&c).await;
        assert_eq!(a.error, 0);
        assert_eq!(a.generation, 1);
        assert_eq!(a.leader, a.member_id);
        c.sync(
            "g",
            &a.member_id,
            None,
            1,
            None,
            None,
            vec![(a.member_id.clone(), Bytes::from_static(b"A"))],
        )
        .await;
        // A second member triggers a rebalance; A learns it from its heartbeat.
        let c2 = c.clone();
        let b_task = tokio::spawn(async move { join_new(&c2).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            c.heartbeat("g", &a.member_id, None, 1),
            ResponseError::RebalanceInProgress.code()
        );
        let a2 = c.join(join_req(&a.member_id, None)).await;
        let b = b_task.await.unwrap();
        assert_eq!((a2.generation, b.generation), (2, 2));
        assert_eq!(a2.members.len(), 2, "the leader sees every member");
        assert!(b.members.is_empty());
        let c2 = c.clone();
        let bid = b.member_id.clone();
        let b_sync =
            tokio::spawn(async move { c2.sync("g", &bid, None, 2, None, None, vec![]).await });
        let assignments = vec![
            (a.member_id.clone(), Bytes::from_static(b"A")),
            (b.member_id.clone(), Bytes::from_static(b"B")),
        ];
        let sa = c
            .sync(
                "g",
                &a.member_id,
                None,
                2,
                Some("consumer"),
                Some("range"),
                assignments,
            )
            .await;
        assert_eq!(sa.assignment, Bytes::from_static(b"A"));
        assert_eq!(b_sync.await.unwrap().assignment, Bytes::from_static(b"B"));
        assert_eq!(c.heartbeat("g", &b.member_id, None, 2), 0);
        assert_eq!(
            c.heartbeat("g", &b.member_id, None, 1),
            ResponseError::IllegalGeneration.code()
        );
        let commit = vec![
            OffsetCommit {
                topic: "t".into(),
                partition: 0,
                offset: 5,
                leader_epoch: 0,
                metadata: "m".into(),
            },
            OffsetCommit {
                topic: "nope".into(),
                partition: 0,
                offset: 5,
                leader_epoch: 0,
                metadata: String::new(),
            },
        ];
        let codes = c.commit("g", 2, &a.member_id, None, commit.clone()).await;
        assert_eq!(
            codes,
            vec![0, ResponseError::UnknownTopicOrPartition.code()]
        );
        assert_eq!(
            c.commit("g", 1, &a.member_id, None, commit).await[0],
            ResponseError::IllegalGeneration.code()
        );
        let fetched = c.fetch("g", Some(vec![("t".into(), vec![0, 1])]));
        assert_eq!((fetched[0].offset, fetched[0].metadata.as_str()), (5, "m"));
        assert_eq!(fetched[1].offset, -1);
    }

    #[tokio::test]
    async fn static_member_rejoin_keeps_generation_and_fences_old_id() {
        let (_d, _l, c, _) = setup(&[]);
        let a = c.join(join_req("", Some("i-a"))).await;
        assert_eq!(a.error, 0, "static members skip MEMBER_ID_REQUIRED");
        c.sync(
            "g",
            &a.member_id,
            Some("i-a"),
            a.generation,
            None,
            None,
            vec![(a.member_id.clone(), Bytes::from_static(b"A"))],
        )
        .await;
        let c2 = c.clone();
        let b_task = tokio::spawn(async move { c2.join(join_req("", Some("i-b"))).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let a2 = c.join(join_req(&a.member_id, Some("i-a"))).await;
        let b = b_task.await.unwrap();
        let c2 = c.clone();
        let bid = b.member_id.clone();
        let b_sync =
            tokio::spawn(
                async move { c2.sync("g", &bid, Some("i-b"), 2, None, None, vec![]).await },
            );
        c.sync(
            "g",
            &a.member_id,
            Some("i-a"),
            a2.generation,
            None,
            None,
            vec![
                (a.member_id.clone(), Bytes::from_static(b"A")),
                (b.member_id.clone(), Bytes::from_static(b"B")),
            ],
        )
        .await;
        b_sync.await.unwrap();
        // b restarts: new member id, same generation, same assignment.
        let b2 = c.join(join_req("", Some("i-b"))).await;
        assert_eq!(b2.error, 0);
        assert_eq!(b2.generation, 2, "no rebalance");
        assert_ne!(b2.member_id, b.member_id);
        let s = c
            .sync("g", &b2.member_id, Some("i-b"), 2, None, None, vec![])
            .await;
        assert_eq!(s.assignment, Bytes::from_static(b"B"));
        assert_eq!(
            c.heartbeat("g", &b.member_id, Some("i-b"), 2),
            ResponseError::FencedInstanceId.code()
        );
        assert_eq!(c.heartbeat("g", &a.member_id, Some("i-a"), 2), 0);
        // The leader restarts too, with different subscription bytes: still
        // no rebalance, and leadership moves to its new member id.
        let mut r = join_req("", Some("i-a"));
        r.protocols = vec![("range".into(), Bytes::from_static(b"other-metadata"))];
        let a2 = c.join(r).await;
        assert_eq!((a2.error, a2.generation), (0, 2));
        assert_eq!(a2.leader, a2.member_id);
        assert_eq!(c.describe("g").members.len(), 2);
        let s = c
            .sync("g", &a2.member_id, Some("i-a"), 2, None, None, vec![])
            .await;
        assert_eq!(
            s.assignment,
            Bytes::from_static(b"A"),
            "a Stable group keeps its assignment"
        );
    }

    #[tokio::test]
    async fn session_expiry_removes_member_and_empties_group() {
        let (_d, _l, c, _) = setup(&["group.min.session.timeout.ms=0"]);
        let mut r = join_req("", None);
        r.session_timeout_ms = 100;
        r.require_known_member_id = false;
        let a = c.join(r).await;
        c.sync("g", &a.member_id, None, 1, None, None, vec![]).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        c.tick();
        assert_eq!(c.describe("g").state, "Empty");
        assert_eq!(
            c.heartbeat("g", &a.member_id, None, 1),
            ResponseError::UnknownMemberId.code()
        );
    }

    #[tokio::test]
    async fn offsets_and_membership_survive_reopen() {
        let (d, logs, c, cfg) = setup(&[]);
        let a = join_new(&c).await;
        c.sync(
            "g",
            &a.member_id,
            None,
            1,
            None,
            None,
            vec![(a.member_id.clone(), Bytes::from_static(b"A"))],
        )
        .await;
        let commit = vec![OffsetCommit {
            topic: "t".into(),
            partition: 1,
            offset: 42,
            leader_epoch: 0,
            metadata: "meta".into(),
        }];
        assert_eq!(c.commit("g", 1, &a.member_id, None, commit).await, vec![0]);
        c.remove_topic("gone");
        drop(c);
        logs.shutdown().unwrap();
        drop(logs);
        let logs = LogManager::open(d.path(), Arc::new(cfg.clone())).unwrap();
        let c = GroupCoordinator::open(logs, &cfg).unwrap();
        let f = c.fetch("g", None);
        assert_eq!(
            (f[0].partition, f[0].offset, f[0].metadata.as_str()),
            (1, 42, "meta")
        );
        let desc = c.describe("g");
        assert_eq!(desc.state, "Stable");
        assert_eq!(desc.members[0].0, a.member_id);
        assert_eq!(
            c.heartbeat("g", &a.member_id, None, 1),
            0,
            "the member continues without rejoining"
        );
        // Delete the group's topic offsets, then the group.
        c.remove_topic("t");
        assert!(c.fetch("g", None).is_empty());
        assert_eq!(
            c.delete_group("g").await,
            ResponseError::NonEmptyGroup.code()
        );
        c.leave("g", &[(a.member_id.clone(), None)]).unwrap();
        assert_eq!(c.delete_group("g").await, 0);
        assert_eq!(c.describe("g").state, "Dead");
    }

    #[tokio::test]
    async fn offsets_of_empty_groups_expire_durably() {
        let (d, logs, c, cfg) = setup(&["offsets.retention.minutes=1"]);
        let commit = vec![OffsetCommit {
            topic: "t".into(),
            partition: 0,
            offset: 3,
            leader_epoch: 0,
            metadata: String::new(),
        }];
        assert_eq!(c.commit("old", -1, "", None, commit.clone()).await, vec![0]);
        assert_eq!(c.commit("fresh", -1, "", None, commit).await, vec![0]);
        c.expire_offsets();
        assert_eq!(
            c.fetch("old", None).len(),
            1,
            "not expired before the retention"
        );
        {
            let mut groups = c.lock();
            let g = groups.get_mut("old").unwrap();
            for v in g.offsets.values_mut() {
                v.commit_timestamp -= 61_000;
            }
        }
        c.expire_offsets();
        assert!(c.fetch("old", None).is_empty());
        assert_eq!(c.describe("old").state, "Dead");
        assert_eq!(c.fetch("fresh", None).len(), 1);
        drop(c);
        logs.shutdown().unwrap();
        drop(logs);
        let logs = LogManager::open(d.path(), Arc::new(cfg.clone())).unwrap();
        let c = GroupCoordinator::open(logs, &cfg).unwrap();
        assert!(
            c.fetch("old", None).is_empty(),
            "expiry is written as tombstones"
        );
        assert_eq!(c.fetch("fresh", None).len(), 1);
    }

    #[tokio::test]
    async fn compaction_keeps_only_live_state() {
        let (d, logs, c, cfg) = setup(&[
            "offsets.topic.segment.bytes=1024",
            "offsets.topic.num.partitions=1",
        ]);
        let a = join_new(&c).await;
        c.sync(
            "g",
            &a.member_id,
            None,
            1,
            None,
            None,
            vec![(a.member_id.clone(), Bytes::from_static(b"A"))],
        )
        .await;
        for i in 0..300 {
            let commit = vec![OffsetCommit {
                topic: "t".into(),
                partition: i % 2,
                offset: i as i64,
                leader_epoch: 0,
                metadata: String::new(),
            }];
            assert_eq!(c.commit("g", 1, &a.member_id, None, commit).await, vec![0]);
        }
        let commit = vec![OffsetCommit {
            topic: "t".into(),
            partition: 0,
            offset: 1,
            leader_epoch: 0,
            metadata: "x".into(),
        }];
        c.commit("gone", -1, "", None, commit).await;
        assert_eq!(c.delete_group("gone").await, 0);
        let log = logs.partition(super::super::OFFSETS_TOPIC, 0).unwrap();
        let (segments, size) = (log.segment_count(), log.size_bytes());
        assert!(segments > 5, "{segments} segments");
        assert_eq!(c.compact().unwrap(), 1);
        assert!(
            log.segment_count() <= 2 && log.size_bytes() < size / 10,
            "{} segments, {} bytes",
            log.segment_count(),
            log.size_bytes()
        );
        drop(c);
        drop(log);
        logs.shutdown().unwrap();
        drop(logs);
        let logs = LogManager::open(d.path(), Arc::new(cfg.clone())).unwrap();
        let c = GroupCoordinator::open(logs, &cfg).unwrap();
        let f = c.fetch("g", Some(vec![("t".into(), vec![0, 1])]));
        assert_eq!((f[0].offset, f[1].offset), (298, 299));
        assert_eq!(c.describe("g").state, "Stable");
        assert_eq!(c.describe("gone").state, "Dead");
        assert_eq!(c.heartbeat("g", &a.member_id, None, 1), 0);
    }
}
