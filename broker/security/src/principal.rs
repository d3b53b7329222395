//! Kafka's principal: a type and a name, written `Type:name` (`User:alice`).
//! ACLs and `super.users` name principals in this form; a connection
//! without authentication is `User:ANONYMOUS`, as in Kafka.

use std::fmt;

/// The principal type every built-in authentication gives.
pub const USER_TYPE: &str = "User";

/// An authenticated (or anonymous) identity.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KafkaPrincipal {
    principal_type: String,
    name: String,
}

/// A principal string without the `:` between type and name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "could not parse principal from `{0}`: expected principalType:principalName (e.g. User:alice)"
)]
pub struct PrincipalParseError(pub String);

impl KafkaPrincipal {
    pub fn new(principal_type: impl Into<String>, name: impl Into<String>) -> Self {
        KafkaPrincipal {
            principal_type: principal_type.into(),
            name: name.into(),
        }
    }

    /// `User:<name>`.
    pub fn user(name: impl Into<String>) -> Self {
        KafkaPrincipal::new(USER_TYPE, name)
    }

    /// `User:ANONYMOUS`: a connection on a listener without authentication.
    pub fn anonymous() -> Self {
        KafkaPrincipal::user("ANONYMOUS")
    }

    /// Parses `Type:name`, splitting at the first `:` (the name may hold
    /// more), as Kafka's `SecurityUtils.parseKafkaPrincipal` does.
    pub fn parse(s: &str) -> Result<Self, PrincipalParseError> {
        match s.split_once(':') {
            Some((t, n)) => Ok(KafkaPrincipal::new(t, n)),
            None => Err(PrincipalParseError(s.to_string())),
        }
    }

    pub fn principal_type(&self) -> &str {
        &self.principal_type
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for KafkaPrincipal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_at_the_first_colon_and_prints_back() {
        let p = KafkaPrincipal::parse("User:CN=a:b,O=c").expect("has a colon");
        assert_eq!(p.principal_type(), "User");
        assert_eq!(p.name(), "CN=a:b,O=c");
        assert_eq!(p.to_string(), "User:CN=a:b,O=c");
        assert_eq!(
            KafkaPrincipal::parse("User:").expect("empty name").name(),
            ""
        );
        assert_eq!(
            KafkaPrincipal::parse("alice"),
            Err(PrincipalParseError("alice".into()))
        );
        assert_eq!(KafkaPrincipal::anonymous().to_string(), "User:ANONYMOUS");
    }
}
