//! `ClusterView`: this broker's mirror of the cluster store — live brokers
//! and the controller — kept current by a watch on the store's prefix
//! (list once, then watch from the listed revision; on any break, list
//! again). Readers get an immutable snapshot; a change is visible here
//! within the watch's delivery time (milliseconds on loopback).
//!
//! It only reads the store; it never writes.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::records::{
    decode, parse_partition_key, parse_report_key, BrokerRegistration, ControllerRecord,
    PartitionState, ReplicaReport, TopicRecord, BROKERS_PREFIX, CONTROLLER_KEY, TOPICS_PREFIX,
};
use super::store::{ClusterStore, KeyValue, Revision, StoreError, WatchEvent};

/// A live broker and its broker epoch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveBroker {
    pub registration: BrokerRegistration,
    pub broker_epoch: i64,
}

/// The controller and its epoch (its key's create revision).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActiveController {
    pub record: ControllerRecord,
    pub epoch: i64,
}

/// A topic and the revision of its record (for compare-and-swap).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicEntry {
    pub record: TopicRecord,
    pub mod_revision: Revision,
    /// Unique per incarnation of the topic name.
    pub create_revision: Revision,
}

/// A partition's state and the revision of its record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionEntry {
    pub state: PartitionState,
    pub mod_revision: Revision,
    /// When the partition was created (CreateTopics, CreatePartitions).
    pub create_revision: Revision,
}

/// The cluster as of one store revision.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterSnapshot {
    pub revision: Revision,
    pub brokers: BTreeMap<i32, LiveBroker>,
    pub controller: Option<ActiveController>,
    pub topics: BTreeMap<String, Arc<TopicEntry>>,
    /// Topic id → name, for requests that name topics by id.
    pub topic_ids: BTreeMap<uuid::Uuid, String>,
    /// Per topic, its partitions' state (a topic's map is shared between
    /// snapshots until one of its partitions changes).
    pub partitions: BTreeMap<String, Arc<BTreeMap<i32, PartitionEntry>>>,
    /// Quorum topics' election reports, by (topic, partition), then by
    /// reporting node (docs/quorum-acks.md).
    pub reports: BTreeMap<(String, i32), BTreeMap<i32, ReplicaReport>>,
    /// False until the first list succeeded, and while the store is out
    /// of reach (the snapshot is then the last one seen).
    pub connected: bool,
}

impl ClusterSnapshot {
    /// The node ids of live brokers (registered under a lease).
    pub fn live_broker_ids(&self) -> std::collections::BTreeSet<i32> {
        self.brokers.keys().copied().collect()
    }

    /// Every partition of every topic, by topic: what a request that names
    /// no partitions (ElectLeaders, ListPartitionReassignments) covers.
    pub fn all_partitions(&self) -> Vec<(String, Vec<i32>)> {
        self.partitions
            .iter()
            .map(|(t, parts)| (t.clone(), parts.keys().copied().collect()))
            .collect()
    }

    /// The live brokers in a controlled shutdown.
    pub fn draining_broker_ids(&self) -> std::collections::BTreeSet<i32> {
        self.brokers
            .iter()
            .filter(|(_, b)| b.registration.shutting_down)
            .map(|(id, _)| *id)
            .collect()
    }

    pub fn partition(&self, topic: &str, partition: i32) -> Option<&PartitionEntry> {
        self.partitions.get(topic)?.get(&partition)
    }

    pub fn topic(&self, name: &str) -> Option<&TopicEntry> {
        self.topics.get(name).map(|t| t.as_ref())
    }

    /// The topic with this id, if any.
    pub fn topic_by_id(&self, id: uuid::Uuid) -> Option<(&str, &TopicEntry)> {
        let name = self.topic_ids.get(&id)?;
        self.topics.get(name).map(|t| (name.as_str(), t.as_ref()))
    }

    fn apply_put(&mut self, kv: &KeyValue) {
        if let Some(name) = kv.key.strip_prefix(TOPICS_PREFIX) {
            match decode::<TopicRecord>(&kv.key, &kv.value) {
                Ok(record) => {
                    if let Some(old) = self.topics.get(name) {
                        self.topic_ids.remove(&old.record.id);
                    }
                    self.topic_ids.insert(record.id, name.to_string());
                    self.topics.insert(
                        name.to_string(),
                        Arc::new(TopicEntry {
                            record,
                            mod_revision: kv.mod_revision,
                            create_revision: kv.create_revision,
                        }),
                    );
                }
                Err(e) => tracing::warn!(error = %e, "ignored"),
            }
            return;
        }
        if let Some((topic, p)) = parse_partition_key(&kv.key) {
            match decode::<PartitionState>(&kv.key, &kv.value) {
                Ok(state) => {
                    let map = self.partitions.entry(topic.to_string()).or_default();
                    Arc::make_mut(map).insert(
                        p,
                        PartitionEntry {
                            state,
                            mod_revision: kv.mod_revision,
                            create_revision: kv.create_revision,
                        },
                    );
                }
                Err(e) => tracing::warn!(error = %e, "ignored"),
            }
            return;
        }
        if let Some((topic, p, node)) = parse_report_key(&kv.key) {
            match decode::<ReplicaReport>(&kv.key, &kv.value) {
                Ok(r) => {
                    self.reports
                        .entry((topic.to_string(), p))
                        .or_default()
                        .insert(node, r);
                }
                Err(e) => tracing::warn!(error = %e, "ignored"),
            }
            return;
        }
        if let Some(id) = kv.key.strip_prefix(BROKERS_PREFIX) {
            match decode::<BrokerRegistration>(&kv.key, &kv.value) {
                Ok(r) if id.parse() == Ok(r.node_id) => {
                    self.brokers.insert(
                        r.node_id,
                        LiveBroker {
                            registration: r,
                            broker_epoch: kv.create_revision,
                        },
                    );
                }
                Ok(_) => {
                    tracing::warn!(key = %kv.key, "broker record under another node id; ignored")
                }
                Err(e) => tracing::warn!(error = %e, "ignored"),
            }
        } else if kv.key == CONTROLLER_KEY {
            match decode::<ControllerRecord>(&kv.key, &kv.value) {
                Ok(record) => {
                    self.controller = Some(ActiveController {
                        record,
                        epoch: kv.create_revision,
                    })
                }
                Err(e) => tracing::warn!(error = %e, "ignored"),
            }
        }
    }

    fn apply_delete(&mut self, key: &str) {
        if let Some(name) = key.strip_prefix(TOPICS_PREFIX) {
            if let Some(old) = self.topics.remove(name) {
                self.topic_ids.remove(&old.record.id);
            }
        } else if let Some((topic, p)) = parse_partition_key(key) {
            if let Some(map) = self.partitions.get_mut(topic) {
                Arc::make_mut(map).remove(&p);
                if map.is_empty() {
                    self.partitions.remove(topic);
                }
            }
        } else if let Some((topic, p, node)) = parse_report_key(key) {
            let k = (topic.to_string(), p);
            if let Some(map) = self.reports.get_mut(&k) {
                map.remove(&node);
                if map.is_empty() {
                    self.reports.remove(&k);
                }
            }
        } else if let Some(id) = key.strip_prefix(BROKERS_PREFIX) {
            if let Ok(id) = id.parse::<i32>() {
                self.brokers.remove(&id);
            }
        } else if key == CONTROLLER_KEY {
            self.controller = None;
        }
    }

    fn apply(&mut self, events: &[WatchEvent]) {
        for e in events {
            match e {
                WatchEvent::Put(kv) => self.apply_put(kv),
                WatchEvent::Delete { key, .. } => self.apply_delete(key),
            }
            self.revision = self.revision.max(e.revision());
        }
    }
}

#[derive(Debug, Clone)]
pub struct ClusterView {
    rx: watch::Receiver<Arc<ClusterSnapshot>>,
}

impl ClusterView {
    /// Starts mirroring `store`; runs until `shutdown`.
    pub fn start(store: Arc<dyn ClusterStore>, shutdown: watch::Receiver<bool>) -> ClusterView {
        let (tx, rx) = watch::channel(Arc::new(ClusterSnapshot::default()));
        tokio::spawn(mirror(store, tx, shutdown));
        ClusterView { rx }
    }

    pub fn snapshot(&self) -> Arc<ClusterSnapshot> {
        self.rx.borrow().clone()
    }

    /// A receiver that wakes on every change.
    pub fn subscribe(&self) -> watch::Receiver<Arc<ClusterSnapshot>> {
        self.rx.clone()
    }

    /// Waits until the view has seen `revision` (or `timeout` passed).
    pub async fn caught_up_to(&self, revision: Revision, timeout: Duration) -> bool {
        let mut rx = self.rx.clone();
        tokio::time::timeout(timeout, rx.wait_for(|s| s.revision >= revision))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

async fn mirror(
    store: Arc<dyn ClusterStore>,
    tx: watch::Sender<Arc<ClusterSnapshot>>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut backoff = Duration::from_millis(100);
    loop {
        let result = tokio::select! {
            r = list_and_follow(store.as_ref(), &tx) => r,
            _ = shutdown.changed() => return,
        };
        if let Err(e) = result {
            tracing::warn!(store = %store.describe(), error = %e, "cluster metadata watch broken; listing again");
            tx.send_modify(|s| {
                if s.connected {
                    let mut next = (**s).clone();
                    next.connected = false;
                    *s = Arc::new(next);
                }
            });
        }
        tokio::select! {
            _ = tokio::time::sleep(backoff) => {}
            _ = shutdown.changed() => return,
        }
        backoff = (backoff * 2).min(Duration::from_secs(1));
    }
}

async fn list_and_follow(
    store: &dyn ClusterStore,
    tx: &watch::Sender<Arc<ClusterSnapshot>>,
) -> Result<(), StoreError> {
    let (kvs, revision) = store.list("").await?;
    let mut snap = ClusterSnapshot {
        revision,
        connected: true,
        ..ClusterSnapshot::default()
    };
    for kv in &kvs {
        snap.apply_put(kv);
    }
    tx.send_replace(Arc::new(snap.clone()));
    let mut events = store.watch("", revision + 1).await?;
    while let Some(msg) = events.recv().await {
        snap.apply(&msg?);
        tx.send_replace(Arc::new(snap.clone()));
    }
    Err(StoreError::Unavailable("watch ended".to_string()))
}
