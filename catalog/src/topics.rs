//! Topic and cluster metadata in the bucket, so a broker that lost its disk
//! can rebuild its topics from the bucket alone (`docs/catalog.md`):
//!
//! ```text
//! <prefix>/metadata/cluster.json          {"cluster_id": ...}
//! <prefix>/metadata/topics/<topic>.json   {"name", "id", "partitions", "configs"}
//! ```
//!
//! One broker owns a bucket prefix, so these are plain PUTs (last writer
//! wins); the per-partition manifests carry the fencing. This module never
//! touches segment data except to delete a deleted topic's objects.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};
use serde::{Deserialize, Serialize};

use crate::error::CatalogError;
use crate::layout;

/// What the bucket knows about a topic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicMetadata {
    pub name: String,
    /// The topic id (a UUID), part of every object key of the topic.
    pub id: String,
    pub partitions: u32,
    /// Config overrides under Kafka's names.
    pub configs: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterMetadata {
    pub cluster_id: String,
}

/// Reads and writes the metadata objects under one prefix.
#[derive(Debug, Clone)]
pub struct MetadataStore {
    store: Arc<dyn ObjectStore>,
    prefix: String,
}

fn corrupt(key: &Path, e: serde_json::Error) -> CatalogError {
    CatalogError::Corrupt {
        key: key.to_string(),
        message: e.to_string(),
    }
}

impl MetadataStore {
    pub fn new(store: Arc<dyn ObjectStore>, prefix: &str) -> Self {
        MetadataStore {
            store,
            prefix: prefix.trim_matches('/').to_string(),
        }
    }

    pub fn store(&self) -> &Arc<dyn ObjectStore> {
        &self.store
    }

    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub async fn put_topic(&self, t: &TopicMetadata) -> Result<(), CatalogError> {
        let key = layout::topic_metadata(&self.prefix, &t.name);
        let json = serde_json::to_vec_pretty(t).map_err(|e| corrupt(&key, e))?;
        self.store
            .put(&key, PutPayload::from(Bytes::from(json)))
            .await?;
        Ok(())
    }

    /// Every topic recorded in the bucket, sorted by name.
    pub async fn list_topics(&self) -> Result<Vec<TopicMetadata>, CatalogError> {
        let dir = layout::topic_metadata_dir(&self.prefix);
        let metas: Vec<_> = self.store.list(Some(&dir)).try_collect().await?;
        let mut out = Vec::new();
        for m in metas {
            if !m.location.as_ref().ends_with(".json") {
                continue;
            }
            let bytes = match self.store.get(&m.location).await {
                Ok(r) => r.bytes().await?,
                Err(object_store::Error::NotFound { .. }) => continue,
                Err(e) => return Err(e.into()),
            };
            out.push(serde_json::from_slice(&bytes).map_err(|e| corrupt(&m.location, e))?);
        }
        out.sort_by(|a: &TopicMetadata, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Removes a topic: its metadata first (so it is never restored), then
    /// every object of that incarnation (manifests and segments). Returns
    /// the number of objects deleted.
    pub async fn delete_topic(&self, name: &str, id: &str) -> Result<usize, CatalogError> {
        match self
            .store
            .delete(&layout::topic_metadata(&self.prefix, name))
            .await
        {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
        let root = Path::from(layout::topic_data_root(&self.prefix, name, id));
        let objects: Vec<_> = self.store.list(Some(&root)).try_collect().await?;
        for o in &objects {
            match self.store.delete(&o.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(objects.len())
    }

    pub async fn read_cluster(&self) -> Result<Option<ClusterMetadata>, CatalogError> {
        let key = layout::cluster_metadata(&self.prefix);
        match self.store.get(&key).await {
            Ok(r) => {
                let bytes = r.bytes().await?;
                Ok(Some(
                    serde_json::from_slice(&bytes).map_err(|e| corrupt(&key, e))?,
                ))
            }
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Records the cluster id unless the bucket already has one; returns the
    /// bucket's cluster id either way.
    pub async fn claim_cluster(&self, cluster_id: &str) -> Result<ClusterMetadata, CatalogError> {
        let key = layout::cluster_metadata(&self.prefix);
        let mine = ClusterMetadata {
            cluster_id: cluster_id.to_string(),
        };
        let json = serde_json::to_vec_pretty(&mine).map_err(|e| corrupt(&key, e))?;
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        match self
            .store
            .put_opts(&key, PutPayload::from(Bytes::from(json)), opts)
            .await
        {
            Ok(_) => Ok(mine),
            Err(object_store::Error::AlreadyExists { .. })
            | Err(object_store::Error::Precondition { .. }) => {
                Ok(self.read_cluster().await?.unwrap_or(mine))
            }
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;

    #[tokio::test]
    async fn topics_round_trip_and_delete_with_their_data() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let m = MetadataStore::new(store.clone(), "c1");
        let t = TopicMetadata {
            name: "orders".into(),
            id: "abc".into(),
            partitions: 3,
            configs: BTreeMap::from([("retention.ms".into(), "1000".into())]),
        };
        m.put_topic(&t).await.unwrap();
        let data = Path::from("c1/topics/orders/abc/0/segments/00000000000000000000-1.log");
        let other = Path::from("c1/topics/orders/def/0/segments/00000000000000000000-1.log");
        store
            .put(&data, PutPayload::from_static(b"x"))
            .await
            .unwrap();
        store
            .put(&other, PutPayload::from_static(b"y"))
            .await
            .unwrap();
        assert_eq!(m.list_topics().await.unwrap(), vec![t.clone()]);
        assert_eq!(m.delete_topic("orders", "abc").await.unwrap(), 1);
        assert!(m.list_topics().await.unwrap().is_empty());
        assert!(store.head(&data).await.is_err());
        assert!(
            store.head(&other).await.is_ok(),
            "another incarnation's data stays"
        );
    }

    #[tokio::test]
    async fn the_first_cluster_id_wins() {
        let m = MetadataStore::new(Arc::new(InMemory::new()), "");
        assert_eq!(m.read_cluster().await.unwrap(), None);
        assert_eq!(m.claim_cluster("a").await.unwrap().cluster_id, "a");
        assert_eq!(m.claim_cluster("b").await.unwrap().cluster_id, "a");
    }
}
