//! The SCRAM credentials every broker agrees on, and the two Kafka APIs
//! that read and change them, with Kafka's rules and answers
//! (`ScramControlManager.alterCredentials`, `ScramImage.describe`).
//!
//! AlterUserScramCredentials takes at most one change per user in a
//! request (a second one, of any mechanism, refuses the user with
//! DUPLICATE_RESOURCE); a deletion of a credential that does not exist is
//! RESOURCE_NOT_FOUND; iterations outside 4,096 to 16,384 and an empty user
//! name are UNACCEPTABLE_CREDENTIAL; an unknown mechanism is
//! UNSUPPORTED_SASL_MECHANISM. Each user's result stands alone. Where the
//! store lives (the cluster store) and how changes reach other brokers is
//! above this crate; this type is the state and its rules.

use std::collections::{BTreeMap, HashMap};

use super::{ScramCredential, ScramMechanism};
use crate::sasl::ScramCredentials;

pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
pub const RESOURCE_NOT_FOUND: i16 = 91;
pub const DUPLICATE_RESOURCE: i16 = 92;
pub const UNACCEPTABLE_CREDENTIAL: i16 = 93;

/// A user's result: 0 and no message, or Kafka's error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserResult {
    pub user: String,
    pub error_code: i16,
    pub error_message: Option<String>,
}

impl UserResult {
    fn ok(user: &str) -> Self {
        UserResult {
            user: user.to_string(),
            error_code: 0,
            error_message: None,
        }
    }

    fn err(user: &str, code: i16, message: impl Into<String>) -> Self {
        UserResult {
            user: user.to_string(),
            error_code: code,
            error_message: Some(message.into()),
        }
    }
}

/// A deletion, as the request carries it (`mechanism` is Kafka's type code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deletion {
    pub user: String,
    pub mechanism: i8,
}

/// An upsertion, as the request carries it.
#[derive(Clone, PartialEq, Eq)]
pub struct Upsertion {
    pub user: String,
    pub mechanism: i8,
    pub iterations: i32,
    pub salt: Vec<u8>,
    pub salted_password: Vec<u8>,
}

impl std::fmt::Debug for Upsertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upsertion")
            .field("user", &self.user)
            .field("mechanism", &self.mechanism)
            .finish_non_exhaustive()
    }
}

/// What DescribeUserScramCredentials answers for one user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    pub result: UserResult,
    /// `(mechanism type, iterations)` for each credential the user has.
    pub credentials: Vec<(i8, i32)>,
}

/// Every user's SCRAM credentials.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CredentialStore {
    credentials: BTreeMap<(String, i8), ScramCredential>,
}

enum Change {
    Delete(i8),
    Upsert(ScramCredential),
}

fn check_user_and_mechanism(user: &str, mechanism: i8) -> Result<ScramMechanism, UserResult> {
    if user.is_empty() {
        return Err(UserResult::err(
            user,
            UNACCEPTABLE_CREDENTIAL,
            "Username must not be empty",
        ));
    }
    ScramMechanism::from_type_code(mechanism)
        .ok_or_else(|| UserResult::err(user, UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"))
}

impl CredentialStore {
    pub fn get(&self, user: &str, mechanism: ScramMechanism) -> Option<&ScramCredential> {
        self.credentials
            .get(&(user.to_string(), mechanism.type_code()))
    }

    /// Puts a credential (the first admin at start; replaying the store).
    pub fn insert(&mut self, user: &str, credential: ScramCredential) {
        self.credentials.insert(
            (user.to_string(), credential.mechanism.type_code()),
            credential,
        );
    }

    pub fn len(&self) -> usize {
        self.credentials.len()
    }

    /// Every credential, by user (to store them).
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ScramCredential)> {
        self.credentials.iter().map(|((u, _), c)| (u.as_str(), c))
    }

    pub fn is_empty(&self) -> bool {
        self.credentials.is_empty()
    }

    /// AlterUserScramCredentials: one result per user named in the request.
    pub fn alter(&mut self, deletions: &[Deletion], upsertions: &[Upsertion]) -> Vec<UserResult> {
        let mut changes: HashMap<&str, Change> = HashMap::new();
        let mut errors: BTreeMap<&str, UserResult> = BTreeMap::new();
        let duplicate = |user: &str| {
            UserResult::err(
                user,
                DUPLICATE_RESOURCE,
                "A user credential cannot be altered twice in the same request",
            )
        };
        for d in deletions {
            let user = d.user.as_str();
            if errors.contains_key(user) {
                continue;
            }
            if changes.remove(user).is_some() {
                errors.insert(user, duplicate(user));
                continue;
            }
            match check_user_and_mechanism(user, d.mechanism) {
                Err(e) => {
                    errors.insert(user, e);
                }
                Ok(_)
                    if !self
                        .credentials
                        .contains_key(&(d.user.clone(), d.mechanism)) =>
                {
                    errors.insert(
                        user,
                        UserResult::err(
                            user,
                            RESOURCE_NOT_FOUND,
                            "Attempt to delete a user credential that does not exist",
                        ),
                    );
                }
                Ok(_) => {
                    changes.insert(user, Change::Delete(d.mechanism));
                }
            }
        }
        for u in upsertions {
            let user = u.user.as_str();
            if errors.contains_key(user) {
                continue;
            }
            if changes.remove(user).is_some() {
                errors.insert(user, duplicate(user));
                continue;
            }
            let m = match check_user_and_mechanism(user, u.mechanism) {
                Ok(m) => m,
                Err(e) => {
                    errors.insert(user, e);
                    continue;
                }
            };
            if u.iterations < ScramMechanism::MIN_ITERATIONS as i32 {
                errors.insert(
                    user,
                    UserResult::err(user, UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
                );
                continue;
            }
            if u.iterations > ScramMechanism::MAX_ITERATIONS as i32 {
                errors.insert(
                    user,
                    UserResult::err(user, UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
                );
                continue;
            }
            match ScramCredential::from_salted_password(
                m,
                &u.salted_password,
                &u.salt,
                u.iterations as u32,
            ) {
                Ok(c) => {
                    changes.insert(user, Change::Upsert(c));
                }
                Err(e) => {
                    errors.insert(
                        user,
                        UserResult::err(user, UNACCEPTABLE_CREDENTIAL, e.to_string()),
                    );
                }
            }
        }
        let mut results: Vec<UserResult> = Vec::new();
        let mut applied: Vec<(&str, Change)> = changes.into_iter().collect();
        applied.sort_by(|a, b| a.0.cmp(b.0));
        for (user, change) in applied {
            match change {
                Change::Delete(m) => {
                    self.credentials.remove(&(user.to_string(), m));
                }
                Change::Upsert(c) => self.insert(user, c),
            }
            results.push(UserResult::ok(user));
        }
        results.extend(errors.into_values());
        results
    }

    /// DescribeUserScramCredentials; `users` empty or absent is every user.
    pub fn describe(&self, users: Option<&[String]>) -> Vec<Described> {
        let mut asked: BTreeMap<&str, bool> = BTreeMap::new();
        match users {
            Some(list) if !list.is_empty() => {
                for u in list {
                    asked
                        .entry(u.as_str())
                        .and_modify(|dup| *dup = true)
                        .or_insert(false);
                }
            }
            _ => {
                for (user, _) in self.credentials.keys() {
                    asked.insert(user.as_str(), false);
                }
            }
        }
        asked
            .into_iter()
            .map(|(user, duplicate)| {
                if duplicate {
                    return Described {
                        result: UserResult::err(
                            user,
                            DUPLICATE_RESOURCE,
                            format!("Cannot describe SCRAM credentials for the same user twice in a single request: {user}"),
                        ),
                        credentials: Vec::new(),
                    };
                }
                let credentials: Vec<(i8, i32)> = self
                    .credentials
                    .range((user.to_string(), i8::MIN)..=(user.to_string(), i8::MAX))
                    .map(|((_, m), c)| (*m, c.iterations as i32))
                    .collect();
                if credentials.is_empty() {
                    Described {
                        result: UserResult::err(
                            user,
                            RESOURCE_NOT_FOUND,
                            format!("Attempt to describe a user credential that does not exist: {user}"),
                        ),
                        credentials,
                    }
                } else {
                    Described { result: UserResult::ok(user), credentials }
                }
            })
            .collect()
    }
}

impl ScramCredentials for CredentialStore {
    fn scram_credential(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        self.get(user, mechanism).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn upsert(user: &str, mechanism: i8, iterations: i32, password: &str) -> Upsertion {
        let m = ScramMechanism::from_type_code(mechanism).unwrap_or(ScramMechanism::Sha256);
        let salt = b"0123456789abcdef".to_vec();
        let salted = super::super::salted_password(
            m,
            password.as_bytes(),
            &salt,
            iterations.clamp(4096, 16384) as u32,
        );
        Upsertion {
            user: user.into(),
            mechanism,
            iterations,
            salt,
            salted_password: salted,
        }
    }

    fn del(user: &str, mechanism: i8) -> Deletion {
        Deletion {
            user: user.into(),
            mechanism,
        }
    }

    fn codes(r: &[UserResult]) -> Vec<(&str, i16)> {
        let mut v: Vec<_> = r.iter().map(|x| (x.user.as_str(), x.error_code)).collect();
        v.sort();
        v
    }

    #[test]
    fn what_kafka_configs_sets_is_what_authenticates() {
        let mut s = CredentialStore::default();
        let r = s.alter(&[], &[upsert("alice", 2, 8192, "pw")]);
        assert_eq!(r, vec![UserResult::ok("alice")]);
        let c = s.get("alice", ScramMechanism::Sha512).expect("stored");
        assert_eq!(c.iterations, 8192);
        // The stored keys are those of the password (an exchange succeeds).
        let want =
            ScramCredential::from_password(ScramMechanism::Sha512, "pw", b"0123456789abcdef", 8192)
                .expect("valid");
        assert_eq!(c, &want);
        let d = s.describe(None);
        assert_eq!(
            d,
            vec![Described {
                result: UserResult::ok("alice"),
                credentials: vec![(2, 8192)]
            }]
        );
        assert_eq!(
            s.alter(&[del("alice", 2)], &[]),
            vec![UserResult::ok("alice")]
        );
        assert!(s.is_empty());
    }

    #[test]
    fn kafkas_refusals() {
        let mut s = CredentialStore::default();
        s.alter(&[], &[upsert("bob", 1, 4096, "pw")]);
        let r = s.alter(
            &[del("nobody", 1), del("bob", 1), del("", 1), del("x", 0)],
            &[
                upsert("bob", 2, 4096, "pw2"),
                upsert("few", 1, 4095, "pw"),
                upsert("many", 1, 16385, "pw"),
                upsert("odd", 3, 4096, "pw"),
                upsert("carol", 1, 4096, "pw"),
                upsert("carol", 2, 4096, "pw"),
                upsert("carol", 2, 4096, "pw"),
            ],
        );
        assert_eq!(
            codes(&r),
            vec![
                ("", UNACCEPTABLE_CREDENTIAL),
                ("bob", DUPLICATE_RESOURCE),
                ("carol", DUPLICATE_RESOURCE),
                ("few", UNACCEPTABLE_CREDENTIAL),
                ("many", UNACCEPTABLE_CREDENTIAL),
                ("nobody", RESOURCE_NOT_FOUND),
                ("odd", UNSUPPORTED_SASL_MECHANISM),
                ("x", UNSUPPORTED_SASL_MECHANISM),
            ]
        );
        // Refused users changed nothing: bob keeps his SHA-256 credential.
        assert!(s.get("bob", ScramMechanism::Sha256).is_some());
        assert!(s.get("bob", ScramMechanism::Sha512).is_none());
        assert!(s.get("carol", ScramMechanism::Sha256).is_none());
        let bad_salted = Upsertion {
            salted_password: vec![1, 2, 3],
            ..upsert("dave", 1, 4096, "pw")
        };
        assert_eq!(
            codes(&s.alter(&[], &[bad_salted])),
            vec![("dave", UNACCEPTABLE_CREDENTIAL)]
        );
        assert!(!format!("{:?}", upsert("e", 1, 4096, "pw")).contains("salted"));
    }

    #[test]
    fn describe_answers_per_user() {
        let mut s = CredentialStore::default();
        s.alter(&[], &[upsert("a", 1, 4096, "pw")]);
        s.alter(&[], &[upsert("a", 2, 5000, "pw")]);
        let d = s.describe(Some(&["a".into(), "zed".into(), "zed".into()]));
        assert_eq!(
            d[0],
            Described {
                result: UserResult::ok("a"),
                credentials: vec![(1, 4096), (2, 5000)]
            }
        );
        assert_eq!(d[1].result.error_code, DUPLICATE_RESOURCE);
        let d = s.describe(Some(&["zed".into()]));
        assert_eq!(d[0].result.error_code, RESOURCE_NOT_FOUND);
        assert_eq!(
            d[0].result.error_message.as_deref(),
            Some("Attempt to describe a user credential that does not exist: zed")
        );
        assert_eq!(s.describe(Some(&[])).len(), 1);
    }
}
