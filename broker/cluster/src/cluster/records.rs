//! The records Strata keeps in the cluster store, their keys and their JSON
//! form (docs/cluster-metadata.md has the key layout). Values are JSON so
//! an operator can read them with `etcdctl get --prefix /strata`.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::store::StoreError;

/// The cluster id, written once by the first broker of a cluster.
pub(crate) const CLUSTER_ID_KEY: &str = "cluster_id";
/// The controller's record, attached to its lease. The key's create
/// revision is the controller epoch: every election makes a new one.
pub(crate) const CONTROLLER_KEY: &str = "controller";
/// Live brokers' registrations, one per node id, each on its lease.
pub(crate) const BROKERS_PREFIX: &str = "brokers/";

/// Topics: `topics/<name>`.
pub const TOPICS_PREFIX: &str = "topics/";
/// Partition state: `partitions/<topic>/<partition>`.
pub(crate) const PARTITIONS_PREFIX: &str = "partitions/";
/// Quorum topics' election reports: `replica_reports/<topic>/<p>/<node>`
/// (docs/quorum-acks.md).
pub(crate) const REPORTS_PREFIX: &str = "replica_reports/";

pub(crate) fn broker_key(node_id: i32) -> String {
    format!("{BROKERS_PREFIX}{node_id}")
}

pub(crate) fn topic_key(name: &str) -> String {
    format!("{TOPICS_PREFIX}{name}")
}

pub(crate) fn partition_key(topic: &str, partition: i32) -> String {
    format!("{PARTITIONS_PREFIX}{topic}/{partition}")
}

pub(crate) fn report_key(topic: &str, partition: i32, node_id: i32) -> String {
    format!("{REPORTS_PREFIX}{topic}/{partition}/{node_id}")
}

/// The prefix of one partition's reports.
pub(crate) fn reports_prefix(topic: &str, partition: i32) -> String {
    format!("{REPORTS_PREFIX}{topic}/{partition}/")
}

/// `replica_reports/<topic>/<p>/<node>` → (topic, p, node).
pub(crate) fn parse_report_key(key: &str) -> Option<(&str, i32, i32)> {
    let rest = key.strip_prefix(REPORTS_PREFIX)?;
    let (rest, node) = rest.rsplit_once('/')?;
    let (topic, p) = rest.rsplit_once('/')?;
    Some((topic, p.parse().ok()?, node.parse().ok()?))
}

/// `partitions/<topic>/<p>` → (topic, p).
pub(crate) fn parse_partition_key(key: &str) -> Option<(&str, i32)> {
    let rest = key.strip_prefix(PARTITIONS_PREFIX)?;
    let (topic, p) = rest.rsplit_once('/')?;
    Some((topic, p.parse().ok()?))
}

/// A topic as the cluster knows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicRecord {
    pub id: Uuid,
    pub partitions: i32,
    /// Topic config overrides under Kafka's names.
    #[serde(default)]
    pub configs: std::collections::BTreeMap<String, String>,
}

/// One partition's replicas and leadership (Kafka's `PartitionRegistration`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionState {
    /// Assigned replicas, preferred leader first.
    pub replicas: Vec<i32>,
    /// The leader's node id, -1 while there is none.
    pub leader: i32,
    /// Bumped at every leader change.
    pub leader_epoch: i32,
    /// In-sync replicas (the leader among them).
    pub isr: Vec<i32>,
    /// Bumped at every change of this record (Kafka's partition epoch).
    pub partition_epoch: i32,
    /// During a reassignment (docs/reassignment.md): replicas of the target
    /// that are not replicas yet. They are in `replicas` already.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub adding_replicas: Vec<i32>,
    /// During a reassignment: replicas that leave once every target replica
    /// is in the ISR. They are still in `replicas`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removing_replicas: Vec<i32>,
    /// A quorum topic's leader change under way (docs/quorum-acks.md):
    /// no leader at `leader_epoch` while the ISR's live members stop
    /// following the previous epoch and report their logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fencing: Option<Fencing>,
}

/// Why and from whom a quorum topic's leadership is being moved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fencing {
    /// The leader before the change (-1: none).
    pub previous_leader: i32,
    /// Its broker epoch when fenced (None: it was not live). Only a report
    /// of that same process carries the high watermark it acknowledged up
    /// to; a restarted one's high watermark starts over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_broker_epoch: Option<i64>,
    /// The replica the change was for (a preferred election, a controlled
    /// shutdown's successor), chosen if it holds every acknowledged
    /// record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred: Option<i32>,
}

/// What a replica of a quorum topic holds, reported once it stopped
/// following the epoch before `leader_epoch` (its log fsynced).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaReport {
    /// The fencing epoch this report answers.
    pub leader_epoch: i32,
    /// The reporting broker's epoch (its registration): a report of an
    /// earlier process is not counted.
    pub broker_epoch: i64,
    /// The leader epoch of the newest batch in its log (-1: none).
    pub last_epoch: i32,
    /// Its log end offset (all of it fsynced).
    pub log_end: i64,
    /// Its high watermark.
    pub high_watermark: i64,
    /// The leader epoch this process last led the partition at (-1: it
    /// has not led in this process), and where that epoch starts: a
    /// previous leader whose high watermark reached the start of the
    /// epoch it led at has it at or past every acknowledged record.
    #[serde(default = "minus_one")]
    pub led_epoch: i32,
    #[serde(default)]
    pub epoch_start: i64,
    /// The topic incarnation reported on: a report written as its topic
    /// was deleted never counts for a namesake.
    #[serde(default)]
    pub topic_id: Uuid,
    /// The log was created empty and has not caught up since (a new
    /// replica, a replaced disk): it proves nothing, and says so, so an
    /// unclean election need not wait for it.
    #[serde(default)]
    pub abstains: bool,
}

fn minus_one() -> i32 {
    -1
}

impl PartitionState {
    /// A reassignment is under way.
    pub fn reassigning(&self) -> bool {
        !self.adding_replicas.is_empty() || !self.removing_replicas.is_empty()
    }

    /// The replicas the partition will have once its reassignment
    /// completes (its replicas when none is under way).
    pub(crate) fn target_replicas(&self) -> Vec<i32> {
        self.replicas
            .iter()
            .copied()
            .filter(|id| !self.removing_replicas.contains(id))
            .collect()
    }
}

/// A live broker: what clients are told to connect to, and where it runs.
/// The key's create revision is the broker epoch (Kafka's name): a broker
/// that lost its lease and registered again has a new one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BrokerRegistration {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rack: Option<String>,
    /// Unique per process start: tells two processes claiming one node id
    /// apart.
    pub incarnation: Uuid,
    /// A controlled shutdown is under way: the controller moves its
    /// leaderships away and takes it out of ISRs; it stays a member (and
    /// keeps replicating) until it leaves.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub shutting_down: bool,
    /// Every advertised listener (`host`/`port` are the inter-broker
    /// one's): Metadata answers each client with the addresses of the
    /// listener it connected to. Empty from a broker with one listener.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<ListenerEndpoint>,
}

/// One advertised listener of a broker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListenerEndpoint {
    /// The listener's name, upper case.
    pub name: String,
    pub host: String,
    pub port: i32,
}

impl BrokerRegistration {
    /// Where a client of `listener` reaches this broker: that listener's
    /// endpoint, or the registered one when the broker does not list it.
    pub fn endpoint_for(&self, listener: &str) -> (&str, i32) {
        self.endpoints
            .iter()
            .find(|e| e.name == listener)
            .map_or((self.host.as_str(), self.port), |e| {
                (e.host.as_str(), e.port)
            })
    }
}

/// Who the controller is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControllerRecord {
    pub node_id: i32,
    pub incarnation: Uuid,
}

pub fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    // Serializing these plain structs cannot fail.
    serde_json::to_vec(v).unwrap_or_default()
}

pub fn decode<T: for<'de> Deserialize<'de>>(key: &str, bytes: &[u8]) -> Result<T, StoreError> {
    serde_json::from_slice(bytes)
        .map_err(|e| StoreError::Protocol(format!("unreadable record at `{key}`: {e}")))
}
