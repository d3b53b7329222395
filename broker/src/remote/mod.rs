//! Tiered storage in the broker: wires the partition logs to the tiering
//! manager (`strata-tiering`), keeps topic metadata in the bucket, restores
//! topics from the bucket into an empty data directory, and serves reads
//! below the local log start through `strata-prefetch`
//! (`docs/tiering.md`, `docs/catalog.md`).
//!
//! This module owns no segment files; it reaches logs only through
//! [`PartitionLog`](crate::log::PartitionLog)'s tiering methods.

pub mod reads;
pub mod recovery;
pub mod sync;
pub mod tiered_log;

use std::sync::Arc;
use std::time::Duration;

use strata_catalog::MetadataStore;
use strata_prefetch::RemoteReader;
use strata_tiering::store_url::Bucket;
use strata_tiering::{ManagerOptions, RemoteLogManager, RemotePartition, UploadOptions};

use crate::config::{BrokerConfig, TopicConfig};
use crate::log_manager::Topic;

/// Whether `topic`'s sealed segments go to the object store.
pub fn tiering_enabled(broker: &BrokerConfig, topic: &str, cfg: &TopicConfig) -> bool {
    broker.bool("remote.log.storage.system.enable")
        && cfg.remote_storage_enable
        && !is_internal(topic)
}

/// Internal topics (`__consumer_offsets`) never tier.
pub fn is_internal(topic: &str) -> bool {
    topic.starts_with("__")
}

/// The broker's tiered storage: tiering manager, remote reader, and the
/// bucket's metadata.
#[derive(Debug)]
pub struct RemoteStorage {
    pub manager: Arc<RemoteLogManager>,
    pub reader: RemoteReader,
    pub metadata: MetadataStore,
    pub broker: Arc<BrokerConfig>,
    /// Serializes topic metadata writes with topic deletion in the bucket.
    pub(crate) metadata_lock: tokio::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl RemoteStorage {
    pub fn new(bucket: &Bucket, broker: Arc<BrokerConfig>, owner: &str) -> Arc<Self> {
        let opts = ManagerOptions {
            interval: Duration::from_millis(
                broker.i64("remote.log.manager.task.interval.ms").max(10) as u64,
            ),
            max_concurrent_uploads: broker
                .i32("remote.log.manager.copier.thread.pool.size")
                .max(1) as usize,
            upload: UploadOptions::default(),
            manifest_versions_kept: 10,
        };
        Arc::new(RemoteStorage {
            manager: RemoteLogManager::new(bucket.store.clone(), &bucket.prefix, owner, opts),
            reader: RemoteReader::new(
                bucket.store.clone(),
                broker.i64("remote.log.index.cache.total.size.bytes").max(0) as usize,
            ),
            metadata: MetadataStore::new(bucket.store.clone(), &bucket.prefix),
            broker,
            metadata_lock: tokio::sync::Mutex::new(Default::default()),
        })
    }

    /// The tiered view of a partition of this topic incarnation.
    pub fn partition(&self, topic: &Topic, partition: i32) -> Option<Arc<RemotePartition>> {
        self.manager
            .partition(&topic.name, &topic.id.to_string(), partition)
    }
}
