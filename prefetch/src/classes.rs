//! Priority classes of historical reads: `critical`, `standard` (default)
//! and `bulk`, each with a reserved share of the GET slots, and which
//! consumer groups (or client ids) belong to which class. Changeable at run
//! time; `bulk` can be paused.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PriorityClass {
    Critical = 0,
    Standard = 1,
    Bulk = 2,
}

impl PriorityClass {
    pub const ALL: [PriorityClass; 3] = [
        PriorityClass::Critical,
        PriorityClass::Standard,
        PriorityClass::Bulk,
    ];
    pub fn name(self) -> &'static str {
        match self {
            PriorityClass::Critical => "critical",
            PriorityClass::Standard => "standard",
            PriorityClass::Bulk => "bulk",
        }
    }
}

impl fmt::Display for PriorityClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PriorityClass {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "critical" => Ok(PriorityClass::Critical),
            "standard" => Ok(PriorityClass::Standard),
            "bulk" => Ok(PriorityClass::Bulk),
            other => Err(format!(
                "unknown priority class `{other}` (expected critical, standard or bulk)"
            )),
        }
    }
}

/// Shares, pause switch and membership of the classes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassPolicy {
    /// Reserved share of GET slots per class (relative weights).
    pub shares: [u32; 3],
    pub bulk_paused: bool,
    /// Consumer group (or client id) -> class; others are `standard`.
    pub members: HashMap<String, PriorityClass>,
}

impl Default for ClassPolicy {
    fn default() -> Self {
        ClassPolicy {
            shares: [50, 35, 15],
            bulk_paused: false,
            members: HashMap::new(),
        }
    }
}

impl ClassPolicy {
    /// The class of a reader known by its consumer group and client id.
    pub fn class_of(&self, group: Option<&str>, client_id: &str) -> PriorityClass {
        group
            .and_then(|g| self.members.get(g))
            .or_else(|| self.members.get(client_id))
            .copied()
            .unwrap_or(PriorityClass::Standard)
    }

    /// Parses `critical=N,standard=N,bulk=N` (the
    /// `remote.fetch.priority.shares` setting); unnamed classes keep their
    /// default share.
    pub fn parse_shares(s: &str) -> Result<[u32; 3], String> {
        let mut shares = ClassPolicy::default().shares;
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (class, share) = item.split_once('=').ok_or_else(|| {
                format!("expected CLASS=SHARE, got `{item}` (e.g. critical=50,standard=35,bulk=15)")
            })?;
            let class: PriorityClass = class.parse()?;
            let share: u32 = share.trim().parse().map_err(|_| {
                format!(
                    "share of {class} must be a whole number, got `{}`",
                    share.trim()
                )
            })?;
            if share == 0 || share > 1000 {
                return Err(format!("share of {class} must be between 1 and 1000"));
            }
            shares[class as usize] = share;
        }
        Ok(shares)
    }

    /// Parses `name=class,name=class` (the `remote.fetch.priority.groups` setting).
    pub fn parse_members(s: &str) -> Result<HashMap<String, PriorityClass>, String> {
        let mut out = HashMap::new();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, class) = item.split_once('=').ok_or_else(|| {
                format!("expected GROUP=CLASS, got `{item}` (e.g. payments=critical,backfill=bulk)")
            })?;
            out.insert(name.trim().to_string(), class.parse()?);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership() {
        let p = ClassPolicy {
            members: ClassPolicy::parse_members("payments=critical, etl = bulk").unwrap(),
            ..Default::default()
        };
        assert_eq!(p.class_of(Some("payments"), "x"), PriorityClass::Critical);
        assert_eq!(p.class_of(None, "etl"), PriorityClass::Bulk);
        assert_eq!(
            p.class_of(Some("other"), "rdkafka"),
            PriorityClass::Standard
        );
        assert!(ClassPolicy::parse_members("a=urgent").is_err());
        assert!(ClassPolicy::parse_members("a").is_err());
        assert_eq!(ClassPolicy::parse_shares("bulk=5").unwrap(), [50, 35, 5]);
        assert!(ClassPolicy::parse_shares("bulk=0").is_err());
        assert!(ClassPolicy::parse_shares("fast=3").is_err());
    }
}
