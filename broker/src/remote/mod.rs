//! Tiered storage in the broker: wires the partition logs to the tiering
//! manager (`strata-tiering`), keeps topic metadata in the bucket, restores
//! topics from the bucket into an empty data directory, and serves reads
//! below the local log start through `strata-prefetch`
//! (`docs/tiering.md`, `docs/catalog.md`).
//!
//! This module owns no segment files; it reaches logs only through
//! [`PartitionLog`](crate::log::PartitionLog)'s tiering methods.

pub mod adaptive_rate;
pub mod compaction_part;
pub mod local_log_view;
pub mod metrics;
pub mod reads;
pub mod recovery;
pub mod remote_log_reader;
pub mod sync;
pub mod tiered_end;

use std::sync::Arc;

use strata_catalog::bucket::Bucket;
use strata_catalog::{ManifestView, MetadataStore};
use strata_prefetch::governor::Governor;
use strata_prefetch::{PrefetchConfig, PrefetchError, Prefetcher};
use strata_tiering::{ManagerOptions, RemoteLogManager, RemotePartition, UploadOptions};

use crate::clock::SharedClock;
use crate::config::dynamic::{DynamicConfigs, DynamicSettings};
use crate::config::BrokerConfig;
use crate::log_manager::Topic;

pub use crate::config::tiering_enabled;
pub use crate::topic_name::is_internal;

/// Why tiered storage could not start.
#[derive(Debug, thiserror::Error)]
pub enum TieredStorageError {
    #[error(transparent)]
    Bucket(#[from] strata_catalog::BucketError),
    #[error("historical read path: {0}")]
    Prefetch(#[from] PrefetchError),
}

/// The broker's clock as the tiering manager reads it (wall time for
/// retention and `segment.ms`): the logs' clock.
#[derive(Debug)]
struct TieringClock(SharedClock);

impl strata_tiering::WallClock for TieringClock {
    fn now_ms(&self) -> i64 {
        self.0.now_ms()
    }
}

/// The broker's tiered storage: tiering manager, remote reader, and the
/// bucket's metadata.
#[derive(Debug)]
pub struct TieredStorage {
    pub manager: Arc<RemoteLogManager>,
    /// The historical read path (reads below the local log start).
    pub prefetcher: Arc<Prefetcher>,
    pub metadata: MetadataStore,
    pub broker: Arc<BrokerConfig>,
    /// The adaptive history rate's state (`adaptive_rate`).
    pub adaptive: std::sync::Mutex<Governor>,
    /// Serializes topic metadata writes with topic deletion in the bucket.
    pub(crate) metadata_lock: tokio::sync::Mutex<std::collections::HashMap<String, String>>,
}

impl TieredStorage {
    pub async fn new(
        bucket: &Bucket,
        broker: Arc<BrokerConfig>,
        dynamic: &DynamicConfigs,
        data_dir: &std::path::Path,
        owner: &str,
        clock: SharedClock,
    ) -> Result<Arc<Self>, TieredStorageError> {
        let s = &broker.settings().remote;
        let opts = ManagerOptions {
            interval: s.task_interval,
            max_concurrent_uploads: s.copier_thread_pool_size,
            upload: UploadOptions {
                multipart_threshold: s.upload_multipart_threshold_bytes,
                part_size: s.upload_part_bytes,
                ..UploadOptions::default()
            },
            manifest_versions_kept: 10,
            clock: Arc::new(TieringClock(clock)),
        };
        let now = dynamic.settings();
        let prefetch = PrefetchConfig {
            chunk_bytes: s.fetch_chunk_bytes,
            max_concurrent_gets: s.fetch_max_concurrent_gets,
            max_bytes_in_flight: s.fetch_max_bytes_in_flight,
            readahead_min_chunks: 2.min(s.fetch_readahead_max_chunks).max(1),
            readahead_max_chunks: s.fetch_readahead_max_chunks,
            memory_cache_bytes: s.fetch_cache_memory_bytes,
            disk_cache_bytes: s.fetch_cache_disk_bytes,
            disk_write_bytes_per_sec: s.fetch_cache_disk_write_bytes_per_second,
            disk_writeback_interval: s.fetch_cache_disk_writeback,
            disk_cache_dir: Some(
                s.fetch_cache_dir
                    .clone()
                    .unwrap_or_else(|| data_dir.join("remote-cache")),
            ),
            threads: s.fetch_threads,
            thread_nice: s.fetch_threads_nice,
            index_cache_bytes: s.index_cache_total_size_bytes,
            fetch_max_bytes_per_sec: now.fetch_max_bytes_per_second,
        };
        // The historical read path gets a client (and connection pool) of its
        // own: an HTTP connection is driven by a task on the runtime that
        // opened it, so reusing the uploader's connections would move the
        // socket work of remote reads onto the broker's request threads.
        let read_store = match bucket.url.starts_with("memory://") {
            true => bucket.store.clone(), // one in-memory store must stay one
            false => strata_catalog::bucket::open(&bucket.url)?.store,
        };
        let prefetcher = Prefetcher::new(read_store, prefetch, now.class_policy.clone()).await?;
        Ok(Arc::new(TieredStorage {
            manager: RemoteLogManager::new(bucket.store.clone(), &bucket.prefix, owner, opts),
            prefetcher,
            metadata: MetadataStore::new(bucket.store.clone(), &bucket.prefix),
            adaptive: std::sync::Mutex::new(Governor::new(
                now.adaptive_rate.clone().unwrap_or_default(),
            )),
            broker,
            metadata_lock: tokio::sync::Mutex::new(Default::default()),
        }))
    }

    /// Puts dynamic settings in force on the historical read path: the
    /// classes and the rate (the adaptive rate reads them each tick).
    pub fn apply_dynamic(&self, settings: &DynamicSettings) {
        self.prefetcher
            .budget()
            .set_policy(settings.class_policy.clone());
        self.prefetcher
            .quota()
            .set_rate(settings.fetch_max_bytes_per_second);
    }

    /// The runtime of the historical read path: a response carrying history
    /// is encoded and written there too, off the request workers.
    pub fn history_runtime(&self) -> &tokio::runtime::Handle {
        self.prefetcher.runtime()
    }

    /// The tiered view of a partition of this topic incarnation.
    pub fn partition(&self, topic: &Topic, partition: i32) -> Option<Arc<RemotePartition>> {
        self.manager
            .partition(&topic.name, &topic.id.to_string(), partition)
    }

    /// The catalog's view of a tiered partition, as the readers of history
    /// hold it (shared with the tiering manager, which publishes to it).
    pub fn manifest_view(&self, topic: &Topic, partition: i32) -> Option<Arc<ManifestView>> {
        self.partition(topic, partition).map(|rp| rp.view().clone())
    }

    /// Runs the uploader's next round of a partition now (DeleteRecords:
    /// the catalog records the new log start before the answer).
    pub fn wake(&self, topic: &Topic, partition: i32) {
        if let Some(rp) = self.partition(topic, partition) {
            rp.wake();
        }
    }
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod compaction_tests;
