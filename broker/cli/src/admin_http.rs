//! The CLI's client for Strata's admin API (`/api/v1`): JSON over HTTP,
//! with the bearer token from `STRATA_HTTP_TOKEN` when set. Used only for
//! what the Kafka protocol cannot tell (tiering status, lag age and
//! catch-up estimates).

use std::time::Duration;

use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("Strata's admin API at {url} is not reachable ({source}); give --admin-url (env STRATA_ADMIN_URL)")]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("Strata's admin API at {url} refused the request: it needs the token (set STRATA_HTTP_TOKEN)")]
    Unauthorized { url: String },
    #[error("{url}: {code}: {message}")]
    Api {
        url: String,
        status: u16,
        code: String,
        message: String,
    },
    #[error("{url} answered something that is not the admin API's JSON: {message}")]
    Malformed { url: String, message: String },
}

impl AdminError {
    pub fn status(&self) -> Option<u16> {
        match self {
            AdminError::Api { status, .. } => Some(*status),
            AdminError::Unauthorized { .. } => Some(401),
            _ => None,
        }
    }
}

pub struct AdminClient {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl AdminClient {
    pub fn new(base: &str) -> Self {
        AdminClient {
            base: base.trim_end_matches('/').to_string(),
            token: std::env::var("STRATA_HTTP_TOKEN")
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty()),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap_or_default(),
        }
    }

    pub async fn get(&self, path: &str) -> Result<Value, AdminError> {
        let url = format!("{}{}", self.base, path);
        let mut req = self.http.get(&url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        let resp = req.send().await.map_err(|source| AdminError::Unreachable {
            url: self.base.clone(),
            source,
        })?;
        let status = resp.status().as_u16();
        if status == 401 {
            return Err(AdminError::Unauthorized {
                url: self.base.clone(),
            });
        }
        let body = resp
            .bytes()
            .await
            .map_err(|source| AdminError::Unreachable {
                url: self.base.clone(),
                source,
            })?;
        let v: Value = serde_json::from_slice(&body).map_err(|e| AdminError::Malformed {
            url: url.clone(),
            message: e.to_string(),
        })?;
        if !(200..300).contains(&status) {
            let err = &v["error"];
            return Err(AdminError::Api {
                url,
                status,
                code: err["code"].as_str().unwrap_or("UNKNOWN").to_string(),
                message: err["message"].as_str().unwrap_or("").to_string(),
            });
        }
        Ok(v)
    }
}

/// Percent-encodes a path segment (topic and group names may hold any
/// character Kafka allows, and group ids any at all).
pub fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
