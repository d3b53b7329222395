//! The HTTP API's bearer token as configured: checked for length and
//! characters, kept out of `Debug` output, compared in constant time.
//! Never logged, never echoed back.

/// Shortest token accepted: guessing one is not a way in.
pub const MIN_TOKEN_LEN: usize = 16;

/// The configured token, kept out of `Debug` output.
#[derive(Clone, Default)]
pub struct Token(Option<String>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Token(set)"
        } else {
            "Token(none)"
        })
    }
}

impl Token {
    pub fn none() -> Self {
        Token(None)
    }

    /// A configured token: surrounding whitespace (a file's newline) is
    /// not part of it.
    pub fn new(token: &str) -> Result<Self, String> {
        let t = token.trim();
        if t.len() < MIN_TOKEN_LEN {
            return Err(format!(
                "the HTTP API token must be at least {MIN_TOKEN_LEN} characters (it has {})",
                t.len()
            ));
        }
        if !t.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("the HTTP API token must be printable ASCII without spaces".into());
        }
        Ok(Token(Some(t.to_string())))
    }

    pub fn is_set(&self) -> bool {
        self.0.is_some()
    }

    /// Whether an `Authorization` header value carries the token.
    pub fn admits(&self, authorization: Option<&str>) -> bool {
        let Some(want) = &self.0 else {
            return true;
        };
        let Some(given) = authorization.and_then(|h| {
            h.strip_prefix("Bearer ")
                .or_else(|| h.strip_prefix("bearer "))
        }) else {
            return false;
        };
        constant_time_eq(want.as_bytes(), given.trim().as_bytes())
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
