//! `GroupCoordinator`: Kafka's classic consumer-group protocol for every
//! group on this broker — membership (KIP-394 member ids, KIP-345 static
//! members), rebalances with generations, leader and protocol selection,
//! session and rebalance timeouts, and committed offsets persisted in
//! `__consumer_offsets` and rebuilt from it on start.
//!
//! Requests that must wait for a rebalance park a oneshot sender on their
//! member; `timers.rs` drives every timeout. Assignment stays client-side.
//! JoinGroup and the join phase live in `join.rs`, committed offsets and
//! the offsets log's maintenance in `offsets.rs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::ResponseError;
use tokio::sync::oneshot;

use super::group::{Group, GroupState, JoinResult, Member, SyncResult};
use super::records::{GroupValue, MemberRecord, RecordKey};
use super::store::OffsetsLog;
use strata_common::clock::SharedClock;
use strata_common::config::BrokerConfig;
use strata_storage::log_manager::LogManager;

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
        let s = c.settings();
        CoordinatorConfig {
            min_session_timeout_ms: s.group.min_session_timeout_ms,
            max_session_timeout_ms: s.group.max_session_timeout_ms,
            initial_rebalance_delay_ms: s.group.initial_rebalance_delay_ms,
            offsets_retention_ms: s.group.offsets_retention_ms,
            offset_metadata_max_bytes: s.group.offset_metadata_max_bytes,
            commit_timeout: s.offsets_commit_timeout,
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
    pub(super) groups: Mutex<HashMap<String, Group>>,
    /// Offsets committed in transactions not yet ended (lock after `groups`).
    pub(super) pending_txn: Mutex<super::pending_txn::PendingTxnOffsets>,
    pub(super) store: OffsetsLog,
    /// Orders transaction markers on `__consumer_offsets` with the start
    /// and end of a partition's load (lock before `groups`).
    pub(super) load_gate: Mutex<()>,
    pub(super) logs: Arc<LogManager>,
    pub(super) cfg: CoordinatorConfig,
    /// Lag, lag age and catch-up estimates of the groups here (`lag.rs`).
    pub lag: super::lag::LagTracker,
    /// High watermarks of partitions whose log is on other brokers, from
    /// their leaders (`remote_lag.rs`).
    pub remote: super::remote_lag::RemoteWatermarks,
    /// In a cluster: whether a partition this broker hosts no replica of
    /// exists (the cluster view), so groups can commit offsets for it.
    cluster_partitions: ClusterPartitions,
    /// Sessions, rebalance deadlines, commit and expiry times.
    pub(super) clock: SharedClock,
}

/// Whether `topic`/`partition` exists in the cluster.
pub(crate) type PartitionKnown = Arc<dyn Fn(&str, i32) -> bool + Send + std::marker::Sync>;

/// The cluster's partitions, once known (a single broker has none).
#[derive(Default)]
struct ClusterPartitions(std::sync::OnceLock<PartitionKnown>);

impl std::fmt::Debug for ClusterPartitions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.get().is_some() {
            "cluster"
        } else {
            "local"
        })
    }
}

pub(super) fn code(e: ResponseError) -> i16 {
    e.code()
}

enum Sync {
    Now(SyncResult),
    Parked(oneshot::Receiver<SyncResult>),
}

impl GroupCoordinator {
    /// Opens `__consumer_offsets`. No group is served until the
    /// partitions this broker leads are loaded (`loading.rs`).
    pub fn open(
        logs: Arc<LogManager>,
        broker: &BrokerConfig,
        clustered: bool,
        clock: SharedClock,
    ) -> Result<Arc<Self>, strata_storage::open_error::OpenError> {
        let store = OffsetsLog::open(
            logs.clone(),
            broker.settings().offsets_topic.num_partitions,
            clustered,
        )
        .map_err(|source| strata_storage::open_error::OpenError::Topic {
            topic: super::OFFSETS_TOPIC.to_string(),
            source,
        })?;
        Ok(Arc::new(GroupCoordinator {
            groups: Mutex::new(HashMap::new()),
            pending_txn: Mutex::new(super::pending_txn::PendingTxnOffsets::default()),
            store,
            load_gate: Mutex::new(()),
            logs,
            cfg: CoordinatorConfig::from_broker(broker),
            lag: super::lag::LagTracker::new(broker.settings().group.lag_window),
            remote: Default::default(),
            cluster_partitions: ClusterPartitions::default(),
            clock,
        }))
    }

    /// The consumer group a fetching client reads `topic`/`partition` for:
    /// a member with this client id and host that is assigned the
    /// partition (Fetch requests do not name their group).
    pub fn group_of_reader(
        &self,
        client_id: &str,
        client_host: &str,
        topic: &str,
        partition: i32,
    ) -> Option<String> {
        let groups = self.lock();
        groups
            .values()
            .find(|g| {
                g.members.values().any(|m| {
                    m.client_id == client_id
                        && m.client_host == client_host
                        && super::subscription::assigned(&m.assignment, topic, partition)
                })
            })
            .map(|g| g.id.clone())
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, HashMap<String, Group>> {
        self.groups.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(test)]
    pub(crate) fn partition_of(&self, group: &str) -> i32 {
        self.store.partition_of(group)
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
                        m.last_heartbeat = self.clock.now();
                    }
                    if group.leader.as_deref() == Some(member_id) {
                        let mut by_member: HashMap<String, Bytes> =
                            assignments.into_iter().collect();
                        for m in group.members.values_mut() {
                            m.assignment = by_member.remove(&m.member_id).unwrap_or_default();
                        }
                        group.state = GroupState::Stable;
                        group.phase_deadline = None;
                        group.state_timestamp_ms = self.clock.now_ms();
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
            m.last_heartbeat = self.clock.now();
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
        let now = self.clock.now();
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

    pub(super) fn after_member_removed(&self, group: &mut Group, now: Instant) {
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

    // ------------------------------------------------------ describe, list

    /// [`Self::describe`] on the coordinator of `group_id` only (checked
    /// under the groups' lock).
    pub fn describe_checked(&self, group_id: &str) -> Result<GroupDescription, ResponseError> {
        let groups = self.lock();
        self.check_coordinator(group_id)?;
        Ok(Self::describe_from(&groups, group_id))
    }

    pub fn describe(&self, group_id: &str) -> GroupDescription {
        let groups = self.lock();
        Self::describe_from(&groups, group_id)
    }

    fn describe_from(groups: &HashMap<String, Group>, group_id: &str) -> GroupDescription {
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

    /// In a cluster: tells the coordinator which partitions exist beyond
    /// the ones this broker hosts (offsets may be committed for any).
    pub fn set_cluster_partitions(&self, known: PartitionKnown) {
        let _ = self.cluster_partitions.0.set(known);
    }

    /// Whether offsets may be committed for `topic`/`partition`: it is
    /// hosted here, or the cluster has it.
    pub(super) fn partition_exists(&self, topic: &str, partition: i32) -> bool {
        self.logs.partition(topic, partition).is_some()
            || self
                .cluster_partitions
                .0
                .get()
                .is_some_and(|known| known(topic, partition))
    }

    /// How often lag is sampled.
    pub(super) fn lag_interval(&self) -> Duration {
        self.logs
            .broker_config()
            .settings()
            .group
            .lag_sample_interval
    }

    /// Every group's committed offsets with their partitions' high
    /// watermarks: from the local log, or (a partition this broker does
    /// not host) from its leader's last answer. One lag sample.
    pub fn lag_observations(&self) -> Vec<super::lag::Observation> {
        let max_age = self.lag_interval() * 3 + Duration::from_secs(1);
        let committed: Vec<(String, String, i32, i64)> = {
            let groups = self.lock();
            groups
                .values()
                .flat_map(|g| {
                    g.offsets
                        .iter()
                        .map(|((t, p), v)| (g.id.clone(), t.clone(), *p, v.offset))
                })
                .collect()
        };
        committed
            .into_iter()
            .filter(|(_, _, _, offset)| *offset >= 0)
            .filter_map(|(group, topic, partition, committed)| {
                let high_watermark = match self.logs.log(&topic, partition) {
                    Some(log) => log.high_watermark(),
                    None => self.remote.high_watermark(&topic, partition, max_age)?,
                };
                Some(super::lag::Observation {
                    group,
                    topic,
                    partition,
                    committed,
                    high_watermark,
                })
            })
            .collect()
    }

    /// Takes one round of lag samples (blocking: reads batch headers).
    pub(crate) fn sample_lag(&self) {
        let obs = self.lag_observations();
        self.lag.record(
            self.clock.now(),
            &obs,
            |topic, partition, offset| match self.logs.log(topic, partition) {
                Some(l) => l.batch_timestamp_at(offset).ok().flatten(),
                None => self.remote.timestamp_at(topic, partition, offset),
            },
        );
    }

    /// Completed rebalances of each group since this coordinator loaded it.
    pub(crate) fn rebalances(&self) -> Vec<(String, u64)> {
        let groups = self.lock();
        let mut v: Vec<(String, u64)> = groups
            .values()
            .map(|g| (g.id.clone(), g.rebalances))
            .collect();
        v.sort();
        v
    }

    /// (group id, protocol type, state) of every group.
    pub fn list(&self) -> Vec<(String, String, &'static str)> {
        self.list_typed("consumer")
    }

    /// [`Self::list`], naming the protocol type of a group that only has
    /// committed offsets (no member ever joined) `offsets_only`: ListGroups
    /// answers "" as Kafka does; Strata's own tools say "consumer".
    pub fn list_typed(&self, offsets_only: &str) -> Vec<(String, String, &'static str)> {
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
                            offsets_only.to_string()
                        }
                    }),
                    g.state.name(),
                )
            })
            .collect();
        v.sort();
        v
    }

    /// Writes the group's membership (after a rebalance completes or the
    /// group empties) so a restart restores it without a rebalance.
    pub(super) fn persist_group(&self, group: &Group) {
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
pub(super) fn group_value(group: &Group) -> GroupValue {
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

pub(super) fn sync_error(e: ResponseError) -> SyncResult {
    SyncResult {
        error: e.code(),
        protocol_type: None,
        protocol_name: None,
        assignment: Bytes::new(),
    }
}

/// Membership checks shared by sync, heartbeat and commit.
pub(super) fn check_member(
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

pub(super) fn current_join_result(
    group: &Group,
    member_id: &str,
    with_members: bool,
) -> JoinResult {
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
pub(super) fn restore_group(g: &mut Group, v: GroupValue, now: Instant) {
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
#[path = "coordinator_tests.rs"]
mod tests;
