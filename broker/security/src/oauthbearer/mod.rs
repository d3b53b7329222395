//! OAUTHBEARER (RFC 7628) with JSON Web Tokens, as Kafka's
//! `OAuthBearerSaslServer` reads the client's message and its broker-side
//! validator checks the token (KIP-768).
//!
//! The token's signature is checked by `jsonwebtoken` against a key of a
//! JSON Web Key Set (chosen by the token's `kid`, or the only key); only
//! asymmetric algorithms count, symmetric (`oct`) keys and keys not for
//! signing are dropped from the set, and `alg=none` is no algorithm at
//! all. The claims are checked here, against the time handed in: `exp` and
//! `iat` must be numbers (a string `exp` is refused, not skipped), the
//! token must not have expired (beyond the clock skew), the subject claim
//! (`sasl.oauthbearer.sub.claim.name`) must be a non-empty string (taken
//! trimmed), the issuer must be the expected one when that is set, and
//! the audience must hold an expected one, or, when none is expected, be
//! absent.

use std::collections::{BTreeMap, HashSet};

use jsonwebtoken::jwk::{Jwk, JwkSet, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use serde_json::Value;

/// The broker's rules for a token (Kafka's `sasl.oauthbearer.*` settings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtRules {
    /// `sasl.oauthbearer.expected.audience`: one must be in the token's `aud`.
    pub expected_audience: Vec<String>,
    /// `sasl.oauthbearer.expected.issuer`.
    pub expected_issuer: Option<String>,
    /// `sasl.oauthbearer.sub.claim.name` (default `sub`).
    pub sub_claim_name: String,
    /// `sasl.oauthbearer.scope.claim.name` (default `scope`).
    pub scope_claim_name: String,
    /// `sasl.oauthbearer.clock.skew.seconds`, in milliseconds (default 30 s).
    pub clock_skew_ms: i64,
}

impl Default for JwtRules {
    fn default() -> Self {
        JwtRules {
            expected_audience: Vec::new(),
            expected_issuer: None,
            sub_claim_name: "sub".into(),
            scope_claim_name: "scope".into(),
            clock_skew_ms: 30_000,
        }
    }
}

/// Why a token or message was refused (for the broker's log; the client
/// gets Kafka's `invalid_token` status).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    #[error("malformed OAUTHBEARER message: {0}")]
    Message(&'static str),
    #[error("malformed token: {0}")]
    Malformed(String),
    #[error("algorithm {0:?} is not accepted (asymmetric signatures only)")]
    Algorithm(String),
    #[error("no key in the key set for this token (kid {0:?})")]
    UnknownKey(Option<String>),
    #[error("the key for kid {kid:?} is for {key}, the token says {token}")]
    KeyMismatch {
        kid: Option<String>,
        key: String,
        token: String,
    },
    #[error("bad signature: {0}")]
    Signature(String),
    #[error("claim {0}: {1}")]
    Claim(String, &'static str),
    #[error("the token expired at {expired_at_ms} ms, now is {now_ms} ms")]
    Expired { expired_at_ms: i64, now_ms: i64 },
    #[error("the token is not valid before {not_before_ms} ms, now is {now_ms} ms")]
    NotYetValid { not_before_ms: i64, now_ms: i64 },
    #[error("the token's audience is none of the expected ones")]
    Audience,
    #[error("the token's issuer is not the expected one")]
    Issuer,
    #[error("the key set cannot be read: {0}")]
    KeySet(String),
}

struct Key {
    kid: Option<String>,
    alg: Option<Algorithm>,
    family: AlgorithmFamily,
    key: DecodingKey,
}

/// The signing keys of a JSON Web Key Set that tokens may be checked with.
pub struct KeySet {
    keys: Vec<Key>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySet")
            .field(
                "kids",
                &self.keys.iter().map(|k| k.kid.clone()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

fn key_algorithm(alg: KeyAlgorithm) -> Option<Algorithm> {
    Some(match alg {
        KeyAlgorithm::RS256 => Algorithm::RS256,
        KeyAlgorithm::RS384 => Algorithm::RS384,
        KeyAlgorithm::RS512 => Algorithm::RS512,
        KeyAlgorithm::PS256 => Algorithm::PS256,
        KeyAlgorithm::PS384 => Algorithm::PS384,
        KeyAlgorithm::PS512 => Algorithm::PS512,
        KeyAlgorithm::ES256 => Algorithm::ES256,
        KeyAlgorithm::ES384 => Algorithm::ES384,
        KeyAlgorithm::EdDSA => Algorithm::EdDSA,
        _ => return None,
    })
}

impl KeySet {
    /// The usable keys of a JWKS document (`{"keys": [...]}`). Symmetric
    /// keys, keys marked for encryption and keys of unknown types are
    /// dropped; a set left empty is an error.
    pub fn from_jwks_json(json: &str) -> Result<KeySet, TokenError> {
        install_provider();
        let set: JwkSet =
            serde_json::from_str(json).map_err(|e| TokenError::KeySet(e.to_string()))?;
        let keys: Vec<Key> = set.keys.iter().filter_map(KeySet::usable).collect();
        if keys.is_empty() {
            return Err(TokenError::KeySet(
                "no usable signing key (RSA, EC or OKP, for signatures)".into(),
            ));
        }
        Ok(KeySet { keys })
    }

    fn usable(jwk: &Jwk) -> Option<Key> {
        if matches!(jwk.common.public_key_use, Some(ref u) if *u != PublicKeyUse::Signature) {
            return None;
        }
        let family = match jwk.algorithm {
            jsonwebtoken::jwk::AlgorithmParameters::RSA(_) => AlgorithmFamily::Rsa,
            jsonwebtoken::jwk::AlgorithmParameters::EllipticCurve(_) => AlgorithmFamily::Ec,
            jsonwebtoken::jwk::AlgorithmParameters::OctetKeyPair(_) => AlgorithmFamily::Ed,
            // `oct`: a shared secret is no key a broker may verify with.
            _ => return None,
        };
        let alg = match jwk.common.key_algorithm {
            Some(a) => Some(key_algorithm(a)?),
            None => None,
        };
        let key = DecodingKey::from_jwk(jwk).ok()?;
        Some(Key {
            kid: jwk.common.key_id.clone(),
            alg,
            family,
            key,
        })
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Uses aws-lc-rs for `jsonwebtoken`, whatever features another crate
/// turns on (with two backends and none chosen it would fail at first use).
fn install_provider() {
    let _ = jsonwebtoken::crypto::aws_lc::DEFAULT_PROVIDER.install_default();
}

/// What a valid token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidToken {
    /// The subject claim: the principal's name.
    pub principal: String,
    /// When the token expires (milliseconds since the epoch).
    pub expires_at_ms: i64,
    pub scopes: Vec<String>,
}

fn seconds_claim(
    claims: &serde_json::Map<String, Value>,
    name: &str,
    required: bool,
) -> Result<Option<i64>, TokenError> {
    match claims.get(name) {
        None if required => Err(TokenError::Claim(name.into(), "missing")),
        None => Ok(None),
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|s| s.is_finite() && s.abs() < 1e15)
            .map(|s| Some((s * 1000.0) as i64))
            .ok_or(TokenError::Claim(name.into(), "not a time")),
        Some(_) => Err(TokenError::Claim(name.into(), "not a number")),
    }
}

fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|x| x.as_str().map(String::from))
            .collect(),
        _ => Vec::new(),
    }
}

/// Checks a compact JWT at `now_ms`.
pub fn validate_jwt(
    token: &str,
    keys: &KeySet,
    rules: &JwtRules,
    now_ms: i64,
) -> Result<ValidToken, TokenError> {
    install_provider();
    let header =
        jsonwebtoken::decode_header(token).map_err(|e| TokenError::Malformed(e.to_string()))?;
    let alg = header.alg;
    let family = alg.family();
    if family == AlgorithmFamily::Hmac {
        return Err(TokenError::Algorithm(format!("{alg:?}")));
    }
    let key = match &header.kid {
        Some(kid) => keys
            .keys
            .iter()
            .find(|k| k.kid.as_deref() == Some(kid.as_str())),
        None if keys.keys.len() == 1 => keys.keys.first(),
        None => None,
    }
    .ok_or_else(|| TokenError::UnknownKey(header.kid.clone()))?;
    if key.family != family || key.alg.is_some_and(|a| a != alg) {
        return Err(TokenError::KeyMismatch {
            kid: key.kid.clone(),
            key: key
                .alg
                .map_or(format!("{:?}", key.family), |a| format!("{a:?}")),
            token: format!("{alg:?}"),
        });
    }
    let mut validation = Validation::new(alg);
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.required_spec_claims = HashSet::new();
    validation.leeway = 0;
    let data = jsonwebtoken::decode::<Value>(token, &key.key, &validation)
        .map_err(|e| TokenError::Signature(e.to_string()))?;
    let Value::Object(claims) = data.claims else {
        return Err(TokenError::Malformed(
            "the claims are not a JSON object".into(),
        ));
    };
    let skew = rules.clock_skew_ms.max(0);
    let exp = seconds_claim(&claims, "exp", true)?.unwrap_or(0);
    seconds_claim(&claims, "iat", true)?;
    if now_ms > exp + skew {
        return Err(TokenError::Expired {
            expired_at_ms: exp,
            now_ms,
        });
    }
    if let Some(nbf) = seconds_claim(&claims, "nbf", false)? {
        if nbf > now_ms + skew {
            return Err(TokenError::NotYetValid {
                not_before_ms: nbf,
                now_ms,
            });
        }
    }
    let principal = match claims.get(&rules.sub_claim_name) {
        // Trimmed, as Kafka's `ClaimValidationUtils.validateString`.
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(_) => {
            return Err(TokenError::Claim(
                rules.sub_claim_name.clone(),
                "not a non-empty string",
            ))
        }
        None => return Err(TokenError::Claim(rules.sub_claim_name.clone(), "missing")),
    };
    if rules.expected_audience.is_empty() {
        // A token for some audience is not for a broker that expects none
        // (jose4j, which Kafka validates with, refuses it the same way).
        if claims.contains_key("aud") {
            return Err(TokenError::Audience);
        }
    } else {
        let aud = strings(claims.get("aud"));
        if !aud.iter().any(|a| rules.expected_audience.contains(a)) {
            return Err(TokenError::Audience);
        }
    }
    if let Some(iss) = &rules.expected_issuer {
        if claims.get("iss").and_then(Value::as_str) != Some(iss.as_str()) {
            return Err(TokenError::Issuer);
        }
    }
    let scopes = match claims.get(&rules.scope_claim_name) {
        Some(Value::String(s)) => s
            .split(' ')
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect(),
        other => strings(other),
    };
    Ok(ValidToken {
        principal,
        expires_at_ms: exp,
        scopes,
    })
}

/// The client's first OAUTHBEARER message. `Debug` leaves the token out.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientInitialResponse {
    pub authzid: String,
    pub token: String,
    /// SASL extensions (every key but `auth`).
    pub extensions: BTreeMap<String, String>,
}

impl std::fmt::Debug for ClientInitialResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientInitialResponse")
            .field("authzid", &self.authzid)
            .field("extensions", &self.extensions.keys().collect::<Vec<_>>())
            .finish_non_exhaustive()
    }
}

impl ClientInitialResponse {
    /// Parses `n,[a=authzid],^Aauth=Bearer <token>^A[key=value^A]*^A`.
    pub fn parse(bytes: &[u8]) -> Result<Self, TokenError> {
        let bad = TokenError::Message;
        let text = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8"))?;
        let rest = text.strip_prefix("n,").ok_or(bad("no GS2 header"))?;
        let (authzid, rest) = rest.split_once(',').ok_or(bad("no GS2 header"))?;
        let authzid = match authzid {
            "" => String::new(),
            a => a
                .strip_prefix("a=")
                .filter(|a| !a.is_empty())
                .ok_or(bad("bad authzid"))?
                .to_string(),
        };
        let body = rest
            .strip_prefix('\u{1}')
            .and_then(|r| r.strip_suffix('\u{1}'))
            .ok_or(bad("no separators"))?;
        let mut token = None;
        let mut extensions = BTreeMap::new();
        // Each pair ends with a separator; the last one is the body's end.
        let pairs = body
            .strip_suffix('\u{1}')
            .ok_or(bad("no key/value pairs"))?;
        for pair in pairs.split('\u{1}') {
            let (key, value) = pair.split_once('=').ok_or(bad("a pair without '='"))?;
            if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(bad("a bad key"));
            }
            if value.is_empty()
                || !value
                    .bytes()
                    .all(|b| (0x21..=0x7e).contains(&b) || b" \t\r\n".contains(&b))
            {
                return Err(bad("a bad value"));
            }
            if key == "auth" {
                let (scheme, t) = value.split_once(' ').ok_or(bad("auth without a scheme"))?;
                let t = t.trim_start_matches(' ');
                if !scheme.eq_ignore_ascii_case("bearer") {
                    return Err(bad("auth's scheme is not Bearer"));
                }
                if t.is_empty()
                    || !t
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
                {
                    return Err(bad("a bad token"));
                }
                token = Some(t.to_string());
            } else if extensions
                .insert(key.to_string(), value.to_string())
                .is_some()
            {
                return Err(bad("a key twice"));
            }
        }
        let token = token.ok_or(bad("'auth' not specified"))?;
        Ok(ClientInitialResponse {
            authzid,
            token,
            extensions,
        })
    }
}

/// The server's answer to an invalid token (RFC 7628's error status),
/// which the client acknowledges with a single `^A` before it is refused.
pub const INVALID_TOKEN_JSON: &str = r#"{"status":"invalid_token"}"#;

#[cfg(test)]
mod tests;
