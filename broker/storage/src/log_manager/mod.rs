//! `LogManager`: the topic registry of one broker and the owner of its data
//! directory — topic metadata, partition logs, checkpoints, the clean
//! shutdown marker, and the background retention and checkpoint loops.
//!
//! Layout (docs/storage-layout.md): `meta.properties`, `__topics/<name>.json`
//! (id, partition count, config overrides), `<topic>-<partition>/` segment
//! directories, `recovery-point-offset-checkpoint`,
//! `log-start-offset-checkpoint`, `.kafka_cleanshutdown`.
//! Admin operations are blocking and serialized; call them off the async
//! workers. This module never speaks the wire protocol.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::log::checkpoint::{self, Offsets};
use crate::log::cleaner_state::CleanerState;
use crate::log::group_commit::CommitLatencySink;
use crate::log::partition_log::partition_dir_name;
use crate::log::{LogError, PartitionLog, SharedConfig};
use crate::meta_properties;
use crate::partition::Partition;
use strata_common::clock::SharedClock;
use strata_common::config::{self, BrokerConfig, TopicConfig};
use strata_common::durable_file::{fsync_dir, write_atomically};

mod hosted;
pub mod metrics;
mod restore;
#[cfg(test)]
mod tests;
mod topic;

use topic::Hosted;
pub use topic::Topic;

/// Where topic metadata lives in the data directory (no topic may take the name).
const CLEAN_SHUTDOWN: &str = ".kafka_cleanshutdown";
const RECOVERY_POINTS: &str = "recovery-point-offset-checkpoint";
const LOG_START_OFFSETS: &str = "log-start-offset-checkpoint";
const LOCK_FILE: &str = ".lock";
/// Where retired topic copies are kept (`retire_topic`).
const RETIRED_DIR: &str = "retired";
use crate::open_error::OpenError;
use strata_common::topic_name::TOPICS_DIR;
pub use strata_common::topic_name::{validate_topic_name, InvalidTopicName, MAX_TOPIC_NAME_LEN};

pub use crate::topic_error::TopicError;

#[derive(Debug, Serialize, Deserialize)]
struct TopicRecord {
    name: String,
    id: Uuid,
    partitions: u32,
    configs: BTreeMap<String, String>,
    /// The partitions this broker hosts, when not all of them (a replica
    /// set in a cluster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hosted: Option<Vec<i32>>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    in_cluster: bool,
}

/// A partition recreated from the object store: where it starts, and the
/// producer state as of that offset.
#[derive(Debug, Clone)]
pub struct RestoredPartition {
    pub start_offset: i64,
    pub producer_snapshot: Option<Vec<u8>>,
    /// The newest leader epoch the catalog knows (of its claim or its last
    /// segment): the restored log's epoch cache starts there, so that a
    /// cluster publishing it leads at that epoch, not below it.
    pub leader_epoch: Option<i32>,
}

#[derive(Debug)]
pub struct LogManager {
    /// Tiered storage runs: retention of tiered topics belongs to it.
    tiering: std::sync::atomic::AtomicBool,
    data_dir: PathBuf,
    broker: Arc<BrokerConfig>,
    cluster_id: String,
    topics: RwLock<HashMap<String, Arc<Topic>>>,
    admin: Mutex<()>,
    _lock: fs::File,
    /// Bumped at every change of the topic set, a partition count or a
    /// topic's configs (the embedded cluster store mirrors them).
    changes: tokio::sync::watch::Sender<u64>,
    /// Bumped after the replica manager applied the store's roles (leads
    /// or follows) to the logs: the coordinators follow leadership.
    roles: tokio::sync::watch::Sender<u64>,
    /// Where the flush rounds of every partition of user topics report how
    /// long appends took to become durable: the hot path's latency, which
    /// the broker's adaptive history rate watches and `/metrics` exports.
    /// Internal topics stay out: their appends are offset commits, which
    /// readers of history make too.
    commit_latency: Option<Arc<dyn CommitLatencySink>>,
    /// The log cleaner's threads, once started; stopped (and joined) by
    /// `shutdown` before the logs are closed.
    cleaners: Mutex<Option<crate::log::cleaner::Cleaners>>,
    /// The clock every partition log, retention pass and cleaner reads.
    clock: SharedClock,
    /// The retention and checkpoint loops (`start_background`), joined by
    /// `stop_background`, and the signal that ends them.
    background: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    stop_background: tokio::sync::watch::Sender<bool>,
}

/// How long `shutdown` waits for a cleaning pass in progress to end.
const CLEANER_STOP_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

impl LogManager {
    /// Opens (or initialises) the data directory and every topic in it,
    /// running recovery if the last shutdown was not clean. User topics'
    /// commit latencies go to `commit_latency`, if given.
    pub fn open(
        data_dir: &Path,
        broker: Arc<BrokerConfig>,
        commit_latency: Option<Arc<dyn CommitLatencySink>>,
        clock: SharedClock,
    ) -> Result<Arc<Self>, OpenError> {
        let io_err = || OpenError::data_dir(data_dir);
        fs::create_dir_all(data_dir.join(TOPICS_DIR)).map_err(io_err())?;
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(data_dir.join(LOCK_FILE))
            .map_err(io_err())?;
        if lock.try_lock().is_err() {
            return Err(OpenError::Locked(data_dir.to_path_buf()));
        }
        let cluster_id =
            meta_properties::load_or_create(data_dir, broker.node_id()).map_err(io_err())?;
        let pool = crate::fd_limit::configure_pool(broker.settings().log_segment_open_files_max)
            .map_err(OpenError::FdLimit)?;
        tracing::debug!(
            sealed_segment_files = pool,
            "sealed-segment file pool sized"
        );
        let clean_marker = data_dir.join(CLEAN_SHUTDOWN);
        let clean = clean_marker.exists();
        let recovery_points = checkpoint::read(&data_dir.join(RECOVERY_POINTS)).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "ignoring unreadable recovery-point checkpoint; recovering all segments");
            Offsets::new()
        });
        let log_starts = checkpoint::read(&data_dir.join(LOG_START_OFFSETS)).unwrap_or_default();
        let started = std::time::Instant::now();
        let mut topics = HashMap::new();
        let mut expected_dirs = HashSet::new();
        for entry in fs::read_dir(data_dir.join(TOPICS_DIR)).map_err(io_err())? {
            let path = entry.map_err(io_err())?.path();
            if path.extension().and_then(|e| e.to_str()) != Some("json") {
                continue;
            }
            let bytes = fs::read(&path).map_err(io_err())?;
            let record: TopicRecord =
                serde_json::from_slice(&bytes).map_err(|source| OpenError::CorruptTopic {
                    path: path.clone(),
                    source,
                })?;
            let resolved = TopicConfig::resolve(&broker, &record.configs);
            let shared = SharedConfig::new(resolved);
            if record.partitions == 0
                || record.partitions as u64 > crate::fd_limit::partition_capacity()
            {
                return Err(OpenError::TooManyPartitions {
                    what: format!("topic metadata {}", path.display()),
                    partitions: record.partitions,
                    limit: crate::fd_limit::soft().unwrap_or(0),
                });
            }
            let mut partitions = Vec::with_capacity(record.partitions as usize);
            let hosted: Vec<i32> = match &record.hosted {
                Some(h) => h.clone(),
                None => (0..record.partitions as i32).collect(),
            };
            for p in hosted {
                let dir_name = partition_dir_name(&record.name, p);
                expected_dirs.insert(dir_name.clone());
                let key = (record.name.clone(), p);
                let partition_err = |source| OpenError::Partition {
                    topic: record.name.clone(),
                    partition: p,
                    source,
                };
                let log = if data_dir.join(&dir_name).is_dir() {
                    PartitionLog::open(
                        data_dir,
                        &record.name,
                        p,
                        shared.clone(),
                        if clean {
                            None
                        } else {
                            recovery_points.get(&key).copied()
                        },
                        log_starts.get(&key).copied(),
                        clean,
                        clock.clone(),
                    )
                    .map_err(partition_err)?
                } else {
                    tracing::warn!(topic = %record.name, partition = p, "partition directory missing; creating it empty");
                    PartitionLog::create_unhydrated(
                        data_dir,
                        &record.name,
                        p,
                        shared.clone(),
                        clock.clone(),
                    )
                    .map_err(partition_err)?
                };
                partitions.push(Hosted::new(log));
            }
            topics.insert(
                record.name.clone(),
                Arc::new(Topic::new(
                    &record.name,
                    record.id,
                    shared,
                    record.configs,
                    partitions,
                    record.partitions as i32,
                    record.in_cluster,
                )),
            );
        }
        // Directories of topics deleted before a crash finished removing them.
        for entry in fs::read_dir(data_dir).map_err(io_err())? {
            let entry = entry.map_err(io_err())?;
            let name = entry.file_name().to_string_lossy().to_string();
            let is_dir = entry.file_type().map_err(io_err())?.is_dir();
            if is_dir && name != TOPICS_DIR && !expected_dirs.contains(&name) {
                if let Some((_, p)) = name.rsplit_once('-') {
                    if p.parse::<i32>().is_ok() {
                        tracing::info!(dir = %name, "removing partition directory of a deleted topic");
                        fs::remove_dir_all(entry.path()).map_err(io_err())?;
                    }
                }
            }
        }
        if clean {
            fs::remove_file(&clean_marker).map_err(io_err())?;
        }
        tracing::info!(
            topics = topics.len(),
            clean_shutdown = clean,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "loaded logs"
        );
        Ok(Arc::new(LogManager {
            tiering: std::sync::atomic::AtomicBool::new(false),
            data_dir: data_dir.to_path_buf(),
            broker,
            cluster_id,
            topics: RwLock::new(topics),
            admin: Mutex::new(()),
            _lock: lock,
            changes: tokio::sync::watch::channel(0).0,
            roles: tokio::sync::watch::channel(0).0,
            commit_latency,
            cleaners: Mutex::new(None),
            clock,
            background: Mutex::new(Vec::new()),
            stop_background: tokio::sync::watch::channel(false).0,
        }))
    }

    /// The clock the logs, retention and the cleaner read.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// The replica manager applied roles to the logs.
    pub fn note_roles_applied(&self) {
        self.roles.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Changes at every [`Self::note_roles_applied`].
    pub fn subscribe_roles(&self) -> tokio::sync::watch::Receiver<u64> {
        self.roles.subscribe()
    }

    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    fn spawn_flusher(&self, log: Arc<PartitionLog>) {
        let user_topic = !strata_common::topic_name::is_internal(log.topic());
        let sink = user_topic.then(|| self.commit_latency.clone()).flatten();
        tokio::spawn(log.run_flusher(sink));
    }

    /// Whether `dir` holds no broker data yet (no `meta.properties`).
    pub fn is_fresh(data_dir: &Path) -> bool {
        meta_properties::is_fresh(data_dir)
    }

    /// Makes a fresh data directory join an existing cluster (the one the
    /// object store belongs to) instead of minting a new cluster id.
    pub fn adopt_cluster_id(data_dir: &Path, cluster_id: &str, node_id: i32) -> io::Result<()> {
        fs::create_dir_all(data_dir)?;
        meta_properties::write(data_dir, cluster_id, node_id)
    }

    /// Hands retention of tiered topics to the tiering manager: from now on
    /// their local segments are deleted only once uploaded (hot window), and
    /// total retention is applied to the remote part.
    pub fn enable_tiering(&self) {
        self.tiering
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// In a cluster, at start: every log waits for the store to give it a
    /// role (a coordinator too loads only what the store says it leads).
    pub fn await_assignments(&self) {
        for t in self.topics() {
            for partition in t.partitions() {
                partition.await_assignment();
            }
        }
    }

    /// The tiering manager handles the partition's retention: tiered,
    /// and led here (a follower keeps its copy under the topic's total
    /// retention until tiering follows leader epochs, docs/cluster.md).
    fn tiered(&self, partition: &Partition) -> bool {
        let log = partition.log();
        self.tiering.load(std::sync::atomic::Ordering::Acquire)
            && strata_common::config::tiering_enabled(&self.broker, log.topic(), &log.config())
            && partition.is_leader()
    }

    pub fn broker_config(&self) -> &Arc<BrokerConfig> {
        &self.broker
    }
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    pub fn topic(&self, name: &str) -> Option<Arc<Topic>> {
        self.topics
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
            .cloned()
    }

    pub fn topic_by_id(&self, id: Uuid) -> Option<Arc<Topic>> {
        self.topics
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .find(|t| t.id == id)
            .cloned()
    }

    /// All topics, sorted by name.
    /// Refuses `more` partitions if the broker could not keep them open
    /// within its file descriptor limit (`ulimit -n`).
    fn check_partition_capacity(&self, more: u64) -> Result<(), TopicError> {
        let have: u64 = self
            .topics()
            .iter()
            .map(|t| t.partitions().len() as u64)
            .sum();
        let capacity = crate::fd_limit::partition_capacity();
        let soft = crate::fd_limit::soft().unwrap_or(0);
        if have.saturating_add(more) > capacity {
            return Err(TopicError::InvalidPartitions(format!(
                "{more} more partitions would bring this broker to {}, over the {capacity} it can keep open \
                 within its file descriptor limit (ulimit -n {soft}, {} kept for connections, {} for \
                 sealed segments); raise the limit",
                have + more,
                crate::fd_limit::reserved(soft),
                crate::log::file_pool::global().capacity()
            )));
        }
        Ok(())
    }

    pub fn topics(&self) -> Vec<Arc<Topic>> {
        let mut v: Vec<_> = self
            .topics
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v
    }

    /// Partition `partition` of `topic`, if this broker hosts it: its
    /// role, ISR and writes.
    pub fn partition(&self, topic: &str, partition: i32) -> Option<Arc<Partition>> {
        self.topic(topic)?.partition(partition)
    }

    /// The local log of `topic`'s `partition`, if this broker hosts it:
    /// reads, offsets and what acts on the log from outside.
    pub fn log(&self, topic: &str, partition: i32) -> Option<Arc<PartitionLog>> {
        self.topic(topic)?.log(partition)
    }

    /// Creates a topic. `partitions`/`replication_factor` of -1 mean the
    /// broker defaults. With `validate_only`, nothing is created.
    pub fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        replication_factor: i16,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<Arc<Topic>, TopicError> {
        validate_topic_name(name)?;
        let partitions = if partitions == -1 {
            self.broker.settings().num_partitions
        } else {
            partitions
        };
        if partitions <= 0 {
            return Err(TopicError::InvalidPartitions(format!(
                "Number of partitions was set to an invalid non-positive value: {partitions}"
            )));
        }
        self.check_partition_capacity(partitions as u64)?;
        let rf = if replication_factor == -1 {
            self.broker.settings().default_replication_factor
        } else {
            replication_factor as i32
        };
        if rf != 1 {
            return Err(TopicError::InvalidReplicationFactor(format!(
                "Unable to replicate the partition {rf} time(s): this cluster has a single broker, so the replication factor must be 1"
            )));
        }
        config::validate_overrides(&configs).map_err(TopicError::InvalidConfig)?;
        let _admin = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = self.topic(name) {
            return Err(TopicError::AlreadyExists(t.name.clone()));
        }
        let resolved = TopicConfig::resolve(&self.broker, &configs);
        resolved
            .check_consistency()
            .map_err(TopicError::InvalidConfig)?;
        let shared = SharedConfig::new(resolved);
        let topic = Topic::new(
            name,
            Uuid::new_v4(),
            shared.clone(),
            configs,
            Vec::new(),
            partitions,
            false,
        );
        if validate_only {
            return Ok(Arc::new(topic));
        }
        let mut created = Vec::with_capacity(partitions as usize);
        for p in 0..partitions {
            created.push(Hosted::new(PartitionLog::create(
                &self.data_dir,
                name,
                p,
                shared.clone(),
                self.clock.clone(),
            )?));
        }
        *topic.partitions.write().unwrap_or_else(|e| e.into_inner()) = created;
        let topic = self.register(topic)?;
        tracing::info!(topic = name, partitions, "created topic");
        Ok(topic)
    }

    /// Persists a new topic's metadata, makes it visible and starts its
    /// partitions' flushers.
    fn register(&self, topic: Topic) -> Result<Arc<Topic>, TopicError> {
        self.persist_topic(&topic)?;
        let topic = Arc::new(topic);
        self.topics
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(topic.name.clone(), topic.clone());
        for log in topic.logs() {
            self.spawn_flusher(log);
        }
        self.changed();
        Ok(topic)
    }

    fn changed(&self) {
        self.changes.send_modify(|v| *v += 1);
    }

    /// Wakes at every change of topics, partition counts or topic configs.
    pub fn subscribe_changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn persist_topic(&self, topic: &Topic) -> Result<(), TopicError> {
        let record = TopicRecord {
            name: topic.name.clone(),
            id: topic.id,
            partitions: topic.partition_count() as u32,
            configs: topic.overrides(),
            hosted: (!topic.hosts_all())
                .then(|| topic.partitions().iter().map(|l| l.partition()).collect()),
            in_cluster: topic.in_cluster(),
        };
        let json = serde_json::to_vec_pretty(&record).map_err(TopicError::Encode)?;
        write_atomically(&self.topic_file(&topic.name), &json)?;
        Ok(())
    }

    fn topic_file(&self, name: &str) -> PathBuf {
        self.data_dir.join(TOPICS_DIR).join(format!("{name}.json"))
    }

    /// Deletes a topic and all its data.
    pub fn delete_topic(&self, name: &str) -> Result<Arc<Topic>, TopicError> {
        if !self.broker.settings().delete_topic_enable {
            return Err(TopicError::DeletionDisabled);
        }
        self.remove_topic(name)
    }

    /// Deletes a topic's local logs and metadata, whatever
    /// `delete.topic.enable` says (the cluster deleted it).
    pub fn remove_topic(&self, name: &str) -> Result<Arc<Topic>, TopicError> {
        let _admin = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        let topic = self
            .topics
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name)
            .ok_or_else(|| TopicError::UnknownTopic(name.to_string()))?;
        // The metadata goes first: a crash after this point leaves only
        // orphan directories, which the next start removes.
        fs::remove_file(self.topic_file(name))?;
        fsync_dir(&self.data_dir.join(TOPICS_DIR))?;
        self.changed();
        for log in topic.logs() {
            log.delete()?;
        }
        tracing::info!(topic = name, "deleted topic");
        Ok(topic)
    }

    /// Takes topic `name` out of service without deleting its records: its
    /// partition directories move under `retired/<topic>-<uuid>/` in the
    /// data directory (kept for an operator; never read or removed by the
    /// broker). Returns where they went.
    pub fn retire_topic(&self, name: &str) -> Result<PathBuf, TopicError> {
        let _admin = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        let topic = self
            .topic(name)
            .ok_or_else(|| TopicError::UnknownTopic(name.to_string()))?;
        let to = self
            .data_dir
            .join(RETIRED_DIR)
            .join(format!("{name}-{}", Uuid::new_v4()));
        fs::create_dir_all(&to)?;
        // The directories move first: a crash before the metadata goes
        // leaves a topic without logs, never logs the next start deletes.
        for log in topic.logs() {
            log.retire_into(&to)?;
        }
        fsync_dir(&to)?;
        fsync_dir(&self.data_dir)?;
        self.topics
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
        fs::remove_file(self.topic_file(name))?;
        fsync_dir(&self.data_dir.join(TOPICS_DIR))?;
        self.changed();
        tracing::warn!(topic = name, kept_in = %to.display(), "retired a topic's local copy");
        Ok(to)
    }

    /// Raises a topic's partition count.
    pub fn create_partitions(
        &self,
        name: &str,
        count: i32,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        let _admin = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        let topic = self
            .topic(name)
            .ok_or_else(|| TopicError::UnknownTopic(name.to_string()))?;
        let current = topic.partition_count() as i32;
        if count <= current {
            return Err(TopicError::InvalidPartitions(format!(
                "Topic currently has {current} partitions, which is higher than or equal to the requested {count}."
            )));
        }
        self.check_partition_capacity((count - current) as u64)?;
        if validate_only {
            return Ok(());
        }
        let mut new_logs = Vec::new();
        for p in current..count {
            new_logs.push(PartitionLog::create(
                &self.data_dir,
                name,
                p,
                topic.config.clone(),
                self.clock.clone(),
            )?);
        }
        topic
            .partitions
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .extend(new_logs.iter().cloned().map(Hosted::new));
        topic
            .count
            .store(count, std::sync::atomic::Ordering::Release);
        self.persist_topic(&topic)?;
        for log in new_logs {
            self.spawn_flusher(log);
        }
        self.changed();
        tracing::info!(topic = name, from = current, to = count, "added partitions");
        Ok(())
    }

    /// Replaces a topic's config overrides (validated), effective at once.
    pub fn set_topic_overrides(
        &self,
        name: &str,
        overrides: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<(), TopicError> {
        config::validate_overrides(&overrides).map_err(TopicError::InvalidConfig)?;
        let _admin = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        let topic = self
            .topic(name)
            .ok_or_else(|| TopicError::UnknownTopic(name.to_string()))?;
        let resolved = TopicConfig::resolve(&self.broker, &overrides);
        resolved
            .check_consistency()
            .map_err(TopicError::InvalidConfig)?;
        if validate_only {
            return Ok(());
        }
        *topic.overrides.write().unwrap_or_else(|e| e.into_inner()) = overrides;
        self.persist_topic(&topic)?;
        topic.config.set(resolved);
        self.changed();
        tracing::info!(topic = name, "updated topic config");
        Ok(())
    }

    /// Logs the cleaner may take, each with the cleaner's state for it: a
    /// log that may have a part in the bucket waits until that part is
    /// attached (a pass covers the whole log).
    fn cleanable_logs(&self) -> Vec<(Arc<PartitionLog>, Arc<CleanerState>)> {
        let tiering = self.tiering.load(std::sync::atomic::Ordering::Acquire);
        self.topics()
            .iter()
            .flat_map(|t| t.hosted())
            .filter(|h| {
                !tiering
                    || strata_common::topic_name::is_internal(h.log().topic())
                    || h.cleaner.tiered_part().is_some()
            })
            .map(|h| (h.log().clone(), h.cleaner))
            .collect()
    }

    fn all_logs(&self) -> Vec<Arc<PartitionLog>> {
        self.topics().iter().flat_map(|t| t.logs()).collect()
    }

    /// Writes the recovery-point and log-start-offset checkpoints.
    pub fn write_checkpoints(&self) -> io::Result<()> {
        let mut recovery = Offsets::new();
        let mut starts = Offsets::new();
        for log in self.all_logs() {
            let key = (log.topic().to_string(), log.partition());
            recovery.insert(key.clone(), log.high_watermark());
            starts.insert(key, log.local_log_start_offset());
        }
        checkpoint::write(&self.data_dir.join(RECOVERY_POINTS), &recovery)?;
        checkpoint::write(&self.data_dir.join(LOG_START_OFFSETS), &starts)
    }

    /// Starts flushers, the retention and checkpoint loops and the log
    /// cleaner's threads; each cleaner thread first calls `lower_priority`
    /// with `log.cleaner.threads.nice` (the broker's way to nice a thread).
    pub fn start_background(self: &Arc<Self>, lower_priority: fn(i32)) {
        for log in self.all_logs() {
            self.spawn_flusher(log);
        }
        let me = self.clone();
        let interval = self.broker.settings().log_retention_check_interval;
        let mut stop = self.stop_background.subscribe();
        let retention = tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.wait_for(|stopped| *stopped) => return,
                }
                let m = me.clone();
                if let Err(e) = tokio::task::spawn_blocking(move || m.enforce_retention()).await {
                    tracing::error!(error = %e, "retention task failed");
                }
            }
        });
        if self.broker.settings().cleaner.enable {
            let me = self.clone();
            let cleaners = crate::log::cleaner::start_cleaners(
                &self.broker.settings().cleaner,
                move || me.cleanable_logs(),
                lower_priority,
                self.clock.clone(),
            );
            *self.cleaners.lock().unwrap_or_else(|e| e.into_inner()) = Some(cleaners);
        }
        let me = self.clone();
        let interval = self.broker.settings().log_flush_offset_checkpoint_interval;
        let mut stop = self.stop_background.subscribe();
        let checkpoints = tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    _ = stop.wait_for(|stopped| *stopped) => return,
                }
                let m = me.clone();
                match tokio::task::spawn_blocking(move || m.write_checkpoints()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::error!(error = %e, "writing checkpoints failed"),
                    Err(e) => tracing::error!(error = %e, "checkpoint task failed"),
                }
            }
        });
        self.background
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend([retention, checkpoints]);
    }

    /// One retention pass over every partition; also rolls active segments
    /// older than `segment.ms`, so an idle partition's data is sealed.
    pub(crate) fn enforce_retention(&self) {
        let now = self.clock.now_ms();
        for partition in self.topics().iter().flat_map(|t| t.partitions()) {
            let log = partition.log();
            let result = if self.tiered(&partition) {
                // Local deletion of a tiered partition waits for its upload
                // (the tiering manager); only seal idle segments here.
                log.roll_if_expired(now).map(|_| 0)
            } else {
                log.roll_if_expired(now)
                    .and_then(|_| log.enforce_retention(now))
            };
            if let Err(e) = result {
                if matches!(e, LogError::Closed) {
                    continue; // deleted concurrently
                }
                tracing::error!(topic = %log.topic(), partition = log.partition(), error = %e, "retention failed");
            }
        }
    }

    /// Ends the retention and checkpoint loops, waiting for a pass in
    /// progress: none may run under `shutdown`, and a checkpoint written
    /// after `shutdown`'s own would put back older log start offsets (and
    /// with them records DeleteRecords removed).
    pub async fn stop_background(&self) {
        self.stop_background.send_replace(true);
        let tasks = std::mem::take(&mut *self.background.lock().unwrap_or_else(|e| e.into_inner()));
        for task in tasks {
            if let Err(e) = task.await {
                tracing::error!(error = %e, "a log manager task failed");
            }
        }
    }

    /// Clean shutdown: flush and seal every log, write checkpoints, then the
    /// marker that lets the next start skip recovery. After
    /// `stop_background`.
    pub fn shutdown(&self) -> io::Result<()> {
        // No cleaning pass may swap segments while the logs are closed and
        // checkpointed: the cleaner threads stop first.
        let cleaners = self
            .cleaners
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(cleaners) = cleaners {
            match cleaners.stop(CLEANER_STOP_LIMIT) {
                0 => tracing::debug!("log cleaner threads stopped"),
                left => tracing::warn!(
                    threads = left,
                    limit_s = CLEANER_STOP_LIMIT.as_secs(),
                    "log cleaner threads still in a pass; closing the logs under them"
                ),
            }
        }
        let _admin = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        for log in self.all_logs() {
            log.close()?;
        }
        self.write_checkpoints()?;
        write_atomically(&self.data_dir.join(CLEAN_SHUTDOWN), b"")?;
        tracing::info!("logs flushed; clean shutdown marker written");
        Ok(())
    }
}
