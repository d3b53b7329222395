//! [`TieredEndSource`] on the bucket: a partition's tiered end read from
//! its catalog (read-only, never claimed), with the producer state
//! uploaded beside the last tiered segment, for a follower that starts at
//! the bucket's end (`replication::tiered_start`, KIP-1023).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use object_store::path::Path;
use object_store::ObjectStoreExt;
use strata_catalog::{PartitionCatalog, PartitionPath};

use super::TieredStorage;
use crate::log::PartitionLog;
use crate::log_manager::LogManager;
use crate::replication::tiered_start::{TieredEnd, TieredEndSource};

pub struct BucketTieredEnd {
    pub remote: Arc<TieredStorage>,
    pub logs: Arc<LogManager>,
}

impl TieredEndSource for BucketTieredEnd {
    fn tiered_end(
        &self,
        log: Arc<PartitionLog>,
    ) -> BoxFuture<'static, Result<Option<TieredEnd>, String>> {
        let remote = self.remote.clone();
        let topic = self.logs.topic(log.topic());
        Box::pin(async move {
            let Some(topic) = topic else { return Ok(None) };
            if !super::tiering_enabled(&remote.broker, &topic.name, &log.config()) {
                return Ok(None);
            }
            let path = PartitionPath::new(
                remote.metadata.prefix(),
                &topic.name,
                &topic.id.to_string(),
                log.partition(),
            );
            let store = remote.manager.store().clone();
            let view = PartitionCatalog::open(store.clone(), path)
                .await
                .map_err(|e| e.to_string())?;
            let m = view.manifest();
            let Some(end) = m.next_offset() else {
                return Ok(None);
            };
            let last = m.segments.last();
            let producer_snapshot = match last.and_then(|s| s.producer_snapshot_key.as_deref()) {
                Some(key) => {
                    let r = store
                        .get(&Path::from(key))
                        .await
                        .map_err(|e| format!("producer state snapshot {key}: {e}"))?;
                    Some(r.bytes().await.map_err(|e| e.to_string())?.to_vec())
                }
                None => None,
            };
            Ok(Some(TieredEnd {
                offset: end.max(m.log_start_offset),
                last_epoch: last.map_or(0, |s| s.leader_epoch),
                producer_snapshot,
            }))
        })
    }
}
