//! Where the cluster keeps its ACL bindings: one key of the cluster store
//! (`security/acls`), a `StoredValue` (compare-and-swap, watched by every
//! broker, mirrored to `<data-dir>/security/acls.json` on a broker alone),
//! so a binding created through any broker applies on every broker
//! without a restart. CreateAcls and DeleteAcls change it; the authorizer
//! of each request reads the current set.
//!
//! The set is stored whole, as JSON with Kafka's enum names. A binding is
//! about 150 bytes of it, and the set is capped at `MAX_BINDINGS`, which
//! keeps the value within etcd's default request limit (1.5 MiB).

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{json, Value};
use strata_security::acl::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclError, AclOperation, AclPermissionType,
    PatternType, ResourcePattern, ResourceType,
};
use strata_security::authorizer::AclSet;
use tokio::sync::watch;

use crate::cluster::store::ClusterStore;
use crate::stored_value::{SecurityStoreError, StoredCodec, StoredValue, UpdateOutcome};

/// The most bindings the cluster keeps; a CreateAcls beyond it is refused.
pub const MAX_BINDINGS: usize = 8192;

impl StoredCodec for AclSet {
    const KEY: &'static str = "security/acls";
    const FILE: &'static str = "acls.json";
    const WHAT: &'static str = "ACL bindings";

    fn encode(&self) -> Vec<u8> {
        let mut all: Vec<AclBinding> = self.iter().collect();
        all.sort();
        let entries: Vec<Value> = all
            .iter()
            .map(|b| {
                json!({
                    "resource_type": b.pattern.resource_type.as_str(),
                    "name": b.pattern.name,
                    "pattern_type": b.pattern.pattern_type.as_str(),
                    "principal": b.entry.principal,
                    "host": b.entry.host,
                    "operation": b.entry.operation.as_str(),
                    "permission": b.entry.permission.as_str(),
                })
            })
            .collect();
        serde_json::to_vec(&json!({ "version": 1, "acls": entries })).unwrap_or_default()
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| format!("ACLs: {e}"))?;
        let entries = v["acls"]
            .as_array()
            .ok_or_else(|| "ACLs: no acls list".to_string())?;
        let mut set = AclSet::new();
        for e in entries {
            let text = |k: &str| {
                e[k].as_str()
                    .ok_or_else(|| format!("ACLs: a binding without {k}"))
            };
            let parsed = |k: &str, e: AclError| format!("ACLs: {k}: {e}");
            let binding = AclBinding::new(
                ResourcePattern::new(
                    text("resource_type")?
                        .parse::<ResourceType>()
                        .map_err(|e| parsed("resource_type", e))?,
                    text("name")?,
                    text("pattern_type")?
                        .parse::<PatternType>()
                        .map_err(|e| parsed("pattern_type", e))?,
                ),
                AccessControlEntry::new(
                    text("principal")?,
                    text("host")?,
                    text("operation")?
                        .parse::<AclOperation>()
                        .map_err(|e| parsed("operation", e))?,
                    text("permission")?
                        .parse::<AclPermissionType>()
                        .map_err(|e| parsed("permission", e))?,
                ),
            );
            set.insert(binding);
        }
        Ok(set)
    }
}

/// Why a binding was not created.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CreateError {
    /// Kafka's validation refused it (INVALID_REQUEST).
    #[error(transparent)]
    Invalid(#[from] AclError),
    /// The cluster holds `MAX_BINDINGS` already.
    #[error(
        "the cluster holds {MAX_BINDINGS} ACL bindings, the most Strata keeps; delete some first"
    )]
    Full,
}

struct Created(Vec<Result<(), CreateError>>, bool);

impl UpdateOutcome for Created {
    fn changed(&self) -> bool {
        self.1
    }
}

struct Deleted(Vec<Vec<AclBinding>>);

impl UpdateOutcome for Deleted {
    fn changed(&self) -> bool {
        self.0.iter().any(|m| !m.is_empty())
    }
}

/// The cluster's ACL bindings, kept current.
pub struct AclStore {
    acls: Arc<StoredValue<AclSet>>,
}

impl std::fmt::Debug for AclStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AclStore")
            .field("bindings", &self.acls.get().len())
            .finish_non_exhaustive()
    }
}

impl AclStore {
    /// Loads the bindings (on a broker alone, from its data directory
    /// first) and follows the store from then on.
    pub async fn open(
        store: Arc<dyn ClusterStore>,
        dir: Option<PathBuf>,
        shutdown: watch::Receiver<bool>,
    ) -> Result<Arc<AclStore>, SecurityStoreError> {
        Ok(Arc::new(AclStore {
            acls: StoredValue::open(store, dir, shutdown).await?,
        }))
    }

    /// The current bindings.
    pub fn current(&self) -> Arc<AclSet> {
        self.acls.get()
    }

    /// CreateAcls: each binding validated with Kafka's rules and added, in
    /// one write; one that exists already succeeds and changes nothing.
    pub async fn create(
        &self,
        bindings: &[AclBinding],
    ) -> Result<Vec<Result<(), CreateError>>, SecurityStoreError> {
        self.acls
            .update(|set| {
                let mut changed = false;
                let results = bindings
                    .iter()
                    .map(|b| {
                        b.validate()?;
                        if set.len() >= MAX_BINDINGS && !set.matching(&exactly(b)).is_empty() {
                            return Ok(());
                        }
                        if set.len() >= MAX_BINDINGS {
                            return Err(CreateError::Full);
                        }
                        changed |= set.insert(b.clone());
                        Ok(())
                    })
                    .collect();
                Ok(Created(results, changed))
            })
            .await
            .map(|c| c.0)
    }

    /// DeleteAcls: for each filter the bindings it matched, all removed in
    /// one write.
    pub async fn delete(
        &self,
        filters: &[AclBindingFilter],
    ) -> Result<Vec<Vec<AclBinding>>, SecurityStoreError> {
        self.acls
            .update(|set| Ok(Deleted(set.delete(filters))))
            .await
            .map(|d| d.0)
    }
}

/// The filter that selects exactly this binding.
fn exactly(b: &AclBinding) -> AclBindingFilter {
    use strata_security::acl::{
        AccessControlEntryFilter, PatternTypeFilter, ResourcePatternFilter,
    };
    AclBindingFilter {
        pattern: ResourcePatternFilter {
            resource_type: Some(b.pattern.resource_type),
            name: Some(b.pattern.name.clone()),
            pattern_type: match b.pattern.pattern_type {
                PatternType::Literal => PatternTypeFilter::Literal,
                PatternType::Prefixed => PatternTypeFilter::Prefixed,
            },
        },
        entry: AccessControlEntryFilter {
            principal: Some(b.entry.principal.clone()),
            host: Some(b.entry.host.clone()),
            operation: Some(b.entry.operation),
            permission: Some(b.entry.permission),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::open_store;
    use std::time::Duration;

    fn binding(topic: &str, principal: &str, op: AclOperation) -> AclBinding {
        AclBinding::new(
            ResourcePattern::literal(ResourceType::Topic, topic),
            AccessControlEntry::new(principal, "*", op, AclPermissionType::Allow),
        )
    }

    #[tokio::test]
    async fn a_broker_alone_keeps_its_acls_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let (_tx, rx) = watch::channel(false);
        let s = AclStore::open(
            open_store(None).unwrap(),
            Some(dir.path().into()),
            rx.clone(),
        )
        .await
        .unwrap();
        let prefixed = AclBinding::new(
            ResourcePattern::new(ResourceType::Group, "app-", PatternType::Prefixed),
            AccessControlEntry::new(
                "User:alice",
                "10.0.0.1",
                AclOperation::Read,
                AclPermissionType::Deny,
            ),
        );
        let results = s
            .create(&[
                binding("orders", "User:alice", AclOperation::Write),
                prefixed.clone(),
                // Kafka's validation: the cluster has one name.
                AclBinding::new(
                    ResourcePattern::literal(ResourceType::Cluster, "other"),
                    AccessControlEntry::new(
                        "User:a",
                        "*",
                        AclOperation::Alter,
                        AclPermissionType::Allow,
                    ),
                ),
            ])
            .await
            .unwrap();
        assert_eq!(results[..2], [Ok(()), Ok(())]);
        assert!(matches!(
            results[2],
            Err(CreateError::Invalid(AclError::ClusterName(_)))
        ));
        assert_eq!(s.current().len(), 2);
        drop(s);
        let s = AclStore::open(open_store(None).unwrap(), Some(dir.path().into()), rx)
            .await
            .unwrap();
        let mut all: Vec<AclBinding> = s.current().iter().collect();
        all.sort();
        let mut want = vec![
            binding("orders", "User:alice", AclOperation::Write),
            prefixed,
        ];
        want.sort();
        assert_eq!(all, want);
        let deleted = s.delete(&[AclBindingFilter::ANY]).await.unwrap();
        assert_eq!(deleted[0].len(), 2);
        assert!(s.current().is_empty());
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(<AclSet as StoredCodec>::FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[tokio::test]
    async fn two_brokers_on_one_store_see_each_others_acls() {
        let store = open_store(None).unwrap();
        let (_tx, rx) = watch::channel(false);
        let a = AclStore::open(store.clone(), None, rx.clone())
            .await
            .unwrap();
        let b = AclStore::open(store, None, rx).await.unwrap();
        a.create(&[binding("t", "User:bob", AclOperation::Read)])
            .await
            .unwrap();
        b.create(&[binding("t", "User:carol", AclOperation::Read)])
            .await
            .unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while a.current().len() != 2 || b.current().len() != 2 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the brokers never agreed"
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test]
    async fn the_set_is_capped_and_an_existing_binding_still_succeeds() {
        let (_tx, rx) = watch::channel(false);
        let s = AclStore::open(open_store(None).unwrap(), None, rx)
            .await
            .unwrap();
        let many: Vec<AclBinding> = (0..MAX_BINDINGS)
            .map(|i| binding(&format!("t{i}"), "User:x", AclOperation::Read))
            .collect();
        assert!(s.create(&many).await.unwrap().iter().all(Result::is_ok));
        let again = s
            .create(&[
                many[7].clone(),
                binding("one-more", "User:x", AclOperation::Read),
            ])
            .await
            .unwrap();
        assert_eq!(again, vec![Ok(()), Err(CreateError::Full)]);
    }

    #[test]
    fn unreadable_values_are_refused() {
        for bad in [
            &b"not json"[..],
            br#"{"acls": [{"resource_type": "TOPIC"}]}"#,
            br#"{"acls": [{"resource_type": "NOPE", "name": "t", "pattern_type": "LITERAL", "principal": "User:a", "host": "*", "operation": "READ", "permission": "ALLOW"}]}"#,
        ] {
            assert!(<AclSet as StoredCodec>::decode(bad).is_err());
        }
    }
}
