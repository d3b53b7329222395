//! Where the cluster keeps its users' SCRAM credentials and the SCRAM
//! decoy secret, so every broker authenticates the same users the same way:
//! one key of the cluster store each (`security/scram_credentials`,
//! `security/scram_decoy_key`). The credentials are a `StoredValue`
//! (`stored_value.rs`: compare-and-swap, watched by every broker, mirrored
//! to `<data-dir>/security/` on a broker alone), held in memory for the
//! authenticator.
//!
//! The set is stored whole (a credential is about 200 bytes of JSON, so
//! etcd's 1.5 MB value limit holds several thousand users).

use std::path::PathBuf;
use std::sync::Arc;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use serde_json::{json, Value};
use strata_security::sasl::ScramCredentials;
use strata_security::scram::store::{CredentialStore, Deletion, Described, Upsertion, UserResult};
use strata_security::scram::{random_key, ScramCredential, ScramMechanism};
use tokio::sync::watch;

use crate::cluster::store::{ClusterStore, Compare, Op};
pub use crate::stored_value::SecurityStoreError;
use crate::stored_value::{
    seed_from_file, write_file, StoredCodec, StoredValue, UpdateOutcome, Versioned,
};

const DECOY_KEY: &str = "security/scram_decoy_key";
const DECOY_FILE: &str = "scram_decoy_key";
/// The `(user, mechanism)` pairs `--add-scram` ever added: never again,
/// so a deleted bootstrap user stays deleted across restarts.
const BOOTSTRAPPED_KEY: &str = "security/scram_bootstrapped";
const BOOTSTRAPPED_FILE: &str = "scram_bootstrapped.json";

/// The cluster's SCRAM credentials, kept current. `Debug` leaves the
/// decoy secret and the credentials out.
pub struct SecurityStore {
    credentials: Arc<StoredValue<CredentialStore>>,
    decoy_key: [u8; 32],
}

impl std::fmt::Debug for SecurityStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecurityStore")
            .field("store", &self.credentials.store().describe())
            .field("dir", &self.credentials.dir())
            .field("users", &self.credentials.get().len())
            .finish_non_exhaustive()
    }
}

/// The current credentials, as the authenticator reads them.
#[derive(Debug, Clone)]
pub struct CredentialView(watch::Receiver<Versioned<CredentialStore>>);

impl ScramCredentials for CredentialView {
    fn scram_credential(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        self.0.borrow().value().get(user, mechanism).cloned()
    }
}

impl StoredCodec for CredentialStore {
    const KEY: &'static str = "security/scram_credentials";
    const FILE: &'static str = "scram_credentials.json";
    const WHAT: &'static str = "SCRAM credentials";

    fn encode(&self) -> Vec<u8> {
        encode(self)
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        decode(bytes)
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

fn decode(bytes: &[u8]) -> Result<CredentialStore, String> {
    let corrupt = |m: &str| format!("SCRAM credentials: {m}");
    let v: Value = serde_json::from_slice(bytes).map_err(|e| corrupt(&e.to_string()))?;
    let mut set = CredentialStore::default();
    let entries = v["credentials"]
        .as_array()
        .ok_or_else(|| corrupt("no credentials list"))?;
    for e in entries {
        let text = |k: &str| e[k].as_str().ok_or_else(|| corrupt(&format!("no {k}")));
        let bytes = |k: &str| -> Result<Vec<u8>, String> {
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
            for (file, key) in [
                (DECOY_FILE, DECOY_KEY),
                (BOOTSTRAPPED_FILE, BOOTSTRAPPED_KEY),
            ] {
                seed_from_file(&store, dir, file, key).await?;
            }
        }
        let decoy_key = Self::load_decoy_key(&store, dir.as_deref()).await?;
        let credentials = StoredValue::open(store, dir, shutdown).await?;
        let this = Arc::new(SecurityStore {
            credentials,
            decoy_key,
        });
        if !bootstrap.is_empty() {
            this.bootstrap(bootstrap).await?;
        }
        Ok(this)
    }

    /// Adds each `--add-scram` credential whose `(user, mechanism)` was
    /// never bootstrapped before and has no credential now, then records
    /// the pairs (Kafka's `format --add-scram` applies once).
    async fn bootstrap(
        &self,
        bootstrap: Vec<(String, ScramCredential)>,
    ) -> Result<(), SecurityStoreError> {
        let store = self.credentials.store();
        let pair = |user: &str, c: &ScramCredential| format!("{user}/{}", c.mechanism.name());
        let done: Vec<String> = match store.get(BOOTSTRAPPED_KEY).await? {
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
        self.credentials
            .update(|set| {
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
        if let Some(dir) = self.credentials.dir() {
            write_file(&dir.join(BOOTSTRAPPED_FILE), &bytes)?;
        }
        store
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

    /// AlterUserScramCredentials.
    pub async fn alter(
        &self,
        deletions: &[Deletion],
        upsertions: &[Upsertion],
    ) -> Result<Vec<UserResult>, SecurityStoreError> {
        self.credentials
            .update(|set| Ok(Altered(set.alter(deletions, upsertions))))
            .await
            .map(|a| a.0)
    }

    /// DescribeUserScramCredentials, from the current set.
    pub fn describe(&self, users: Option<&[String]>) -> Vec<Described> {
        self.credentials.get().describe(users)
    }

    /// What the authenticator reads.
    pub fn view(&self) -> CredentialView {
        CredentialView(self.credentials.subscribe())
    }

    /// The cluster's SCRAM decoy secret.
    pub fn decoy_key(&self) -> [u8; 32] {
        self.decoy_key
    }
}

struct Altered(Vec<UserResult>);

impl UpdateOutcome for Altered {
    fn changed(&self) -> bool {
        self.0.iter().any(|r| r.error_code == 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::open_store;
    use std::time::Duration;

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
        let mode = std::fs::metadata(dir.path().join(<CredentialStore as StoredCodec>::FILE))
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
