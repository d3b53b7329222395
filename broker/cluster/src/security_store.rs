//! Where the cluster keeps its users' SCRAM credentials and the SCRAM
//! decoy secret, so every broker authenticates the same users the same way:
//! one key of the cluster store each (`security/scram_credentials`,
//! `security/scram_decoy_key`), written by compare-and-swap and watched by
//! every broker, which holds the current set in memory for the
//! authenticator.
//!
//! A broker alone runs on the embedded store, which keeps nothing on disk:
//! there the values are also written to `<data-dir>/security/` before the
//! store takes them, and loaded into it at start, so a restart keeps them.
//!
//! The set is stored whole (a credential is about 200 bytes of JSON, so
//! etcd's 1.5 MB value limit holds several thousand users).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{json, Value};
use strata_common::durable_file;
use strata_security::sasl::ScramCredentials;
use strata_security::scram::store::{CredentialStore, Deletion, Described, Upsertion, UserResult};
use strata_security::scram::{random_key, ScramCredential, ScramMechanism};
use tokio::sync::{watch, Mutex};

use crate::cluster::store::{ClusterStore, Compare, Op, StoreError, WatchEvent};

const CREDENTIALS_KEY: &str = "security/scram_credentials";
const DECOY_KEY: &str = "security/scram_decoy_key";
const CREDENTIALS_FILE: &str = "scram_credentials.json";
const DECOY_FILE: &str = "scram_decoy_key";
/// The `(user, mechanism)` pairs `--add-scram` ever added: never again,
/// so a deleted bootstrap user stays deleted across restarts.
const BOOTSTRAPPED_KEY: &str = "security/scram_bootstrapped";
const BOOTSTRAPPED_FILE: &str = "scram_bootstrapped.json";

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
    #[error("the stored SCRAM credentials are unreadable: {0}")]
    Corrupt(String),
    #[error("the system's secure random source failed")]
    Random,
    #[error("--add-scram: {0}")]
    Bootstrap(String),
}

/// The cluster's SCRAM credentials, kept current. `Debug` leaves the
/// decoy secret and the credentials out.
pub struct SecurityStore {
    store: Arc<dyn ClusterStore>,
    /// `<data-dir>/security` on a broker alone (the embedded store).
    dir: Option<PathBuf>,
    /// The set and the store revision it was read at: a value is replaced
    /// only by a newer one, so a broker's own write never hides a later
    /// one another broker made.
    current: watch::Sender<Versioned>,
    decoy_key: [u8; 32],
    writes: Mutex<()>,
}

impl std::fmt::Debug for SecurityStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecurityStore")
            .field("store", &self.store.describe())
            .field("dir", &self.dir)
            .field("users", &self.current.borrow().set.len())
            .finish_non_exhaustive()
    }
}

/// A credential set and the revision of the store it was read at (0:
/// the key was absent).
#[derive(Debug, Clone, Default)]
struct Versioned {
    revision: i64,
    set: Arc<CredentialStore>,
}

/// The current credentials, as the authenticator reads them.
#[derive(Debug, Clone)]
pub struct CredentialView(watch::Receiver<Versioned>);

impl ScramCredentials for CredentialView {
    fn scram_credential(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        self.0.borrow().set.get(user, mechanism).cloned()
    }
}

fn encode(set: &CredentialStore) -> Vec<u8> {
    let entries: Vec<Value> = set
        .iter()
        .map(|(user, c)| {
            json!({
                "user": user,
                "mechanism": c.mechanism.name(),
                "iterations": c.iterations,
                "salt": B64.encode(&c.salt),
                "stored_key": B64.encode(&c.stored_key),
                "server_key": B64.encode(&c.server_key),
            })
        })
        .collect();
    serde_json::to_vec(&json!({ "version": 1, "credentials": entries })).unwrap_or_default()
}

fn decode(bytes: &[u8]) -> Result<CredentialStore, SecurityStoreError> {
    let corrupt = |m: &str| SecurityStoreError::Corrupt(m.to_string());
    let v: Value = serde_json::from_slice(bytes).map_err(|e| corrupt(&e.to_string()))?;
    let mut set = CredentialStore::default();
    let entries = v["credentials"]
        .as_array()
        .ok_or_else(|| corrupt("no credentials list"))?;
    for e in entries {
        let text = |k: &str| e[k].as_str().ok_or_else(|| corrupt(&format!("no {k}")));
        let bytes = |k: &str| -> Result<Vec<u8>, SecurityStoreError> {
            B64.decode(text(k)?)
                .map_err(|_| corrupt(&format!("{k} is not base64")))
        };
        let mechanism = ScramMechanism::from_name(text("mechanism")?)
            .ok_or_else(|| corrupt("unknown mechanism"))?;
        let iterations = e["iterations"]
            .as_u64()
            .and_then(|i| u32::try_from(i).ok())
            .ok_or_else(|| corrupt("no iterations"))?;
        set.insert(
            text("user")?,
            ScramCredential {
                mechanism,
                salt: bytes("salt")?,
                iterations,
                stored_key: bytes("stored_key")?,
                server_key: bytes("server_key")?,
            },
        );
    }
    Ok(set)
}

/// One `--add-scram` value: `SCRAM-SHA-512=[name=admin,password=secret]`
/// (Kafka's `kafka-storage format --add-scram` syntax; `iterations=N`
/// may be given too). `Debug` of the result never holds the password.
pub fn parse_add_scram(value: &str) -> Result<(String, ScramCredential), SecurityStoreError> {
    let bad = |m: &str| SecurityStoreError::Bootstrap(m.to_string());
    let (mechanism, rest) = value
        .split_once('=')
        .ok_or_else(|| bad("expected MECHANISM=[name=USER,password=PASSWORD]"))?;
    let mechanism = ScramMechanism::from_name(mechanism.trim())
        .ok_or_else(|| bad("the mechanism must be SCRAM-SHA-256 or SCRAM-SHA-512"))?;
    let inner = rest
        .trim()
        .strip_prefix('[')
        .and_then(|r| r.strip_suffix(']'))
        .ok_or_else(|| bad("expected MECHANISM=[name=USER,password=PASSWORD]"))?;
    let (mut name, mut password, mut iterations) = (None, None, 4096u32);
    for part in inner.split(',') {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| bad("each field is key=value"))?;
        let v = v.trim().trim_matches('"');
        match k.trim() {
            "name" => name = Some(v.to_string()),
            "password" => password = Some(v.to_string()),
            "iterations" => {
                iterations = v.parse().map_err(|_| bad("iterations must be a number"))?
            }
            other => return Err(bad(&format!("unknown field {other}"))),
        }
    }
    let name = name
        .filter(|n| !n.is_empty())
        .ok_or_else(|| bad("no name"))?;
    let password = password.ok_or_else(|| bad("no password"))?;
    let credential = ScramCredential::generate(mechanism, &password, iterations)
        .map_err(|e| bad(&e.to_string()))?;
    Ok((name, credential))
}

impl SecurityStore {
    /// Loads the credentials (and on a broker alone, puts what its data
    /// directory holds into the embedded store first), adds each
    /// `bootstrap` credential whose user has none for its mechanism, and
    /// follows the store from then on.
    pub async fn open(
        store: Arc<dyn ClusterStore>,
        dir: Option<PathBuf>,
        bootstrap: Vec<(String, ScramCredential)>,
        shutdown: watch::Receiver<bool>,
    ) -> Result<Arc<SecurityStore>, SecurityStoreError> {
        if let Some(dir) = &dir {
            std::fs::create_dir_all(dir).map_err(|source| SecurityStoreError::File {
                path: dir.display().to_string(),
                source,
            })?;
            for (file, key) in [
                (CREDENTIALS_FILE, CREDENTIALS_KEY),
                (DECOY_FILE, DECOY_KEY),
                (BOOTSTRAPPED_FILE, BOOTSTRAPPED_KEY),
            ] {
                if let Ok(bytes) = std::fs::read(dir.join(file)) {
                    store
                        .txn(
                            vec![Compare::Absent(key.to_string())],
                            vec![Op::put(key, bytes)],
                        )
                        .await?;
                }
            }
        }
        let decoy_key = Self::load_decoy_key(&store, dir.as_deref()).await?;
        let (set, revision) = Self::read(&store).await?;
        let (current, _) = watch::channel(Versioned {
            revision: revision.unwrap_or(0),
            set: Arc::new(set),
        });
        let this = Arc::new(SecurityStore {
            store,
            dir,
            current,
            decoy_key,
            writes: Mutex::new(()),
        });
        if !bootstrap.is_empty() {
            this.bootstrap(bootstrap).await?;
        }
        tokio::spawn(Self::follow(Arc::downgrade(&this), shutdown));
        Ok(this)
    }

    /// Adds each `--add-scram` credential whose `(user, mechanism)` was
    /// never bootstrapped before and has no credential now, then records
    /// the pairs (Kafka's `format --add-scram` applies once).
    async fn bootstrap(
        &self,
        bootstrap: Vec<(String, ScramCredential)>,
    ) -> Result<(), SecurityStoreError> {
        let pair = |user: &str, c: &ScramCredential| format!("{user}/{}", c.mechanism.name());
        let done: Vec<String> = match self.store.get(BOOTSTRAPPED_KEY).await? {
            Some(kv) => serde_json::from_slice(&kv.value)
                .map_err(|e| SecurityStoreError::Corrupt(format!("bootstrapped users: {e}")))?,
            None => Vec::new(),
        };
        let fresh: Vec<(String, ScramCredential)> = bootstrap
            .into_iter()
            .filter(|(u, c)| !done.contains(&pair(u, c)))
            .collect();
        if fresh.is_empty() {
            return Ok(());
        }
        self.update(|set| {
            let mut added = Vec::new();
            for (user, c) in &fresh {
                if set.get(user, c.mechanism).is_none() {
                    set.insert(user, c.clone());
                    added.push(format!("{user} ({})", c.mechanism.name()));
                }
            }
            if !added.is_empty() {
                tracing::info!(users = %added.join(", "), "added SCRAM credentials given by --add-scram");
            }
            Ok(!added.is_empty())
        })
        .await?;
        let mut all = done;
        all.extend(fresh.iter().map(|(u, c)| pair(u, c)));
        let bytes = serde_json::to_vec(&all).unwrap_or_default();
        if let Some(dir) = &self.dir {
            write_file(&dir.join(BOOTSTRAPPED_FILE), &bytes)?;
        }
        self.store
            .txn(Vec::new(), vec![Op::put(BOOTSTRAPPED_KEY, bytes)])
            .await?;
        Ok(())
    }

    /// The secret SCRAM decoys are derived from: the cluster's, made by
    /// whichever broker needs it first.
    async fn load_decoy_key(
        store: &Arc<dyn ClusterStore>,
        dir: Option<&std::path::Path>,
    ) -> Result<[u8; 32], SecurityStoreError> {
        loop {
            if let Some(kv) = store.get(DECOY_KEY).await? {
                return <[u8; 32]>::try_from(kv.value.as_slice()).map_err(|_| {
                    SecurityStoreError::Corrupt("the decoy key is not 32 bytes".into())
                });
            }
            let key = random_key().map_err(|_| SecurityStoreError::Random)?;
            if let Some(dir) = dir {
                write_file(&dir.join(DECOY_FILE), &key)?;
            }
            store
                .txn(
                    vec![Compare::Absent(DECOY_KEY.to_string())],
                    vec![Op::put(DECOY_KEY, key.to_vec())],
                )
                .await?;
        }
    }

    async fn read(
        store: &Arc<dyn ClusterStore>,
    ) -> Result<(CredentialStore, Option<i64>), SecurityStoreError> {
        match store.get(CREDENTIALS_KEY).await? {
            Some(kv) => Ok((decode(&kv.value)?, Some(kv.mod_revision))),
            None => Ok((CredentialStore::default(), None)),
        }
    }

    /// Keeps `current` equal to the store's value: a watch on the key,
    /// listed again whenever the watch breaks.
    async fn follow(this: std::sync::Weak<SecurityStore>, mut shutdown: watch::Receiver<bool>) {
        loop {
            let Some(me) = this.upgrade() else { return };
            let store = me.store.clone();
            let from = match store.list(CREDENTIALS_KEY).await {
                Ok((kvs, revision)) => {
                    match kvs.iter().find(|kv| kv.key == CREDENTIALS_KEY) {
                        Some(kv) => me.apply(kv.mod_revision, &kv.value),
                        None => me.offer(revision, CredentialStore::default()),
                    }
                    revision + 1
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the SCRAM credentials; retrying");
                    drop(me);
                    tokio::select! {
                        _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                        _ = shutdown.changed() => return,
                    }
                }
            };
            drop(me);
            let mut events = match store.watch(CREDENTIALS_KEY, from).await {
                Ok(w) => w,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot watch the SCRAM credentials; retrying");
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
                        WatchEvent::Put(kv) if kv.key == CREDENTIALS_KEY => {
                            me.apply(kv.mod_revision, &kv.value);
                        }
                        WatchEvent::Delete { key, mod_revision } if key == CREDENTIALS_KEY => {
                            me.offer(mod_revision, CredentialStore::default());
                        }
                        _ => {}
                    }
                }
            }
        }
    }

    fn apply(&self, revision: i64, bytes: &[u8]) {
        match decode(bytes) {
            Ok(set) => self.offer(revision, set),
            Err(e) => {
                tracing::error!(error = %e, "ignoring unreadable SCRAM credentials in the cluster store");
            }
        }
    }

    /// Takes `set`, read at `revision`, unless a newer one is held.
    fn offer(&self, revision: i64, set: CredentialStore) {
        self.current.send_if_modified(|cur| {
            if revision > cur.revision {
                *cur = Versioned {
                    revision,
                    set: Arc::new(set),
                };
                true
            } else {
                false
            }
        });
    }

    /// Changes the set: `change` returns whether it changed anything;
    /// its value is returned. Compare-and-swap against other brokers.
    async fn update<T>(
        &self,
        mut change: impl FnMut(&mut CredentialStore) -> Result<T, SecurityStoreError>,
    ) -> Result<T, SecurityStoreError>
    where
        T: UpdateOutcome,
    {
        let _one_writer = self.writes.lock().await;
        loop {
            let (mut set, revision) = Self::read(&self.store).await?;
            let out = change(&mut set)?;
            if !out.changed() {
                return Ok(out);
            }
            let bytes = encode(&set);
            if let Some(dir) = &self.dir {
                write_file(&dir.join(CREDENTIALS_FILE), &bytes)?;
            }
            let compare = match revision {
                Some(r) => Compare::ModRevision(CREDENTIALS_KEY.to_string(), r),
                None => Compare::Absent(CREDENTIALS_KEY.to_string()),
            };
            let put = Op::put(CREDENTIALS_KEY, bytes);
            let outcome = self.store.txn(vec![compare], vec![put]).await?;
            if outcome.succeeded {
                self.offer(outcome.revision, set);
                return Ok(out);
            }
        }
    }

    /// AlterUserScramCredentials.
    pub async fn alter(
        &self,
        deletions: &[Deletion],
        upsertions: &[Upsertion],
    ) -> Result<Vec<UserResult>, SecurityStoreError> {
        self.update(|set| Ok(Altered(set.alter(deletions, upsertions))))
            .await
            .map(|a| a.0)
    }

    /// DescribeUserScramCredentials, from the current set.
    pub fn describe(&self, users: Option<&[String]>) -> Vec<Described> {
        self.current.borrow().set.describe(users)
    }

    /// What the authenticator reads.
    pub fn view(&self) -> CredentialView {
        CredentialView(self.current.subscribe())
    }

    /// The cluster's SCRAM decoy secret.
    pub fn decoy_key(&self) -> [u8; 32] {
        self.decoy_key
    }
}

/// Whether an update changed the set.
trait UpdateOutcome {
    fn changed(&self) -> bool;
}

impl UpdateOutcome for bool {
    fn changed(&self) -> bool {
        *self
    }
}

struct Altered(Vec<UserResult>);

impl UpdateOutcome for Altered {
    fn changed(&self) -> bool {
        self.0.iter().any(|r| r.error_code == 0)
    }
}

fn write_file(path: &std::path::Path, bytes: &[u8]) -> Result<(), SecurityStoreError> {
    durable_file::write_atomically_private(path, bytes).map_err(|source| SecurityStoreError::File {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::open_store;

    /// An upsertion as a client sends it: any salted password of the
    /// hash's length makes a credential.
    fn upsert(user: &str, salted: u8) -> Upsertion {
        Upsertion {
            user: user.to_string(),
            mechanism: ScramMechanism::Sha512.type_code(),
            iterations: 4096,
            salt: b"salt".to_vec(),
            salted_password: vec![salted; 64],
        }
    }

    #[tokio::test]
    async fn a_broker_alone_keeps_credentials_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let (_tx, rx) = watch::channel(false);
        let admin = parse_add_scram("SCRAM-SHA-512=[name=admin,password=admin-secret]").unwrap();
        let s = SecurityStore::open(
            open_store(None).unwrap(),
            Some(dir.path().to_path_buf()),
            vec![admin.clone()],
            rx.clone(),
        )
        .await
        .unwrap();
        let results = s.alter(&[], &[upsert("carol", 1)]).await.unwrap();
        assert_eq!(results[0].error_code, 0);
        let key = s.decoy_key();
        let view = s.view();
        assert!(view
            .scram_credential("carol", ScramMechanism::Sha512)
            .is_some());
        assert!(view
            .scram_credential("admin", ScramMechanism::Sha512)
            .is_some());
        drop(s);
        // A new process: a fresh embedded store, the same directory. A
        // second --add-scram for admin does not replace the credential.
        let again = parse_add_scram("SCRAM-SHA-512=[name=admin,password=other]").unwrap();
        let s = SecurityStore::open(
            open_store(None).unwrap(),
            Some(dir.path().to_path_buf()),
            vec![again],
            rx,
        )
        .await
        .unwrap();
        assert_eq!(s.decoy_key(), key);
        let view = s.view();
        assert_eq!(
            view.scram_credential("admin", ScramMechanism::Sha512),
            Some(admin.1)
        );
        assert!(view
            .scram_credential("carol", ScramMechanism::Sha512)
            .is_some());
        let d = s.describe(None);
        assert_eq!(d.len(), 2);
        // A bootstrap user deleted stays deleted: --add-scram applies once.
        s.alter(
            &[Deletion {
                user: "admin".into(),
                mechanism: ScramMechanism::Sha512.type_code(),
            }],
            &[],
        )
        .await
        .unwrap();
        drop(s);
        let again = parse_add_scram("SCRAM-SHA-512=[name=admin,password=admin-secret]").unwrap();
        let (_tx2, rx2) = watch::channel(false);
        let s = SecurityStore::open(
            open_store(None).unwrap(),
            Some(dir.path().to_path_buf()),
            vec![again],
            rx2,
        )
        .await
        .unwrap();
        assert!(s
            .view()
            .scram_credential("admin", ScramMechanism::Sha512)
            .is_none());
        // The stored keys are the owner's only.
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(CREDENTIALS_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[tokio::test]
    async fn two_brokers_on_one_store_see_each_others_changes() {
        let store = open_store(None).unwrap();
        let (_tx, rx) = watch::channel(false);
        let a = SecurityStore::open(store.clone(), None, vec![], rx.clone())
            .await
            .unwrap();
        let b = SecurityStore::open(store, None, vec![], rx).await.unwrap();
        assert_eq!(a.decoy_key(), b.decoy_key());
        a.alter(&[], &[upsert("dave", 2)]).await.unwrap();
        let view = b.view();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while view
            .scram_credential("dave", ScramMechanism::Sha512)
            .is_none()
        {
            assert!(tokio::time::Instant::now() < deadline, "b never saw dave");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        b.alter(
            &[Deletion {
                user: "dave".into(),
                mechanism: ScramMechanism::Sha512.type_code(),
            }],
            &[],
        )
        .await
        .unwrap();
        let view = a.view();
        while view
            .scram_credential("dave", ScramMechanism::Sha512)
            .is_some()
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "a never saw the deletion"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[test]
    fn add_scram_values() {
        let (u, c) =
            parse_add_scram("SCRAM-SHA-256=[name=alice,password=alice-secret,iterations=8192]")
                .unwrap();
        assert_eq!((u.as_str(), c.iterations), ("alice", 8192));
        for bad in [
            "SCRAM-SHA-1=[name=a,password=b]",
            "SCRAM-SHA-256=name=a,password=b",
            "SCRAM-SHA-256=[password=b]",
            "SCRAM-SHA-256=[name=a]",
            "SCRAM-SHA-256=[name=a,password=b,iterations=10]",
        ] {
            let e = parse_add_scram(bad).unwrap_err().to_string();
            assert!(!e.contains("password=b"), "{e}");
        }
    }
}
