//! Checks of a store's conditional writes through the catalog, shared by the
//! tests that run them against real S3-protocol servers (moto, strata-s3).
//! Built only with the `testing` feature; the broker never uses it.

use std::sync::Arc;

use object_store::ObjectStore;

use crate::{PartitionCatalog, PartitionPath};

/// `writers` brokers claim `path` at once: every claim must get an epoch of
/// its own, and the catalog must then name the writer with the highest.
/// (An epoch may be skipped: when a server lets two conditional writes of
/// one version both succeed, the read-back sends both losers round again.)
/// Panics, with what was seen, if not.
pub async fn concurrent_claims_get_distinct_epochs(
    store: Arc<dyn ObjectStore>,
    path: PartitionPath,
    writers: usize,
) {
    let tasks: Vec<_> = (0..writers)
        .map(|i| {
            let (s, p) = (store.clone(), path.clone());
            tokio::spawn(async move { PartitionCatalog::claim(s, p, &format!("broker-{i}")).await })
        })
        .collect();
    let mut epochs = Vec::new();
    for t in tasks {
        let c = t.await.expect("claim task panicked").expect("claim failed");
        let epoch = c.writer_epoch().expect("a claim yields an epoch");
        epochs.push((epoch, c.manifest().owner.clone()));
    }
    epochs.sort_unstable();
    let mut distinct: Vec<u64> = epochs.iter().map(|(e, _)| *e).collect();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        writers,
        "no two writers hold the same epoch: {epochs:?}"
    );
    let latest = PartitionCatalog::open(store, path)
        .await
        .expect("catalog opens after the claims");
    let (top, owner) = epochs.last().expect("at least one writer");
    assert_eq!(latest.manifest().writer_epoch, *top);
    assert_eq!(&latest.manifest().owner, owner);
}
