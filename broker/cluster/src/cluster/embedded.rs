//! `EmbeddedStore`: the cluster store of a broker that runs alone (no
//! `--metadata`). It lives in the process, with etcd's semantics —
//! revisions, leases, transactions, watches — so a single broker runs the
//! same membership, controller and partition-state code as a cluster.
//! It keeps nothing on disk: a single broker's durable metadata stays in
//! its data directory, and the state here is rebuilt from it at start.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use tokio::sync::mpsc;

use super::store::{
    ClusterStore, Compare, KeyValue, LeaseId, Op, Revision, StoreError, TxnOutcome, WatchEvent,
    WatchStream,
};

/// Revisions of history kept for watches that start in the past.
const HISTORY: usize = 4096;
/// Events buffered per watcher before it is cut off (it then lists again).
const WATCH_BUFFER: usize = 1024;

#[derive(Debug, Default)]
struct State {
    revision: Revision,
    kvs: BTreeMap<String, KeyValue>,
    leases: HashMap<LeaseId, Lease>,
    next_lease: LeaseId,
    history: VecDeque<(Revision, Vec<WatchEvent>)>,
    watchers: Vec<Watcher>,
}

#[derive(Debug)]
struct Lease {
    ttl: Duration,
    deadline: Instant,
}

#[derive(Debug)]
struct Watcher {
    prefix: String,
    tx: mpsc::Sender<Result<Vec<WatchEvent>, StoreError>>,
}

#[derive(Debug, Default)]
pub(crate) struct EmbeddedStore {
    state: Mutex<State>,
}

impl EmbeddedStore {
    /// A new, empty store. Within a tokio runtime, a task expires leases
    /// on time; without one they expire at the next call.
    pub fn new() -> Arc<EmbeddedStore> {
        let store = Arc::new(EmbeddedStore::default());
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let weak: Weak<EmbeddedStore> = Arc::downgrade(&store);
            rt.spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    let Some(s) = weak.upgrade() else { return };
                    s.lock().expire_leases(Instant::now());
                }
            });
        }
        store
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl State {
    fn expire_leases(&mut self, now: Instant) {
        let expired: Vec<LeaseId> = self
            .leases
            .iter()
            .filter(|(_, l)| l.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            self.drop_lease(id);
        }
    }

    fn drop_lease(&mut self, id: LeaseId) {
        self.leases.remove(&id);
        let keys: Vec<String> = self
            .kvs
            .values()
            .filter(|kv| kv.lease == id)
            .map(|kv| kv.key.clone())
            .collect();
        if !keys.is_empty() {
            self.apply(keys.into_iter().map(Op::delete).collect());
        }
    }

    fn holds(&self, c: &Compare) -> bool {
        match c {
            Compare::Absent(k) => !self.kvs.contains_key(k),
            Compare::ModRevision(k, r) => self.kvs.get(k).is_some_and(|kv| kv.mod_revision == *r),
            Compare::CreateRevision(k, r) => {
                self.kvs.get(k).is_some_and(|kv| kv.create_revision == *r)
            }
        }
    }

    /// Applies `ops` at the next revision and tells the watchers.
    fn apply(&mut self, ops: Vec<Op>) {
        self.revision += 1;
        let rev = self.revision;
        let mut events = Vec::with_capacity(ops.len());
        for op in ops {
            match op {
                Op::Put { key, value, lease } => {
                    let create_revision = self.kvs.get(&key).map_or(rev, |kv| kv.create_revision);
                    let kv = KeyValue {
                        key: key.clone(),
                        value,
                        create_revision,
                        mod_revision: rev,
                        lease,
                    };
                    self.kvs.insert(key, kv.clone());
                    events.push(WatchEvent::Put(kv));
                }
                Op::Delete { key } => {
                    if self.kvs.remove(&key).is_some() {
                        events.push(WatchEvent::Delete {
                            key,
                            mod_revision: rev,
                        });
                    }
                }
                Op::DeletePrefix { prefix } => {
                    let keys: Vec<String> = self
                        .kvs
                        .range(prefix.clone()..)
                        .take_while(|(k, _)| k.starts_with(&prefix))
                        .map(|(k, _)| k.clone())
                        .collect();
                    for key in keys {
                        self.kvs.remove(&key);
                        events.push(WatchEvent::Delete {
                            key,
                            mod_revision: rev,
                        });
                    }
                }
            }
        }
        self.watchers.retain(|w| {
            let mine: Vec<WatchEvent> = events
                .iter()
                .filter(|e| e.key().starts_with(&w.prefix))
                .cloned()
                .collect();
            // A watcher that cannot keep up is dropped; it lists again.
            mine.is_empty() || w.tx.try_send(Ok(mine)).is_ok()
        });
        self.history.push_back((rev, events));
        while self.history.len() > HISTORY {
            self.history.pop_front();
        }
    }
}

#[async_trait]
impl ClusterStore for EmbeddedStore {
    fn describe(&self) -> String {
        "embedded".to_string()
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StoreError> {
        let mut s = self.lock();
        s.expire_leases(Instant::now());
        Ok(s.kvs.get(key).cloned())
    }

    async fn list(&self, prefix: &str) -> Result<(Vec<KeyValue>, Revision), StoreError> {
        let mut s = self.lock();
        s.expire_leases(Instant::now());
        let kvs = s
            .kvs
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(_, v)| v.clone())
            .collect();
        Ok((kvs, s.revision))
    }

    async fn txn(&self, compares: Vec<Compare>, ops: Vec<Op>) -> Result<TxnOutcome, StoreError> {
        let mut s = self.lock();
        s.expire_leases(Instant::now());
        for op in &ops {
            if let Op::Put { lease, .. } = op {
                if *lease != 0 && !s.leases.contains_key(lease) {
                    return Err(StoreError::LeaseExpired(*lease));
                }
            }
        }
        let succeeded = compares.iter().all(|c| s.holds(c));
        if succeeded && !ops.is_empty() {
            s.apply(ops);
        }
        Ok(TxnOutcome {
            succeeded,
            revision: s.revision,
        })
    }

    async fn grant_lease(&self, ttl: Duration) -> Result<LeaseId, StoreError> {
        let mut s = self.lock();
        s.next_lease += 1;
        let id = s.next_lease;
        s.leases.insert(
            id,
            Lease {
                ttl,
                deadline: Instant::now() + ttl,
            },
        );
        Ok(id)
    }

    async fn keep_alive(&self, lease: LeaseId) -> Result<(), StoreError> {
        let mut s = self.lock();
        let now = Instant::now();
        s.expire_leases(now);
        match s.leases.get_mut(&lease) {
            Some(l) => {
                l.deadline = now + l.ttl;
                Ok(())
            }
            None => Err(StoreError::LeaseExpired(lease)),
        }
    }

    async fn revoke_lease(&self, lease: LeaseId) -> Result<(), StoreError> {
        self.lock().drop_lease(lease);
        Ok(())
    }

    async fn watch(&self, prefix: &str, from: Revision) -> Result<WatchStream, StoreError> {
        let mut s = self.lock();
        s.expire_leases(Instant::now());
        let oldest = s.history.front().map_or(s.revision + 1, |(r, _)| *r);
        if from < oldest && from <= s.revision {
            return Err(StoreError::Compacted(from));
        }
        let (tx, rx) = mpsc::channel(WATCH_BUFFER);
        for (rev, events) in &s.history {
            if *rev < from {
                continue;
            }
            let mine: Vec<WatchEvent> = events
                .iter()
                .filter(|e| e.key().starts_with(prefix))
                .cloned()
                .collect();
            if !mine.is_empty() && tx.try_send(Ok(mine)).is_err() {
                return Err(StoreError::Compacted(from));
            }
        }
        s.watchers.push(Watcher {
            prefix: prefix.to_string(),
            tx,
        });
        Ok(rx)
    }
}
