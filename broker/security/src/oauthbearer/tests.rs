//! Tokens signed here with fresh EC keys (aws-lc-rs), and every way one
//! must be refused: forged, expired, of another audience or issuer,
//! without the claims Kafka requires, `alg=none`, a shared secret.

use super::*;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING, ECDSA_P384_SHA384_FIXED_SIGNING,
};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64URL;
use base64::Engine as _;
use jsonwebtoken::{EncodingKey, Header};
use serde_json::json;

struct Signer {
    pkcs8: Vec<u8>,
    jwk: Value,
    alg: Algorithm,
}

fn signer(kid: &str, p384: bool) -> Signer {
    let (sig_alg, crv, alg, n) = if p384 {
        (
            &ECDSA_P384_SHA384_FIXED_SIGNING,
            "P-384",
            Algorithm::ES384,
            48,
        )
    } else {
        (
            &ECDSA_P256_SHA256_FIXED_SIGNING,
            "P-256",
            Algorithm::ES256,
            32,
        )
    };
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(sig_alg, &SystemRandom::new())
        .expect("key")
        .as_ref()
        .to_vec();
    let pair = EcdsaKeyPair::from_pkcs8(sig_alg, &pkcs8).expect("pair");
    let point = pair.public_key().as_ref();
    let (x, y) = point[1..].split_at(n);
    let jwk = json!({"kty": "EC", "crv": crv, "x": B64URL.encode(x), "y": B64URL.encode(y), "kid": kid, "use": "sig",
                     "alg": if p384 { "ES384" } else { "ES256" }});
    Signer { pkcs8, jwk, alg }
}

impl Signer {
    fn token(&self, kid: Option<&str>, claims: Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = kid.map(String::from);
        jsonwebtoken::encode(&header, &claims, &EncodingKey::from_ec_der(&self.pkcs8))
            .expect("signed")
    }
}

fn jwks(keys: &[&Value]) -> KeySet {
    KeySet::from_jwks_json(&json!({ "keys": keys }).to_string()).expect("key set")
}

const NOW: i64 = 1_800_000_000_000;

fn claims() -> Value {
    json!({"sub": "alice", "iat": NOW / 1000 - 10, "exp": NOW / 1000 + 3600, "aud": ["kafka", "other"],
           "iss": "https://idp.example", "scope": "produce consume"})
}

fn rules() -> JwtRules {
    JwtRules {
        expected_audience: vec!["kafka".into()],
        expected_issuer: Some("https://idp.example".into()),
        ..JwtRules::default()
    }
}

fn with(mut c: Value, key: &str, v: Value) -> Value {
    c[key] = v;
    c
}

fn without(mut c: Value, key: &str) -> Value {
    c.as_object_mut().expect("object").remove(key);
    c
}

#[test]
fn a_good_token_names_its_subject() {
    let s = signer("k1", false);
    let keys = jwks(&[&s.jwk]);
    let t = validate_jwt(&s.token(Some("k1"), claims()), &keys, &rules(), NOW).expect("valid");
    assert_eq!(t.principal, "alice");
    assert_eq!(t.expires_at_ms, NOW + 3_600_000);
    assert_eq!(t.scopes, vec!["produce", "consume"]);
    // One key: the kid may be left out. Another subject claim name.
    let r = JwtRules {
        sub_claim_name: "client_id".into(),
        ..rules()
    };
    let t = validate_jwt(
        &s.token(None, with(claims(), "client_id", json!("svc"))),
        &keys,
        &r,
        NOW,
    )
    .expect("valid");
    assert_eq!(t.principal, "svc");
}

#[test]
fn time_claims_are_numbers_and_are_enforced() {
    let s = signer("k1", false);
    let keys = jwks(&[&s.jwk]);
    let check = |c: Value| validate_jwt(&s.token(Some("k1"), c), &keys, &rules(), NOW);
    let expired = with(claims(), "exp", json!(NOW / 1000 - 31));
    assert!(matches!(check(expired), Err(TokenError::Expired { .. })));
    assert!(
        check(with(claims(), "exp", json!(NOW / 1000 - 29))).is_ok(),
        "within the clock skew"
    );
    // CVE-2026-25537's shape: a string exp is refused, not skipped.
    assert_eq!(
        check(with(claims(), "exp", json!("9999999999"))),
        Err(TokenError::Claim("exp".into(), "not a number"))
    );
    assert_eq!(
        check(without(claims(), "exp")),
        Err(TokenError::Claim("exp".into(), "missing"))
    );
    assert_eq!(
        check(without(claims(), "iat")),
        Err(TokenError::Claim("iat".into(), "missing"))
    );
    assert!(matches!(
        check(with(claims(), "nbf", json!(NOW / 1000 + 60))),
        Err(TokenError::NotYetValid { .. })
    ));
    assert!(check(with(claims(), "nbf", json!(NOW / 1000))).is_ok());
}

#[test]
fn subject_audience_and_issuer() {
    let s = signer("k1", false);
    let keys = jwks(&[&s.jwk]);
    let check = |c: Value| validate_jwt(&s.token(Some("k1"), c), &keys, &rules(), NOW);
    assert!(matches!(
        check(without(claims(), "sub")),
        Err(TokenError::Claim(..))
    ));
    assert!(matches!(
        check(with(claims(), "sub", json!(" "))),
        Err(TokenError::Claim(..))
    ));
    assert!(matches!(
        check(with(claims(), "sub", json!(7))),
        Err(TokenError::Claim(..))
    ));
    assert_eq!(
        check(with(claims(), "aud", json!("web"))),
        Err(TokenError::Audience)
    );
    assert_eq!(check(without(claims(), "aud")), Err(TokenError::Audience));
    assert!(check(with(claims(), "aud", json!("kafka"))).is_ok());
    assert_eq!(
        check(with(claims(), "iss", json!("https://evil.example"))),
        Err(TokenError::Issuer)
    );
    // Without an expected issuer the issuer is not looked at; without an
    // expected audience a token for some audience is refused, as in Kafka.
    let t = s.token(Some("k1"), without(without(claims(), "aud"), "iss"));
    assert!(validate_jwt(&t, &keys, &JwtRules::default(), NOW).is_ok());
    let t = s.token(Some("k1"), without(claims(), "iss"));
    assert_eq!(
        validate_jwt(&t, &keys, &JwtRules::default(), NOW),
        Err(TokenError::Audience)
    );
    // The subject is taken trimmed.
    let t = s.token(Some("k1"), with(claims(), "sub", json!(" alice ")));
    assert_eq!(
        validate_jwt(&t, &keys, &rules(), NOW).map(|v| v.principal),
        Ok("alice".to_string())
    );
    let first = ClientInitialResponse::parse(b"n,,\x01auth=Bearer secret.token.value\x01\x01")
        .expect("valid");
    assert!(!format!("{first:?}").contains("secret"));
}

#[test]
fn forged_tokens_are_refused() {
    let s = signer("k1", false);
    let other = signer("k1", false);
    let keys = jwks(&[&s.jwk]);
    let r = rules();
    // Signed by another key under the same kid.
    assert!(matches!(
        validate_jwt(&other.token(Some("k1"), claims()), &keys, &r, NOW),
        Err(TokenError::Signature(_))
    ));
    // The payload changed after signing.
    let good = s.token(Some("k1"), claims());
    let parts: Vec<&str> = good.split('.').collect();
    let forged_claims = B64URL.encode(with(claims(), "sub", json!("admin")).to_string());
    let forged = format!("{}.{}.{}", parts[0], forged_claims, parts[2]);
    assert!(matches!(
        validate_jwt(&forged, &keys, &r, NOW),
        Err(TokenError::Signature(_))
    ));
    // alg=none, with no signature.
    let none = format!(
        "{}.{}.",
        B64URL.encode(r#"{"alg":"none","typ":"JWT"}"#),
        forged_claims
    );
    assert!(matches!(
        validate_jwt(&none, &keys, &r, NOW),
        Err(TokenError::Malformed(_))
    ));
    // HS256 with the public key's bytes as the secret (key confusion).
    let secret = serde_json::to_vec(&s.jwk).expect("bytes");
    let mut h = Header::new(Algorithm::HS256);
    h.kid = Some("k1".into());
    let hs =
        jsonwebtoken::encode(&h, &claims(), &EncodingKey::from_secret(&secret)).expect("signed");
    assert_eq!(
        validate_jwt(&hs, &keys, &r, NOW),
        Err(TokenError::Algorithm("HS256".into()))
    );
    assert!(matches!(
        validate_jwt("not.a.jwt", &keys, &r, NOW),
        Err(TokenError::Malformed(_))
    ));
    assert!(matches!(
        validate_jwt("", &keys, &r, NOW),
        Err(TokenError::Malformed(_))
    ));
}

#[test]
fn keys_are_chosen_by_kid_and_kind() {
    let a = signer("a", false);
    let b = signer("b", true);
    let keys = jwks(&[&a.jwk, &b.jwk]);
    let r = rules();
    assert!(validate_jwt(&a.token(Some("a"), claims()), &keys, &r, NOW).is_ok());
    assert!(validate_jwt(&b.token(Some("b"), claims()), &keys, &r, NOW).is_ok());
    assert_eq!(
        validate_jwt(&a.token(Some("c"), claims()), &keys, &r, NOW),
        Err(TokenError::UnknownKey(Some("c".into())))
    );
    // Two keys and no kid: which one is not guessed.
    assert_eq!(
        validate_jwt(&a.token(None, claims()), &keys, &r, NOW),
        Err(TokenError::UnknownKey(None))
    );
    // A token of one algorithm under the kid of a key for another.
    assert!(matches!(
        validate_jwt(&a.token(Some("b"), claims()), &keys, &r, NOW),
        Err(TokenError::KeyMismatch { .. })
    ));
}

#[test]
fn key_sets_keep_only_signing_keys() {
    let s = signer("k1", false);
    let oct = json!({"kty": "oct", "k": B64URL.encode("shared secret"), "kid": "k2"});
    let enc = with(s.jwk.clone(), "use", json!("enc"));
    assert_eq!(jwks(&[&s.jwk, &oct]).len(), 1);
    assert!(KeySet::from_jwks_json(&json!({"keys": [oct]}).to_string()).is_err());
    assert!(KeySet::from_jwks_json(&json!({"keys": [enc]}).to_string()).is_err());
    assert!(KeySet::from_jwks_json("{").is_err());
    assert!(KeySet::from_jwks_json(r#"{"keys": []}"#).is_err());
}

#[test]
fn client_initial_responses() {
    let ok = ClientInitialResponse::parse(
        b"n,a=alice,\x01auth=Bearer abc.def-_.ghi\x01host=broker\x01\x01",
    )
    .expect("valid");
    assert_eq!(ok.authzid, "alice");
    assert_eq!(ok.token, "abc.def-_.ghi");
    assert_eq!(
        ok.extensions.get("host").map(String::as_str),
        Some("broker")
    );
    let plain = ClientInitialResponse::parse(b"n,,\x01auth=bearer  t\x01\x01").expect("valid");
    assert_eq!((plain.authzid.as_str(), plain.token.as_str()), ("", "t"));
    for bad in [
        &b""[..],
        b"n,,",
        b"y,,\x01auth=Bearer t\x01\x01",
        b"n,,\x01auth=Bearer t\x01",
        b"n,,\x01\x01",
        b"n,,\x01host=x\x01\x01",
        b"n,,\x01auth=Basic dXNlcg==\x01\x01",
        b"n,,\x01auth=Bearer a b\x01\x01",
        b"n,,\x01auth=Bearer t\x01x=1\x01x=2\x01\x01",
        b"n,,\x01au th=x\x01\x01",
        b"n,a=,\x01auth=Bearer t\x01\x01",
        b"n,,\x01auth=Bearer t\x01\x01\x01",
        b"\xff",
    ] {
        assert!(
            ClientInitialResponse::parse(bad).is_err(),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
}
