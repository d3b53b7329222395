//! The authorizer: Kafka's `StandardAuthorizer` decision over a set of ACL
//! bindings.
//!
//! A request asks about one operation on one named resource, always as a
//! literal name. The bindings that apply are those whose pattern covers
//! the name (the same literal name, the literal wildcard `*`, and every
//! prefixed pattern that is a prefix of it) and whose entry names the
//! principal (or `User:*`) and the client's address (or `*`). Then:
//! - a super user is allowed everything, whatever the bindings say;
//! - a DENY for the operation (or ALL) refuses, whatever allows it;
//! - otherwise an ALLOW for the operation, ALL, or an operation that
//!   implies it (`AclOperation::allow_grants`) allows;
//! - otherwise, if no binding at all covers the resource (for anyone),
//!   `allow.everyone.if.no.acl.found` decides; if some do, it is refused.
//!
//! `AclSet` keeps bindings indexed by type, pattern type and name, so a
//! decision looks up the literal name, the wildcard and only the prefix
//! lengths some prefixed binding of the type has, never the whole set.
//! An `Authorizer` is an immutable snapshot; the broker swaps in a new one
//! when bindings change.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::acl::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclError, AclOperation, AclPermissionType,
    PatternType, ResourcePattern, ResourceType, WILDCARD_RESOURCE,
};
use crate::principal::{KafkaPrincipal, PrincipalParseError};

/// The name `authorize_by_resource_type` first asks about (as Kafka does),
/// so that a super user, a wildcard ALLOW or the no-ACL default answer
/// before the bindings are scanned.
const PROBE_NAME: &str = "hardcode";

/// The bindings of one resource type.
#[derive(Clone, Debug, Default)]
struct TypeAcls {
    literal: HashMap<String, Vec<AccessControlEntry>>,
    prefixed: HashMap<String, Vec<AccessControlEntry>>,
    /// Byte length of each prefixed name present → how many names have it.
    prefix_lengths: BTreeMap<usize, usize>,
}

impl TypeAcls {
    fn by_pattern(&mut self, p: PatternType) -> &mut HashMap<String, Vec<AccessControlEntry>> {
        match p {
            PatternType::Literal => &mut self.literal,
            PatternType::Prefixed => &mut self.prefixed,
        }
    }

    /// Every entry list whose pattern covers `name`, with its pattern.
    fn covering<'a>(
        &'a self,
        name: &'a str,
    ) -> impl Iterator<Item = (&'a str, PatternType, &'a [AccessControlEntry])> {
        let literal = self
            .literal
            .get_key_value(name)
            .map(|(n, e)| (n.as_str(), PatternType::Literal, e.as_slice()));
        let wildcard = (name != WILDCARD_RESOURCE)
            .then(|| self.literal.get_key_value(WILDCARD_RESOURCE))
            .flatten()
            .map(|(n, e)| (n.as_str(), PatternType::Literal, e.as_slice()));
        let prefixed = self
            .prefix_lengths
            .range(..=name.len())
            .filter(move |(len, _)| name.is_char_boundary(**len))
            .filter_map(move |(len, _)| self.prefixed.get_key_value(&name[..*len]))
            .map(|(n, e)| (n.as_str(), PatternType::Prefixed, e.as_slice()));
        literal.into_iter().chain(wildcard).chain(prefixed)
    }
}

/// A set of ACL bindings, without duplicates.
#[derive(Clone, Debug, Default)]
pub struct AclSet {
    types: HashMap<ResourceType, TypeAcls>,
    len: usize,
}

impl AclSet {
    pub fn new() -> Self {
        AclSet::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds a binding; false if it was already there (creating an ACL that
    /// exists succeeds and changes nothing, as in Kafka).
    pub fn insert(&mut self, binding: AclBinding) -> bool {
        let AclBinding { pattern, entry } = binding;
        let t = self.types.entry(pattern.resource_type).or_default();
        let is_new_name = !t
            .by_pattern(pattern.pattern_type)
            .contains_key(&pattern.name);
        let entries = t
            .by_pattern(pattern.pattern_type)
            .entry(pattern.name.clone())
            .or_default();
        if entries.contains(&entry) {
            return false;
        }
        entries.push(entry);
        if is_new_name && pattern.pattern_type == PatternType::Prefixed {
            *t.prefix_lengths.entry(pattern.name.len()).or_insert(0) += 1;
        }
        self.len += 1;
        true
    }

    /// Removes a binding; false if it was not there.
    pub fn remove(&mut self, binding: &AclBinding) -> bool {
        let pattern = &binding.pattern;
        let Some(t) = self.types.get_mut(&pattern.resource_type) else {
            return false;
        };
        let map = t.by_pattern(pattern.pattern_type);
        let Some(entries) = map.get_mut(&pattern.name) else {
            return false;
        };
        let Some(at) = entries.iter().position(|e| *e == binding.entry) else {
            return false;
        };
        entries.swap_remove(at);
        if entries.is_empty() {
            map.remove(&pattern.name);
            if pattern.pattern_type == PatternType::Prefixed {
                if let Some(n) = t.prefix_lengths.get_mut(&pattern.name.len()) {
                    *n -= 1;
                    if *n == 0 {
                        t.prefix_lengths.remove(&pattern.name.len());
                    }
                }
            }
        }
        self.len -= 1;
        true
    }

    /// Every binding, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = AclBinding> + '_ {
        self.types.iter().flat_map(|(t, acls)| {
            let lit = acls
                .literal
                .iter()
                .map(|(n, e)| (PatternType::Literal, n, e));
            let pre = acls
                .prefixed
                .iter()
                .map(|(n, e)| (PatternType::Prefixed, n, e));
            lit.chain(pre).flat_map(move |(p, name, entries)| {
                entries.iter().map(move |e| {
                    AclBinding::new(ResourcePattern::new(*t, name.clone(), p), e.clone())
                })
            })
        })
    }

    /// CreateAcls: each binding checked with Kafka's rules and added; one
    /// that exists already succeeds and changes nothing.
    pub fn create(&mut self, bindings: Vec<AclBinding>) -> Vec<Result<(), AclError>> {
        bindings
            .into_iter()
            .map(|b| {
                b.validate()?;
                self.insert(b);
                Ok(())
            })
            .collect()
    }

    /// DeleteAcls: for each filter, the bindings it matched (before this
    /// request removed any), all of which are removed. A binding two
    /// filters match is listed under both, as in Kafka.
    pub fn delete(&mut self, filters: &[AclBindingFilter]) -> Vec<Vec<AclBinding>> {
        let matched: Vec<Vec<AclBinding>> = filters.iter().map(|f| self.matching(f)).collect();
        for b in matched.iter().flatten() {
            self.remove(b);
        }
        matched
    }

    /// The bindings a filter selects, sorted (DescribeAcls answers them
    /// grouped by pattern).
    pub fn matching(&self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        let mut out: Vec<AclBinding> = self.iter().filter(|b| filter.matches(b)).collect();
        out.sort();
        out
    }
}

/// The static settings of the authorizer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// `super.users`: principals allowed everything.
    pub super_users: Vec<KafkaPrincipal>,
    /// `allow.everyone.if.no.acl.found` (Kafka's default: false).
    pub allow_everyone_if_no_acl_found: bool,
}

/// Parses `super.users`: principals separated by `;` (`User:admin;User:broker`).
pub fn parse_super_users(value: &str) -> Result<Vec<KafkaPrincipal>, PrincipalParseError> {
    value
        .split(';')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(KafkaPrincipal::parse)
        .collect()
}

/// Why a decision went the way it did (for the authorizer's log line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Rule {
    SuperUser,
    /// The binding that decided: a DENY that refused, or an ALLOW that allowed.
    Binding(AclBinding),
    /// No binding covers the resource; `allow.everyone.if.no.acl.found` decided.
    NoAclsOnResource,
    /// Bindings cover the resource, but none allows this principal this operation.
    NoMatchingAllow,
}

/// An allow or a refusal, and the rule behind it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub rule: Rule,
}

/// Who is asking, from where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requester {
    pub principal: KafkaPrincipal,
    /// The client's address as text (`127.0.0.1`), as ACL hosts name it.
    pub host: String,
}

impl Requester {
    pub fn new(principal: KafkaPrincipal, host: impl Into<String>) -> Self {
        Requester {
            principal,
            host: host.into(),
        }
    }
}

/// The settings and the super users' names, shared by every snapshot.
#[derive(Debug, Default)]
struct Settings {
    config: AuthorizerConfig,
    super_users: Vec<String>,
}

/// One snapshot of the bindings and the settings, deciding requests.
/// Cloning it, or making one for new bindings (`with_acls`), copies two
/// pointers: a broker makes one per request from the current bindings.
#[derive(Clone, Debug, Default)]
pub struct Authorizer {
    settings: Arc<Settings>,
    acls: Arc<AclSet>,
}

impl Authorizer {
    pub fn new(config: AuthorizerConfig, acls: AclSet) -> Self {
        let super_users = config.super_users.iter().map(ToString::to_string).collect();
        Authorizer {
            settings: Arc::new(Settings {
                config,
                super_users,
            }),
            acls: Arc::new(acls),
        }
    }

    /// The same settings over other bindings.
    pub fn with_acls(&self, acls: Arc<AclSet>) -> Authorizer {
        Authorizer {
            settings: self.settings.clone(),
            acls,
        }
    }

    pub fn config(&self) -> &AuthorizerConfig {
        &self.settings.config
    }

    pub fn acls(&self) -> &AclSet {
        &self.acls
    }

    /// Whether the principal (`Type:name`) is one of `super.users`.
    pub fn is_super_user(&self, principal: &str) -> bool {
        self.settings.super_users.iter().any(|s| s == principal)
    }

    /// May `who` do `op` on the resource `name` of type `resource_type`?
    pub fn authorize(
        &self,
        who: &Requester,
        op: AclOperation,
        resource_type: ResourceType,
        name: &str,
    ) -> Decision {
        let principal = who.principal.to_string();
        if self.is_super_user(&principal) {
            return Decision {
                allowed: true,
                rule: Rule::SuperUser,
            };
        }
        let Some(acls) = self.acls.types.get(&resource_type) else {
            return self.no_acls();
        };
        let mut covered = false;
        let mut allow: Option<AclBinding> = None;
        for (pattern_name, pattern_type, entries) in acls.covering(name) {
            covered |= !entries.is_empty();
            for e in entries {
                if !e.names_principal(&principal) || !e.names_host(&who.host) {
                    continue;
                }
                let binding = || {
                    AclBinding::new(
                        ResourcePattern::new(resource_type, pattern_name, pattern_type),
                        e.clone(),
                    )
                };
                match e.permission {
                    AclPermissionType::Deny if e.operation.deny_refuses(op) => {
                        return Decision {
                            allowed: false,
                            rule: Rule::Binding(binding()),
                        };
                    }
                    AclPermissionType::Allow if allow.is_none() && e.operation.allow_grants(op) => {
                        allow = Some(binding());
                    }
                    _ => {}
                }
            }
        }
        match allow {
            Some(b) => Decision {
                allowed: true,
                rule: Rule::Binding(b),
            },
            None if !covered => self.no_acls(),
            None => Decision {
                allowed: false,
                rule: Rule::NoMatchingAllow,
            },
        }
    }

    fn no_acls(&self) -> Decision {
        Decision {
            allowed: self.settings.config.allow_everyone_if_no_acl_found,
            rule: Rule::NoAclsOnResource,
        }
    }

    /// May `who` do `op` on at least one resource of the type? (Kafka's
    /// `authorizeByResourceType`, which InitProducerId uses for an
    /// idempotent producer: WRITE on any topic.) Only bindings for exactly
    /// `op` or ALL count, as in Kafka: implications do not apply here.
    pub fn authorize_by_resource_type(
        &self,
        who: &Requester,
        op: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        if self.authorize(who, op, resource_type, PROBE_NAME).allowed {
            return true;
        }
        let principal = who.principal.to_string();
        let Some(acls) = self.acls.types.get(&resource_type) else {
            return false;
        };
        let applies = |e: &AccessControlEntry| {
            e.names_principal(&principal)
                && e.names_host(&who.host)
                && (e.operation == op || e.operation == AclOperation::All)
        };
        let mut deny_literal: Vec<&str> = Vec::new();
        let mut deny_prefixed: Vec<&str> = Vec::new();
        let mut allow: Vec<(PatternType, &str)> = Vec::new();
        let mut wildcard_allow = false;
        let all = acls
            .literal
            .iter()
            .map(|(n, e)| (PatternType::Literal, n.as_str(), e))
            .chain(
                acls.prefixed
                    .iter()
                    .map(|(n, e)| (PatternType::Prefixed, n.as_str(), e)),
            );
        for (pattern_type, name, entries) in all {
            for e in entries.iter().filter(|e| applies(e)) {
                match (e.permission, pattern_type) {
                    (AclPermissionType::Deny, PatternType::Literal)
                        if name == WILDCARD_RESOURCE =>
                    {
                        return false
                    }
                    (AclPermissionType::Deny, PatternType::Literal) => deny_literal.push(name),
                    (AclPermissionType::Deny, PatternType::Prefixed) => deny_prefixed.push(name),
                    (AclPermissionType::Allow, PatternType::Literal)
                        if name == WILDCARD_RESOURCE =>
                    {
                        wildcard_allow = true
                    }
                    (AclPermissionType::Allow, p) => allow.push((p, name)),
                }
            }
        }
        if wildcard_allow {
            return true;
        }
        // An allowed name counts unless a DENY dominates it: the same
        // literal name, or a prefixed DENY that is a prefix of it.
        allow.iter().any(|(p, name)| {
            let literal_denied = *p == PatternType::Literal && deny_literal.contains(name);
            !literal_denied && !deny_prefixed.iter().any(|d| name.starts_with(d))
        })
    }

    /// The KIP-430 bit field of the operations `who` may do on the
    /// resource: bit `code` set for each allowed supported operation.
    pub fn authorized_operations(
        &self,
        who: &Requester,
        resource_type: ResourceType,
        name: &str,
    ) -> i32 {
        resource_type
            .supported_operations()
            .iter()
            .filter(|op| self.authorize(who, **op, resource_type, name).allowed)
            .fold(0, |bits, op| bits | (1 << op.code()))
    }
}

/// The KIP-430 bit field with every supported operation of the type set:
/// what a broker without an authorizer answers.
pub fn all_operations(resource_type: ResourceType) -> i32 {
    resource_type
        .supported_operations()
        .iter()
        .fold(0, |bits, op| bits | (1 << op.code()))
}

#[cfg(test)]
mod tests;
