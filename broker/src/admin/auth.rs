//! The bearer token of the HTTP API. With a token configured, `/api/v1/*`
//! (but its OpenAPI document) and `/metrics` need `Authorization: Bearer
//! <token>` from every peer, loopback included; without one the API may
//! bind only to loopback. `/healthz`, `/readyz` and the console's static
//! page answer without it (they show nothing; the page asks for the token
//! and sends it with its API calls).
//!
//! Owns the check only. The token is never logged, never echoed back, and
//! compared in constant time.

use std::net::SocketAddr;

use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::state::HttpState;
use super::token::Token;

/// Refuses an address beyond loopback without a token.
pub fn check_bind(addr: &SocketAddr, token: &Token) -> Result<(), String> {
    if addr.ip().is_loopback() || token.is_set() {
        return Ok(());
    }
    Err(format!(
        "--http-listen {addr} is not a loopback address: the admin API can change topics and offsets, so beyond loopback it needs a bearer token (STRATA_HTTP_TOKEN or --http-token-file)"
    ))
}

/// Paths that answer without the token.
fn is_open(path: &str) -> bool {
    matches!(
        path,
        "/healthz" | "/health" | "/readyz" | "/" | "/console" | "/api/v1/openapi.json"
    ) || path.starts_with("/console/")
}

/// The middleware in front of every route.
pub async fn require_token(State(s): State<HttpState>, req: Request, next: Next) -> Response {
    if is_open(req.uri().path()) {
        return next.run(req).await;
    }
    let auth = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    if s.token().admits(auth) {
        return next.run(req).await;
    }
    let mut r = ApiError::new(
        StatusCode::UNAUTHORIZED,
        "UNAUTHORIZED",
        "this API needs `Authorization: Bearer <token>` (the broker's STRATA_HTTP_TOKEN)",
    )
    .into_response();
    r.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        header::HeaderValue::from_static("Bearer realm=\"strata\""),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked_whole_and_short_ones_refused() {
        assert!(Token::new("short").is_err());
        assert!(Token::new("has a space in it ok").is_err());
        let t = Token::new("0123456789abcdef\n").unwrap();
        assert!(t.admits(Some("Bearer 0123456789abcdef")));
        assert!(!t.admits(Some("Bearer 0123456789abcdeX")));
        assert!(!t.admits(Some("Bearer 0123456789abcde")));
        assert!(!t.admits(Some("0123456789abcdef")));
        assert!(!t.admits(None));
        assert!(Token::none().admits(None));
        assert_eq!(format!("{t:?}"), "Token(set)");
    }

    #[test]
    fn beyond_loopback_needs_a_token() {
        let any: SocketAddr = "0.0.0.0:9644".parse().unwrap();
        let lo: SocketAddr = "127.0.0.1:9644".parse().unwrap();
        let lo6: SocketAddr = "[::1]:9644".parse().unwrap();
        assert!(check_bind(&any, &Token::none()).is_err());
        assert!(check_bind(&lo, &Token::none()).is_ok());
        assert!(check_bind(&lo6, &Token::none()).is_ok());
        assert!(check_bind(&any, &Token::new("0123456789abcdef").unwrap()).is_ok());
    }
}
