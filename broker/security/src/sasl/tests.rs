//! The authenticator's states as Kafka's `SaslServerAuthenticator` has
//! them, and the test the project owes SCRAM: a client that ignores every
//! refusal is never served.

use std::collections::HashMap;

use super::*;
use crate::jaas::{JaasConfig, PLAIN_LOGIN_MODULE};
use crate::oauthbearer::{TokenError, ValidToken, INVALID_TOKEN_JSON};
use crate::scram::test_client_final;

/// Tokens `good-<user>-<expiry ms>`; anything else is invalid.
#[derive(Debug)]
struct Tokens;

impl TokenValidator for Tokens {
    fn validate(&self, token: &str, _now_ms: i64) -> Result<ValidToken, TokenError> {
        let mut parts = token.split('-');
        match (
            parts.next(),
            parts.next(),
            parts.next().and_then(|e| e.parse().ok()),
        ) {
            (Some("good"), Some(user), Some(exp)) => Ok(ValidToken {
                principal: user.to_string(),
                expires_at_ms: exp,
                scopes: vec![],
            }),
            _ => Err(TokenError::Signature("test".into())),
        }
    }
}

fn bearer(authzid: &str, token: &str) -> Vec<u8> {
    let a = if authzid.is_empty() {
        String::new()
    } else {
        format!("a={authzid}")
    };
    format!("n,{a},\x01auth=Bearer {token}\x01\x01").into_bytes()
}

struct Store(HashMap<(String, ScramMechanism), ScramCredential>);

impl ScramCredentials for Store {
    fn scram_credential(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential> {
        self.0.get(&(user.to_string(), mechanism)).cloned()
    }
}

const SHA256: SaslMechanism = SaslMechanism::Scram(ScramMechanism::Sha256);
const SHA512: SaslMechanism = SaslMechanism::Scram(ScramMechanism::Sha512);

fn authenticator(mechanisms: &[SaslMechanism], max_reauth_ms: Option<i64>) -> SaslAuthenticator {
    let jaas = JaasConfig::parse(&format!(
        r#"{PLAIN_LOGIN_MODULE} required user_alice="alice-pw" user_bob="bob-pw";"#
    ))
    .expect("valid");
    let mut creds = HashMap::new();
    for m in ScramMechanism::ALL {
        for (user, pw) in [("alice", "alice-pw"), ("bob", "bob-pw")] {
            creds.insert(
                (user.to_string(), *m),
                ScramCredential::generate(*m, pw, 4096).expect("valid"),
            );
        }
    }
    let config = SaslServerConfig {
        mechanisms: mechanisms.to_vec(),
        plain: PlainUsers::from_jaas(&jaas).expect("PLAIN"),
        max_reauth_ms,
        decoy_key: [3; 32],
        oauth: Some(Arc::new(Tokens)),
    };
    SaslAuthenticator::new(Arc::new(config), Arc::new(Store(creds)))
}

fn ok_bytes(reply: Reply) -> Vec<u8> {
    match reply {
        Reply::Respond {
            response:
                SaslResponse::Authenticate {
                    error_code: 0,
                    auth_bytes,
                    ..
                },
            close: false,
        } => auth_bytes,
        other => panic!("expected a successful SaslAuthenticate answer, got {other:?}"),
    }
}

fn handshake(a: &mut SaslAuthenticator, version: i16, m: &str, now: i64) -> Reply {
    a.on_request(
        Request::SaslHandshake {
            version,
            mechanism: m,
        },
        now,
    )
}

/// A whole SCRAM exchange over SaslAuthenticate; the last reply.
fn scram(
    a: &mut SaslAuthenticator,
    m: ScramMechanism,
    user: &str,
    password: &str,
    now: i64,
) -> Reply {
    let bare = format!("n={user},r=fixedclientnonce");
    let first = a.on_request(
        Request::SaslAuthenticate {
            auth_bytes: format!("n,,{bare}").as_bytes(),
        },
        now,
    );
    let first = String::from_utf8(ok_bytes(first)).expect("UTF-8");
    let fin = test_client_final(m, password, &first, &bare, "n,,");
    a.on_request(
        Request::SaslAuthenticate {
            auth_bytes: fin.as_bytes(),
        },
        now,
    )
}

#[test]
fn a_scram_exchange_then_service() {
    for m in ScramMechanism::ALL.iter().copied() {
        let mut a = authenticator(&[SaslMechanism::Plain, SHA256, SHA512], None);
        assert_eq!(a.on_request(Request::ApiVersions, 0), Reply::Serve);
        assert_eq!(
            handshake(&mut a, 1, m.name(), 0),
            Reply::Respond {
                response: SaslResponse::Handshake {
                    error_code: 0,
                    mechanisms: vec![
                        "PLAIN".into(),
                        "SCRAM-SHA-256".into(),
                        "SCRAM-SHA-512".into()
                    ]
                },
                close: false
            }
        );
        assert!(!a.is_authenticated());
        let last = ok_bytes(scram(&mut a, m, "alice", "alice-pw", 0));
        assert!(last.starts_with(b"v="));
        assert!(a.is_authenticated());
        assert_eq!(
            a.principal().map(ToString::to_string).as_deref(),
            Some("User:alice")
        );
        assert_eq!(a.on_request(Request::Other { api_key: 3 }, 1), Reply::Serve);
    }
}

/// A client that ignores every refusal and goes on to Metadata,
/// CreateTopics and Produce is never served: wrong password, unknown user,
/// and the right password with the wrong mechanism's credential.
#[test]
fn a_refused_client_is_never_served() {
    for m in ScramMechanism::ALL.iter().copied() {
        for (user, password) in [
            ("alice", "wrong"),
            ("mallory", "alice-pw"),
            ("alice", "bob-pw"),
        ] {
            let mut a = authenticator(&[SHA256, SHA512], None);
            handshake(&mut a, 1, m.name(), 0);
            let reply = scram(&mut a, m, user, password, 0);
            let Reply::Respond {
                response:
                    SaslResponse::Authenticate {
                        error_code,
                        error_message,
                        auth_bytes,
                        ..
                    },
                close,
            } = reply
            else {
                panic!("{reply:?}")
            };
            assert_eq!(error_code, SASL_AUTHENTICATION_FAILED);
            assert!(close);
            assert!(auth_bytes.is_empty(), "no server token on failure");
            assert_eq!(
                error_message.as_deref(),
                Some(format!("Authentication failed during authentication due to invalid credentials with SASL mechanism {}", m.name()).as_str())
            );
            for api_key in [3, 19, 0] {
                assert!(
                    matches!(
                        a.on_request(Request::Other { api_key }, 0),
                        Reply::Close { .. }
                    ),
                    "{user} api {api_key}"
                );
            }
            assert!(!a.is_authenticated() && a.principal().is_none());
        }
    }
}

#[test]
fn before_the_handshake_only_api_versions_once() {
    // Another request first fails authentication: closed after the delay.
    let mut a = authenticator(&[SaslMechanism::Plain], None);
    assert_eq!(
        a.on_request(Request::Other { api_key: 3 }, 0),
        Reply::Close { delayed: true }
    );
    let mut a = authenticator(&[SaslMechanism::Plain], None);
    assert_eq!(a.on_request(Request::ApiVersions, 0), Reply::Serve);
    assert_eq!(
        a.on_request(Request::ApiVersions, 0),
        Reply::Close { delayed: false }
    );
    let mut a = authenticator(&[SaslMechanism::Plain], None);
    assert!(matches!(
        handshake(&mut a, 1, "PLAIN", 0),
        Reply::Respond { close: false, .. }
    ));
    // A handshake may come first, without ApiVersions (old clients).
    assert_eq!(
        ok_bytes(a.on_request(
            Request::SaslAuthenticate {
                auth_bytes: b"\0alice\0alice-pw"
            },
            0
        )),
        b""
    );
    assert!(a.is_authenticated());
}

#[test]
fn unknown_or_disabled_mechanisms_are_refused_with_the_list() {
    for name in ["GSSAPI", "SCRAM-SHA-256", "plain"] {
        let mut a = authenticator(&[SaslMechanism::Plain, SHA512], None);
        assert_eq!(
            handshake(&mut a, 1, name, 0),
            Reply::Respond {
                response: SaslResponse::Handshake {
                    error_code: UNSUPPORTED_SASL_MECHANISM,
                    mechanisms: vec!["PLAIN".into(), "SCRAM-SHA-512".into()]
                },
                close: true
            },
            "{name}"
        );
        assert!(matches!(
            a.on_request(Request::Other { api_key: 3 }, 0),
            Reply::Close { .. }
        ));
    }
}

#[test]
fn another_request_during_the_exchange_is_an_illegal_state() {
    let mut a = authenticator(&[SHA256], None);
    handshake(&mut a, 1, "SCRAM-SHA-256", 0);
    assert_eq!(
        a.on_request(Request::Other { api_key: 3 }, 0),
        Reply::Respond {
            response: SaslResponse::Error {
                error_code: ILLEGAL_SASL_STATE
            },
            close: true
        }
    );
    assert_eq!(
        a.on_request(
            Request::SaslAuthenticate {
                auth_bytes: b"n,,n=alice,r=x"
            },
            0
        ),
        Reply::Close { delayed: false }
    );
}

#[test]
fn plain_refusals_use_kafkas_sentences() {
    let mut a = authenticator(&[SaslMechanism::Plain], None);
    handshake(&mut a, 1, "PLAIN", 0);
    let reply = a.on_request(
        Request::SaslAuthenticate {
            auth_bytes: b"bob\0alice\0alice-pw",
        },
        0,
    );
    assert_eq!(
        reply,
        Reply::Respond {
            response: SaslResponse::Authenticate {
                error_code: SASL_AUTHENTICATION_FAILED,
                error_message: Some(
                    "Authentication failed: Client requested an authorization id that is different from username".into()
                ),
                auth_bytes: vec![],
                session_lifetime_ms: 0
            },
            close: true
        }
    );
}

#[test]
fn version_0_carries_raw_tokens() {
    let mut a = authenticator(&[SaslMechanism::Plain, SHA256], None);
    handshake(&mut a, 0, "PLAIN", 0);
    assert!(a.expects_raw_token());
    assert_eq!(
        a.on_raw_token(b"\0alice\0alice-pw", 0),
        Reply::Respond {
            response: SaslResponse::RawToken(vec![]),
            close: false
        }
    );
    assert!(a.is_authenticated() && !a.expects_raw_token());

    let mut a = authenticator(&[SaslMechanism::Plain], None);
    handshake(&mut a, 0, "PLAIN", 0);
    assert_eq!(
        a.on_raw_token(b"\0alice\0nope", 0),
        Reply::Close { delayed: true }
    );
    assert!(!a.is_authenticated());

    // SCRAM over raw tokens.
    let mut a = authenticator(&[SHA256], None);
    handshake(&mut a, 0, "SCRAM-SHA-256", 0);
    let bare = "n=bob,r=abc";
    let Reply::Respond {
        response: SaslResponse::RawToken(first),
        close: false,
    } = a.on_raw_token(format!("n,,{bare}").as_bytes(), 0)
    else {
        panic!("server-first")
    };
    let first = String::from_utf8(first).expect("UTF-8");
    let fin = test_client_final(ScramMechanism::Sha256, "bob-pw", &first, bare, "n,,");
    assert!(matches!(
        a.on_raw_token(fin.as_bytes(), 0),
        Reply::Respond {
            response: SaslResponse::RawToken(_),
            close: false
        }
    ));
    assert_eq!(a.principal().map(|p| p.name()), Some("bob"));
    // A raw token when none is expected closes.
    assert!(matches!(a.on_raw_token(b"x", 0), Reply::Close { .. }));
}

#[test]
fn without_reauthentication_sasl_requests_after_success_are_illegal_and_harmless() {
    let mut a = authenticator(&[SaslMechanism::Plain], None);
    handshake(&mut a, 1, "PLAIN", 0);
    let Reply::Respond {
        response:
            SaslResponse::Authenticate {
                session_lifetime_ms,
                ..
            },
        ..
    } = a.on_request(
        Request::SaslAuthenticate {
            auth_bytes: b"\0alice\0alice-pw",
        },
        0,
    )
    else {
        panic!()
    };
    assert_eq!(session_lifetime_ms, 0);
    assert!(matches!(
        handshake(&mut a, 1, "PLAIN", 5_000),
        Reply::Respond {
            response: SaslResponse::Handshake {
                error_code: ILLEGAL_SASL_STATE,
                ..
            },
            close: false
        }
    ));
    assert!(matches!(
        a.on_request(Request::SaslAuthenticate { auth_bytes: b"" }, 5_000),
        Reply::Respond {
            response: SaslResponse::Authenticate {
                error_code: ILLEGAL_SASL_STATE,
                ..
            },
            close: false
        }
    ));
    assert_eq!(
        a.on_request(Request::Other { api_key: 0 }, i64::MAX / 2),
        Reply::Serve,
        "a session without an end never ends"
    );
}

#[test]
fn sessions_end_and_re_authenticate() {
    let plain = |a: &mut SaslAuthenticator, who: &[u8], now| {
        a.on_request(Request::SaslAuthenticate { auth_bytes: who }, now)
    };
    let mut a = authenticator(&[SaslMechanism::Plain, SHA256], Some(10_000));
    handshake(&mut a, 1, "PLAIN", 0);
    let Reply::Respond {
        response:
            SaslResponse::Authenticate {
                session_lifetime_ms,
                ..
            },
        ..
    } = plain(&mut a, b"\0alice\0alice-pw", 100)
    else {
        panic!()
    };
    assert_eq!(session_lifetime_ms, 10_000);
    assert_eq!(a.session_expires_at_ms(), Some(10_100));
    assert_eq!(
        a.on_request(Request::Other { api_key: 0 }, 10_100),
        Reply::Serve
    );
    // The first re-authentication may come at any time (Kafka's floor is
    // between re-authentications), here 200 ms after the first exchange.
    assert!(matches!(
        handshake(&mut a, 1, "PLAIN", 300),
        Reply::Respond { close: false, .. }
    ));
    ok_bytes(plain(&mut a, b"\0alice\0alice-pw", 300));
    assert_eq!(a.session_expires_at_ms(), Some(10_300));
    // Within a second of that one: no re-authentication, the connection stays.
    assert!(matches!(
        handshake(&mut a, 1, "PLAIN", 1_200),
        Reply::Respond {
            response: SaslResponse::Handshake {
                error_code: ILLEGAL_SASL_STATE,
                ..
            },
            close: false
        }
    ));
    // A second later it may: same mechanism and principal, the session renews.
    assert!(matches!(
        handshake(&mut a, 1, "PLAIN", 9_000),
        Reply::Respond { close: false, .. }
    ));
    ok_bytes(plain(&mut a, b"\0alice\0alice-pw", 9_000));
    assert_eq!(a.session_expires_at_ms(), Some(19_000));
    assert_eq!(
        a.on_request(Request::Other { api_key: 0 }, 15_000),
        Reply::Serve
    );
    // Past the end, a request closes the connection without an answer.
    assert_eq!(
        a.on_request(Request::Other { api_key: 0 }, 19_001),
        Reply::Close { delayed: false }
    );

    // Another principal: refused.
    let mut a = authenticator(&[SaslMechanism::Plain], Some(10_000));
    handshake(&mut a, 1, "PLAIN", 0);
    ok_bytes(plain(&mut a, b"\0alice\0alice-pw", 0));
    handshake(&mut a, 1, "PLAIN", 2_000);
    let Reply::Respond {
        response:
            SaslResponse::Authenticate {
                error_code,
                error_message,
                ..
            },
        close: true,
    } = plain(&mut a, b"\0bob\0bob-pw", 2_000)
    else {
        panic!()
    };
    assert_eq!(error_code, SASL_AUTHENTICATION_FAILED);
    assert_eq!(
        error_message.as_deref(),
        Some("Cannot change principals during re-authentication from User.alice: User.bob")
    );
    assert!(matches!(
        a.on_request(Request::Other { api_key: 0 }, 2_001),
        Reply::Close { .. }
    ));

    // Another mechanism: refused at its first token.
    let mut a = authenticator(&[SaslMechanism::Plain, SHA256], Some(10_000));
    handshake(&mut a, 1, "PLAIN", 0);
    ok_bytes(plain(&mut a, b"\0alice\0alice-pw", 0));
    assert!(matches!(
        handshake(&mut a, 1, "SCRAM-SHA-256", 2_000),
        Reply::Respond { close: false, .. }
    ));
    // Kafka closes without an answer; the cause is for the broker's log.
    assert_eq!(
        plain(&mut a, b"n,,n=alice,r=x", 2_000),
        Reply::Close { delayed: true }
    );
    assert!(a
        .failure_reason()
        .is_some_and(|m| m.contains("not supported for re-authentication of mechanism 'PLAIN'")));

    // An expired session may still re-authenticate (that is what ends it well).
    let mut a = authenticator(&[SaslMechanism::Plain], Some(1_000));
    handshake(&mut a, 1, "PLAIN", 0);
    ok_bytes(plain(&mut a, b"\0alice\0alice-pw", 0));
    assert!(matches!(
        handshake(&mut a, 1, "PLAIN", 5_000),
        Reply::Respond { close: false, .. }
    ));
    ok_bytes(plain(&mut a, b"\0alice\0alice-pw", 5_000));
    assert_eq!(
        a.on_request(Request::Other { api_key: 0 }, 5_500),
        Reply::Serve
    );
}

#[test]
fn oauthbearer_sessions_last_as_long_as_the_token() {
    let mut a = authenticator(&[SaslMechanism::OAuthBearer], Some(60_000));
    handshake(&mut a, 1, "OAUTHBEARER", 0);
    let reply = a.on_request(
        Request::SaslAuthenticate {
            auth_bytes: &bearer("", "good-alice-10000"),
        },
        1_000,
    );
    let Reply::Respond {
        response:
            SaslResponse::Authenticate {
                error_code: 0,
                session_lifetime_ms,
                ..
            },
        close: false,
    } = reply
    else {
        panic!("{reply:?}")
    };
    // The token has 9 s left, less than connections.max.reauth.ms.
    assert_eq!(session_lifetime_ms, 9_000);
    assert_eq!(
        a.principal().map(ToString::to_string).as_deref(),
        Some("User:alice")
    );
    assert_eq!(
        a.on_request(Request::Other { api_key: 0 }, 10_000),
        Reply::Serve
    );
    assert_eq!(
        a.on_request(Request::Other { api_key: 0 }, 10_001),
        Reply::Close { delayed: false }
    );
    // Without connections.max.reauth.ms the token alone ends the session.
    let mut a = authenticator(&[SaslMechanism::OAuthBearer], None);
    handshake(&mut a, 1, "OAUTHBEARER", 0);
    ok_bytes(a.on_request(
        Request::SaslAuthenticate {
            auth_bytes: &bearer("alice", "good-alice-5000"),
        },
        0,
    ));
    assert_eq!(a.session_expires_at_ms(), Some(5_000));
}

#[test]
fn an_invalid_token_is_answered_invalid_token_then_refused() {
    let mut a = authenticator(&[SaslMechanism::OAuthBearer], None);
    handshake(&mut a, 1, "OAUTHBEARER", 0);
    let status = ok_bytes(a.on_request(
        Request::SaslAuthenticate {
            auth_bytes: &bearer("", "forged"),
        },
        0,
    ));
    assert_eq!(status, INVALID_TOKEN_JSON.as_bytes());
    assert!(!a.is_authenticated());
    let reply = a.on_request(
        Request::SaslAuthenticate {
            auth_bytes: b"\x01",
        },
        0,
    );
    assert_eq!(
        reply,
        Reply::Respond {
            response: SaslResponse::Authenticate {
                error_code: SASL_AUTHENTICATION_FAILED,
                error_message: Some(INVALID_TOKEN_JSON.into()),
                auth_bytes: vec![],
                session_lifetime_ms: 0
            },
            close: true
        }
    );
    assert!(matches!(
        a.on_request(Request::Other { api_key: 3 }, 0),
        Reply::Close { .. }
    ));

    // A client that ignores the status is not served either.
    let mut a = authenticator(&[SaslMechanism::OAuthBearer], None);
    handshake(&mut a, 1, "OAUTHBEARER", 0);
    ok_bytes(a.on_request(
        Request::SaslAuthenticate {
            auth_bytes: &bearer("", "forged"),
        },
        0,
    ));
    assert!(matches!(
        a.on_request(Request::Other { api_key: 3 }, 0),
        Reply::Respond { close: true, .. }
    ));
    let mut a = authenticator(&[SaslMechanism::OAuthBearer], None);
    handshake(&mut a, 1, "OAUTHBEARER", 0);
    ok_bytes(a.on_request(
        Request::SaslAuthenticate {
            auth_bytes: &bearer("", "forged"),
        },
        0,
    ));
    let retry = a.on_request(
        Request::SaslAuthenticate {
            auth_bytes: &bearer("", "good-alice-9000"),
        },
        0,
    );
    assert!(
        matches!(retry, Reply::Respond { close: true, .. }),
        "{retry:?}"
    );
    assert!(!a.is_authenticated());
}

#[test]
fn oauthbearer_refusals() {
    // Another authorization id than the token's subject.
    let mut a = authenticator(&[SaslMechanism::OAuthBearer], None);
    handshake(&mut a, 1, "OAUTHBEARER", 0);
    let Reply::Respond {
        response:
            SaslResponse::Authenticate {
                error_code,
                error_message,
                ..
            },
        close: true,
    } = a.on_request(
        Request::SaslAuthenticate {
            auth_bytes: &bearer("admin", "good-alice-9000"),
        },
        0,
    )
    else {
        panic!()
    };
    assert_eq!(error_code, SASL_AUTHENTICATION_FAILED);
    assert!(error_message.is_some_and(|m| m.contains("(admin)") && m.contains("(alice)")));
    // A message that is not RFC 7628's.
    let mut a = authenticator(&[SaslMechanism::OAuthBearer], None);
    handshake(&mut a, 1, "OAUTHBEARER", 0);
    assert!(matches!(
        a.on_request(
            Request::SaslAuthenticate {
                auth_bytes: b"auth=Bearer x"
            },
            0
        ),
        Reply::Respond {
            response: SaslResponse::Authenticate {
                error_code: SASL_AUTHENTICATION_FAILED,
                ..
            },
            close: true
        }
    ));
    // Enabled without a token check: not offered.
    let mut a = authenticator(&[SaslMechanism::OAuthBearer], None);
    a.config = Arc::new(SaslServerConfig {
        oauth: None,
        ..(*a.config).clone()
    });
    assert!(matches!(
        handshake(&mut a, 1, "OAUTHBEARER", 0),
        Reply::Respond {
            response: SaslResponse::Handshake {
                error_code: UNSUPPORTED_SASL_MECHANISM,
                ..
            },
            close: true
        }
    ));
}

/// The rest of the refusals the project owes SCRAM, end to end through
/// the authenticator: the right password, but a proof byte flipped, a
/// proof made for another exchange's nonce, or an empty proof; the
/// client then ignores the refusal and is closed, never served.
#[test]
fn altered_proofs_are_never_served() {
    type Tamper = fn(String) -> String;
    let flip: Tamper = |f| {
        let (head, proof) = f.rsplit_once(",p=").expect("proof");
        let mut p: Vec<u8> = proof.bytes().collect();
        p[3] = if p[3] == b'A' { b'B' } else { b'A' };
        format!("{head},p={}", String::from_utf8(p).expect("ASCII"))
    };
    let foreign: Tamper = |f| f.replace("fixedclientnonce", "otherclientnonce");
    let empty: Tamper = |f| format!("{},p=", f.rsplit_once(",p=").expect("proof").0);
    for m in ScramMechanism::ALL.iter().copied() {
        for tamper in [flip, foreign, empty] {
            let mut a = authenticator(&[SHA256, SHA512], None);
            handshake(&mut a, 1, m.name(), 0);
            let bare = "n=alice,r=fixedclientnonce";
            let first = ok_bytes(a.on_request(
                Request::SaslAuthenticate {
                    auth_bytes: format!("n,,{bare}").as_bytes(),
                },
                0,
            ));
            let first = String::from_utf8(first).expect("UTF-8");
            let fin = tamper(test_client_final(m, "alice-pw", &first, bare, "n,,"));
            let reply = a.on_request(
                Request::SaslAuthenticate {
                    auth_bytes: fin.as_bytes(),
                },
                0,
            );
            assert!(
                matches!(
                    reply,
                    Reply::Respond {
                        response: SaslResponse::Authenticate {
                            error_code: SASL_AUTHENTICATION_FAILED,
                            ..
                        },
                        close: true
                    }
                ),
                "{reply:?}"
            );
            assert!(a.failure_reason().is_some());
            for api_key in [3, 19, 0] {
                assert!(matches!(
                    a.on_request(Request::Other { api_key }, 0),
                    Reply::Close { .. }
                ));
            }
            assert!(!a.is_authenticated());
        }
    }
}

#[test]
fn a_failed_re_authentication_says_so() {
    let mut a = authenticator(&[SHA256], Some(10_000));
    handshake(&mut a, 1, "SCRAM-SHA-256", 0);
    ok_bytes(scram(
        &mut a,
        ScramMechanism::Sha256,
        "alice",
        "alice-pw",
        0,
    ));
    handshake(&mut a, 1, "SCRAM-SHA-256", 5_000);
    let Reply::Respond {
        response: SaslResponse::Authenticate { error_message, .. },
        close: true,
    } = scram(&mut a, ScramMechanism::Sha256, "alice", "wrong", 5_000)
    else {
        panic!()
    };
    assert_eq!(
        error_message.as_deref(),
        Some("Authentication failed during re-authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256")
    );
}

#[test]
fn debug_output_holds_no_secret() {
    let a = authenticator(&[SaslMechanism::Plain], None);
    let shown = format!("{:?}", a.config);
    assert!(
        !shown.contains("decoy") && !shown.contains("alice-pw"),
        "{shown}"
    );
    let r = Request::SaslAuthenticate {
        auth_bytes: b"\0alice\0alice-pw",
    };
    assert_eq!(format!("{r:?}"), "SaslAuthenticate { 15 bytes }");
}
