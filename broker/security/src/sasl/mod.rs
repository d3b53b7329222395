//! The server side of a connection's SASL authentication, without I/O:
//! Kafka's `SaslServerAuthenticator` state machine over the mechanisms of
//! this crate. The connection hands it each request (or, after a version 0
//! handshake, each raw token) and does what the `Reply` says.
//!
//! Before authentication only ApiVersions (once, first) and SaslHandshake
//! are served; anything else closes the connection without an answer. A
//! handshake naming a mechanism not enabled is answered
//! UNSUPPORTED_SASL_MECHANISM and the connection closed after the failed
//! authentication delay. Version 1 of the handshake carries the tokens in
//! SaslAuthenticate requests; version 0 as raw size-prefixed frames (which
//! librdkafka and Sarama still use). A failed exchange is answered
//! SASL_AUTHENTICATION_FAILED with Kafka's sentence and the connection is
//! closed after the delay; any other request during the exchange is
//! answered ILLEGAL_SASL_STATE and closed after the delay.
//!
//! Once authenticated, the session lasts `connections.max.reauth.ms` (if
//! set; KIP-368): a request after that closes the connection without an
//! answer, unless it is a SaslHandshake that begins a re-authentication
//! (at most one a second), which must keep the mechanism and the
//! principal. A handshake or SaslAuthenticate that does not begin one is
//! answered ILLEGAL_SASL_STATE and the connection stays.

use std::sync::Arc;

use crate::oauthbearer::{
    validate_jwt, ClientInitialResponse, JwtRules, KeySet, TokenError, ValidToken,
    INVALID_TOKEN_JSON,
};
use crate::plain::PlainUsers;
use crate::principal::KafkaPrincipal;
use crate::scram::{ScramCredential, ScramError, ScramMechanism, ScramServer, ScramStep};

/// UNSUPPORTED_SASL_MECHANISM.
pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
/// ILLEGAL_SASL_STATE.
pub const ILLEGAL_SASL_STATE: i16 = 34;
/// SASL_AUTHENTICATION_FAILED.
pub const SASL_AUTHENTICATION_FAILED: i16 = 58;

/// The least time between two re-authentications of one connection.
pub const MIN_REAUTH_INTERVAL_MS: i64 = 1000;

/// A SASL mechanism Strata serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SaslMechanism {
    Plain,
    Scram(ScramMechanism),
    OAuthBearer,
}

impl SaslMechanism {
    pub const ALL: &'static [SaslMechanism] = &[
        SaslMechanism::Plain,
        SaslMechanism::Scram(ScramMechanism::Sha256),
        SaslMechanism::Scram(ScramMechanism::Sha512),
        SaslMechanism::OAuthBearer,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::Scram(m) => m.name(),
            SaslMechanism::OAuthBearer => "OAUTHBEARER",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|m| m.name() == name)
    }
}

/// Where SCRAM credentials come from (the cluster store, above this crate).
pub trait ScramCredentials: Send + Sync {
    fn scram_credential(&self, user: &str, mechanism: ScramMechanism) -> Option<ScramCredential>;
}

/// Checks an OAUTHBEARER token (the server keeps the key set fresh).
pub trait TokenValidator: Send + Sync + std::fmt::Debug {
    fn validate(&self, token: &str, now_ms: i64) -> Result<ValidToken, TokenError>;
}

/// A token validator over one key set.
#[derive(Debug)]
pub struct JwtValidator {
    pub keys: KeySet,
    pub rules: JwtRules,
}

impl TokenValidator for JwtValidator {
    fn validate(&self, token: &str, now_ms: i64) -> Result<ValidToken, TokenError> {
        validate_jwt(token, &self.keys, &self.rules, now_ms)
    }
}

/// A listener's SASL settings. `Debug` leaves the decoy secret out.
#[derive(Clone)]
pub struct SaslServerConfig {
    /// `sasl.enabled.mechanisms`, in the order the handshake lists them.
    pub mechanisms: Vec<SaslMechanism>,
    /// PLAIN's users (`PlainLoginModule`'s `user_<name>` options).
    pub plain: PlainUsers,
    /// `connections.max.reauth.ms`: how long a session lasts (None: for ever).
    pub max_reauth_ms: Option<i64>,
    /// The broker's secret for SCRAM decoys (`scram::random_key`).
    pub decoy_key: [u8; 32],
    /// OAUTHBEARER's token check (OAUTHBEARER is refused without one).
    pub oauth: Option<Arc<dyn TokenValidator>>,
}

impl std::fmt::Debug for SaslServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslServerConfig")
            .field("mechanisms", &self.mechanisms)
            .field("plain", &self.plain)
            .field("max_reauth_ms", &self.max_reauth_ms)
            .field("oauth", &self.oauth)
            .finish_non_exhaustive()
    }
}

/// A request as the authenticator needs to see it. `Debug` prints a
/// token's length, never its bytes (passwords, bearer tokens).
#[derive(Clone, Copy)]
pub enum Request<'a> {
    ApiVersions,
    SaslHandshake { version: i16, mechanism: &'a str },
    SaslAuthenticate { auth_bytes: &'a [u8] },
    Other { api_key: i16 },
}

impl std::fmt::Debug for Request<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Request::ApiVersions => f.write_str("ApiVersions"),
            Request::SaslHandshake { version, mechanism } => {
                write!(
                    f,
                    "SaslHandshake {{ version: {version}, mechanism: {mechanism:?} }}"
                )
            }
            Request::SaslAuthenticate { auth_bytes } => {
                write!(f, "SaslAuthenticate {{ {} bytes }}", auth_bytes.len())
            }
            Request::Other { api_key } => write!(f, "Other {{ api_key: {api_key} }}"),
        }
    }
}

/// An answer the connection sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaslResponse {
    Handshake {
        error_code: i16,
        mechanisms: Vec<String>,
    },
    Authenticate {
        error_code: i16,
        error_message: Option<String>,
        auth_bytes: Vec<u8>,
        /// Milliseconds until the session ends (0: it does not).
        session_lifetime_ms: i64,
    },
    /// A version 0 token, sent as one size-prefixed frame.
    RawToken(Vec<u8>),
    /// The request's own response with this error code.
    Error { error_code: i16 },
}

/// What the connection does with a request or token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// Serve it as usual.
    Serve,
    /// Send this; then close after `connection.failed.authentication.delay.ms` if `close`.
    Respond { response: SaslResponse, close: bool },
    /// Close without an answer; after the failed authentication delay if `delayed`.
    Close { delayed: bool },
}

enum Exchange {
    Plain,
    Scram(ScramServer),
    /// OAUTHBEARER; after an invalid token, the client's `^A` is awaited.
    OAuth {
        refused: bool,
    },
}

enum Stage {
    /// Nothing yet: ApiVersions or SaslHandshake.
    Start,
    /// After ApiVersions: SaslHandshake only.
    Handshake,
    /// Tokens are being exchanged.
    Exchanging {
        mechanism: SaslMechanism,
        raw: bool,
        exchange: Exchange,
    },
    /// A re-authentication handshake named another mechanism: the next
    /// token fails.
    BadReauthMechanism {
        asked: SaslMechanism,
    },
    Authenticated,
    Failed,
}

/// The previous session, while a re-authentication is under way.
struct Session {
    principal: KafkaPrincipal,
    mechanism: SaslMechanism,
    /// When the session ends (None: never).
    expires_at_ms: Option<i64>,
}

/// One connection's authentication.
pub struct SaslAuthenticator {
    config: Arc<SaslServerConfig>,
    credentials: Arc<dyn ScramCredentials>,
    stage: Stage,
    session: Option<Session>,
    reauthenticating: bool,
    /// When the last re-authentication began (none yet: the first may
    /// come at any time, as in Kafka).
    last_reauth_start_ms: Option<i64>,
    /// Why the exchange failed, for the broker's log (never a secret).
    failure_reason: Option<String>,
}

fn failed(message: String) -> Reply {
    Reply::Respond {
        response: SaslResponse::Authenticate {
            error_code: SASL_AUTHENTICATION_FAILED,
            error_message: Some(message),
            auth_bytes: Vec::new(),
            session_lifetime_ms: 0,
        },
        close: true,
    }
}

impl SaslAuthenticator {
    pub fn new(config: Arc<SaslServerConfig>, credentials: Arc<dyn ScramCredentials>) -> Self {
        SaslAuthenticator {
            config,
            credentials,
            stage: Stage::Start,
            session: None,
            reauthenticating: false,
            last_reauth_start_ms: None,
            failure_reason: None,
        }
    }

    /// The authenticated principal, once there is one (and during a
    /// re-authentication, the previous one).
    pub fn principal(&self) -> Option<&KafkaPrincipal> {
        self.session.as_ref().map(|s| &s.principal)
    }

    /// Whether requests other than SASL's are served now.
    pub fn is_authenticated(&self) -> bool {
        matches!(self.stage, Stage::Authenticated)
    }

    /// Whether the next frame is a raw token (after a version 0 handshake)
    /// rather than a request.
    pub fn expects_raw_token(&self) -> bool {
        matches!(self.stage, Stage::Exchanging { raw: true, .. })
    }

    /// Why the exchange failed (for the broker's log; never a secret).
    pub fn failure_reason(&self) -> Option<&str> {
        self.failure_reason.as_deref()
    }

    /// When the session ends, if it does.
    pub fn session_expires_at_ms(&self) -> Option<i64> {
        self.session.as_ref().and_then(|s| s.expires_at_ms)
    }

    fn enabled(&self) -> Vec<String> {
        self.config
            .mechanisms
            .iter()
            .map(|m| m.name().to_string())
            .collect()
    }

    /// A request, at `now_ms`.
    pub fn on_request(&mut self, request: Request<'_>, now_ms: i64) -> Reply {
        match (&self.stage, request) {
            (Stage::Failed, _) => Reply::Close { delayed: false },
            (Stage::Start, Request::ApiVersions) => {
                self.stage = Stage::Handshake;
                Reply::Serve
            }
            (Stage::Start | Stage::Handshake, Request::SaslHandshake { version, mechanism }) => {
                self.handshake(version, mechanism)
            }
            // A second ApiVersions is a broken client: closed at once.
            (Stage::Handshake, Request::ApiVersions) => self.fail_closed(false),
            // Anything else before the handshake fails authentication
            // (Kafka's IllegalSaslStateException): closed after the delay.
            (Stage::Start | Stage::Handshake, _) => self.fail_closed(true),
            (Stage::Exchanging { raw: false, .. }, Request::SaslAuthenticate { auth_bytes }) => {
                self.token(auth_bytes, now_ms)
            }
            // Kafka fails the connection here without an answer (its
            // message, naming both mechanisms, goes to the broker's log).
            (Stage::BadReauthMechanism { asked }, Request::SaslAuthenticate { .. }) => {
                let previous = self.session.as_ref().map_or("", |s| s.mechanism.name());
                self.failure_reason = Some(format!(
                    "SASL mechanism '{}' requested by client is not supported for re-authentication of mechanism '{previous}'",
                    asked.name()
                ));
                self.fail_closed(true)
            }
            (Stage::Exchanging { raw: true, .. }, _) => self.fail_closed(true),
            (Stage::Exchanging { .. } | Stage::BadReauthMechanism { .. }, _) => {
                self.stage = Stage::Failed;
                Reply::Respond {
                    response: SaslResponse::Error {
                        error_code: ILLEGAL_SASL_STATE,
                    },
                    close: true,
                }
            }
            (Stage::Authenticated, request) => self.authenticated(request, now_ms),
        }
    }

    /// A raw token (after a version 0 handshake), at `now_ms`.
    pub fn on_raw_token(&mut self, token: &[u8], now_ms: i64) -> Reply {
        if !self.expects_raw_token() {
            return self.fail_closed(false);
        }
        match self.token(token, now_ms) {
            Reply::Respond {
                response:
                    SaslResponse::Authenticate {
                        error_code: 0,
                        auth_bytes,
                        ..
                    },
                close,
            } => Reply::Respond {
                response: SaslResponse::RawToken(auth_bytes),
                close,
            },
            // Version 0 has no error answer: the connection closes.
            Reply::Respond { close: true, .. } => Reply::Close { delayed: true },
            other => other,
        }
    }

    fn fail_closed(&mut self, delayed: bool) -> Reply {
        self.stage = Stage::Failed;
        Reply::Close { delayed }
    }

    fn handshake(&mut self, version: i16, mechanism: &str) -> Reply {
        let chosen = SaslMechanism::from_name(mechanism).filter(|m| {
            self.config.mechanisms.contains(m)
                && (*m != SaslMechanism::OAuthBearer || self.config.oauth.is_some())
        });
        let Some(m) = chosen else {
            self.stage = Stage::Failed;
            return Reply::Respond {
                response: SaslResponse::Handshake {
                    error_code: UNSUPPORTED_SASL_MECHANISM,
                    mechanisms: self.enabled(),
                },
                close: true,
            };
        };
        let previous = self.session.as_ref().map(|s| s.mechanism);
        self.stage = match previous {
            Some(p) if self.reauthenticating && p != m => Stage::BadReauthMechanism { asked: m },
            _ => {
                let exchange = match m {
                    SaslMechanism::Plain => Exchange::Plain,
                    SaslMechanism::Scram(s) => match ScramServer::new(s, self.config.decoy_key) {
                        Ok(server) => Exchange::Scram(server),
                        // No randomness, no nonce: nobody is authenticated.
                        Err(_) => return self.fail_closed(false),
                    },
                    SaslMechanism::OAuthBearer => Exchange::OAuth { refused: false },
                };
                Stage::Exchanging {
                    mechanism: m,
                    raw: version == 0,
                    exchange,
                }
            }
        };
        Reply::Respond {
            response: SaslResponse::Handshake {
                error_code: 0,
                mechanisms: self.enabled(),
            },
            close: false,
        }
    }

    fn token(&mut self, bytes: &[u8], now_ms: i64) -> Reply {
        let Stage::Exchanging {
            mechanism,
            exchange,
            ..
        } = &mut self.stage
        else {
            return self.fail_closed(true);
        };
        let mechanism = *mechanism;
        // Kafka's sentence for a failure whose cause is not the client's business.
        let generic = format!(
            "Authentication failed during {} due to invalid credentials with SASL mechanism {}",
            if self.reauthenticating {
                "re-authentication"
            } else {
                "authentication"
            },
            mechanism.name()
        );
        let mut credential_expires_ms = None;
        let mut reason: Option<String> = None;
        let result: Result<(Vec<u8>, Option<String>), String> = match exchange {
            Exchange::Plain => match self.config.plain.authenticate(bytes) {
                Ok(user) => Ok((Vec::new(), Some(user))),
                Err(e) => Err(e.to_string()),
            },
            // The acknowledgement of `invalid_token` ends the exchange.
            Exchange::OAuth { refused: true } if bytes == [1u8] => Err(INVALID_TOKEN_JSON.to_string()),
            Exchange::OAuth { refused: true } => Err(generic),
            Exchange::OAuth { refused } => match ClientInitialResponse::parse(bytes) {
                Err(e) => {
                    reason = Some(e.to_string());
                    Err(generic)
                }
                Ok(first) => match self.config.oauth.as_ref().map(|v| v.validate(&first.token, now_ms)) {
                    Some(Ok(token)) if !first.authzid.is_empty() && first.authzid != token.principal => {
                        Err(format!(
                            "Authentication failed: Client requested an authorization id ({}) that is \
                             different from the token's principal name ({})",
                            first.authzid, token.principal
                        ))
                    }
                    Some(Ok(token)) => {
                        credential_expires_ms = Some(token.expires_at_ms);
                        Ok((Vec::new(), Some(token.principal)))
                    }
                    // The client is told `invalid_token` and must acknowledge it.
                    Some(Err(e)) => {
                        reason = Some(e.to_string());
                        *refused = true;
                        Ok((INVALID_TOKEN_JSON.as_bytes().to_vec(), None))
                    }
                    None => {
                        *refused = true;
                        Ok((INVALID_TOKEN_JSON.as_bytes().to_vec(), None))
                    }
                },
            },
            Exchange::Scram(server) => {
                let m = server.mechanism();
                let creds = &self.credentials;
                match server.step(bytes, |user| creds.scram_credential(user, m)) {
                    Ok(ScramStep::Continue(reply)) => Ok((reply, None)),
                    Ok(ScramStep::Authenticated { server_final, user }) => {
                        Ok((server_final, Some(user)))
                    }
                    Err(ScramError::AuthzidMismatch) => Err(ScramError::AuthzidMismatch.client_message(m)),
                    Err(e) => {
                        reason = Some(e.to_string());
                        Err(generic)
                    }
                }
            }
        };
        if reason.is_some() {
            self.failure_reason = reason;
        }
        match result {
            Err(message) => {
                if self.failure_reason.is_none() {
                    self.failure_reason = Some(message.clone());
                }
                self.stage = Stage::Failed;
                failed(message)
            }
            Ok((reply, None)) => Reply::Respond {
                response: SaslResponse::Authenticate {
                    error_code: 0,
                    error_message: None,
                    auth_bytes: reply,
                    session_lifetime_ms: 0,
                },
                close: false,
            },
            Ok((reply, Some(user))) => {
                let principal = KafkaPrincipal::user(user);
                self.complete(mechanism, principal, reply, credential_expires_ms, now_ms)
            }
        }
    }

    fn complete(
        &mut self,
        mechanism: SaslMechanism,
        principal: KafkaPrincipal,
        reply: Vec<u8>,
        credential_expires_ms: Option<i64>,
        now_ms: i64,
    ) -> Reply {
        if let Some(previous) = &self.session {
            if self.reauthenticating && previous.principal != principal {
                let message = format!(
                    "Cannot change principals during re-authentication from {}.{}: {}.{}",
                    previous.principal.principal_type(),
                    previous.principal.name(),
                    principal.principal_type(),
                    principal.name()
                );
                self.failure_reason = Some(message.clone());
                self.stage = Stage::Failed;
                return failed(message);
            }
        }
        // The session runs from the exchange's completion for the lesser
        // of `connections.max.reauth.ms` and what is left of the
        // credential (a token's expiry), as Kafka's
        // `calcCompletionTimesAndReturnSessionLifetimeMs`.
        let max_reauth = self.config.max_reauth_ms.filter(|ms| *ms > 0);
        let credential_left = credential_expires_ms.map(|at| (at - now_ms).max(0));
        let lifetime = match (max_reauth, credential_left) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.session = Some(Session {
            principal,
            mechanism,
            expires_at_ms: lifetime.map(|ms| now_ms + ms),
        });
        self.reauthenticating = false;
        self.stage = Stage::Authenticated;
        let session_lifetime_ms = lifetime.unwrap_or(0);
        Reply::Respond {
            response: SaslResponse::Authenticate {
                error_code: 0,
                error_message: None,
                auth_bytes: reply,
                session_lifetime_ms,
            },
            close: false,
        }
    }

    fn authenticated(&mut self, request: Request<'_>, now_ms: i64) -> Reply {
        let session = self.session.as_ref();
        let expires = session.and_then(|s| s.expires_at_ms);
        if let Request::SaslHandshake { version, mechanism } = request {
            // Only a session that ends may re-authenticate, at most once a
            // second after the previous re-authentication began.
            let too_soon = self
                .last_reauth_start_ms
                .is_some_and(|t| now_ms - t < MIN_REAUTH_INTERVAL_MS);
            if expires.is_some() && !too_soon {
                self.reauthenticating = true;
                self.last_reauth_start_ms = Some(now_ms);
                return self.handshake(version, mechanism);
            }
        }
        if expires.is_some_and(|at| now_ms > at) {
            return self.fail_closed(false);
        }
        match request {
            Request::SaslHandshake { .. } => Reply::Respond {
                response: SaslResponse::Handshake {
                    error_code: ILLEGAL_SASL_STATE,
                    mechanisms: Vec::new(),
                },
                close: false,
            },
            Request::SaslAuthenticate { .. } => Reply::Respond {
                response: SaslResponse::Authenticate {
                    error_code: ILLEGAL_SASL_STATE,
                    error_message: Some(
                        "SaslAuthenticate request received after successful authentication".into(),
                    ),
                    auth_bytes: Vec::new(),
                    session_lifetime_ms: 0,
                },
                close: false,
            },
            _ => Reply::Serve,
        }
    }
}

#[cfg(test)]
mod tests;
