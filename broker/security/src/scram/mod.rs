//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677): salted
//! credentials and the server side of one exchange, as Kafka's
//! `ScramSaslServer` serves them, without I/O.
//!
//! A connection makes one `ScramServer` and feeds it the client's two
//! messages; it answers the server-first message, then either the
//! server-final message and the authenticated user name, or an error. An
//! exchange is authenticated only by `ScramStep::Authenticated`: every
//! other outcome (a wrong proof, an unknown user, a nonce or channel
//! binding that does not match, a malformed message) is an error, and the
//! exchange is over. What the client is told is Kafka's generic sentence
//! (`ScramError::client_message`); the cause is for the broker's log.
//!
//! Differences from Kafka, on purpose: an unknown user is refused at the
//! final message, after a server-first built from a decoy credential, not
//! at the first, and the channel binding the client echoes must be the GS2
//! header it sent. The decoy has a salt of the length Strata's own
//! credentials have and 4,096 iterations, derived from a secret the
//! broker passes (the cluster's, so that it is the same on every broker
//! and after restarts): a probe of one name sees what a user made by
//! Strata with the default iterations looks like. It does not hide a
//! user whose credential was set with other iterations, or by a tool
//! that makes salts of another length (Kafka's make about 26 bytes); a
//! server-first of such a user tells it exists, as Kafka's answers do.

pub mod store;

use std::num::NonZeroU32;

use aws_lc_rs::{constant_time, digest, hmac, pbkdf2, rand};
use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;

/// A SCRAM hash.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScramMechanism {
    Sha256,
    Sha512,
}

impl ScramMechanism {
    pub const ALL: &'static [ScramMechanism] = &[ScramMechanism::Sha256, ScramMechanism::Sha512];
    /// The fewest iterations a credential may have (Kafka's `minIterations`).
    pub const MIN_ITERATIONS: u32 = 4096;
    /// The most AlterUserScramCredentials accepts (Kafka's controller's bound).
    pub const MAX_ITERATIONS: u32 = 16384;

    /// The SASL mechanism name.
    pub fn name(self) -> &'static str {
        match self {
            ScramMechanism::Sha256 => "SCRAM-SHA-256",
            ScramMechanism::Sha512 => "SCRAM-SHA-512",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|m| m.name() == name)
    }

    /// Kafka's `ScramMechanism` type in the credential APIs (1 and 2).
    pub fn type_code(self) -> i8 {
        match self {
            ScramMechanism::Sha256 => 1,
            ScramMechanism::Sha512 => 2,
        }
    }

    pub fn from_type_code(code: i8) -> Option<Self> {
        Self::ALL.iter().copied().find(|m| m.type_code() == code)
    }

    fn digest(self) -> &'static digest::Algorithm {
        match self {
            ScramMechanism::Sha256 => &digest::SHA256,
            ScramMechanism::Sha512 => &digest::SHA512,
        }
    }

    fn hmac(self) -> hmac::Algorithm {
        match self {
            ScramMechanism::Sha256 => hmac::HMAC_SHA256,
            ScramMechanism::Sha512 => hmac::HMAC_SHA512,
        }
    }

    fn pbkdf2(self) -> pbkdf2::Algorithm {
        match self {
            ScramMechanism::Sha256 => pbkdf2::PBKDF2_HMAC_SHA256,
            ScramMechanism::Sha512 => pbkdf2::PBKDF2_HMAC_SHA512,
        }
    }

    /// The hash's output length in bytes (32 or 64).
    pub fn hash_len(self) -> usize {
        self.digest().output_len()
    }

    fn mac(self, key: &[u8], data: &[u8]) -> Vec<u8> {
        hmac::sign(&hmac::Key::new(self.hmac(), key), data)
            .as_ref()
            .to_vec()
    }

    fn hash(self, data: &[u8]) -> Vec<u8> {
        digest::digest(self.digest(), data).as_ref().to_vec()
    }
}

/// A credential that cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    #[error("iterations must be between {min} and {max}, not {got}", min = ScramMechanism::MIN_ITERATIONS, max = ScramMechanism::MAX_ITERATIONS)]
    Iterations { got: u32 },
    #[error("the salt is empty")]
    EmptySalt,
    #[error("the salted password is {got} bytes; {mechanism} needs {want}")]
    SaltedPasswordLength {
        mechanism: &'static str,
        got: usize,
        want: usize,
    },
    #[error("the password is empty")]
    EmptyPassword,
    #[error("the system's secure random source failed")]
    Random,
}

/// The length of the salts Strata makes (and of its decoys').
const SALT_LEN: usize = 32;

/// What the broker keeps of a user's password for one mechanism: never
/// the password, only the salt and the two keys derived from it.
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    pub mechanism: ScramMechanism,
    pub salt: Vec<u8>,
    pub iterations: u32,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl std::fmt::Debug for ScramCredential {
    /// Never prints the keys (they open the account to anyone who has them).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScramCredential")
            .field("mechanism", &self.mechanism.name())
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl ScramCredential {
    /// The credential of a salted password (what AlterUserScramCredentials
    /// carries): `SaltedPassword = PBKDF2(password, salt, iterations)`.
    pub fn from_salted_password(
        mechanism: ScramMechanism,
        salted_password: &[u8],
        salt: &[u8],
        iterations: u32,
    ) -> Result<Self, CredentialError> {
        check_iterations(iterations)?;
        if salt.is_empty() {
            return Err(CredentialError::EmptySalt);
        }
        if salted_password.len() != mechanism.hash_len() {
            return Err(CredentialError::SaltedPasswordLength {
                mechanism: mechanism.name(),
                got: salted_password.len(),
                want: mechanism.hash_len(),
            });
        }
        let client_key = mechanism.mac(salted_password, b"Client Key");
        Ok(ScramCredential {
            mechanism,
            salt: salt.to_vec(),
            iterations,
            stored_key: mechanism.hash(&client_key),
            server_key: mechanism.mac(salted_password, b"Server Key"),
        })
    }

    /// The credential of a password with this salt.
    pub fn from_password(
        mechanism: ScramMechanism,
        password: &str,
        salt: &[u8],
        iterations: u32,
    ) -> Result<Self, CredentialError> {
        if password.is_empty() {
            return Err(CredentialError::EmptyPassword);
        }
        check_iterations(iterations)?;
        let salted = salted_password(mechanism, password.as_bytes(), salt, iterations);
        ScramCredential::from_salted_password(mechanism, &salted, salt, iterations)
    }

    /// The credential of a password with a fresh random 32-byte salt.
    pub fn generate(
        mechanism: ScramMechanism,
        password: &str,
        iterations: u32,
    ) -> Result<Self, CredentialError> {
        let mut salt = [0u8; SALT_LEN];
        random(&mut salt).map_err(|_| CredentialError::Random)?;
        ScramCredential::from_password(mechanism, password, &salt, iterations)
    }
}

fn check_iterations(iterations: u32) -> Result<(), CredentialError> {
    if (ScramMechanism::MIN_ITERATIONS..=ScramMechanism::MAX_ITERATIONS).contains(&iterations) {
        Ok(())
    } else {
        Err(CredentialError::Iterations { got: iterations })
    }
}

fn salted_password(
    mechanism: ScramMechanism,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
) -> Vec<u8> {
    let mut out = vec![0u8; mechanism.hash_len()];
    // Iterations were checked to be at least MIN_ITERATIONS.
    let n = NonZeroU32::new(iterations).unwrap_or(NonZeroU32::MIN);
    pbkdf2::derive(mechanism.pbkdf2(), n, salt, password, &mut out);
    out
}

/// Fills `buf` from the system's secure random source.
/// The system's secure random source failed: no salt, nonce or key can
/// be made, so nothing is authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the system's secure random source failed")]
pub struct RandomError;

fn random(buf: &mut [u8]) -> Result<(), RandomError> {
    rand::fill(buf).map_err(|_| RandomError)
}

/// A fresh secret for `ScramServer::new`'s decoy credentials. For a decoy
/// to be the same on every broker and after a restart, the cluster keeps
/// one such secret (the server stores it with the credentials) and every
/// broker passes that one.
pub fn random_key() -> Result<[u8; 32], RandomError> {
    let mut key = [0u8; 32];
    random(&mut key)?;
    Ok(key)
}

/// A fresh server nonce: 32 characters of `[A-Za-z0-9]`.
pub fn random_nonce() -> Result<String, RandomError> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = [0u8; 32];
    random(&mut bytes)?;
    Ok(bytes
        .iter()
        .map(|b| ALPHABET[*b as usize % ALPHABET.len()] as char)
        .collect())
}

/// Why an exchange failed. The client sees `client_message`, never this.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScramError {
    #[error("malformed SCRAM {message} message: {why}")]
    Malformed {
        message: &'static str,
        why: &'static str,
    },
    #[error("channel binding is not supported (the client asked for it)")]
    ChannelBindingRequested,
    #[error("the client's channel binding does not repeat its GS2 header")]
    ChannelBindingMismatch,
    #[error("the client asked for a mandatory extension")]
    MandatoryExtension,
    #[error("delegation token authentication (tokenauth) is not supported")]
    TokenAuth,
    #[error("the final message's nonce is not the exchange's")]
    NonceMismatch,
    #[error("unknown user")]
    UnknownUser,
    #[error("the user's {mechanism} credential has {iterations} iterations, fewer than 4096")]
    WeakCredential {
        mechanism: &'static str,
        iterations: u32,
    },
    #[error("invalid client proof")]
    InvalidProof,
    #[error("the client requested an authorization id that is different from its user name")]
    AuthzidMismatch,
    #[error("the exchange is already over")]
    Over,
}

impl ScramError {
    /// What the client is told (SASL_AUTHENTICATION_FAILED's message), in
    /// Kafka's words: the generic sentence, so that no answer tells a
    /// wrong password from an unknown user.
    pub fn client_message(&self, mechanism: ScramMechanism) -> String {
        match self {
            ScramError::AuthzidMismatch => {
                "Authentication failed: Client requested an authorization id that is different from username".into()
            }
            _ => format!(
                "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
                mechanism.name()
            ),
        }
    }
}

/// What the server answers a client message with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScramStep {
    /// Send this (the server-first message) and wait for the final one.
    Continue(Vec<u8>),
    /// Send this (the server-final message): the user is authenticated.
    Authenticated { server_final: Vec<u8>, user: String },
}

struct Exchange {
    user: String,
    credential: ScramCredential,
    /// False for a decoy credential (unknown user): the exchange fails.
    known: bool,
    gs2_header: String,
    client_first_bare: String,
    server_first: String,
    nonce: String,
}

enum State {
    First,
    Final(Box<Exchange>),
    Over,
}

/// The server side of one SCRAM exchange.
pub struct ScramServer {
    mechanism: ScramMechanism,
    server_nonce: String,
    decoy_key: [u8; 32],
    state: State,
}

impl ScramServer {
    /// An exchange with a fresh nonce. `decoy_key` is a secret of the
    /// broker's (random per process): an unknown user's decoy salt is
    /// derived from it, so it is the same on every attempt.
    pub fn new(mechanism: ScramMechanism, decoy_key: [u8; 32]) -> Result<Self, RandomError> {
        Ok(ScramServer::build(mechanism, random_nonce()?, decoy_key))
    }

    fn build(mechanism: ScramMechanism, server_nonce: String, decoy_key: [u8; 32]) -> Self {
        ScramServer {
            mechanism,
            server_nonce,
            decoy_key,
            state: State::First,
        }
    }

    /// An exchange with this server nonce (tests use known ones).
    #[cfg(test)]
    pub(crate) fn with_nonce(
        mechanism: ScramMechanism,
        server_nonce: String,
        decoy_key: [u8; 32],
    ) -> Self {
        ScramServer::build(mechanism, server_nonce, decoy_key)
    }

    pub fn mechanism(&self) -> ScramMechanism {
        self.mechanism
    }

    /// Feeds the client's next message. `lookup` gives the user's
    /// credential for this mechanism, if it has one. After an error the
    /// exchange is over: every later step is `ScramError::Over`.
    pub fn step(
        &mut self,
        message: &[u8],
        lookup: impl FnOnce(&str) -> Option<ScramCredential>,
    ) -> Result<ScramStep, ScramError> {
        let state = std::mem::replace(&mut self.state, State::Over);
        match state {
            State::First => {
                let (step, exchange) = self.client_first(message, lookup)?;
                self.state = State::Final(Box::new(exchange));
                Ok(step)
            }
            State::Final(exchange) => self.client_final(message, &exchange),
            State::Over => Err(ScramError::Over),
        }
    }

    fn client_first(
        &self,
        message: &[u8],
        lookup: impl FnOnce(&str) -> Option<ScramCredential>,
    ) -> Result<(ScramStep, Exchange), ScramError> {
        const WHICH: &str = "client-first";
        let malformed = |why| ScramError::Malformed {
            message: WHICH,
            why,
        };
        let text = std::str::from_utf8(message).map_err(|_| malformed("not UTF-8"))?;
        // gs2-header: a channel-binding flag, an optional authzid, then the bare message.
        let (flag, rest) = text.split_once(',').ok_or(malformed("no GS2 header"))?;
        match flag {
            "n" => {}
            "y" => return Err(ScramError::ChannelBindingRequested),
            f if f.starts_with("p=") => return Err(ScramError::ChannelBindingRequested),
            _ => return Err(malformed("unknown channel-binding flag")),
        }
        let (authzid_attr, bare) = rest.split_once(',').ok_or(malformed("no GS2 header"))?;
        let authzid = match authzid_attr {
            "" => String::new(),
            a => sasl_name(a.strip_prefix("a=").ok_or(malformed("bad authzid"))?)
                .ok_or(malformed("bad authzid"))?,
        };
        let gs2_header = format!("n,{authzid_attr},");
        let mut attrs = bare.split(',');
        let mut first = attrs.next().unwrap_or_default();
        if first.starts_with("m=") {
            return Err(ScramError::MandatoryExtension);
        }
        let user = sasl_name(first.strip_prefix("n=").ok_or(malformed("no user name"))?)
            .ok_or(malformed("bad user name"))?;
        first = attrs.next().ok_or(malformed("no nonce"))?;
        let client_nonce = first.strip_prefix("r=").ok_or(malformed("no nonce"))?;
        if !printable(client_nonce) {
            return Err(malformed("bad nonce"));
        }
        for ext in attrs {
            let (key, value) = ext.split_once('=').ok_or(malformed("bad extension"))?;
            if key.is_empty() || value.is_empty() || !printable(key) || !printable(value) {
                return Err(malformed("bad extension"));
            }
            if key == "tokenauth" && value.eq_ignore_ascii_case("true") {
                return Err(ScramError::TokenAuth);
            }
        }
        if !authzid.is_empty() && authzid != user {
            return Err(ScramError::AuthzidMismatch);
        }
        let (credential, known) = match lookup(&user) {
            Some(c) if c.mechanism == self.mechanism => (c, true),
            _ => (self.decoy(&user), false),
        };
        if credential.iterations < ScramMechanism::MIN_ITERATIONS {
            return Err(ScramError::WeakCredential {
                mechanism: self.mechanism.name(),
                iterations: credential.iterations,
            });
        }
        let nonce = format!("{client_nonce}{}", self.server_nonce);
        let server_first = format!(
            "r={nonce},s={},i={}",
            B64.encode(&credential.salt),
            credential.iterations
        );
        let step = ScramStep::Continue(server_first.clone().into_bytes());
        let exchange = Exchange {
            user,
            credential,
            known,
            gs2_header,
            client_first_bare: bare.to_string(),
            server_first,
            nonce,
        };
        Ok((step, exchange))
    }

    fn client_final(&self, message: &[u8], x: &Exchange) -> Result<ScramStep, ScramError> {
        const WHICH: &str = "client-final";
        let malformed = |why| ScramError::Malformed {
            message: WHICH,
            why,
        };
        let text = std::str::from_utf8(message).map_err(|_| malformed("not UTF-8"))?;
        let (without_proof, proof) = text.rsplit_once(",p=").ok_or(malformed("no proof"))?;
        let mut attrs = without_proof.split(',');
        let binding = attrs
            .next()
            .and_then(|a| a.strip_prefix("c="))
            .ok_or(malformed("no channel binding"))?;
        let nonce = attrs
            .next()
            .and_then(|a| a.strip_prefix("r="))
            .ok_or(malformed("no nonce"))?;
        let binding = B64
            .decode(binding)
            .map_err(|_| malformed("channel binding is not base64"))?;
        if binding != x.gs2_header.as_bytes() {
            return Err(ScramError::ChannelBindingMismatch);
        }
        // librdkafka before 2.6.1 (Debian 12's 2.0.2: kcat, the distros'
        // clients) sends its own nonce before the exchange's
        // (librdkafka#4895). Kafka up to 3.9 accepts that, checking only
        // that the nonce ends with the exchange's; Strata accepts exactly
        // that one form. The proof is still over the message as sent.
        let client_nonce = x
            .nonce
            .strip_suffix(self.server_nonce.as_str())
            .unwrap_or_default();
        let doubled = !client_nonce.is_empty()
            && nonce.len() == client_nonce.len() + x.nonce.len()
            && nonce.starts_with(client_nonce)
            && nonce.ends_with(x.nonce.as_str());
        if nonce != x.nonce && !doubled {
            return Err(ScramError::NonceMismatch);
        }
        let proof = B64
            .decode(proof)
            .map_err(|_| malformed("proof is not base64"))?;
        let m = self.mechanism;
        let auth_message = format!(
            "{},{},{}",
            x.client_first_bare, x.server_first, without_proof
        );
        let client_signature = m.mac(&x.credential.stored_key, auth_message.as_bytes());
        if proof.len() != client_signature.len() {
            return Err(ScramError::InvalidProof);
        }
        let client_key: Vec<u8> = proof
            .iter()
            .zip(&client_signature)
            .map(|(p, s)| p ^ s)
            .collect();
        let verified =
            constant_time::verify_slices_are_equal(&m.hash(&client_key), &x.credential.stored_key)
                .is_ok();
        if !x.known {
            return Err(ScramError::UnknownUser);
        }
        if !verified {
            return Err(ScramError::InvalidProof);
        }
        let server_signature = m.mac(&x.credential.server_key, auth_message.as_bytes());
        Ok(ScramStep::Authenticated {
            server_final: format!("v={}", B64.encode(server_signature)).into_bytes(),
            user: x.user.clone(),
        })
    }

    /// A credential for a user who has none: a salt that is the same on
    /// every attempt, and keys no proof matches.
    fn decoy(&self, user: &str) -> ScramCredential {
        let m = self.mechanism;
        let salt = m.mac(&self.decoy_key, format!("salt:{user}").as_bytes());
        ScramCredential {
            mechanism: m,
            salt: salt[..SALT_LEN].to_vec(),
            iterations: ScramMechanism::MIN_ITERATIONS,
            stored_key: m.mac(&self.decoy_key, format!("stored:{user}").as_bytes()),
            server_key: m.mac(&self.decoy_key, format!("server:{user}").as_bytes()),
        }
    }
}

/// Kafka's `saslname`: ASCII but `,` and `=`, with `=2C` for `,` and `=3D`
/// for `=`; unescaped. `None` if empty or malformed.
fn sasl_name(s: &str) -> Option<String> {
    if s.is_empty() {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(c) = rest.chars().next() {
        if c == '=' {
            match rest.get(..3) {
                Some("=2C") => out.push(','),
                Some("=3D") => out.push('='),
                _ => return None,
            }
            rest = &rest[3..];
        } else if c == ',' || c == '\0' || !c.is_ascii() {
            return None;
        } else {
            out.push(c);
            rest = &rest[1..];
        }
    }
    Some(out)
}

/// RFC 5802's `printable`: `%x21-2B / %x2D-7E` (no comma), non-empty.
fn printable(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| (0x21..=0x7e).contains(&b) && b != b',')
}

/// What a client sends as its final message (RFC 5802, section 3), for
/// the tests of this crate.
#[cfg(test)]
pub(crate) fn test_client_final(
    m: ScramMechanism,
    password: &str,
    server_first: &str,
    first_bare: &str,
    binding: &str,
) -> String {
    let mut parts = server_first.split(',');
    let nonce = parts
        .next()
        .and_then(|r| r.strip_prefix("r="))
        .unwrap_or_default();
    let salt = parts
        .next()
        .and_then(|s| s.strip_prefix("s="))
        .and_then(|s| B64.decode(s).ok())
        .unwrap_or_default();
    let iterations = parts
        .next()
        .and_then(|i| i.strip_prefix("i="))
        .and_then(|i| i.parse().ok())
        .unwrap_or(4096);
    let without_proof = format!("c={},r={nonce}", B64.encode(binding));
    let salted = salted_password(m, password.as_bytes(), &salt, iterations);
    let client_key = m.mac(&salted, b"Client Key");
    let stored_key = m.hash(&client_key);
    let auth = format!("{first_bare},{server_first},{without_proof}");
    let sig = m.mac(&stored_key, auth.as_bytes());
    let proof: Vec<u8> = client_key.iter().zip(&sig).map(|(a, b)| a ^ b).collect();
    format!("{without_proof},p={}", B64.encode(proof))
}

#[cfg(test)]
mod tests;
