//! The local part of a cluster's topics: a broker creates logs only for
//! the partitions it hosts (its replicas), with the id and configs the
//! cluster store gives, adds them as the cluster assigns more, and deletes
//! them when a reassignment moved them elsewhere. Called by the cluster
//! reconciler; never decides what to host.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use uuid::Uuid;

use super::topic::Hosted;
use super::{LogManager, Topic, TopicError};
use crate::log::{PartitionLog, SharedConfig};
use strata_common::config::{self, TopicConfig};
use strata_common::topic_name::validate_topic_name;

impl LogManager {
    /// Creates topic `name` (cluster id `id`, `count` partitions) with logs
    /// for the `hosted` partitions only. `fresh`: the partitions created
    /// while this process was registered, which no earlier process of this
    /// broker held; the others' logs start unhydrated (a replaced disk may
    /// have lost what they acknowledged, `log/hydration.rs`).
    pub fn create_hosted_topic(
        &self,
        name: &str,
        id: Uuid,
        count: i32,
        hosted: &[i32],
        configs: BTreeMap<String, String>,
        fresh: &BTreeSet<i32>,
    ) -> Result<Arc<Topic>, TopicError> {
        validate_topic_name(name)?;
        config::validate_overrides(&configs).map_err(TopicError::InvalidConfig)?;
        let _admin = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = self.topic(name) {
            return Err(TopicError::AlreadyExists(t.name.clone()));
        }
        self.check_partition_capacity(hosted.len() as u64)?;
        let shared = SharedConfig::new(TopicConfig::resolve(&self.broker, &configs));
        let mut logs = Vec::with_capacity(hosted.len());
        let mut sorted = hosted.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        for p in sorted {
            let log = if fresh.contains(&p) {
                PartitionLog::create(&self.data_dir, name, p, shared.clone(), self.clock.clone())?
            } else {
                PartitionLog::create_unhydrated(
                    &self.data_dir,
                    name,
                    p,
                    shared.clone(),
                    self.clock.clone(),
                )?
            };
            // Replicated: neither leads nor serves until the store says.
            let hosted = Hosted::new(log);
            hosted.partition.await_assignment();
            logs.push(hosted);
        }
        let topic = Topic::new(name, id, shared, configs, logs, count, true);
        let topic = self.register(topic)?;
        tracing::info!(topic = name, partitions = count, hosted = ?hosted, "created topic replicas");
        Ok(topic)
    }

    /// Records that topic `name` is the cluster's (published by the data
    /// directory that founded it).
    pub fn mark_in_cluster(&self, name: &str) -> Result<(), TopicError> {
        let _admin = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        let topic = self
            .topic(name)
            .ok_or_else(|| TopicError::UnknownTopic(name.to_string()))?;
        if !topic.in_cluster.swap(true, Ordering::AcqRel) {
            self.persist_topic(&topic)?;
        }
        Ok(())
    }

    /// Raises topic `name`'s partition count to `count` and creates logs
    /// for the partitions of `add` not hosted yet (`fresh` as in
    /// [`Self::create_hosted_topic`]).
    pub fn host_partitions(
        &self,
        name: &str,
        count: i32,
        add: &[i32],
        fresh: &BTreeSet<i32>,
    ) -> Result<(), TopicError> {
        let _admin = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        let topic = self
            .topic(name)
            .ok_or_else(|| TopicError::UnknownTopic(name.to_string()))?;
        let new: Vec<i32> = add
            .iter()
            .copied()
            .filter(|p| topic.partition(*p).is_none())
            .collect();
        self.check_partition_capacity(new.len() as u64)?;
        let mut created = Vec::with_capacity(new.len());
        for p in new {
            let log = if fresh.contains(&p) {
                PartitionLog::create(
                    &self.data_dir,
                    name,
                    p,
                    topic.config.clone(),
                    self.clock.clone(),
                )?
            } else {
                PartitionLog::create_unhydrated(
                    &self.data_dir,
                    name,
                    p,
                    topic.config.clone(),
                    self.clock.clone(),
                )?
            };
            let hosted = Hosted::new(log);
            hosted.partition.await_assignment();
            created.push(hosted);
        }
        {
            let mut logs = topic.partitions.write().unwrap_or_else(|e| e.into_inner());
            logs.extend(created.iter().cloned());
            logs.sort_by_key(|h| h.partition.partition());
        }
        topic.count.fetch_max(count, Ordering::AcqRel);
        self.persist_topic(&topic)?;
        for hosted in created {
            self.spawn_flusher(hosted.log().clone());
        }
        self.changed();
        Ok(())
    }

    /// Deletes the local logs of topic `name`'s partitions in `remove` (the
    /// cluster moved them to other brokers). The topic's metadata goes
    /// first: a crash before the directories are gone leaves directories
    /// the next start removes, never a hosted partition without its log.
    pub fn unhost_partitions(&self, name: &str, remove: &[i32]) -> Result<(), TopicError> {
        let _admin = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        let topic = self
            .topic(name)
            .ok_or_else(|| TopicError::UnknownTopic(name.to_string()))?;
        let gone: Vec<Hosted> = {
            let mut logs = topic.partitions.write().unwrap_or_else(|e| e.into_inner());
            let (gone, kept) = logs
                .drain(..)
                .partition(|h| remove.contains(&h.partition.partition()));
            *logs = kept;
            gone
        };
        if gone.is_empty() {
            return Ok(());
        }
        self.persist_topic(&topic)?;
        self.changed();
        for hosted in gone {
            let log = hosted.log();
            log.delete()?;
            tracing::info!(
                topic = name,
                partition = log.partition(),
                "deleted a replica moved to other brokers"
            );
        }
        Ok(())
    }
}
