//! SASL/PLAIN (RFC 4616) as Kafka's `PlainSaslServer` serves it: one
//! message, `authzid NUL authcid NUL password`, checked against the users
//! of the listener's `PlainLoginModule` JAAS line (`user_<name>="<password>"`),
//! compared in constant time. No SASLprep, as in Kafka.

use std::collections::BTreeMap;

use aws_lc_rs::{constant_time, digest};

use crate::jaas::{JaasConfig, PLAIN_LOGIN_MODULE};

const USER_PREFIX: &str = "user_";

/// Why a PLAIN message was refused; the client sees `to_string()`, which
/// is Kafka's sentence for each case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlainError {
    #[error("Invalid SASL/PLAIN response: expected 3 tokens, got {0}")]
    Tokens(usize),
    #[error("Authentication failed: username not specified")]
    NoUser,
    #[error("Authentication failed: password not specified")]
    NoPassword,
    #[error("Authentication failed: Invalid username or password")]
    Invalid,
    #[error("Authentication failed: Client requested an authorization id that is different from username")]
    AuthzidMismatch,
}

/// The JAAS line names another login module than PLAIN's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the PLAIN mechanism's sasl.jaas.config must name {PLAIN_LOGIN_MODULE}, not {0}")]
pub struct PlainConfigError(pub String);

/// PLAIN's users and their passwords. `Debug` prints the names only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PlainUsers {
    passwords: BTreeMap<String, String>,
}

impl std::fmt::Debug for PlainUsers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlainUsers")
            .field("users", &self.passwords.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl PlainUsers {
    /// The `user_<name>` options of a `PlainLoginModule` line.
    pub fn from_jaas(config: &JaasConfig) -> Result<Self, PlainConfigError> {
        if config.login_module != PLAIN_LOGIN_MODULE {
            return Err(PlainConfigError(config.login_module.clone()));
        }
        let passwords = config
            .options
            .iter()
            .filter_map(|(k, v)| {
                k.strip_prefix(USER_PREFIX)
                    .map(|user| (user.to_string(), v.clone()))
            })
            .collect();
        Ok(PlainUsers { passwords })
    }

    pub fn len(&self) -> usize {
        self.passwords.len()
    }

    pub fn is_empty(&self) -> bool {
        self.passwords.is_empty()
    }

    /// Whether `password` is `user`'s. Compares digests of equal length in
    /// constant time, so the time taken tells neither the password's
    /// length nor how much of it matched.
    fn verify(&self, user: &str, password: &str) -> bool {
        let Some(expected) = self.passwords.get(user) else {
            return false;
        };
        let a = digest::digest(&digest::SHA256, password.as_bytes());
        let b = digest::digest(&digest::SHA256, expected.as_bytes());
        constant_time::verify_slices_are_equal(a.as_ref(), b.as_ref()).is_ok()
    }

    /// Checks one PLAIN message; the authenticated user name on success.
    pub fn authenticate(&self, message: &[u8]) -> Result<String, PlainError> {
        let text = String::from_utf8_lossy(message);
        // Kafka splits at most four times and wants exactly three parts.
        let parts: Vec<&str> = text.splitn(4, '\0').collect();
        if parts.len() != 3 {
            return Err(PlainError::Tokens(parts.len()));
        }
        let (authzid, user, password) = (parts[0], parts[1], parts[2]);
        if user.is_empty() {
            return Err(PlainError::NoUser);
        }
        if password.is_empty() {
            return Err(PlainError::NoPassword);
        }
        if !self.verify(user, password) {
            return Err(PlainError::Invalid);
        }
        if !authzid.is_empty() && authzid != user {
            return Err(PlainError::AuthzidMismatch);
        }
        Ok(user.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> PlainUsers {
        let line = format!(
            r#"{PLAIN_LOGIN_MODULE} required username="admin" password="x" user_admin="admin-secret" user_alice="alice-secret";"#
        );
        PlainUsers::from_jaas(&JaasConfig::parse(&line).expect("valid")).expect("PLAIN's module")
    }

    #[test]
    fn only_a_listed_user_with_its_password_passes() {
        let u = users();
        assert_eq!(u.len(), 2);
        assert_eq!(u.authenticate(b"\0alice\0alice-secret"), Ok("alice".into()));
        assert_eq!(
            u.authenticate(b"alice\0alice\0alice-secret"),
            Ok("alice".into())
        );
        assert_eq!(
            u.authenticate(b"\0alice\0admin-secret"),
            Err(PlainError::Invalid)
        );
        assert_eq!(
            u.authenticate(b"\0alice\0alice-secre"),
            Err(PlainError::Invalid)
        );
        assert_eq!(
            u.authenticate(b"\0alice\0alice-secretx"),
            Err(PlainError::Invalid)
        );
        assert_eq!(
            u.authenticate(b"\0mallory\0alice-secret"),
            Err(PlainError::Invalid)
        );
        // `username`/`password` are the broker's own client login, not a user.
        assert_eq!(u.authenticate(b"\0name\0admin"), Err(PlainError::Invalid));
        assert_eq!(
            u.authenticate(b"admin\0alice\0alice-secret"),
            Err(PlainError::AuthzidMismatch)
        );
    }

    #[test]
    fn malformed_messages_get_kafkas_answers() {
        let u = users();
        assert_eq!(u.authenticate(b""), Err(PlainError::Tokens(1)));
        assert_eq!(u.authenticate(b"\0alice"), Err(PlainError::Tokens(2)));
        assert_eq!(
            u.authenticate(b"\0alice\0pw\0more"),
            Err(PlainError::Tokens(4))
        );
        assert_eq!(u.authenticate(b"\0\0pw"), Err(PlainError::NoUser));
        assert_eq!(u.authenticate(b"\0alice\0"), Err(PlainError::NoPassword));
        assert_eq!(
            u.authenticate(b"\xff\0alice\0\xfe"),
            Err(PlainError::Invalid)
        );
        let e = PlainError::Invalid.to_string();
        assert!(!e.contains("alice"));
    }

    #[test]
    fn only_plains_module_lists_plain_users() {
        let scram = JaasConfig::parse(&format!(
            "{} required username=\"a\" password=\"b\";",
            crate::jaas::SCRAM_LOGIN_MODULE
        ))
        .expect("valid");
        assert!(PlainUsers::from_jaas(&scram).is_err());
        assert!(!format!("{:?}", users()).contains("secret"));
    }
}
