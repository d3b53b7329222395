//! `PartitionCatalog`: a partition's manifest in the bucket, read and
//! written with compare-and-swap semantics.
//!
//! Versions are objects `manifest/<version>.json`; the latest is the highest
//! number. A commit writes version `n + 1` with create-if-absent
//! (`PutMode::Create`): if another writer got there first the write fails,
//! the catalog reloads, and if the new owner has a higher writer epoch this
//! writer is fenced. `claim` bumps the epoch, fencing every earlier writer.
//! Because old versions are garbage-collected, a very stale writer could
//! succeed in re-creating a deleted low version number; every commit
//! therefore checks afterwards that no higher version exists, and reports
//! itself fenced if one does.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload};

use crate::error::CatalogError;
use crate::layout::PartitionPath;
use crate::manifest::{PartitionManifest, RemoteSegment};

#[derive(Debug, Clone)]
pub struct PartitionCatalog {
    store: Arc<dyn ObjectStore>,
    path: PartitionPath,
    current: PartitionManifest,
    /// The epoch this handle writes with (None: read-only view).
    writer_epoch: Option<u64>,
}

impl PartitionCatalog {
    /// A read-only view of the latest manifest (empty if none exists).
    pub async fn open(
        store: Arc<dyn ObjectStore>,
        path: PartitionPath,
    ) -> Result<Self, CatalogError> {
        let current = load_latest(&*store, &path).await?;
        Ok(PartitionCatalog {
            store,
            path,
            current,
            writer_epoch: None,
        })
    }

    /// Becomes the partition's writer: commits a new version with the next
    /// writer epoch, fencing every earlier writer.
    pub async fn claim(
        store: Arc<dyn ObjectStore>,
        path: PartitionPath,
        owner: &str,
    ) -> Result<Self, CatalogError> {
        Self::claim_at(store, path, owner, None).await
    }

    /// [`Self::claim`] by a partition leader at `leader_epoch` (in a
    /// cluster): refused with [`CatalogError::StaleLeaderEpoch`] if the
    /// catalog was claimed at a newer leader epoch, so a deposed leader
    /// can neither take the catalog back nor write after the new leader
    /// claimed. `None` (a single broker) claims unconditionally.
    pub async fn claim_at(
        store: Arc<dyn ObjectStore>,
        path: PartitionPath,
        owner: &str,
        leader_epoch: Option<i32>,
    ) -> Result<Self, CatalogError> {
        loop {
            let latest = load_latest(&*store, &path).await?;
            if let (Some(mine), Some(current)) = (leader_epoch, latest.leader_epoch) {
                if mine < current {
                    return Err(CatalogError::StaleLeaderEpoch {
                        mine,
                        current,
                        owner: latest.owner,
                    });
                }
            }
            let mut next = latest.clone();
            next.version = latest.version + 1;
            next.writer_epoch = latest.writer_epoch + 1;
            next.owner = owner.to_string();
            next.leader_epoch = leader_epoch.or(latest.leader_epoch);
            match put_version(&*store, &path, &next).await? {
                true => {
                    if let Some(newer) = newer_version_exists(&*store, &path, next.version).await? {
                        tracing::debug!(
                            partition = path.partition,
                            version = newer,
                            "claim raced with a newer version; retrying"
                        );
                        continue;
                    }
                    tracing::info!(topic = %path.topic, partition = path.partition, epoch = next.writer_epoch, owner,
                        "claimed partition catalog");
                    let epoch = next.writer_epoch;
                    return Ok(PartitionCatalog {
                        store,
                        path,
                        current: next,
                        writer_epoch: Some(epoch),
                    });
                }
                false => continue, // someone else wrote that version: reload and retry
            }
        }
    }

    pub fn manifest(&self) -> &PartitionManifest {
        &self.current
    }

    pub fn path(&self) -> &PartitionPath {
        &self.path
    }

    pub fn writer_epoch(&self) -> Option<u64> {
        self.writer_epoch
    }

    /// Re-reads the latest version (for readers).
    pub async fn refresh(&mut self) -> Result<&PartitionManifest, CatalogError> {
        self.current = load_latest(&*self.store, &self.path).await?;
        Ok(&self.current)
    }

    /// Records an uploaded segment.
    /// Records an uploaded segment. Idempotent: if a commit whose response
    /// was lost already recorded it, this succeeds.
    pub async fn add_segment(&mut self, seg: RemoteSegment) -> Result<(), CatalogError> {
        match self.commit(|m| m.push(seg.clone()).map(|_| ())).await {
            Err(CatalogError::NotContiguous { .. }) if self.current.segments.contains(&seg) => {
                Ok(())
            }
            r => r,
        }
    }

    /// Drops segments entirely below `offset` (total retention); returns
    /// them so their objects can be deleted after the commit.
    pub async fn truncate_before(
        &mut self,
        offset: i64,
    ) -> Result<Vec<RemoteSegment>, CatalogError> {
        let mut removed = Vec::new();
        self.commit(|m| {
            removed = m.truncate_before(offset);
            Ok(())
        })
        .await?;
        Ok(removed)
    }

    /// Raises the log start offset for a client's DeleteRecords
    /// ([`PartitionManifest::advance_log_start`]); returns the segments
    /// removed, whose objects can be deleted after the commit.
    pub async fn advance_log_start(
        &mut self,
        offset: i64,
    ) -> Result<Vec<RemoteSegment>, CatalogError> {
        let mut removed = Vec::new();
        self.commit(|m| {
            removed = m.advance_log_start(offset);
            Ok(())
        })
        .await?;
        Ok(removed)
    }

    /// Swaps compacted segments in with one conditional PUT, so a reader
    /// sees the old set or the new one, never a mix. Returns the segments
    /// replaced or removed; their objects may go once readers drained
    /// ([`Self::unreferenced_keys`]).
    pub async fn replace_segments(
        &mut self,
        replacements: &[(RemoteSegment, Option<RemoteSegment>)],
    ) -> Result<Vec<RemoteSegment>, CatalogError> {
        let mut replaced = Vec::new();
        self.commit(|m| {
            replaced = m.replace_segments(replacements);
            Ok(())
        })
        .await?;
        Ok(replaced)
    }

    /// The object keys of `segs` that the current manifest does not
    /// reference (a compacted segment keeps its original's producer
    /// snapshot object).
    pub fn unreferenced_keys(&self, segs: &[RemoteSegment]) -> Vec<String> {
        let referenced = referenced_keys(&self.current);
        segs.iter()
            .flat_map(object_keys)
            .filter(|k| !referenced.contains(k))
            .map(str::to_string)
            .collect()
    }

    /// Applies `change` to the latest manifest and writes it as the next
    /// version, as long as this writer still owns the partition.
    async fn commit(
        &mut self,
        mut change: impl FnMut(&mut PartitionManifest) -> Result<(), CatalogError>,
    ) -> Result<(), CatalogError> {
        let mine = self.writer_epoch.ok_or_else(|| CatalogError::Fenced {
            mine: 0,
            current: self.current.writer_epoch,
            owner: "read-only handle".into(),
        })?;
        loop {
            if self.current.writer_epoch != mine {
                return Err(CatalogError::Fenced {
                    mine,
                    current: self.current.writer_epoch,
                    owner: self.current.owner.clone(),
                });
            }
            let mut next = self.current.clone();
            next.version += 1;
            change(&mut next)?;
            if put_version(&*self.store, &self.path, &next).await? {
                if newer_version_exists(&*self.store, &self.path, next.version)
                    .await?
                    .is_some()
                {
                    // Our version number was a garbage-collected one: a newer
                    // owner exists. Reload to report who.
                    self.current = load_latest(&*self.store, &self.path).await?;
                    continue;
                }
                self.current = next;
                return Ok(());
            }
            self.current = load_latest(&*self.store, &self.path).await?;
        }
    }

    /// Deletes segment objects the manifest does not reference: uploads of a
    /// writer that crashed or was fenced between upload and commit. Only the
    /// owner may call this, before it starts uploading. Returns how many.
    pub async fn delete_orphans(&self) -> Result<usize, CatalogError> {
        let referenced = referenced_keys(&self.current);
        let objects: Vec<_> = self
            .store
            .list(Some(&self.path.segments_dir()))
            .try_collect()
            .await?;
        let mut deleted = 0;
        for o in objects {
            if referenced.contains(o.location.as_ref()) {
                continue;
            }
            match self.store.delete(&o.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => deleted += 1,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(deleted)
    }

    /// Deletes the objects of segments removed from the catalog.
    pub async fn delete_segment_objects(&self, segs: &[RemoteSegment]) -> Result<(), CatalogError> {
        let keys: Vec<&str> = segs.iter().flat_map(object_keys).collect();
        delete_keys(&*self.store, &keys).await
    }

    /// Deletes all but the newest `keep` manifest versions.
    pub async fn gc(&self, keep: usize) -> Result<usize, CatalogError> {
        let mut versions = list_versions(&*self.store, &self.path).await?;
        versions.sort_unstable();
        let doomed = versions.len().saturating_sub(keep.max(1));
        for v in &versions[..doomed] {
            match self.store.delete(&self.path.manifest(*v)).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(doomed)
    }
}

/// Deletes objects by key; one already gone counts as deleted.
pub async fn delete_keys<S: AsRef<str>>(
    store: &dyn ObjectStore,
    keys: &[S],
) -> Result<(), CatalogError> {
    for k in keys {
        match store
            .delete(&object_store::path::Path::from(k.as_ref()))
            .await
        {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Every object key of one segment.
fn object_keys(s: &RemoteSegment) -> impl Iterator<Item = &str> {
    [
        Some(s.log_key.as_str()),
        Some(s.index_key.as_str()),
        Some(s.time_index_key.as_str()),
        s.producer_snapshot_key.as_deref(),
        s.txn_index_key.as_deref(),
    ]
    .into_iter()
    .flatten()
}

fn referenced_keys(m: &PartitionManifest) -> std::collections::HashSet<&str> {
    m.segments.iter().flat_map(object_keys).collect()
}

async fn list_versions(
    store: &dyn ObjectStore,
    path: &PartitionPath,
) -> Result<Vec<u64>, CatalogError> {
    let metas: Vec<_> = store.list(Some(&path.manifest_dir())).try_collect().await?;
    Ok(metas
        .iter()
        .filter_map(|m| PartitionPath::manifest_version(&m.location))
        .collect())
}

async fn newer_version_exists(
    store: &dyn ObjectStore,
    path: &PartitionPath,
    version: u64,
) -> Result<Option<u64>, CatalogError> {
    Ok(list_versions(store, path)
        .await?
        .into_iter()
        .filter(|v| *v > version)
        .max())
}

async fn load_latest(
    store: &dyn ObjectStore,
    path: &PartitionPath,
) -> Result<PartitionManifest, CatalogError> {
    let mut versions = list_versions(store, path).await?;
    versions.sort_unstable();
    // The newest version may vanish under us (GC by a newer owner): fall back.
    while let Some(v) = versions.pop() {
        let key = path.manifest(v);
        match store.get(&key).await {
            Ok(r) => {
                let bytes = r.bytes().await?;
                let m: PartitionManifest =
                    serde_json::from_slice(&bytes).map_err(|e| CatalogError::Corrupt {
                        key: key.to_string(),
                        message: e.to_string(),
                    })?;
                if m.version != v {
                    return Err(CatalogError::Corrupt {
                        key: key.to_string(),
                        message: format!(
                            "holds version {} under the name of version {v}",
                            m.version
                        ),
                    });
                }
                return Ok(m);
            }
            Err(object_store::Error::NotFound { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Ok(PartitionManifest::empty())
}

/// Writes a version with create-if-absent. Ok(false): it already exists.
async fn put_version(
    store: &dyn ObjectStore,
    path: &PartitionPath,
    m: &PartitionManifest,
) -> Result<bool, CatalogError> {
    let json = serde_json::to_vec_pretty(m).map_err(|e| CatalogError::Corrupt {
        key: path.manifest(m.version).to_string(),
        message: e.to_string(),
    })?;
    let opts = PutOptions {
        mode: PutMode::Create,
        ..Default::default()
    };
    let key = path.manifest(m.version);
    let json = Bytes::from(json);
    match store
        .put_opts(&key, PutPayload::from(json.clone()), opts)
        .await
    {
        // Read back what won: a server whose conditional writes are not
        // atomic under concurrency (moto, some S3-compatible servers) can
        // report success to two writers; only the one whose bytes are
        // there keeps it.
        Ok(_) => match store.get(&key).await {
            Ok(r) => Ok(r.bytes().await? == json),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        },
        Err(object_store::Error::AlreadyExists { .. })
        | Err(object_store::Error::Precondition { .. }) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use object_store::memory::InMemory;

    fn seg(base: i64, last: i64) -> RemoteSegment {
        crate::manifest::tests::seg(base, last, base)
    }

    fn path() -> PartitionPath {
        PartitionPath::new("", "t", "id", 0)
    }

    #[tokio::test]
    async fn commits_are_visible_to_readers() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let mut w = PartitionCatalog::claim(store.clone(), path(), "broker-0")
            .await
            .unwrap();
        w.add_segment(seg(0, 9)).await.unwrap();
        w.add_segment(seg(10, 19)).await.unwrap();
        let r = PartitionCatalog::open(store.clone(), path()).await.unwrap();
        assert_eq!(r.manifest().segments.len(), 2);
        assert_eq!(r.manifest().writer_epoch, 1);
        let removed = w.truncate_before(10).await.unwrap();
        assert_eq!(removed[0].base_offset, 0);
        assert_eq!(w.gc(1).await.unwrap(), 3);
        let r = PartitionCatalog::open(store, path()).await.unwrap();
        assert_eq!(r.manifest().segments.len(), 1);
        assert_eq!(r.manifest().log_start_offset, 10);
    }

    #[tokio::test]
    async fn a_deposed_leader_cannot_claim_or_write() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let mut old = PartitionCatalog::claim_at(store.clone(), path(), "node-1", Some(3))
            .await
            .unwrap();
        old.add_segment(seg(0, 9)).await.unwrap();
        let mut new = PartitionCatalog::claim_at(store.clone(), path(), "node-2", Some(4))
            .await
            .unwrap();
        assert_eq!(new.manifest().leader_epoch, Some(4));
        new.add_segment(seg(10, 19)).await.unwrap();
        // The old leader's handle is fenced by the writer epoch...
        assert!(matches!(
            old.add_segment(seg(10, 29)).await,
            Err(CatalogError::Fenced { .. })
        ));
        // ...and it cannot claim again at its old leader epoch.
        match PartitionCatalog::claim_at(store.clone(), path(), "node-1", Some(3)).await {
            Err(CatalogError::StaleLeaderEpoch {
                mine: 3,
                current: 4,
                owner,
            }) => assert_eq!(owner, "node-2"),
            other => panic!("expected a stale leader epoch, got {other:?}"),
        }
        // The same leader re-claiming at its epoch (a restart) is allowed,
        // and a single broker's claim keeps the leader epoch recorded.
        PartitionCatalog::claim_at(store.clone(), path(), "node-2", Some(4))
            .await
            .unwrap();
        let single = PartitionCatalog::claim(store.clone(), path(), "single")
            .await
            .unwrap();
        assert_eq!(single.manifest().leader_epoch, Some(4));
        assert_eq!(single.manifest().segments.len(), 2);
    }

    #[tokio::test]
    async fn a_stale_writer_is_fenced() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let mut old = PartitionCatalog::claim(store.clone(), path(), "broker-a")
            .await
            .unwrap();
        old.add_segment(seg(0, 9)).await.unwrap();
        let mut new = PartitionCatalog::claim(store.clone(), path(), "broker-b")
            .await
            .unwrap();
        new.add_segment(seg(10, 19)).await.unwrap();
        match old.add_segment(seg(10, 29)).await {
            Err(CatalogError::Fenced {
                mine: 1,
                current: 2,
                owner,
            }) => assert_eq!(owner, "broker-b"),
            other => panic!("expected fencing, got {other:?}"),
        }
        // Even after GC deleted the version numbers the stale writer would
        // write next, it is still fenced.
        new.gc(1).await.unwrap();
        let mut stale = old.clone();
        stale.current.writer_epoch = 1;
        stale.current.version = 1;
        let res = stale.add_segment(seg(20, 29)).await;
        assert!(matches!(res, Err(CatalogError::Fenced { .. })), "{res:?}");
        let r = PartitionCatalog::open(store, path()).await.unwrap();
        assert_eq!(
            r.manifest().next_offset(),
            Some(20),
            "readers never see the stale write (its orphan version is older than the latest)"
        );
        assert_eq!(r.manifest().owner, "broker-b");
    }

    #[tokio::test]
    async fn orphans_are_deleted_and_referenced_objects_kept() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let p = path();
        let mut w = PartitionCatalog::claim(store.clone(), p.clone(), "b")
            .await
            .unwrap();
        let mut s = seg(0, 9);
        s.log_key = p.segment_object(0, 1, "log").to_string();
        store
            .put(
                &p.segment_object(0, 1, "log"),
                PutPayload::from_static(b"kept"),
            )
            .await
            .unwrap();
        store
            .put(
                &p.segment_object(10, 1, "log"),
                PutPayload::from_static(b"orphan"),
            )
            .await
            .unwrap();
        w.add_segment(s).await.unwrap();
        assert_eq!(w.delete_orphans().await.unwrap(), 1);
        assert!(store.head(&p.segment_object(0, 1, "log")).await.is_ok());
        assert!(store.head(&p.segment_object(10, 1, "log")).await.is_err());
    }

    #[tokio::test]
    async fn read_only_handles_cannot_write() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let mut r = PartitionCatalog::open(store, path()).await.unwrap();
        assert!(matches!(
            r.add_segment(seg(0, 1)).await,
            Err(CatalogError::Fenced { .. })
        ));
    }

    #[tokio::test]
    async fn concurrent_claims_leave_one_owner() {
        let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
        let mut tasks = Vec::new();
        for i in 0..8 {
            let s = store.clone();
            tasks.push(tokio::spawn(async move {
                PartitionCatalog::claim(s, path(), &format!("b{i}"))
                    .await
                    .unwrap()
            }));
        }
        let mut epochs = Vec::new();
        for t in tasks {
            epochs.push(t.await.unwrap().writer_epoch().unwrap());
        }
        epochs.sort_unstable();
        assert_eq!(
            epochs,
            (1..=8).collect::<Vec<_>>(),
            "every claim got its own epoch"
        );
        let r = PartitionCatalog::open(store, path()).await.unwrap();
        assert_eq!(r.manifest().writer_epoch, 8);
    }
}
