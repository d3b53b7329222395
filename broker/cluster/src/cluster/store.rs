//! `ClusterStore`: the interface to the store that holds a cluster's
//! metadata (brokers, the controller, topics, partition state). Two
//! implementations: [`EtcdStore`](super::etcd::EtcdStore) for a cluster and
//! [`EmbeddedStore`](super::embedded::EmbeddedStore) for a single broker, so
//! leaders, ISR and epochs go through one code path whichever store holds
//! them. The model is etcd's: keys with create/mod revisions, leases that
//! expire, multi-key transactions guarded by revision compares (the only
//! way anything is written), and watches by prefix from a revision.
//!
//! Keys are relative to the store's prefix. This module knows nothing of
//! what the keys mean.

use std::fmt::Debug;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::mpsc;

/// A store-wide, monotonically increasing version number: every committed
/// write gets the next one.
pub(crate) type Revision = i64;
/// A lease: keys attached to it vanish when it expires or is revoked.
pub(crate) type LeaseId = i64;

/// One key and its value with the revisions etcd keeps for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Vec<u8>,
    /// The revision of the write that created the key (unique per key
    /// incarnation: a key deleted and created again gets a new one).
    pub create_revision: Revision,
    /// The revision of the last write to the key.
    pub mod_revision: Revision,
    /// The lease the key is attached to, 0 for none.
    pub lease: LeaseId,
}

/// A condition of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compare {
    /// The key does not exist.
    Absent(String),
    /// The key exists and was last written at this revision.
    ModRevision(String, Revision),
    /// The key exists and was created at this revision.
    CreateRevision(String, Revision),
}

/// A write of a transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Put {
        key: String,
        value: Vec<u8>,
        /// Attach the key to this lease (0: none).
        lease: LeaseId,
    },
    Delete {
        key: String,
    },
    /// Deletes every key under a prefix.
    DeletePrefix {
        prefix: String,
    },
}

impl Op {
    pub fn put(key: impl Into<String>, value: Vec<u8>) -> Op {
        Op::Put {
            key: key.into(),
            value,
            lease: 0,
        }
    }
    pub(crate) fn put_leased(key: impl Into<String>, value: Vec<u8>, lease: LeaseId) -> Op {
        Op::Put {
            key: key.into(),
            value,
            lease,
        }
    }
    pub fn delete(key: impl Into<String>) -> Op {
        Op::Delete { key: key.into() }
    }
    pub(crate) fn delete_prefix(prefix: impl Into<String>) -> Op {
        Op::DeletePrefix {
            prefix: prefix.into(),
        }
    }
}

/// What a transaction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxnOutcome {
    /// Every compare held and every op was applied (all or nothing).
    pub succeeded: bool,
    /// The store's revision after the transaction.
    pub revision: Revision,
}

/// A change seen by a watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchEvent {
    Put(KeyValue),
    Delete { key: String, mod_revision: Revision },
}

impl WatchEvent {
    pub fn key(&self) -> &str {
        match self {
            WatchEvent::Put(kv) => &kv.key,
            WatchEvent::Delete { key, .. } => key,
        }
    }
    pub fn revision(&self) -> Revision {
        match self {
            WatchEvent::Put(kv) => kv.mod_revision,
            WatchEvent::Delete { mod_revision, .. } => *mod_revision,
        }
    }
}

/// Events of a watch, in revision order (a message holds one or more
/// revisions' events; a revision's events are never split). The stream ends with an error when the watch breaks (the
/// store went away, the start revision was compacted); a watcher then
/// lists again and watches from the listed revision.
pub(crate) type WatchStream = mpsc::Receiver<Result<Vec<WatchEvent>, StoreError>>;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No store endpoint answered (down, no quorum, network).
    #[error("metadata store unavailable: {0}")]
    Unavailable(String),
    /// A transaction was sent and no answer came back: it may or may not
    /// have been applied (the caller reads to find out, or reports it).
    #[error("metadata store unavailable: {0} (outcome unknown)")]
    OutcomeUnknown(String),
    /// The store answered with something this broker cannot use.
    #[error("metadata store protocol error: {0}")]
    Protocol(String),
    /// A watch asked for history the store has compacted away.
    #[error("metadata store compacted revision {0}: list again")]
    Compacted(Revision),
    /// The lease expired or was revoked.
    #[error("lease {0} expired")]
    LeaseExpired(LeaseId),
}

#[async_trait]
pub trait ClusterStore: Send + Sync + Debug {
    /// A short description for logs (`etcd://...`, `embedded`).
    fn describe(&self) -> String;
    /// One key, linearizable.
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StoreError>;
    /// Every key under `prefix`, sorted, and the revision of the read.
    async fn list(&self, prefix: &str) -> Result<(Vec<KeyValue>, Revision), StoreError>;
    /// If every compare holds, applies every op atomically.
    async fn txn(&self, compares: Vec<Compare>, ops: Vec<Op>) -> Result<TxnOutcome, StoreError>;
    /// A new lease that expires `ttl` after its last keep-alive.
    async fn grant_lease(&self, ttl: Duration) -> Result<LeaseId, StoreError>;
    /// Renews a lease; `LeaseExpired` once it is gone.
    async fn keep_alive(&self, lease: LeaseId) -> Result<(), StoreError>;
    /// Ends a lease now, deleting its keys.
    async fn revoke_lease(&self, lease: LeaseId) -> Result<(), StoreError>;
    /// Changes under `prefix` from revision `from` on (inclusive).
    async fn watch(&self, prefix: &str, from: Revision) -> Result<WatchStream, StoreError>;
}
