//! Disaster recovery: a broker started with an empty data directory against
//! a bucket that already holds topics rebuilds them from the bucket alone.
//! Each partition is recreated empty at the offset where its tiered part
//! ends, with the producer state uploaded with the last tiered segment, so
//! every tiered record is readable (from the bucket) and appends continue
//! at the right offset without duplicating idempotent retries.

use std::sync::Arc;

use object_store::path::Path;
use object_store::ObjectStoreExt;
use strata_catalog::{PartitionCatalog, PartitionPath};
use uuid::Uuid;

use super::TieredStorage;
use crate::log_manager::{LogManager, RestoredPartition};
use crate::start_error::{OpenError, StartError};

/// Recreates every topic the bucket knows and the data dir does not,
/// except those in `skip` (in a cluster, the topics the store knows:
/// their replicas start at the bucket's end through replication, with
/// open transactions kept). Returns the names restored.
pub async fn restore_topics(
    remote: &TieredStorage,
    logs: &Arc<LogManager>,
    skip: &std::collections::HashSet<String>,
) -> Result<Vec<String>, StartError> {
    let store = remote.manager.store().clone();
    let prefix = remote.metadata.prefix().to_string();
    let mut restored = Vec::new();
    for t in remote.metadata.list_topics().await? {
        if logs.topic(&t.name).is_some() || skip.contains(&t.name) {
            continue;
        }
        let id = Uuid::parse_str(&t.id).map_err(|source| StartError::BadTopicId {
            topic: t.name.clone(),
            id: t.id.clone(),
            source,
        })?;
        if t.partitions == 0 || t.partitions as u64 > crate::fd_limit::partition_capacity() {
            return Err(OpenError::TooManyPartitions {
                what: format!("topic {} in the bucket", t.name),
                partitions: t.partitions,
                limit: crate::fd_limit::soft().unwrap_or(0),
            }
            .into());
        }
        let mut partitions = Vec::with_capacity(t.partitions as usize);
        for p in 0..t.partitions as i32 {
            let path = PartitionPath::new(&prefix, &t.name, &t.id, p);
            let view = PartitionCatalog::open(store.clone(), path).await?;
            let m = view.manifest();
            let start = m.next_offset().unwrap_or(0).max(m.log_start_offset);
            let producer_snapshot = match m
                .segments
                .last()
                .and_then(|s| s.producer_snapshot_key.clone())
            {
                Some(key) => match store.get(&Path::from(key.as_str())).await {
                    Ok(r) => Some(r.bytes().await?.to_vec()),
                    Err(e) => {
                        tracing::warn!(topic = %t.name, partition = p, error = %e,
                            "producer state snapshot missing; idempotent producers will get a new sequence check");
                        None
                    }
                },
                None => None,
            };
            let leader_epoch = m
                .leader_epoch
                .max(m.segments.last().map(|s| s.leader_epoch));
            partitions.push(RestoredPartition {
                start_offset: start,
                producer_snapshot,
                leader_epoch,
            });
        }
        let l = logs.clone();
        let (name, configs) = (t.name.clone(), t.configs.clone());
        let topic = name.clone();
        tokio::task::spawn_blocking(move || l.restore_topic(&name, id, configs, partitions))
            .await?
            .map_err(|source| OpenError::Topic { topic, source })?;
        tracing::info!(topic = %t.name, partitions = t.partitions, "restored topic from the object store");
        restored.push(t.name);
    }
    Ok(restored)
}
