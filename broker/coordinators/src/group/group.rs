//! One consumer group's state for the classic rebalance protocol: members,
//! generation, chosen protocol, leader, and the requests parked while a
//! rebalance is in progress. Pure state; the coordinator drives it.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use bytes::Bytes;
use tokio::sync::oneshot;

/// Kafka's group states, with their names as DescribeGroups reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupState {
    Empty,
    PreparingRebalance,
    CompletingRebalance,
    Stable,
    Dead,
}

impl GroupState {
    pub fn name(&self) -> &'static str {
        match self {
            GroupState::Empty => "Empty",
            GroupState::PreparingRebalance => "PreparingRebalance",
            GroupState::CompletingRebalance => "CompletingRebalance",
            GroupState::Stable => "Stable",
            GroupState::Dead => "Dead",
        }
    }
}

/// What a parked JoinGroup request is answered with.
#[derive(Debug, Clone)]
pub struct JoinResult {
    pub error: i16,
    pub generation: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub leader: String,
    pub member_id: String,
    /// (member id, group instance id, metadata) — only for the leader.
    pub members: Vec<(String, Option<String>, Bytes)>,
    /// KIP-814: the leader keeps the current assignment.
    pub skip_assignment: bool,
}

impl JoinResult {
    pub fn error(error: i16, member_id: String) -> Self {
        JoinResult {
            error,
            generation: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            member_id,
            members: Vec::new(),
            skip_assignment: false,
        }
    }
}

/// What a parked SyncGroup request is answered with.
#[derive(Debug, Clone)]
pub struct SyncResult {
    pub error: i16,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

#[derive(Debug)]
pub struct Member {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub protocol_type: String,
    /// (protocol name, metadata) in the member's order of preference.
    pub protocols: Vec<(String, Bytes)>,
    pub assignment: Bytes,
    pub last_heartbeat: Instant,
    pub awaiting_join: Option<oneshot::Sender<JoinResult>>,
    pub awaiting_sync: Option<oneshot::Sender<SyncResult>>,
}

impl Member {
    /// When the member's session expires unless it heartbeats first.
    pub(crate) fn session_deadline(&self) -> Instant {
        self.last_heartbeat
            + std::time::Duration::from_millis(self.session_timeout_ms.max(0) as u64)
    }

    pub(crate) fn metadata_for(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|(n, _)| n == protocol)
            .map(|(_, m)| m.clone())
            .unwrap_or_default()
    }

    pub fn supports(&self, protocol: &str) -> bool {
        self.protocols.iter().any(|(n, _)| n == protocol)
    }

    pub(crate) fn same_protocols(&self, other: &[(String, Bytes)]) -> bool {
        self.protocols == other
    }
}

#[derive(Debug)]
pub struct Group {
    pub id: String,
    pub state: GroupState,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub generation: i32,
    pub leader: Option<String>,
    /// Members by id; `join_order` keeps the order they joined in.
    pub members: HashMap<String, Member>,
    pub join_order: Vec<String>,
    /// Member ids handed out by MEMBER_ID_REQUIRED (KIP-394), not yet joined.
    pub pending_members: HashMap<String, Instant>,
    /// Static membership (KIP-345): group.instance.id → member id.
    pub static_members: HashMap<String, String>,
    /// When the current phase (join or sync) gives up on slow members.
    pub phase_deadline: Option<Instant>,
    /// Initial rebalance delay: the join phase may not end before this.
    pub join_not_before: Option<Instant>,
    pub state_timestamp_ms: i64,
    /// Committed offsets: (topic, partition) → value.
    pub offsets: BTreeMap<(String, i32), super::records::OffsetValue>,
    /// Rebalances completed (generations begun) since this coordinator
    /// loaded the group; not stored.
    pub rebalances: u64,
}

impl Group {
    pub fn new(id: &str) -> Self {
        Group {
            id: id.to_string(),
            state: GroupState::Empty,
            protocol_type: None,
            protocol_name: None,
            generation: 0,
            leader: None,
            members: HashMap::new(),
            join_order: Vec::new(),
            pending_members: HashMap::new(),
            static_members: HashMap::new(),
            phase_deadline: None,
            join_not_before: None,
            state_timestamp_ms: 0,
            offsets: BTreeMap::new(),
            rebalances: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    pub(crate) fn add_member(&mut self, m: Member) {
        if let Some(i) = &m.group_instance_id {
            self.static_members.insert(i.clone(), m.member_id.clone());
        }
        if !self.join_order.contains(&m.member_id) {
            self.join_order.push(m.member_id.clone());
        }
        // The first member of an empty group sets its protocol type; the
        // type outlives the members (DescribeGroups of an empty consumer
        // group still says `consumer`, as Kafka's does).
        if self.members.is_empty() || self.protocol_type.is_none() {
            self.protocol_type = Some(m.protocol_type.clone());
        }
        self.members.insert(m.member_id.clone(), m);
    }

    pub(crate) fn remove_member(&mut self, member_id: &str) -> Option<Member> {
        let m = self.members.remove(member_id)?;
        self.join_order.retain(|id| id != member_id);
        if let Some(i) = &m.group_instance_id {
            if self.static_members.get(i).is_some_and(|id| id == member_id) {
                self.static_members.remove(i);
            }
        }
        if self.leader.as_deref() == Some(member_id) {
            self.leader = self.join_order.first().cloned();
        }
        Some(m)
    }

    /// Protocols every member supports, by votes of each member's first
    /// supported choice (Kafka's `selectProtocol`).
    pub(crate) fn select_protocol(&self) -> Option<String> {
        let first = self
            .join_order
            .first()
            .and_then(|id| self.members.get(id))?;
        let candidates: Vec<&String> = first
            .protocols
            .iter()
            .map(|(n, _)| n)
            .filter(|n| self.members.values().all(|m| m.supports(n)))
            .collect();
        let mut votes: HashMap<&String, usize> = HashMap::new();
        for id in &self.join_order {
            if let Some(m) = self.members.get(id) {
                if let Some((n, _)) = m.protocols.iter().find(|(n, _)| candidates.contains(&n)) {
                    *votes.entry(n).or_default() += 1;
                }
            }
        }
        // Highest vote wins; ties go to the first member's preference order.
        candidates
            .iter()
            .max_by_key(|n| {
                (
                    votes.get(*n).copied().unwrap_or(0),
                    std::cmp::Reverse(candidates.iter().position(|c| c == *n)),
                )
            })
            .map(|n| (*n).clone())
    }

    /// Whether a joining member's protocols are compatible with the group.
    pub fn accepts(&self, protocol_type: &str, protocols: &[(String, Bytes)]) -> bool {
        if self.members.is_empty() {
            return !protocol_type.is_empty() && !protocols.is_empty();
        }
        if self.protocol_type.as_deref() != Some(protocol_type) {
            return false;
        }
        protocols
            .iter()
            .any(|(n, _)| self.members.values().all(|m| m.supports(n)))
    }

    pub(crate) fn max_rebalance_timeout_ms(&self) -> i32 {
        self.members
            .values()
            .map(|m| m.rebalance_timeout_ms)
            .max()
            .unwrap_or(0)
    }

    pub(crate) fn all_joined(&self) -> bool {
        self.pending_members.is_empty() && self.members.values().all(|m| m.awaiting_join.is_some())
    }

    /// The current subscription of members, for OffsetDelete's check.
    pub(crate) fn subscribed_topics(&self) -> Option<std::collections::HashSet<String>> {
        if self.protocol_type.as_deref() != Some("consumer") {
            return None;
        }
        let proto = self.protocol_name.as_deref()?;
        let mut out = std::collections::HashSet::new();
        for m in self.members.values() {
            out.extend(super::subscription::topics(&m.metadata_for(proto))?);
        }
        Some(out)
    }
}
