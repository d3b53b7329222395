//! `Topic`: one topic as a broker holds it — identity, configuration and
//! the partitions it hosts, each over its log. The log manager creates and
//! changes topics; this file only describes one.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use uuid::Uuid;

use crate::log::cleaner_state::CleanerState;
use crate::log::{PartitionLog, SharedConfig};
use crate::partition::Partition;

/// One partition this broker hosts: the partition (role, ISR, writes)
/// over its log, and the cleaner's state for that log, which the cleaner
/// keeps beside the log rather than in it.
#[derive(Debug, Clone)]
pub(super) struct Hosted {
    pub(super) partition: Arc<Partition>,
    pub(super) cleaner: Arc<CleanerState>,
}

impl Hosted {
    pub(super) fn new(log: Arc<PartitionLog>) -> Hosted {
        Hosted {
            partition: Partition::new(log),
            cleaner: Arc::default(),
        }
    }
    pub(super) fn log(&self) -> &Arc<PartitionLog> {
        self.partition.log()
    }
}

/// A topic: its identity, configuration and partition logs.
#[derive(Debug)]
pub struct Topic {
    pub name: String,
    pub id: Uuid,
    pub config: Arc<SharedConfig>,
    pub(super) overrides: RwLock<BTreeMap<String, String>>,
    /// The partitions this broker hosts, by partition number (all of them
    /// on a single broker; in a cluster, its replicas).
    pub(super) partitions: RwLock<Vec<Hosted>>,
    /// The topic's partition count in the cluster.
    pub(super) count: std::sync::atomic::AtomicI32,
    /// The topic came from (or was published to) a cluster's store: only
    /// such a topic is removed when the store no longer has it.
    pub(super) in_cluster: std::sync::atomic::AtomicBool,
}

impl Topic {
    /// A topic whose hosted partitions are `partitions` (sorted).
    pub(super) fn new(
        name: &str,
        id: Uuid,
        config: Arc<SharedConfig>,
        overrides: BTreeMap<String, String>,
        partitions: Vec<Hosted>,
        count: i32,
        in_cluster: bool,
    ) -> Topic {
        Topic {
            name: name.to_string(),
            id,
            config,
            overrides: RwLock::new(overrides),
            partitions: RwLock::new(partitions),
            count: count.into(),
            in_cluster: in_cluster.into(),
        }
    }
    pub(super) fn hosted(&self) -> Vec<Hosted> {
        self.partitions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
    fn find(&self, p: i32) -> Option<Hosted> {
        if p < 0 {
            return None;
        }
        let all = self.partitions.read().unwrap_or_else(|e| e.into_inner());
        match all.get(p as usize) {
            Some(h) if h.partition.partition() == p => Some(h.clone()),
            _ => all
                .binary_search_by_key(&p, |h| h.partition.partition())
                .ok()
                .map(|i| all[i].clone()),
        }
    }
    /// The partitions this broker hosts.
    pub fn partitions(&self) -> Vec<Arc<Partition>> {
        self.hosted().into_iter().map(|h| h.partition).collect()
    }
    /// The logs of the partitions this broker hosts.
    pub fn logs(&self) -> Vec<Arc<PartitionLog>> {
        self.hosted().iter().map(|h| h.log().clone()).collect()
    }
    /// Partition `p`, if this broker hosts it.
    pub fn partition(&self, p: i32) -> Option<Arc<Partition>> {
        self.find(p).map(|h| h.partition)
    }
    /// The log of partition `p`, if this broker hosts it.
    pub fn log(&self, p: i32) -> Option<Arc<PartitionLog>> {
        self.find(p).map(|h| h.log().clone())
    }
    /// The partitions this broker hosts, each with the cleaner's state for
    /// its log (where tiering attaches the bucket's part of it).
    pub fn partitions_with_cleaners(&self) -> Vec<(Arc<Partition>, Arc<CleanerState>)> {
        self.hosted()
            .into_iter()
            .map(|h| (h.partition, h.cleaner))
            .collect()
    }
    /// The topic's partition count (hosted here or not).
    pub fn partition_count(&self) -> usize {
        self.count.load(std::sync::atomic::Ordering::Acquire).max(0) as usize
    }
    /// The topic came from a cluster's store or was published to it.
    pub fn in_cluster(&self) -> bool {
        self.in_cluster.load(std::sync::atomic::Ordering::Acquire)
    }
    /// Whether this broker hosts every partition of the topic.
    pub(super) fn hosts_all(&self) -> bool {
        self.partitions
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .len()
            == self.partition_count()
    }
    pub fn overrides(&self) -> BTreeMap<String, String> {
        self.overrides
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
