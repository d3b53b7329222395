//! Topics recreated from the object store (disaster recovery): each
//! partition empty from the offset where its tiered part ends, with the
//! producer state as of that offset. Called by `remote::recovery`.

use std::collections::BTreeMap;
use std::sync::Arc;

use uuid::Uuid;

use super::topic::Hosted;
use super::{LogManager, RestoredPartition, Topic, TopicError};
use crate::log::{PartitionLog, SharedConfig};
use strata_common::config::{self, TopicConfig};
use strata_common::topic_name::validate_topic_name;

impl LogManager {
    /// Recreates a topic from the object store's metadata, each partition
    /// empty from the offset where its tiered part ends.
    pub fn restore_topic(
        &self,
        name: &str,
        id: Uuid,
        configs: BTreeMap<String, String>,
        partitions: Vec<RestoredPartition>,
    ) -> Result<Arc<Topic>, TopicError> {
        validate_topic_name(name)?;
        config::validate_overrides(&configs).map_err(TopicError::InvalidConfig)?;
        let _admin = self.admin.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = self.topic(name) {
            return Err(TopicError::AlreadyExists(t.name.clone()));
        }
        let shared = SharedConfig::new(TopicConfig::resolve(&self.broker, &configs));
        let mut logs = Vec::with_capacity(partitions.len());
        for (p, r) in partitions.iter().enumerate() {
            logs.push(Hosted::new(PartitionLog::create_at(
                &self.data_dir,
                name,
                p as i32,
                shared.clone(),
                r.start_offset,
                r.producer_snapshot.as_deref(),
                r.leader_epoch,
                self.clock.clone(),
            )?));
        }
        let count = logs.len() as i32;
        let topic = Topic::new(name, id, shared, configs, logs, count, false);
        let topic = self.register(topic)?;
        Ok(topic)
    }
}
