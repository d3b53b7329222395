//! [`TieredPart`]: what a partition log holds of its remote side, so that
//! a cleaning pass can cover the bucket's segments (`cleaner_remote.rs`).
//! Only a handle: it owns no files and does no I/O.

use std::sync::Arc;

use strata_tiering::{RemoteLogManager, RemotePartition};

/// A tiered log's remote side, attached by the broker's tiering sync.
pub struct TieredPart {
    pub manager: Arc<RemoteLogManager>,
    pub remote: Arc<RemotePartition>,
    /// The runtime the object store client lives on; cleaner threads
    /// block on it.
    pub runtime: tokio::runtime::Handle,
}

impl std::fmt::Debug for TieredPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TieredPart")
            .field("topic", &self.remote.topic)
            .field("partition", &self.remote.partition)
            .finish()
    }
}
