//! Producer id blocks from the metadata store (KIP-730's idea on etcd):
//! one counter, `producer_ids/next_block`, advanced by compare-and-swap,
//! so no two brokers, and no broker before and after a replaced disk, ever
//! hand out the same producer id (`producer_ids.rs`).
//!
//! It fetches blocks ahead for one broker's `ProducerIdManager`; it never
//! hands out ids itself.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::store::{ClusterStore, Compare, Op, StoreError};
use crate::producer_ids::{ProducerIdManager, BLOCK, SHARED_BASE};

/// The next id no broker has been given.
pub(crate) const NEXT_BLOCK_KEY: &str = "producer_ids/next_block";

/// Takes the next block: `start..start + BLOCK`, at or above `floor` (ids
/// below it are in use: the counter is raised past them if an old backup
/// of the store set it back).
pub(crate) async fn take_block(
    store: &dyn ClusterStore,
    floor: i64,
) -> Result<(i64, i64), StoreError> {
    loop {
        let current = store.get(NEXT_BLOCK_KEY).await?;
        let (start, guard) = match current {
            Some(kv) => {
                let start = std::str::from_utf8(&kv.value)
                    .ok()
                    .and_then(|s| s.trim().parse::<i64>().ok())
                    .filter(|s| *s >= SHARED_BASE)
                    .ok_or_else(|| {
                        StoreError::Protocol(format!(
                            "{NEXT_BLOCK_KEY} holds {:?}, not a producer id",
                            String::from_utf8_lossy(&kv.value)
                        ))
                    })?;
                (
                    start,
                    Compare::ModRevision(NEXT_BLOCK_KEY.to_string(), kv.mod_revision),
                )
            }
            None => (SHARED_BASE, Compare::Absent(NEXT_BLOCK_KEY.to_string())),
        };
        let start = start.max(floor);
        let end = start
            .checked_add(BLOCK)
            .filter(|end| *end <= crate::producer_ids::SHARED_LIMIT)
            .ok_or_else(|| {
                StoreError::Protocol(format!(
                    "{NEXT_BLOCK_KEY}: the shared producer id range is exhausted"
                ))
            })?;
        let put = Op::put(NEXT_BLOCK_KEY, end.to_string().into_bytes());
        if store.txn(vec![guard], vec![put]).await?.succeeded {
            return Ok((start, end));
        }
        // Another broker took it first: read again.
    }
}

/// Keeps `ids` supplied with blocks until `shutdown`.
pub fn start(
    store: Arc<dyn ClusterStore>,
    ids: Arc<ProducerIdManager>,
    mut shutdown: watch::Receiver<bool>,
) {
    ids.use_shared_blocks();
    tokio::spawn(async move {
        loop {
            if ids.wants_block() {
                match take_block(store.as_ref(), ids.floor()).await {
                    Ok((start, end)) => {
                        tracing::debug!(start, end, "producer id block taken");
                        ids.add_block(start, end);
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot take a producer id block; retrying");
                        tokio::select! {
                            _ = tokio::time::sleep(Duration::from_millis(500)) => {}
                            _ = shutdown.changed() => return,
                        }
                        continue;
                    }
                }
            }
            tokio::select! {
                _ = ids.block_wanted() => {}
                // A wake-up lost between the check and the wait is made up.
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = shutdown.changed() => return,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::embedded::EmbeddedStore;

    #[tokio::test]
    async fn brokers_take_disjoint_blocks_in_order() {
        let store: Arc<dyn ClusterStore> = EmbeddedStore::new();
        let (a, b) = tokio::join!(take_block(store.as_ref(), 0), take_block(store.as_ref(), 0));
        let (mut a, mut b) = (a.unwrap(), b.unwrap());
        if a > b {
            std::mem::swap(&mut a, &mut b);
        }
        assert_eq!(a, (SHARED_BASE, SHARED_BASE + BLOCK));
        assert_eq!(b, (SHARED_BASE + BLOCK, SHARED_BASE + 2 * BLOCK));
        // A counter behind the ids in use (an old backup) is raised.
        let put = |v: String| Op::put(NEXT_BLOCK_KEY, v.into_bytes());
        store
            .txn(Vec::new(), vec![put(SHARED_BASE.to_string())])
            .await
            .unwrap();
        let floor = SHARED_BASE + 5 * BLOCK + 7;
        assert_eq!(
            take_block(store.as_ref(), floor).await.unwrap(),
            (floor, floor + BLOCK)
        );
        assert_eq!(
            take_block(store.as_ref(), 0).await.unwrap().0,
            floor + BLOCK
        );
        store
            .txn(Vec::new(), vec![Op::put(NEXT_BLOCK_KEY, b"junk".to_vec())])
            .await
            .unwrap();
        assert!(
            take_block(store.as_ref(), 0).await.is_err(),
            "a damaged counter is an error"
        );
    }
}
