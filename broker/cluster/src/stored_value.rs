//! One value every broker of the cluster must agree on, kept under a key
//! of the cluster store as a whole (the SCRAM credentials, the ACL
//! bindings): read at start, followed through a watch, and changed by
//! compare-and-swap, so two brokers' changes never overwrite each other.
//!
//! A broker alone runs on the embedded store, which keeps nothing on disk:
//! there the value is also written to a file of `<data-dir>/security/`
//! (owner-only, atomically) before the store takes it, and put into the
//! store at start, so a restart keeps it.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};
use std::time::Duration;

use strata_common::durable_file;
use tokio::sync::{watch, Mutex};

use crate::cluster::store::{ClusterStore, Compare, Op, StoreError, WatchEvent};

/// Why a stored security value could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum SecurityStoreError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot write {path}: {source}")]
    File {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the stored security settings are unreadable: {0}")]
    Corrupt(String),
    #[error("the system's secure random source failed")]
    Random,
    #[error("--add-scram: {0}")]
    Bootstrap(String),
}

/// How a value is stored: its key, its file on a broker alone, and its
/// encoding.
pub trait StoredCodec: Default + Send + Sync + 'static {
    /// The cluster store's key.
    const KEY: &'static str;
    /// The file of `<data-dir>/security/` on a broker alone.
    const FILE: &'static str;
    /// What it is, for log lines ("SCRAM credentials").
    const WHAT: &'static str;
    fn encode(&self) -> Vec<u8>;
    fn decode(bytes: &[u8]) -> Result<Self, String>;
}

/// A value and the store revision it was read at (0: the key was absent).
#[derive(Debug)]
pub struct Versioned<T> {
    revision: i64,
    value: Arc<T>,
}

impl<T> Clone for Versioned<T> {
    fn clone(&self) -> Self {
        Versioned {
            revision: self.revision,
            value: self.value.clone(),
        }
    }
}

impl<T> Versioned<T> {
    pub fn value(&self) -> &Arc<T> {
        &self.value
    }
}

/// Whether an update changed the value (only then is it written).
pub trait UpdateOutcome {
    fn changed(&self) -> bool;
}

impl UpdateOutcome for bool {
    fn changed(&self) -> bool {
        *self
    }
}

/// The cluster's current value of `T`.
pub struct StoredValue<T: StoredCodec> {
    store: Arc<dyn ClusterStore>,
    /// `<data-dir>/security` on a broker alone (the embedded store).
    dir: Option<PathBuf>,
    /// A value is replaced only by one read at a newer revision, so a
    /// broker's own write never hides a later one another broker made.
    current: watch::Sender<Versioned<T>>,
    writes: Mutex<()>,
}

impl<T: StoredCodec> StoredValue<T> {
    /// Puts the file's value into the embedded store when the store has
    /// none (a broker alone, restarting), reads the value, and follows the
    /// store from then on, until `shutdown`.
    pub async fn open(
        store: Arc<dyn ClusterStore>,
        dir: Option<PathBuf>,
        shutdown: watch::Receiver<bool>,
    ) -> Result<Arc<Self>, SecurityStoreError> {
        if let Some(dir) = &dir {
            seed_from_file(&store, dir, T::FILE, T::KEY).await?;
        }
        let (value, revision) = Self::read(&store).await?;
        let (current, _) = watch::channel(Versioned {
            revision: revision.unwrap_or(0),
            value: Arc::new(value),
        });
        let this = Arc::new(StoredValue {
            store,
            dir,
            current,
            writes: Mutex::new(()),
        });
        tokio::spawn(Self::follow(Arc::downgrade(&this), shutdown));
        Ok(this)
    }

    /// The current value.
    pub fn get(&self) -> Arc<T> {
        self.current.borrow().value.clone()
    }

    /// Follows the current value.
    pub fn subscribe(&self) -> watch::Receiver<Versioned<T>> {
        self.current.subscribe()
    }

    /// The store, and on a broker alone the directory of its files.
    pub(crate) fn store(&self) -> &Arc<dyn ClusterStore> {
        &self.store
    }

    pub(crate) fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    async fn read(store: &Arc<dyn ClusterStore>) -> Result<(T, Option<i64>), SecurityStoreError> {
        match store.get(T::KEY).await? {
            Some(kv) => Ok((
                T::decode(&kv.value).map_err(SecurityStoreError::Corrupt)?,
                Some(kv.mod_revision),
            )),
            None => Ok((T::default(), None)),
        }
    }

    /// Changes the value: `change` returns whether it changed anything (and
    /// that outcome is returned). Compare-and-swap against other brokers:
    /// `change` runs again on a newer value when another broker wrote first.
    pub async fn update<R: UpdateOutcome>(
        &self,
        mut change: impl FnMut(&mut T) -> Result<R, SecurityStoreError>,
    ) -> Result<R, SecurityStoreError> {
        let _one_writer = self.writes.lock().await;
        loop {
            let (mut value, revision) = Self::read(&self.store).await?;
            let out = change(&mut value)?;
            if !out.changed() {
                return Ok(out);
            }
            let bytes = value.encode();
            if let Some(dir) = &self.dir {
                write_file(&dir.join(T::FILE), &bytes)?;
            }
            let compare = match revision {
                Some(r) => Compare::ModRevision(T::KEY.to_string(), r),
                None => Compare::Absent(T::KEY.to_string()),
            };
            let outcome = self
                .store
                .txn(vec![compare], vec![Op::put(T::KEY, bytes)])
                .await?;
            if outcome.succeeded {
                self.offer(outcome.revision, value);
                return Ok(out);
            }
        }
    }

    /// Keeps `current` equal to the store's value: a watch on the key,
    /// listed again whenever the watch breaks.
    async fn follow(this: Weak<Self>, mut shutdown: watch::Receiver<bool>) {
        loop {
            let Some(me) = this.upgrade() else { return };
            let store = me.store.clone();
            let from = match store.list(T::KEY).await {
                Ok((kvs, revision)) => {
                    match kvs.iter().find(|kv| kv.key == T::KEY) {
                        Some(kv) => me.apply(kv.mod_revision, &kv.value),
                        None => me.offer(revision, T::default()),
                    }
                    revision + 1
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the {}; retrying", T::WHAT);
                    drop(me);
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                        _ = shutdown.changed() => return,
                    }
                }
            };
            drop(me);
            let mut events = match store.watch(T::KEY, from).await {
                Ok(w) => w,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot watch the {}; retrying", T::WHAT);
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                        _ = shutdown.changed() => return,
                    }
                }
            };
            loop {
                let batch = tokio::select! {
                    b = events.recv() => b,
                    _ = shutdown.changed() => return,
                };
                let Some(Ok(batch)) = batch else {
                    // The watch broke: list again after a pause.
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_millis(200)) => break,
                        _ = shutdown.changed() => return,
                    }
                };
                let Some(me) = this.upgrade() else { return };
                for event in batch {
                    match event {
                        WatchEvent::Put(kv) if kv.key == T::KEY => {
                            me.apply(kv.mod_revision, &kv.value);
                        }
                        WatchEvent::Delete { key, mod_revision } if key == T::KEY => {
                            me.offer(mod_revision, T::default());
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    fn apply(&self, revision: i64, bytes: &[u8]) {
        match T::decode(bytes) {
            Ok(value) => self.offer(revision, value),
            Err(e) => {
                tracing::error!(error = %e, "ignoring unreadable {} in the cluster store", T::WHAT);
            }
        }
    }

    /// Takes `value`, read at `revision`, unless a newer one is held.
    fn offer(&self, revision: i64, value: T) {
        self.current.send_if_modified(|cur| {
            if revision > cur.revision {
                *cur = Versioned {
                    revision,
                    value: Arc::new(value),
                };
                true
            } else {
                false
            }
        });
    }
}

/// On a broker alone: puts `<dir>/<file>` under `key` unless the store
/// holds the key already.
pub(crate) async fn seed_from_file(
    store: &Arc<dyn ClusterStore>,
    dir: &Path,
    file: &str,
    key: &str,
) -> Result<(), SecurityStoreError> {
    std::fs::create_dir_all(dir).map_err(|source| SecurityStoreError::File {
        path: dir.display().to_string(),
        source,
    })?;
    if let Ok(bytes) = std::fs::read(dir.join(file)) {
        store
            .txn(
                vec![Compare::Absent(key.to_string())],
                vec![Op::put(key, bytes)],
            )
            .await
            .map_err(SecurityStoreError::Store)?;
    }
    Ok(())
}

/// Writes a file only its owner may read, atomically.
pub(crate) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), SecurityStoreError> {
    durable_file::write_atomically_private(path, bytes).map_err(|source| SecurityStoreError::File {
        path: path.display().to_string(),
        source,
    })
}
