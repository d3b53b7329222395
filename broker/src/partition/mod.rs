//! The replica manager (Kafka's `ReplicaManager`): the layer between the
//! Kafka handlers and the partitions' logs. A handler decodes a request,
//! calls this layer and encodes what it answers; the rules of serving a
//! partition live here: who leads it, what a produced batch must be, when
//! a transactional write is verified, and which Kafka error a failure is
//! (`errors.rs`, one table). `docs/partition-layer.md` has the plan this
//! belongs to.
//!
//! - `append.rs`: Produce's appends (`append_records`), in two phases so a
//!   connection appends pipelined requests in order while their acks waits
//!   overlap;
//! - `fetch.rs`: a consumer's fetch, from the local log or the bucket;
//! - `replica_fetch.rs`: a follower's fetch;
//! - `offsets.rs`: ListOffsets and OffsetForLeaderEpoch;
//! - `delete_records.rs`: DeleteRecords and its wait for the replicas;
//! - `admin.rs`: producers, transaction markers, log directories and the
//!   hosted partitions, for the admin and transaction tools;
//! - `errors.rs`: log, sequence and validation errors as Kafka codes.

pub mod admin;
pub mod append;
pub mod delete_records;
pub mod errors;
pub mod fetch;
pub mod offsets;
pub mod replica_fetch;

use std::sync::Arc;

use kafka_protocol::ResponseError;

use crate::cluster::records::BrokerRegistration;
use crate::cluster::Cluster;
use crate::config::BrokerConfig;
use crate::group::GroupCoordinator;
use crate::log::PartitionLog;
use crate::log_manager::LogManager;
use crate::remote::TieredStorage;
use crate::txn::verification::TxnVerifier;
use crate::txn::{TransactionCoordinator, TRANSACTION_STATE_TOPIC};

pub use append::{AppendOutcome, AppendRequest, PendingAppend};

#[derive(Debug)]
pub struct ReplicaManager {
    node_id: i32,
    logs: Arc<LogManager>,
    cluster: Arc<Cluster>,
    txns: Arc<TransactionCoordinator>,
    /// The historical read path asks it which group a reader belongs to
    /// (its priority class).
    groups: Arc<GroupCoordinator>,
    /// Tiered storage (None when `remote.log.storage.system.enable` is off).
    remote: Option<Arc<TieredStorage>>,
    config: Arc<BrokerConfig>,
    /// KIP-890: asks the transaction coordinator before a producer's
    /// first transactional write to a partition this broker leads.
    verifier: TxnVerifier,
}

/// What the replica manager is built from.
pub struct ReplicaManagerParts {
    pub node_id: i32,
    pub logs: Arc<LogManager>,
    pub cluster: Arc<Cluster>,
    pub txns: Arc<TransactionCoordinator>,
    pub groups: Arc<GroupCoordinator>,
    pub remote: Option<Arc<TieredStorage>>,
    pub config: Arc<BrokerConfig>,
    pub verifier: TxnVerifier,
}

impl ReplicaManager {
    pub fn new(parts: ReplicaManagerParts) -> Self {
        ReplicaManager {
            node_id: parts.node_id,
            logs: parts.logs,
            cluster: parts.cluster,
            txns: parts.txns,
            groups: parts.groups,
            remote: parts.remote,
            config: parts.config,
            verifier: parts.verifier,
        }
    }

    /// This broker's rack (`broker.rack`), if set.
    fn rack(&self) -> Option<String> {
        self.config.settings().rack.clone()
    }

    /// Why this broker must not serve `topic`-`partition` as its leader:
    /// the cluster store names another leader, or none. None when it is
    /// the leader, or (a single broker) the store does not know the
    /// partition yet.
    pub fn not_leader(&self, topic: &str, partition: i32) -> Option<ResponseError> {
        let snap = self.cluster.view.snapshot();
        let Some(entry) = snap.partition(topic, partition) else {
            // A cluster serves only what its store holds; a single
            // broker's store mirrors its logs a moment after they change.
            return self
                .cluster
                .clustered
                .then_some(ResponseError::UnknownTopicOrPartition);
        };
        if entry.state.leader != self.node_id {
            return Some(ResponseError::NotLeaderOrFollower);
        }
        // Named leader, but the log does not lead yet (the replica manager
        // applies the change a moment later): the client retries.
        if self
            .logs
            .partition(topic, partition)
            .is_some_and(|l| !l.is_leader())
        {
            return Some(ResponseError::NotLeaderOrFollower);
        }
        if self.cluster.clustered {
            // A broker that lost its registration leads nothing, and a
            // local log of a deleted namesake is not the cluster's topic.
            if !self.cluster.is_registered() {
                return Some(ResponseError::NotLeaderOrFollower);
            }
            let local = self.logs.topic(topic).map(|t| t.id);
            if snap.topic(topic).map(|t| t.record.id) != local {
                return Some(ResponseError::NotLeaderOrFollower);
            }
        }
        None
    }

    /// Why this broker must not serve a consumer's read of
    /// `topic`-`partition` (KIP-392, Fetch v11+): as [`Self::not_leader`],
    /// but an in-sync follower of the store's current leadership may serve
    /// too (up to its own high watermark). A follower outside the ISR
    /// refuses, so a consumer sent to it goes back to the leader rather
    /// than read a lagging copy.
    pub fn not_readable_here(&self, topic: &str, partition: i32) -> Option<ResponseError> {
        let refused = self.not_leader(topic, partition)?;
        if refused != ResponseError::NotLeaderOrFollower || !self.cluster.clustered {
            return Some(refused);
        }
        let snap = self.cluster.view.snapshot();
        let follows = snap.partition(topic, partition).is_some_and(|e| {
            let s = &e.state;
            s.leader >= 0
                && s.leader != self.node_id
                && s.isr.contains(&self.node_id)
                && self.cluster.is_registered()
                && snap.topic(topic).map(|t| t.record.id) == self.logs.topic(topic).map(|t| t.id)
                && self.logs.partition(topic, partition).is_some_and(|l| {
                    l.following() == Some(s.leader) && l.log().leader_epoch() == s.leader_epoch
                })
        });
        (!follows).then_some(refused)
    }

    /// The broker coordinating `key` in internal topic `topic`
    /// (`__consumer_offsets` for a group, `__transaction_state` for a
    /// transactional id): the leader of the key's partition, as the store
    /// says, among `live`. Err explains why there is none right now.
    pub fn coordinator_for(
        &self,
        topic: &str,
        key: &str,
        live: Vec<BrokerRegistration>,
    ) -> Result<BrokerRegistration, String> {
        let snap = self.cluster.view.snapshot();
        let Some(t) = snap.topic(topic) else {
            return Err(format!(
                "{topic} does not exist yet (the controller creates it once enough brokers are live for its replication factor)"
            ));
        };
        let p = crate::group::records::partition_for(key, t.record.partitions);
        let leader = snap
            .partition(topic, p)
            .map(|e| e.state.leader)
            .unwrap_or(-1);
        if leader < 0 {
            return Err(format!("{topic}-{p} has no leader"));
        }
        live.into_iter()
            .find(|r| r.node_id == leader)
            .ok_or_else(|| format!("the leader of {topic}-{p} (broker {leader}) is not live"))
    }

    /// Where a verification goes when this broker does not coordinate
    /// transactional id `id`.
    fn transaction_coordinator(&self, id: &str) -> Result<BrokerRegistration, String> {
        self.coordinator_for(TRANSACTION_STATE_TOPIC, id, self.cluster.live_brokers())
    }
}

/// Checks a request's `current_leader_epoch` (-1: not given) against the
/// epoch this leader appends at (KIP-320): older is FENCED_LEADER_EPOCH,
/// newer UNKNOWN_LEADER_EPOCH.
fn check_current_epoch(log: &PartitionLog, current: i32) -> Result<(), ResponseError> {
    let ours = log.leader_epoch();
    match current {
        c if c < 0 || c == ours => Ok(()),
        c if c < ours => Err(ResponseError::FencedLeaderEpoch),
        _ => Err(ResponseError::UnknownLeaderEpoch),
    }
}
