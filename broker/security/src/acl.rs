//! Kafka's ACL model: resource patterns, access control entries, the
//! bindings of one to the other, and the filters DescribeAcls and
//! DeleteAcls select bindings with. Codes are Kafka's wire codes
//! (`ResourceType`, `PatternType`, `AclOperation`, `AclPermissionType`);
//! names are Kafka's enum names, as its tools print them.

use std::fmt;
use std::str::FromStr;

use crate::principal::KafkaPrincipal;

/// The literal resource name that matches every resource of its type.
pub const WILDCARD_RESOURCE: &str = "*";
/// The principal that matches every principal (the only wildcard principal).
pub const WILDCARD_PRINCIPAL: &str = "User:*";
/// The host that matches every client address.
pub const WILDCARD_HOST: &str = "*";
/// The one name of the CLUSTER resource.
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// Kafka's wire code for "any" in a filter (every enum below).
pub const ANY_CODE: i8 = 1;

/// A binding or filter Kafka would refuse: INVALID_REQUEST with this message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AclError {
    #[error("invalid {what} code {code}")]
    UnknownCode { what: &'static str, code: i8 },
    #[error("invalid {what} {name:?}: expected one of {expected}")]
    UnknownName {
        what: &'static str,
        name: String,
        expected: String,
    },
    #[error("resource name should not be empty")]
    EmptyResourceName,
    #[error("the only valid name for the CLUSTER resource is {CLUSTER_NAME}, not {0:?}")]
    ClusterName(String),
    #[error("could not parse principal from `{0}` (no colon is present separating the principal type from the principal name)")]
    Principal(String),
}

macro_rules! kafka_enum {
    ($(#[$doc:meta])* $name:ident, $what:literal, { $($variant:ident = $code:literal, $text:literal;)+ }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $($variant),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// Kafka's wire code.
            pub fn code(self) -> i8 {
                match self { $($name::$variant => $code),+ }
            }

            /// The value of a wire code; UNKNOWN, ANY and codes Kafka 3.9
            /// does not define are `None`.
            pub fn from_code(code: i8) -> Option<Self> {
                match code { $($code => Some($name::$variant),)+ _ => None }
            }

            /// A filter's code: ANY is `Ok(None)`.
            pub fn filter_from_code(code: i8) -> Result<Option<Self>, AclError> {
                if code == ANY_CODE {
                    return Ok(None);
                }
                Self::from_code(code).map(Some).ok_or(AclError::UnknownCode { what: $what, code })
            }

            /// A binding's code: UNKNOWN and ANY are refused.
            pub fn binding_from_code(code: i8) -> Result<Self, AclError> {
                Self::from_code(code).ok_or(AclError::UnknownCode { what: $what, code })
            }

            /// Kafka's enum name (`TRANSACTIONAL_ID`, `DESCRIBE_CONFIGS`).
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        /// Case-insensitive, with or without underscores (`describe_configs`,
        /// `DescribeConfigs`), as Kafka's tools accept them.
        impl FromStr for $name {
            type Err = AclError;
            fn from_str(s: &str) -> Result<Self, AclError> {
                let key = |t: &str| t.replace('_', "").to_ascii_uppercase();
                let want = key(s);
                Self::ALL.iter().copied().find(|v| key(v.as_str()) == want).ok_or_else(|| {
                    AclError::UnknownName {
                        what: $what,
                        name: s.to_string(),
                        expected: Self::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", "),
                    }
                })
            }
        }
    };
}

kafka_enum!(
    /// The kind of resource an ACL protects.
    ResourceType, "resource type", {
        Topic = 2, "TOPIC";
        Group = 3, "GROUP";
        Cluster = 4, "CLUSTER";
        TransactionalId = 5, "TRANSACTIONAL_ID";
        DelegationToken = 6, "DELEGATION_TOKEN";
        User = 7, "USER";
    }
);

kafka_enum!(
    /// How a binding's resource name matches: exactly, or as a prefix.
    PatternType, "pattern type", {
        Literal = 3, "LITERAL";
        Prefixed = 4, "PREFIXED";
    }
);

kafka_enum!(
    /// What a principal does to a resource (Kafka 3.9's operations).
    AclOperation, "operation", {
        All = 2, "ALL";
        Read = 3, "READ";
        Write = 4, "WRITE";
        Create = 5, "CREATE";
        Delete = 6, "DELETE";
        Alter = 7, "ALTER";
        Describe = 8, "DESCRIBE";
        ClusterAction = 9, "CLUSTER_ACTION";
        DescribeConfigs = 10, "DESCRIBE_CONFIGS";
        AlterConfigs = 11, "ALTER_CONFIGS";
        IdempotentWrite = 12, "IDEMPOTENT_WRITE";
        CreateTokens = 13, "CREATE_TOKENS";
        DescribeTokens = 14, "DESCRIBE_TOKENS";
    }
);

kafka_enum!(
    /// Whether a binding grants or refuses.
    AclPermissionType, "permission type", {
        Deny = 2, "DENY";
        Allow = 3, "ALLOW";
    }
);

impl ResourceType {
    /// The operations Kafka asks about for this type's KIP-430
    /// authorized-operations field (Kafka's `AclEntry.supportedOperations`).
    pub fn supported_operations(self) -> &'static [AclOperation] {
        use AclOperation::*;
        match self {
            ResourceType::Topic => &[
                Read,
                Write,
                Create,
                Describe,
                Delete,
                Alter,
                DescribeConfigs,
                AlterConfigs,
            ],
            ResourceType::Group => &[Read, Describe, Delete, DescribeConfigs, AlterConfigs],
            ResourceType::Cluster => &[
                Create,
                ClusterAction,
                DescribeConfigs,
                AlterConfigs,
                IdempotentWrite,
                Alter,
                Describe,
            ],
            ResourceType::TransactionalId => &[Describe, Write],
            ResourceType::DelegationToken => &[Describe],
            ResourceType::User => &[CreateTokens, DescribeTokens],
        }
    }
}

impl AclOperation {
    /// Whether an ALLOW binding for `self` grants `requested`: the same
    /// operation, ALL, or an operation that implies it (READ, WRITE,
    /// DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies
    /// DESCRIBE_CONFIGS). Implications never widen a DENY.
    pub fn allow_grants(self, requested: AclOperation) -> bool {
        use AclOperation::*;
        self == requested
            || self == All
            || (requested == Describe && matches!(self, Read | Write | Delete | Alter))
            || (requested == DescribeConfigs && self == AlterConfigs)
    }

    /// Whether a DENY binding for `self` refuses `requested`.
    pub fn deny_refuses(self, requested: AclOperation) -> bool {
        self == requested || self == AclOperation::All
    }
}

/// A resource pattern: the type, a name, and how the name matches.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourcePattern {
    pub resource_type: ResourceType,
    pub name: String,
    pub pattern_type: PatternType,
}

impl ResourcePattern {
    pub fn new(
        resource_type: ResourceType,
        name: impl Into<String>,
        pattern_type: PatternType,
    ) -> Self {
        ResourcePattern {
            resource_type,
            name: name.into(),
            pattern_type,
        }
    }

    pub fn literal(resource_type: ResourceType, name: impl Into<String>) -> Self {
        ResourcePattern::new(resource_type, name, PatternType::Literal)
    }

    /// Whether this pattern covers the resource `name` of its type: the
    /// same name, the literal wildcard, or a prefix of it.
    pub fn covers(&self, name: &str) -> bool {
        match self.pattern_type {
            PatternType::Literal => self.name == name || self.name == WILDCARD_RESOURCE,
            PatternType::Prefixed => name.starts_with(&self.name),
        }
    }
}

impl fmt::Display for ResourcePattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ResourcePattern(resourceType={}, name={}, patternType={})",
            self.resource_type, self.name, self.pattern_type
        )
    }
}

/// Who, from where, may or may not do what.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccessControlEntry {
    /// `Type:name`, or `User:*`.
    pub principal: String,
    /// A client address as text, or `*`.
    pub host: String,
    pub operation: AclOperation,
    pub permission: AclPermissionType,
}

impl AccessControlEntry {
    pub fn new(
        principal: impl Into<String>,
        host: impl Into<String>,
        operation: AclOperation,
        permission: AclPermissionType,
    ) -> Self {
        AccessControlEntry {
            principal: principal.into(),
            host: host.into(),
            operation,
            permission,
        }
    }

    /// Whether the entry names this principal (or every principal).
    pub fn names_principal(&self, principal: &str) -> bool {
        self.principal == principal || self.principal == WILDCARD_PRINCIPAL
    }

    /// Whether the entry names this client address (or every address).
    pub fn names_host(&self, host: &str) -> bool {
        self.host == host || self.host == WILDCARD_HOST
    }
}

impl fmt::Display for AccessControlEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(principal={}, host={}, operation={}, permissionType={})",
            self.principal, self.host, self.operation, self.permission
        )
    }
}

/// An access control entry bound to a resource pattern: one ACL.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    pub pattern: ResourcePattern,
    pub entry: AccessControlEntry,
}

impl AclBinding {
    pub fn new(pattern: ResourcePattern, entry: AccessControlEntry) -> Self {
        AclBinding { pattern, entry }
    }

    /// The rules Kafka's controller applies to a new binding (beyond the
    /// codes, which the types already hold): a non-empty name, the
    /// cluster's one name, and a `Type:name` principal.
    pub fn validate(&self) -> Result<(), AclError> {
        if self.pattern.name.is_empty() {
            return Err(AclError::EmptyResourceName);
        }
        if self.pattern.resource_type == ResourceType::Cluster && self.pattern.name != CLUSTER_NAME
        {
            return Err(AclError::ClusterName(self.pattern.name.clone()));
        }
        KafkaPrincipal::parse(&self.entry.principal).map_err(|e| AclError::Principal(e.0))?;
        Ok(())
    }
}

impl fmt::Display for AclBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.pattern, self.entry)
    }
}

/// How a filter's pattern type selects patterns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PatternTypeFilter {
    /// Any pattern type; a name must then be the pattern's own name.
    Any,
    /// Every pattern that would match a resource of this name (the
    /// literal name, the literal wildcard, and its prefixes).
    Match,
    Literal,
    Prefixed,
}

impl PatternTypeFilter {
    /// The filter of a wire code: ANY 1, MATCH 2, LITERAL 3, PREFIXED 4.
    pub fn from_code(code: i8) -> Result<Self, AclError> {
        match code {
            1 => Ok(PatternTypeFilter::Any),
            2 => Ok(PatternTypeFilter::Match),
            3 => Ok(PatternTypeFilter::Literal),
            4 => Ok(PatternTypeFilter::Prefixed),
            code => Err(AclError::UnknownCode {
                what: "pattern type",
                code,
            }),
        }
    }

    fn exactly(self) -> Option<PatternType> {
        match self {
            PatternTypeFilter::Literal => Some(PatternType::Literal),
            PatternTypeFilter::Prefixed => Some(PatternType::Prefixed),
            PatternTypeFilter::Any | PatternTypeFilter::Match => None,
        }
    }
}

/// Selects resource patterns: `None` fields match anything.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResourcePatternFilter {
    pub resource_type: Option<ResourceType>,
    pub name: Option<String>,
    pub pattern_type: PatternTypeFilter,
}

impl ResourcePatternFilter {
    pub const ANY: ResourcePatternFilter = ResourcePatternFilter {
        resource_type: None,
        name: None,
        pattern_type: PatternTypeFilter::Any,
    };

    /// Kafka's `ResourcePatternFilter.matches`.
    pub fn matches(&self, pattern: &ResourcePattern) -> bool {
        if self
            .resource_type
            .is_some_and(|t| t != pattern.resource_type)
        {
            return false;
        }
        if self
            .pattern_type
            .exactly()
            .is_some_and(|p| p != pattern.pattern_type)
        {
            return false;
        }
        let Some(name) = &self.name else { return true };
        match self.pattern_type {
            PatternTypeFilter::Match => pattern.covers(name),
            _ => *name == pattern.name,
        }
    }
}

/// Selects access control entries: `None` fields match anything.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct AccessControlEntryFilter {
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: Option<AclOperation>,
    pub permission: Option<AclPermissionType>,
}

impl AccessControlEntryFilter {
    pub const ANY: AccessControlEntryFilter = AccessControlEntryFilter {
        principal: None,
        host: None,
        operation: None,
        permission: None,
    };

    /// Kafka's `AccessControlEntryFilter.matches`: exact fields, no wildcards.
    pub fn matches(&self, entry: &AccessControlEntry) -> bool {
        self.principal
            .as_ref()
            .is_none_or(|p| *p == entry.principal)
            && self.host.as_ref().is_none_or(|h| *h == entry.host)
            && self.operation.is_none_or(|o| o == entry.operation)
            && self.permission.is_none_or(|p| p == entry.permission)
    }
}

/// Selects bindings, as DescribeAcls and DeleteAcls carry them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AclBindingFilter {
    pub pattern: ResourcePatternFilter,
    pub entry: AccessControlEntryFilter,
}

impl AclBindingFilter {
    pub const ANY: AclBindingFilter = AclBindingFilter {
        pattern: ResourcePatternFilter::ANY,
        entry: AccessControlEntryFilter::ANY,
    };

    pub fn matches(&self, binding: &AclBinding) -> bool {
        self.pattern.matches(&binding.pattern) && self.entry.matches(&binding.entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(t: ResourceType, name: &str, p: PatternType) -> ResourcePattern {
        ResourcePattern::new(t, name, p)
    }

    #[test]
    fn codes_round_trip_and_any_is_only_a_filter() {
        for t in ResourceType::ALL {
            assert_eq!(ResourceType::from_code(t.code()), Some(*t));
        }
        for o in AclOperation::ALL {
            assert_eq!(AclOperation::from_code(o.code()), Some(*o));
        }
        assert_eq!(ResourceType::filter_from_code(ANY_CODE), Ok(None));
        assert_eq!(
            ResourceType::filter_from_code(2),
            Ok(Some(ResourceType::Topic))
        );
        assert!(ResourceType::binding_from_code(ANY_CODE).is_err());
        assert!(AclOperation::binding_from_code(0).is_err());
        // TWO_PHASE_COMMIT (15) is Kafka 4.1's; Strata speaks 3.9.
        assert!(AclOperation::filter_from_code(15).is_err());
        assert!(PatternTypeFilter::from_code(0).is_err());
        assert_eq!(
            PatternTypeFilter::from_code(2),
            Ok(PatternTypeFilter::Match)
        );
    }

    #[test]
    fn names_parse_as_kafka_tools_write_them() {
        assert_eq!(
            "describe_configs".parse(),
            Ok(AclOperation::DescribeConfigs)
        );
        assert_eq!("DescribeConfigs".parse(), Ok(AclOperation::DescribeConfigs));
        assert_eq!("Topic".parse(), Ok(ResourceType::Topic));
        assert!("transactional-id".parse::<ResourceType>().is_err());
        assert_eq!("TransactionalId".parse(), Ok(ResourceType::TransactionalId));
        let e = "fly".parse::<AclOperation>().unwrap_err().to_string();
        assert!(e.contains("READ") && e.contains("\"fly\""), "{e}");
    }

    #[test]
    fn filters_match_as_kafka_does() {
        use PatternType::*;
        use ResourceType::*;
        let lit = pattern(Topic, "foo", Literal);
        let wild = pattern(Topic, "*", Literal);
        let pre = pattern(Topic, "fo", Prefixed);
        let other_pre = pattern(Topic, "bar", Prefixed);
        let f = |name: Option<&str>, p| ResourcePatternFilter {
            resource_type: Some(Topic),
            name: name.map(String::from),
            pattern_type: p,
        };
        // MATCH: what would apply to a topic named foo.
        let m = f(Some("foo"), PatternTypeFilter::Match);
        assert!(m.matches(&lit) && m.matches(&wild) && m.matches(&pre));
        assert!(!m.matches(&other_pre));
        // ANY with a name: the name itself, of either pattern type.
        let a = f(Some("fo"), PatternTypeFilter::Any);
        assert!(a.matches(&pre) && !a.matches(&lit));
        // LITERAL "*" is the wildcard binding itself, not every literal.
        let l = f(Some("*"), PatternTypeFilter::Literal);
        assert!(l.matches(&wild) && !l.matches(&lit));
        // No name: every pattern of the type and pattern type.
        assert!(f(None, PatternTypeFilter::Prefixed).matches(&other_pre));
        assert!(!f(None, PatternTypeFilter::Prefixed).matches(&lit));
        assert!(!f(None, PatternTypeFilter::Any).matches(&pattern(Group, "foo", Literal)));
        assert!(ResourcePatternFilter::ANY.matches(&pattern(Cluster, CLUSTER_NAME, Literal)));

        let entry = AccessControlEntry::new(
            "User:alice",
            "*",
            AclOperation::Read,
            AclPermissionType::Allow,
        );
        let by_principal = AccessControlEntryFilter {
            principal: Some("User:alice".into()),
            ..Default::default()
        };
        assert!(by_principal.matches(&entry));
        // Filters compare exactly: User:* selects bindings for User:*, not alice's.
        let star = AccessControlEntryFilter {
            principal: Some(WILDCARD_PRINCIPAL.into()),
            ..Default::default()
        };
        assert!(!star.matches(&entry));
        let deny = AccessControlEntryFilter {
            permission: Some(AclPermissionType::Deny),
            ..Default::default()
        };
        assert!(!deny.matches(&entry));
    }

    #[test]
    fn new_bindings_are_validated_with_kafkas_rules() {
        let entry =
            |p: &str| AccessControlEntry::new(p, "*", AclOperation::Read, AclPermissionType::Allow);
        let ok = AclBinding::new(
            ResourcePattern::literal(ResourceType::Topic, "t"),
            entry("User:a"),
        );
        assert_eq!(ok.validate(), Ok(()));
        let empty = AclBinding::new(
            ResourcePattern::literal(ResourceType::Topic, ""),
            entry("User:a"),
        );
        assert_eq!(empty.validate(), Err(AclError::EmptyResourceName));
        let cluster = AclBinding::new(
            ResourcePattern::literal(ResourceType::Cluster, "c"),
            entry("User:a"),
        );
        assert_eq!(cluster.validate(), Err(AclError::ClusterName("c".into())));
        let principal = AclBinding::new(
            ResourcePattern::literal(ResourceType::Topic, "t"),
            entry("alice"),
        );
        assert_eq!(
            principal.validate(),
            Err(AclError::Principal("alice".into()))
        );
    }
}
