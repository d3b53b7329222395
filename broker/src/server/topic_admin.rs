//! Topic administration for the handlers, on a single broker or in a
//! cluster. A single broker changes its data directory (the authority)
//! and waits until the embedded store mirrors it; in a cluster the store
//! is the authority: the change is a guarded transaction any broker may
//! make (docs/cluster.md), replicas are assigned over the live brokers,
//! and the handler waits until its own broker follows the new revision.
//! Either way, a client that reads Metadata after the response sees the
//! change.

use std::collections::BTreeMap;

use kafka_protocol::ResponseError;
use uuid::Uuid;

use super::Broker;
use crate::cluster::assignment::{assign, Candidate};
use crate::cluster::quorum::QUORUM_ACK;
use crate::cluster::records::TopicRecord;
use crate::cluster::topics as store_topics;
use crate::cluster::view::ClusterSnapshot;
use crate::config::{self, TopicConfig};
use crate::topic_error::TopicError;
use crate::topic_name::validate_topic_name;

/// What a created (or validated) topic looks like.
#[derive(Debug, Clone)]
pub struct CreatedTopic {
    pub id: Uuid,
    pub partitions: i32,
    pub replication_factor: i32,
    pub overrides: BTreeMap<String, String>,
}

/// Runs blocking storage work (file creation, fsync) off the async workers.
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

/// The Kafka error a refused topic change is answered with.
pub fn error_code(e: &TopicError) -> ResponseError {
    match e {
        TopicError::AlreadyExists(_) => ResponseError::TopicAlreadyExists,
        TopicError::UnknownTopic(_) => ResponseError::UnknownTopicOrPartition,
        TopicError::InvalidName(_) => ResponseError::InvalidTopicException,
        TopicError::InvalidPartitions(_) => ResponseError::InvalidPartitions,
        TopicError::InvalidReplicationFactor(_) => ResponseError::InvalidReplicationFactor,
        TopicError::InvalidConfig(_) => ResponseError::InvalidConfig,
        TopicError::DeletionDisabled => ResponseError::TopicDeletionDisabled,
        TopicError::InternalTopic(_) => ResponseError::InvalidRequest,
        TopicError::Unavailable(_) => ResponseError::RequestTimedOut,
        TopicError::Io(_)
        | TopicError::Log(_)
        | TopicError::Encode(_)
        | TopicError::Interrupted => ResponseError::KafkaStorageError,
    }
}

fn store_error(e: crate::cluster::ClusterStoreError) -> TopicError {
    TopicError::Unavailable(e.to_string())
}

/// Any factor from 1 to the live broker count (Kafka's rule).
fn check_replication_factor(rf: i32, live: usize) -> Result<(), TopicError> {
    if rf < 1 {
        return Err(TopicError::InvalidReplicationFactor(format!(
            "Replication factor must be larger than 0, got {rf}."
        )));
    }
    if rf as usize > live {
        return Err(TopicError::InvalidReplicationFactor(format!(
            "Replication factor: {rf} larger than available brokers: {live}."
        )));
    }
    Ok(())
}

fn candidates(b: &Broker) -> Vec<Candidate> {
    b.live_brokers()
        .into_iter()
        .map(|r| Candidate {
            node_id: r.node_id,
            rack: r.rack,
        })
        .collect()
}

fn seed() -> u64 {
    let id = Uuid::new_v4().as_u64_pair();
    id.0 ^ id.1
}

/// Checks explicit replica assignments against the live brokers.
pub fn check_assignment(b: &Broker, assignment: &[Vec<i32>]) -> Result<(), String> {
    let live: Vec<i32> = b.live_brokers().iter().map(|r| r.node_id).collect();
    for (p, replicas) in assignment.iter().enumerate() {
        let mut sorted = replicas.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if replicas.is_empty() || sorted.len() != replicas.len() {
            return Err(format!(
                "Partition {p} must be assigned to distinct brokers, got {replicas:?}"
            ));
        }
        if let Some(bad) = replicas.iter().find(|id| !live.contains(id)) {
            return Err(format!(
                "Partition {p} is assigned to broker {bad}, which is not a live broker (live: {live:?})"
            ));
        }
        check_replication_factor(replicas.len() as i32, live.len()).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Creates a topic. `partitions`/`rf` of -1 mean the broker defaults;
/// `assignment` (already checked) overrides both.
pub async fn create_topic(
    b: &Broker,
    name: &str,
    partitions: i32,
    rf: i32,
    assignment: Option<Vec<Vec<i32>>>,
    configs: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<CreatedTopic, TopicError> {
    if !b.cluster.clustered {
        let logs = b.logs.clone();
        let n = name.to_string();
        let (p, r) = match &assignment {
            Some(a) => (a.len() as i32, 1),
            None => (partitions, rf),
        };
        let topic = blocking(move || logs.create_topic(&n, p, r as i16, configs, validate_only))
            .await
            .unwrap_or(Err(TopicError::Interrupted))?;
        b.cluster.topics_synced().await;
        let count = if validate_only && p == -1 {
            b.config.settings().num_partitions
        } else if validate_only {
            p
        } else {
            topic.partition_count() as i32
        };
        return Ok(CreatedTopic {
            id: if validate_only { Uuid::nil() } else { topic.id },
            partitions: count,
            replication_factor: 1,
            overrides: topic.overrides(),
        });
    }
    validate_topic_name(name)?;
    let partitions = if partitions == -1 {
        b.config.settings().num_partitions
    } else {
        partitions
    };
    let rf = if rf == -1 {
        b.config.settings().default_replication_factor
    } else {
        rf
    };
    let assignment = match assignment {
        Some(a) => a,
        None => {
            if partitions <= 0 {
                return Err(TopicError::InvalidPartitions(format!(
                    "Number of partitions was set to an invalid non-positive value: {partitions}"
                )));
            }
            let brokers = candidates(b);
            check_replication_factor(rf, brokers.len())?;
            assign(&brokers, 0, partitions, rf, seed())
                .map_err(|e| TopicError::InvalidReplicationFactor(e.to_string()))?
        }
    };
    let mut configs = configs;
    config::validate_overrides(&configs).map_err(TopicError::InvalidConfig)?;
    TopicConfig::resolve(&b.config, &configs)
        .check_consistency()
        .map_err(TopicError::InvalidConfig)?;
    // A quorum topic's k is its own from creation: every broker and the
    // controller read one value, and it never changes (docs/quorum-acks.md).
    if is_quorum(&configs) {
        configs
            .entry("min.insync.replicas".to_string())
            .or_insert_with(|| b.config.settings().min_insync_replicas.to_string());
    }
    if b.cluster.view.snapshot().topic(name).is_some() {
        return Err(TopicError::AlreadyExists(name.to_string()));
    }
    let created = CreatedTopic {
        id: if validate_only {
            Uuid::nil()
        } else {
            Uuid::new_v4()
        },
        partitions: assignment.len() as i32,
        replication_factor: assignment.first().map_or(0, |r| r.len() as i32),
        overrides: configs.clone(),
    };
    if validate_only {
        return Ok(created);
    }
    let revision = store_topics::create_topic(
        b.cluster.store.as_ref(),
        name,
        created.id,
        configs,
        &assignment,
    )
    .await
    .map_err(store_error)?
    .ok_or_else(|| TopicError::AlreadyExists(name.to_string()))?;
    b.cluster.applied(revision).await;
    tracing::info!(
        topic = name,
        partitions = created.partitions,
        "created topic in the cluster"
    );
    Ok(created)
}

/// Deletes a topic (never a coordinator's internal topic); returns its id.
pub async fn delete_topic(b: &Broker, name: &str) -> Result<Uuid, TopicError> {
    if crate::topic_name::is_coordinator_topic(name) {
        return Err(TopicError::InternalTopic(name.to_string()));
    }
    let id = if !b.cluster.clustered {
        let logs = b.logs.clone();
        let n = name.to_string();
        let t = blocking(move || logs.delete_topic(&n))
            .await
            .unwrap_or(Err(TopicError::Interrupted))?;
        b.cluster.topics_synced().await;
        t.id
    } else {
        if !b.config.settings().delete_topic_enable {
            return Err(TopicError::DeletionDisabled);
        }
        let snap = b.cluster.view.snapshot();
        let entry = snap
            .topic(name)
            .ok_or_else(|| TopicError::UnknownTopic(name.to_string()))?;
        let revision =
            store_topics::delete_topic(b.cluster.store.as_ref(), name, entry.mod_revision)
                .await
                .map_err(store_error)?
                .ok_or_else(|| TopicError::UnknownTopic(name.to_string()))?;
        b.cluster.applied(revision).await;
        entry.record.id
    };
    b.groups.remove_topic(name);
    if let Some(r) = &b.remote {
        r.topic_deleted(name.to_string(), id.to_string());
    }
    Ok(id)
}

/// Raises a topic's partition count to `count`.
pub async fn create_partitions(
    b: &Broker,
    name: &str,
    count: i32,
    assignment: Option<Vec<Vec<i32>>>,
    validate_only: bool,
) -> Result<(), TopicError> {
    if !b.cluster.clustered {
        let logs = b.logs.clone();
        let n = name.to_string();
        blocking(move || logs.create_partitions(&n, count, validate_only))
            .await
            .unwrap_or(Err(TopicError::Interrupted))?;
        b.cluster.topics_synced().await;
        return Ok(());
    }
    let snap = b.cluster.view.snapshot();
    let entry = snap
        .topic(name)
        .ok_or_else(|| TopicError::UnknownTopic(name.to_string()))?;
    let current = entry.record.partitions;
    if count <= current {
        return Err(TopicError::InvalidPartitions(format!(
            "Topic currently has {current} partitions, which is higher than or equal to the requested {count}."
        )));
    }
    let new = match assignment {
        Some(a) if a.len() as i32 != count - current => {
            return Err(TopicError::InvalidPartitions(format!(
                "Increasing the number of partitions by {} but {} assignments provided.",
                count - current,
                a.len()
            )))
        }
        Some(a) => a,
        None => {
            // New partitions keep the topic's replication factor.
            let rf = snap
                .partition(name, 0)
                .map_or(1, |e| e.state.replicas.len() as i32);
            assign(&candidates(b), current, count - current, rf, seed())
                .map_err(|e| TopicError::InvalidReplicationFactor(e.to_string()))?
        }
    };
    if validate_only {
        return Ok(());
    }
    let revision = store_topics::add_partitions(
        b.cluster.store.as_ref(),
        name,
        &entry.record,
        (entry.create_revision, entry.mod_revision),
        &new,
    )
    .await
    .map_err(store_error)?
    .ok_or_else(|| {
        TopicError::InvalidPartitions(format!("topic {name} changed meanwhile; try again"))
    })?;
    b.cluster.applied(revision).await;
    Ok(())
}

/// Replaces a topic's config overrides.
pub async fn set_topic_configs(
    b: &Broker,
    name: &str,
    overrides: BTreeMap<String, String>,
    validate_only: bool,
) -> Result<(), TopicError> {
    if !b.cluster.clustered {
        let logs = b.logs.clone();
        let n = name.to_string();
        blocking(move || logs.set_topic_overrides(&n, overrides, validate_only))
            .await
            .unwrap_or(Err(TopicError::Interrupted))?;
        b.cluster.topics_synced().await;
        return Ok(());
    }
    config::validate_overrides(&overrides).map_err(TopicError::InvalidConfig)?;
    TopicConfig::resolve(&b.config, &overrides)
        .check_consistency()
        .map_err(TopicError::InvalidConfig)?;
    let snap = b.cluster.view.snapshot();
    let entry = snap
        .topic(name)
        .ok_or_else(|| TopicError::UnknownTopic(name.to_string()))?;
    // Turning the quorum acknowledgement off would leave acknowledged
    // records on fewer replicas than an ISR election assumes; turning it
    // on under way is not built: it is the topic's from its creation, and
    // so is its k (a larger one would shrink the reports an election
    // needs below what proves a leader).
    if is_quorum(&entry.record.configs) != is_quorum(&overrides) {
        return Err(TopicError::InvalidConfig(format!(
            "{QUORUM_ACK} is set when a topic is created and cannot be changed (topic {name})"
        )));
    }
    let min_isr = |c: &BTreeMap<String, String>| c.get("min.insync.replicas").cloned();
    if is_quorum(&overrides) && min_isr(&entry.record.configs) != min_isr(&overrides) {
        return Err(TopicError::InvalidConfig(format!(
            "min.insync.replicas of a topic with {QUORUM_ACK}=true is set when it is created and cannot be changed (topic {name})"
        )));
    }
    if validate_only {
        return Ok(());
    }
    let revision = store_topics::set_configs(
        b.cluster.store.as_ref(),
        name,
        &entry.record,
        entry.mod_revision,
        overrides,
    )
    .await
    .map_err(store_error)?
    .ok_or_else(|| {
        TopicError::InvalidConfig(format!("topic {name} changed meanwhile; try again"))
    })?;
    b.cluster.applied(revision).await;
    Ok(())
}

/// The topic configs ask for the quorum acknowledgement.
fn is_quorum(configs: &BTreeMap<String, String>) -> bool {
    configs
        .get(QUORUM_ACK)
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// A topic as the cluster store knows it (what Metadata and the admin API
/// show).
#[derive(Debug, Clone)]
pub struct TopicView {
    pub name: String,
    pub id: Uuid,
    /// A coordinator's internal topic.
    pub internal: bool,
    pub partitions: Vec<PartitionView>,
}

/// A partition as the cluster store knows it.
#[derive(Debug, Clone)]
pub struct PartitionView {
    pub partition: i32,
    /// -1: none (LEADER_NOT_AVAILABLE).
    pub leader: i32,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// Replicas on brokers not alive.
    pub offline: Vec<i32>,
}

impl TopicView {
    /// The largest replica count of its partitions.
    pub fn replication_factor(&self) -> usize {
        self.partitions
            .iter()
            .map(|p| p.replicas.len())
            .max()
            .unwrap_or(0)
    }
}

/// `topic` as `snap` knows it: each partition's leader, leader epoch,
/// replicas, in-sync replicas and replicas on brokers not alive.
pub fn topic_view(name: &str, topic: &TopicRecord, snap: &ClusterSnapshot) -> TopicView {
    TopicView {
        name: name.to_string(),
        id: topic.id,
        internal: crate::topic_name::is_coordinator_topic(name),
        partitions: (0..topic.partitions)
            .map(|p| match snap.partition(name, p) {
                Some(e) => {
                    let st = &e.state;
                    PartitionView {
                        partition: p,
                        leader: st.leader,
                        leader_epoch: st.leader_epoch,
                        replicas: st.replicas.clone(),
                        isr: st.isr.clone(),
                        offline: st
                            .replicas
                            .iter()
                            .filter(|id| !snap.brokers.contains_key(id))
                            .copied()
                            .collect(),
                    }
                }
                None => PartitionView {
                    partition: p,
                    leader: -1,
                    leader_epoch: -1,
                    replicas: Vec::new(),
                    isr: Vec::new(),
                    offline: Vec::new(),
                },
            })
            .collect(),
    }
}

/// Every topic of the cluster.
pub fn all_topics(b: &Broker) -> Vec<TopicView> {
    let snap = b.cluster.view.snapshot();
    snap.topics
        .iter()
        .map(|(name, t)| topic_view(name, &t.record, &snap))
        .collect()
}

/// One topic of the cluster; an invalid name or an unknown topic is the
/// error Metadata answers for it.
pub fn find_topic(b: &Broker, name: &str) -> Result<TopicView, TopicError> {
    let snap = b.cluster.view.snapshot();
    if let Some(topic) = snap.topic(name) {
        return Ok(topic_view(name, &topic.record, &snap));
    }
    validate_topic_name(name)?;
    Err(TopicError::UnknownTopic(name.to_string()))
}

/// An existing topic whose name equals `name` once '.' and '_' are the same
/// character (they collide in metric names): Kafka refuses the new topic.
pub fn colliding<'a>(name: &str, existing: &'a [String]) -> Option<&'a str> {
    let key = name.replace('.', "_");
    existing
        .iter()
        .find(|e| e.as_str() != name && e.replace('.', "_") == key)
        .map(String::as_str)
}

/// The names of every topic the cluster or this broker knows (for the
/// collision rule).
pub fn existing_topic_names(b: &Broker) -> Vec<String> {
    let snap = b.cluster.view.snapshot();
    let mut v: Vec<String> = snap.topics.keys().cloned().collect();
    v.extend(b.replicas.hosted_topics());
    v
}
