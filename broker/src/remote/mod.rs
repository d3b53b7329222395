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
pub mod reads;
pub mod recovery;
pub mod remote_log_reader;
pub mod sync;
pub mod tiered_end;

use std::sync::Arc;
use std::time::Duration;

use strata_catalog::bucket::Bucket;
use strata_catalog::MetadataStore;
use strata_prefetch::governor::Governor;
use strata_prefetch::{PrefetchConfig, PrefetchError, Prefetcher};
use strata_tiering::{ManagerOptions, RemoteLogManager, RemotePartition, UploadOptions};

use crate::config::dynamic::DynamicConfigs;
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
    ) -> Result<Arc<Self>, TieredStorageError> {
        let opts = ManagerOptions {
            interval: Duration::from_millis(
                broker.i64("remote.log.manager.task.interval.ms").max(10) as u64,
            ),
            max_concurrent_uploads: broker
                .i32("remote.log.manager.copier.thread.pool.size")
                .max(1) as usize,
            upload: UploadOptions {
                multipart_threshold: broker
                    .i64("remote.log.upload.multipart.threshold.bytes")
                    .clamp(5 << 20, i64::from(u32::MAX))
                    as usize,
                part_size: broker
                    .i64("remote.log.upload.part.bytes")
                    .clamp(5 << 20, i64::from(u32::MAX)) as usize,
                ..UploadOptions::default()
            },
            manifest_versions_kept: 10,
        };
        let n = |name: &str| broker.i64(name).max(0) as usize;
        let prefetch = PrefetchConfig {
            chunk_bytes: n("remote.fetch.chunk.bytes"),
            max_concurrent_gets: n("remote.fetch.max.concurrent.gets"),
            max_bytes_in_flight: n("remote.fetch.max.bytes.in.flight"),
            readahead_min_chunks: 2.min(n("remote.fetch.readahead.max.chunks")).max(1),
            readahead_max_chunks: n("remote.fetch.readahead.max.chunks"),
            memory_cache_bytes: n("remote.fetch.cache.memory.bytes"),
            disk_cache_bytes: n("remote.fetch.cache.disk.bytes"),
            disk_write_bytes_per_sec: n("remote.fetch.cache.disk.write.bytes.per.second"),
            disk_writeback_interval: match broker.i64("remote.fetch.cache.disk.writeback.ms") {
                ms if ms > 0 => Some(Duration::from_millis(ms as u64)),
                _ => None,
            },
            disk_cache_dir: Some(match broker.value("remote.fetch.cache.dir").trim() {
                "" => data_dir.join("remote-cache"),
                dir => std::path::PathBuf::from(dir),
            }),
            threads: n("remote.fetch.threads"),
            thread_nice: broker.i32("remote.fetch.threads.nice"),
            index_cache_bytes: n("remote.log.index.cache.total.size.bytes"),
            fetch_max_bytes_per_sec: dynamic.fetch_quota_rate(&broker),
        };
        // The historical read path gets a client (and connection pool) of its
        // own: an HTTP connection is driven by a task on the runtime that
        // opened it, so reusing the uploader's connections would move the
        // socket work of remote reads onto the broker's request threads.
        let read_store = match bucket.url.starts_with("memory://") {
            true => bucket.store.clone(), // one in-memory store must stay one
            false => strata_catalog::bucket::open(&bucket.url)?.store,
        };
        let prefetcher =
            Prefetcher::new(read_store, prefetch, dynamic.class_policy(&broker)).await?;
        Ok(Arc::new(TieredStorage {
            manager: RemoteLogManager::new(bucket.store.clone(), &bucket.prefix, owner, opts),
            prefetcher,
            metadata: MetadataStore::new(bucket.store.clone(), &bucket.prefix),
            adaptive: std::sync::Mutex::new(Governor::new(
                dynamic.adaptive_rate(&broker).unwrap_or_default(),
            )),
            broker,
            metadata_lock: tokio::sync::Mutex::new(Default::default()),
        }))
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
}

#[cfg(test)]
#[path = "compaction_tests.rs"]
mod compaction_tests;
