//! Kafka's `sasl.jaas.config` value: one login module, its control flag
//! and its options, as in
//! `org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="secret";`.
//!
//! The grammar is JAAS's, as Kafka's `JaasConfig` reads it: a class name,
//! a flag (`required`, `requisite`, `sufficient`, `optional`, any case),
//! `name=value` options whose values are words or double-quoted strings
//! with backslash escapes, and a closing `;`; `//` and `/* */` comments.
//! Kafka takes exactly one module from the setting, and so does Strata.
//! Option values are secrets (passwords): `Debug` prints their names only.

use std::collections::BTreeMap;
use std::fmt;

/// The module whose `user_<name>="<password>"` options list PLAIN's users.
pub const PLAIN_LOGIN_MODULE: &str = "org.apache.kafka.common.security.plain.PlainLoginModule";
/// The module a SCRAM client's `username`/`password` come in.
pub const SCRAM_LOGIN_MODULE: &str = "org.apache.kafka.common.security.scram.ScramLoginModule";
/// The module an OAUTHBEARER client's options come in.
pub const OAUTHBEARER_LOGIN_MODULE: &str =
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";

/// How a login module's result counts (JAAS's flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlFlag {
    Required,
    Requisite,
    Sufficient,
    Optional,
}

/// One login module and its options.
#[derive(Clone, PartialEq, Eq)]
pub struct JaasConfig {
    pub login_module: String,
    pub flag: ControlFlag,
    pub options: BTreeMap<String, String>,
}

impl fmt::Debug for JaasConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JaasConfig")
            .field("login_module", &self.login_module)
            .field("flag", &self.flag)
            .field("options", &self.options.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// A value that is not one JAAS login module. The message never quotes
/// an option's value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JaasError {
    #[error("sasl.jaas.config: {0}")]
    Syntax(String),
    #[error("sasl.jaas.config holds {0} login modules; it must hold exactly one")]
    ModuleCount(usize),
    #[error("sasl.jaas.config: option {0} appears twice")]
    DuplicateOption(String),
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    Quoted(String),
    Equals,
    Semicolon,
}

fn tokens(s: &str) -> Result<Vec<Token>, JaasError> {
    let syntax = |m: &str| JaasError::Syntax(m.to_string());
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        match c {
            c if c.is_whitespace() => {
                chars.next();
            }
            '=' => {
                chars.next();
                out.push(Token::Equals);
            }
            ';' => {
                chars.next();
                out.push(Token::Semicolon);
            }
            '/' => {
                chars.next();
                match chars.next() {
                    Some('/') => {
                        for c in chars.by_ref() {
                            if c == '\n' {
                                break;
                            }
                        }
                    }
                    Some('*') => {
                        let mut last = ' ';
                        loop {
                            match chars.next() {
                                Some('/') if last == '*' => break,
                                Some(c) => last = c,
                                None => return Err(syntax("unterminated /* comment")),
                            }
                        }
                    }
                    _ => return Err(syntax("unexpected '/'")),
                }
            }
            '"' => {
                chars.next();
                let mut v = String::new();
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some('n') => v.push('\n'),
                            Some('t') => v.push('\t'),
                            Some('r') => v.push('\r'),
                            Some(c) => v.push(c),
                            None => return Err(syntax("unterminated quoted value")),
                        },
                        Some(c) => v.push(c),
                        None => return Err(syntax("unterminated quoted value")),
                    }
                }
                out.push(Token::Quoted(v));
            }
            _ => {
                let mut w = String::new();
                while let Some(&c) = chars.peek() {
                    if c.is_whitespace() || matches!(c, '=' | ';' | '"') {
                        break;
                    }
                    w.push(c);
                    chars.next();
                }
                out.push(Token::Word(w));
            }
        }
    }
    Ok(out)
}

impl JaasConfig {
    /// Parses a `sasl.jaas.config` value.
    pub fn parse(value: &str) -> Result<JaasConfig, JaasError> {
        let syntax = |m: String| JaasError::Syntax(m);
        let mut modules = Vec::new();
        let mut it = tokens(value)?.into_iter().peekable();
        while it.peek().is_some() {
            let login_module = match it.next() {
                Some(Token::Word(w)) => w,
                _ => return Err(syntax("expected a login module class name".into())),
            };
            let flag = match it.next() {
                Some(Token::Word(w)) => match w.to_ascii_lowercase().as_str() {
                    "required" => ControlFlag::Required,
                    "requisite" => ControlFlag::Requisite,
                    "sufficient" => ControlFlag::Sufficient,
                    "optional" => ControlFlag::Optional,
                    _ => {
                        return Err(syntax(format!(
                            "invalid control flag {w:?} after {login_module} (required, requisite, sufficient or optional)"
                        )))
                    }
                },
                _ => return Err(syntax(format!("expected a control flag after {login_module}"))),
            };
            let mut options = BTreeMap::new();
            loop {
                match it.next() {
                    Some(Token::Semicolon) => break,
                    Some(Token::Word(name)) => {
                        if it.next() != Some(Token::Equals) {
                            // No option text in the message: a misplaced
                            // word may be part of an unquoted password.
                            return Err(syntax(format!(
                                "expected '=' after an option name in {login_module}'s options \
                                 (quote values that hold spaces)"
                            )));
                        }
                        let v = match it.next() {
                            Some(Token::Word(v)) | Some(Token::Quoted(v)) => v,
                            _ => {
                                return Err(syntax(format!(
                                    "an option of {login_module} has no value"
                                )))
                            }
                        };
                        if options.insert(name.clone(), v).is_some() {
                            return Err(JaasError::DuplicateOption(name));
                        }
                    }
                    None => {
                        return Err(syntax(format!(
                            "expected ';' at the end of {login_module}'s options"
                        )))
                    }
                    Some(_) => {
                        return Err(syntax(format!(
                            "expected an option name or ';' in {login_module}'s options"
                        )))
                    }
                }
            }
            modules.push(JaasConfig {
                login_module,
                flag,
                options,
            });
        }
        if modules.len() != 1 {
            return Err(JaasError::ModuleCount(modules.len()));
        }
        Ok(modules.remove(0))
    }

    pub fn option(&self, name: &str) -> Option<&str> {
        self.options.get(name).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_plain_line() {
        let c = JaasConfig::parse(
            r#"org.apache.kafka.common.security.plain.PlainLoginModule required
               username="admin" password="admin-secret"
               user_admin="admin-secret" user_alice="a \"quoted\" pass\\word";"#,
        )
        .expect("valid");
        assert_eq!(c.login_module, PLAIN_LOGIN_MODULE);
        assert_eq!(c.flag, ControlFlag::Required);
        assert_eq!(c.option("user_alice"), Some(r#"a "quoted" pass\word"#));
        assert_eq!(c.option("username"), Some("admin"));
        let shown = format!("{c:?}");
        assert!(
            shown.contains("user_alice") && !shown.contains("admin-secret"),
            "{shown}"
        );
    }

    #[test]
    fn words_comments_and_flags() {
        let c = JaasConfig::parse("/* c */ a.B OPTIONAL // x\n k=v k2 = \"w\" ;").expect("valid");
        assert_eq!(c.flag, ControlFlag::Optional);
        assert_eq!(c.option("k"), Some("v"));
        assert_eq!(c.option("k2"), Some("w"));
        assert!(JaasConfig::parse("a.B Sufficient;")
            .expect("valid")
            .options
            .is_empty());
    }

    #[test]
    fn refusals_never_quote_a_value() {
        for (bad, want) in [
            ("", "0 login modules"),
            ("a.B required;b.C required;", "2 login modules"),
            ("a.B required", "expected ';'"),
            ("a.B mandatory;", "invalid control flag"),
            ("a.B required k;", "expected '='"),
            ("a.B required k=;", "has no value"),
            ("a.B required user_alice=pa secret;", "quote values"),
            ("a.B required k=\"secret", "unterminated"),
            ("a.B required k=1 k=2;", "appears twice"),
            ("a.B required /* x", "unterminated"),
            ("\"a\" required;", "class name"),
        ] {
            let e = JaasConfig::parse(bad).expect_err(bad).to_string();
            assert!(e.contains(want), "{bad}: {e}");
            assert!(!e.contains("secret"), "{e}");
        }
    }
}
