//! `ssl.principal.mapping.rules`: how a client certificate's subject
//! (its distinguished name, as Java prints it) becomes a principal's
//! name, with the grammar and meaning of Kafka's `SslPrincipalMapper`.
//!
//! The value is a list of rules separated by commas: `DEFAULT` (the name
//! is the whole DN) or `RULE:pattern/replacement/` with an optional `L`
//! or `U` after the last `/` (lower or upper case the result). A `/`
//! inside a pattern or replacement is written `\/`. Rules are tried in
//! order; the first whose pattern matches the whole DN gives the name:
//! every match of the pattern in the DN is replaced (Java's `replaceAll`),
//! with `$1`… for groups. A back reference to a group the pattern does
//! not have is kept as text, as in Kafka; a replacement Java would throw
//! on when a connection is mapped (`$x`, an unknown `${name}`, `$n` with
//! no groups at all) is refused when the rules are read instead. No rule matching is an error
//! (the connection is refused).
//!
//! Patterns are `regex-lite`'s: Java's syntax for what DN rules use
//! (classes, groups, lazy quantifiers, anchors), with ASCII `\w`, `\d`
//! and `\s` as Java's defaults; lookaround, back references inside a
//! pattern and possessive quantifiers are refused when the rules are
//! parsed, with the rule in the message.

use std::sync::OnceLock;

use regex_lite::{Captures, Regex};

/// Kafka's grammar of one rule, and of the list (`RULE_PATTERN`, `RULE_SPLITTER`).
const RULE_PATTERN: &str = r"(DEFAULT)|RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?).*?|(.*?)";

fn splitter() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(&format!(r"\s*({RULE_PATTERN})\s*(?:,\s*|$)"))
            .expect("Kafka's splitter compiles")
    })
}

fn parser() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(&format!("^(?:{RULE_PATTERN})")).expect("Kafka's rule pattern compiles")
    })
}

/// Rules that cannot be used; the broker does not start with them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuleError {
    #[error("ssl.principal.mapping.rules: invalid rule `{rule}`, unmatched substring `{rest}`")]
    Unmatched { rule: String, rest: String },
    #[error("ssl.principal.mapping.rules: invalid rule `{rule}`")]
    Invalid { rule: String },
    #[error("ssl.principal.mapping.rules: the pattern of `{rule}` is not supported: {error}")]
    Pattern { rule: String, error: String },
    #[error("ssl.principal.mapping.rules: the replacement of `{rule}` {why}")]
    Replacement { rule: String, why: &'static str },
}

/// No rule gave a name for this DN.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no ssl.principal.mapping.rules rule applies to {dn}")]
pub struct NoMatchingRule {
    pub dn: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Case {
    Keep,
    Lower,
    Upper,
}

#[derive(Clone, Debug)]
enum Rule {
    Default,
    Map {
        whole: Regex,
        pattern: Regex,
        replacement: Vec<Piece>,
        case: Case,
    },
}

/// A replacement, parsed: text and group references.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Text(String),
    Group(usize),
    Named(String),
}

/// The parsed rules.
#[derive(Clone, Debug)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
}

impl PrincipalMapper {
    /// Parses the setting's value (`DEFAULT` when unset).
    pub fn parse(rules: &str) -> Result<Self, RuleError> {
        let mut out = Vec::new();
        for caps in splitter().captures_iter(rules.trim()) {
            let rule = caps.get(1).map_or("", |m| m.as_str());
            let Some(m) = parser().captures(rule) else {
                return Err(RuleError::Invalid {
                    rule: rule.to_string(),
                });
            };
            let end = m.get(0).map_or(0, |g| g.end());
            if end != rule.len() {
                return Err(RuleError::Unmatched {
                    rule: rule.to_string(),
                    rest: rule[end..].to_string(),
                });
            }
            if m.get(1).is_some() {
                out.push(Rule::Default);
            } else if let Some(p) = m.get(2) {
                let pattern = unescape_slashes(p.as_str());
                let replacement = m.get(3).map_or("", |r| r.as_str());
                let case = match m.get(4).map(|c| c.as_str()) {
                    Some("L") => Case::Lower,
                    Some("U") => Case::Upper,
                    _ => Case::Keep,
                };
                let bad = |e: regex_lite::Error| RuleError::Pattern {
                    rule: rule.to_string(),
                    error: e.to_string(),
                };
                let compiled = Regex::new(&pattern).map_err(bad)?;
                let whole = Regex::new(&format!("^(?:{pattern})$")).map_err(bad)?;
                let names: Vec<&str> = compiled.capture_names().flatten().collect();
                let replacement = parse_replacement(
                    &unescape_slashes(replacement),
                    compiled.captures_len() - 1,
                    &names,
                )
                .map_err(|why| RuleError::Replacement {
                    rule: rule.to_string(),
                    why,
                })?;
                out.push(Rule::Map {
                    whole,
                    pattern: compiled,
                    replacement,
                    case,
                });
            }
            // An empty rule (two commas in a row) is ignored, as in Kafka.
        }
        Ok(PrincipalMapper { rules: out })
    }

    /// The principal name for a DN.
    pub fn name(&self, dn: &str) -> Result<String, NoMatchingRule> {
        for rule in &self.rules {
            match rule {
                Rule::Default => return Ok(dn.to_string()),
                Rule::Map {
                    whole,
                    pattern,
                    replacement,
                    case,
                } => {
                    if !whole.is_match(dn) {
                        continue;
                    }
                    let name = replace_all(pattern, dn, replacement);
                    return Ok(match case {
                        Case::Keep => name,
                        Case::Lower => name.to_lowercase(),
                        Case::Upper => name.to_uppercase(),
                    });
                }
            }
        }
        Err(NoMatchingRule { dn: dn.to_string() })
    }
}

/// `\/` is a `/` inside a rule; every other `\x` pair is the pattern's own.
fn unescape_slashes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('/') => out.push('/'),
                Some(n) => {
                    out.push('\\');
                    out.push(n);
                }
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Java's replacement syntax: `\x` is `x`; `$n` a group, where further
/// digits count while they name a group the pattern has; `${name}` a
/// named group. A `$n` past the pattern's groups stays text (Kafka's
/// `escapeLiteralBackReferences`). `None` for a trailing backslash.
fn parse_replacement(s: &str, groups: usize, names: &[&str]) -> Result<Vec<Piece>, &'static str> {
    let mut out = Vec::new();
    let mut text = String::new();
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                text.push(*chars.get(i + 1).ok_or("ends in a lone backslash")?);
                i += 2;
            }
            '$' if chars.get(i + 1) == Some(&'{') => {
                let len = chars[i + 2..]
                    .iter()
                    .position(|c| *c == '}')
                    .ok_or("has a `${` without `}`")?;
                let name: String = chars[i + 2..i + 2 + len].iter().collect();
                if !names.contains(&name.as_str()) {
                    return Err("names a group the pattern does not have");
                }
                if !text.is_empty() {
                    out.push(Piece::Text(std::mem::take(&mut text)));
                }
                out.push(Piece::Named(name));
                i += 3 + len;
            }
            '$' => {
                // Java: a group number must follow. A pattern without groups
                // fails every `$n` (Kafka leaves those to Java, which throws);
                // with groups, one past them stays text (Kafka's escaping).
                let mut n = chars
                    .get(i + 1)
                    .and_then(|c| c.to_digit(10))
                    .ok_or("has a `$` without a group")? as usize;
                if groups == 0 {
                    return Err("refers to a group, and the pattern has none");
                }
                if n > groups {
                    text.push('$');
                    i += 1;
                    continue;
                }
                let mut j = i + 2;
                while let Some(d) = chars.get(j).and_then(|c| c.to_digit(10)) {
                    let next = n * 10 + d as usize;
                    if next > groups {
                        break;
                    }
                    n = next;
                    j += 1;
                }
                if !text.is_empty() {
                    out.push(Piece::Text(std::mem::take(&mut text)));
                }
                out.push(Piece::Group(n));
                i = j;
            }
            c => {
                text.push(c);
                i += 1;
            }
        }
    }
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    Ok(out)
}

fn expand(caps: &Captures<'_>, replacement: &[Piece], out: &mut String) {
    for piece in replacement {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Group(n) => out.push_str(caps.get(*n).map_or("", |m| m.as_str())),
            Piece::Named(name) => out.push_str(caps.name(name).map_or("", |m| m.as_str())),
        }
    }
}

/// Java's `String.replaceAll`: every match from left to right; after an
/// empty match the search moves on one character, and an empty match right
/// after a non-empty one counts (so `.*` replaces twice, as in Java).
fn replace_all(pattern: &Regex, hay: &str, replacement: &[Piece]) -> String {
    let mut out = String::new();
    let mut copied = 0;
    let mut at = 0;
    while at <= hay.len() {
        let Some(caps) = pattern.captures_at(hay, at) else {
            break;
        };
        let Some(m) = caps.get(0) else { break };
        out.push_str(&hay[copied..m.start()]);
        expand(&caps, replacement, &mut out);
        copied = m.end();
        at = if m.is_empty() {
            match hay[m.end()..].chars().next() {
                Some(c) => m.end() + c.len_utf8(),
                None => break,
            }
        } else {
            m.end()
        };
    }
    out.push_str(&hay[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(rules: &str, dn: &str) -> Result<String, NoMatchingRule> {
        PrincipalMapper::parse(rules).expect("valid rules").name(dn)
    }

    /// Kafka's `SslPrincipalMapperTest.testValidRules` and `testSslPrincipalMapper`.
    #[test]
    fn kafkas_test_vectors() {
        let rules = [
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L",
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/L",
            "RULE:^cn=(.*?),ou=(.*?),dc=(.*?),dc=(.*?)$/$1@$2/U",
            "RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U",
            "DEFAULT",
        ]
        .join(", ");
        assert_eq!(
            name(&rules, "CN=Duke,OU=ServiceUsers,O=Org,C=US").as_deref(),
            Ok("duke")
        );
        assert_eq!(
            name(&rules, "CN=Duke,OU=SME,O=mycp,L=Fulton,ST=MD,C=US").as_deref(),
            Ok("duke@sme")
        );
        assert_eq!(
            name(&rules, "cn=duke,ou=sme,dc=mycp,dc=com").as_deref(),
            Ok("DUKE@SME")
        );
        assert_eq!(
            name(&rules, "cN=duke,OU=JavaSoft,O=Sun Microsystems").as_deref(),
            Ok("DUKE")
        );
        assert_eq!(
            name(&rules, "OU=JavaSoft,O=Sun Microsystems,C=US").as_deref(),
            Ok("OU=JavaSoft,O=Sun Microsystems,C=US")
        );
        // An escaped comma inside a name.
        assert_eq!(
            name(
                r"RULE:^CN=((\\, *|\w)+)(,.*|$)/$1/,DEFAULT",
                r"CN=Tkac\, Adam,OU=ITZ,DC=geodis,DC=cz"
            )
            .as_deref(),
            Ok(r"Tkac\, Adam")
        );
        // An empty value is no rule at all (Kafka's default is DEFAULT
        // only when the setting is unset): nothing maps.
        assert!(name("", "CN=a").is_err());
    }

    #[test]
    fn rules_split_as_kafka_splits_them() {
        for ok in [
            "DEFAULT",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L, DEFAULT",
            "RULE:^CN=(.*?),OU=(.*?),O=(.*?),L=(.*?),ST=(.*?),C=(.*?)$/$1@$2/U",
            "  RULE:([A-Z]*)/$1/U   ,RULE:([a-z]+)/$1/,   DEFAULT  ",
            ",,RULE://,,,DEFAULT,,",
            r"RULE:\/\\\(\)\n\t/\/\//",
        ] {
            assert!(PrincipalMapper::parse(ok).is_ok(), "{ok}");
        }
        for bad in [
            "default",
            "DEFAUL",
            "DEFAULT/L",
            "DEFAULT/U",
            "RULE:CN=(.*?),OU=ServiceUsers.*/$1",
            "rule:^CN=(.*?),OU=ServiceUsers.*$/$1/",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L/U",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/L",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/U",
            "RULE:^CN=(.*?),OU=ServiceUsers.*$/LU",
        ] {
            assert!(PrincipalMapper::parse(bad).is_err(), "{bad}");
        }
        let e = PrincipalMapper::parse("RULE:a/b/LU")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unmatched substring `U`"), "{e}");
        let e = PrincipalMapper::parse("RULE:(?=a)/b/")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not supported"), "{e}");
    }

    #[test]
    fn replacements_as_java_reads_them() {
        // $12 with one group is group 1 then "2"; $4 with three is text.
        assert_eq!(name("RULE:^(a)(b)(c)$/$12/", "abc").as_deref(), Ok("a2"));
        assert_eq!(
            name("RULE:^(a)(b)(c)$/$1@$4/", "abc").as_deref(),
            Ok("a@$4")
        );
        assert_eq!(name("RULE:^(a)$/\\$1/", "a").as_deref(), Ok("$1"));
        assert_eq!(name("RULE:^(?P<who>a)$/${who}!/", "a").as_deref(), Ok("a!"));
        assert_eq!(name("RULE:^(a)$/x\\/y/", "a").as_deref(), Ok("x/y"));
        // replaceAll: `.*` matches the DN and the empty end, as in Java.
        assert_eq!(name("RULE:.*/x/", "abc").as_deref(), Ok("xx"));
        assert!(PrincipalMapper::parse("RULE:a/b\\/").is_err());
        // What Java would throw on when a connection is mapped is refused
        // when the rules are read.
        for bad in [
            "RULE:^(a)$/$x/",
            "RULE:^(a)$/${who}/",
            "RULE:^(a)$/${who/",
            "RULE:^a$/$1/",
            "RULE:^(a)$/$/",
        ] {
            let e = PrincipalMapper::parse(bad).expect_err(bad);
            assert!(matches!(e, RuleError::Replacement { .. }), "{bad}: {e}");
        }
    }

    #[test]
    fn no_rule_no_principal() {
        let e = name("RULE:^CN=(.*)$/$1/", "OU=x").unwrap_err();
        assert_eq!(e.dn, "OU=x");
        // Patterns are ASCII as Java's: \w is no accented letter.
        assert!(name(r"RULE:^CN=(\w+)$/$1/", "CN=é").is_err());
    }
}
