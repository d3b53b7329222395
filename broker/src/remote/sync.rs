//! Keeps the tiering manager and the bucket in step with the topic
//! registry: registers new partitions with the tiering manager, writes each
//! topic's metadata (name, id, partition count, config overrides) to the
//! bucket when it changes, and removes a deleted topic's objects.
//!
//! Metadata writes are retried every pass until they succeed, so an object
//! store outage delays them but never blocks topic administration.

use std::sync::Arc;
use std::time::Duration;

use strata_catalog::TopicMetadata;
use strata_tiering::LocalLog;

use super::local_log_view::LocalLogView;
use super::{is_internal, TieredStorage};
use crate::log_manager::{LogManager, Topic};

/// How often the registry is compared with the bucket.
const SYNC_INTERVAL: Duration = Duration::from_millis(500);

fn metadata_of(t: &Topic) -> TopicMetadata {
    TopicMetadata {
        name: t.name.clone(),
        id: t.id.to_string(),
        partitions: t.partition_count() as u32,
        configs: t.overrides(),
    }
}

impl TieredStorage {
    /// One pass: registers unregistered partitions and writes changed topic
    /// metadata. Returns the number of metadata writes that failed.
    pub async fn sync_once(&self, logs: &LogManager) -> usize {
        let mut failed = 0;
        for topic in logs.topics() {
            if is_internal(&topic.name) {
                continue;
            }
            for (partition, cleaner) in topic.partitions_with_cleaners() {
                let log = partition.log();
                if self.partition(&topic, log.partition()).is_none() && !log.is_closed() {
                    let tiered: Arc<dyn LocalLog> = Arc::new(LocalLogView {
                        partition: partition.clone(),
                        broker: self.broker.clone(),
                    });
                    let remote = self
                        .manager
                        .add_partition(&topic.id.to_string(), tiered)
                        .await;
                    cleaner.attach_tiered_part(Arc::new(super::compaction_part::BucketPart {
                        manager: self.manager.clone(),
                        remote,
                        runtime: tokio::runtime::Handle::current(),
                    }));
                }
            }
            let meta = metadata_of(&topic);
            let json = serde_json::to_string(&meta).unwrap_or_default();
            let mut written = self.metadata_lock.lock().await;
            if written.get(&topic.name) == Some(&json) {
                continue;
            }
            // Re-check under the lock: a deletion may have won the race.
            if logs.topic(&topic.name).is_none_or(|t| t.id != topic.id) {
                continue;
            }
            match self.metadata.put_topic(&meta).await {
                Ok(()) => {
                    written.insert(topic.name.clone(), json);
                }
                Err(e) => {
                    failed += 1;
                    tracing::warn!(topic = %topic.name, error = %e,
                        "writing topic metadata to the object store failed; will retry");
                }
            }
        }
        failed
    }

    /// Runs [`Self::sync_once`] forever.
    pub fn start(self: &Arc<Self>, logs: Arc<LogManager>) {
        let me = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(SYNC_INTERVAL).await;
                me.sync_once(&logs).await;
            }
        });
    }

    /// Removes a deleted topic from the bucket (metadata first, then its
    /// manifests and segments), retrying in the background until it works.
    pub fn topic_deleted(self: &Arc<Self>, name: String, id: String) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut backoff = Duration::from_millis(500);
            loop {
                let mut written = me.metadata_lock.lock().await;
                match me.metadata.delete_topic(&name, &id).await {
                    Ok(n) => {
                        written.remove(&name);
                        tracing::info!(topic = %name, objects = n, "deleted the topic's remote data");
                        return;
                    }
                    Err(e) => {
                        drop(written);
                        tracing::warn!(topic = %name, error = %e,
                            "deleting the topic's remote data failed; will retry");
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(60));
                    }
                }
            }
        });
    }
}
