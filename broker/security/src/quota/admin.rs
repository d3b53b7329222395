//! DescribeClientQuotas and AlterClientQuotas (KIP-546) over the
//! configured quotas, with Kafka's matching and validation (its
//! `ClientQuotasImage.describe` and `ClientQuotaControlManager`).
//!
//! An entity is a user, a client id, both, or an IP address, each named
//! or `<default>` (a null name). A describe filter holds components (an
//! entity type and EXACT name, DEFAULT or SPECIFIED); every component must
//! hold, and with `strict` the entity must have no other type. An alter
//! entry is checked as a whole (an entity's changes all apply or none
//! does), entries independently of one another. Quota values must be
//! positive, and whole numbers for the byte and connection rates.

use std::collections::{BTreeMap, HashSet};

use super::{EntityName, QuotaEntity, QuotaLimits, QuotaType};

/// INVALID_REQUEST.
pub const INVALID_REQUEST: i16 = 42;
/// UNSUPPORTED_VERSION (Kafka's answer to an unknown entity type in a filter).
pub const UNSUPPORTED_VERSION: i16 = 35;

/// The entity types, as the wire names them.
pub const USER: &str = "user";
pub const CLIENT_ID: &str = "client-id";
pub const IP: &str = "ip";
/// The one quota an IP entity takes.
pub const CONNECTION_CREATION_RATE: &str = "connection_creation_rate";

/// A refused request or entry: the error code and Kafka's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct QuotaApiError {
    pub code: i16,
    pub message: String,
}

fn invalid(message: impl Into<String>) -> QuotaApiError {
    QuotaApiError {
        code: INVALID_REQUEST,
        message: message.into(),
    }
}

/// One wire entity: `(entity_type, entity_name)`, a null name for `<default>`.
pub type WireEntity = Vec<(String, Option<String>)>;

/// An entity and its own quota values, as DescribeClientQuotas answers.
pub type DescribedEntity = (WireEntity, Vec<(String, f64)>);

/// One component of a describe filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Component {
    pub entity_type: String,
    /// 0 EXACT, 1 DEFAULT, 2 SPECIFIED.
    pub match_type: i8,
    pub name: Option<String>,
}

/// The IP quotas (`connection_creation_rate`), by address or `<default>`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IpQuotas {
    pub rates: BTreeMap<EntityName, f64>,
}

/// Every configured quota, as the admin APIs see them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuotaStore {
    pub clients: QuotaLimits,
    pub ips: IpQuotas,
}

/// What an entity is, once validated.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Entity {
    Client(QuotaEntity),
    Ip(EntityName),
}

fn name_of(n: &Option<String>) -> EntityName {
    n.clone().map_or(EntityName::Default, EntityName::Named)
}

fn wire_name(n: &EntityName) -> Option<String> {
    match n {
        EntityName::Named(s) => Some(s.clone()),
        EntityName::Default => None,
    }
}

fn entity(wire: &WireEntity) -> Result<Entity, QuotaApiError> {
    if wire.is_empty() {
        return Err(invalid("Invalid empty client quota entity"));
    }
    let mut user = None;
    let mut client = None;
    let mut ip = None;
    for (t, n) in wire {
        if n.as_deref() == Some("") {
            return Err(invalid(format!(
                "Invalid empty {t} name: use a null name for the default entity"
            )));
        }
        let slot = match t.as_str() {
            USER => &mut user,
            CLIENT_ID => &mut client,
            IP => &mut ip,
            other => {
                return Err(invalid(format!(
                    "Unhandled client quota entity type: {other}"
                )))
            }
        };
        if slot.replace(name_of(n)).is_some() {
            return Err(invalid(format!("Duplicate {t} in the client quota entity")));
        }
    }
    match (user, client, ip) {
        (None, None, Some(ip)) => {
            if let EntityName::Named(addr) = &ip {
                if addr.parse::<std::net::IpAddr>().is_err() {
                    return Err(invalid(format!("{addr} is not a valid IP address")));
                }
            }
            Ok(Entity::Ip(ip))
        }
        (_, _, Some(_)) => Err(invalid(
            "An ip entity cannot be combined with a user or client-id",
        )),
        (user, client_id, None) => Ok(Entity::Client(QuotaEntity { user, client_id })),
    }
}

fn to_wire(e: &Entity) -> WireEntity {
    match e {
        Entity::Ip(n) => vec![(IP.to_string(), wire_name(n))],
        Entity::Client(q) => {
            let mut out = Vec::new();
            if let Some(u) = &q.user {
                out.push((USER.to_string(), wire_name(u)));
            }
            if let Some(c) = &q.client_id {
                out.push((CLIENT_ID.to_string(), wire_name(c)));
            }
            out
        }
    }
}

/// One change to an entity's quota: set `value`, or remove the key.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    pub key: String,
    pub value: f64,
    pub remove: bool,
}

/// One AlterClientQuotas entry.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterEntry {
    pub entity: WireEntity,
    pub ops: Vec<Op>,
}

enum Key {
    Client(QuotaType),
    ConnectionRate,
}

fn check_op(e: &Entity, op: &Op) -> Result<Key, QuotaApiError> {
    let key = match (e, op.key.as_str()) {
        (Entity::Ip(_), CONNECTION_CREATION_RATE) => Key::ConnectionRate,
        (Entity::Ip(_), k) => {
            return Err(invalid(format!(
                "{k} is not a valid quota key for an ip entity"
            )))
        }
        (Entity::Client(_), k) => Key::Client(
            QuotaType::from_key(k)
                .ok_or_else(|| invalid(format!("Unknown client quota key: {k}")))?,
        ),
    };
    if !op.remove {
        let v = op.value;
        if !v.is_finite() || v <= 0.0 {
            return Err(invalid(format!(
                "Quota {} must be greater than 0, not {v}",
                op.key
            )));
        }
        let whole = matches!(
            key,
            Key::ConnectionRate
                | Key::Client(QuotaType::ProducerByteRate | QuotaType::ConsumerByteRate)
        );
        if whole && ((v - v.round()).abs() > 1e-6 || v > i64::MAX as f64) {
            return Err(invalid(format!(
                "Quota {} must be a whole number, not {v}",
                op.key
            )));
        }
    }
    Ok(key)
}

impl QuotaStore {
    /// AlterClientQuotas: one result per entry, in order. With
    /// `validate_only` nothing changes.
    pub fn alter(
        &mut self,
        entries: &[AlterEntry],
        validate_only: bool,
    ) -> Vec<Result<(), QuotaApiError>> {
        let mut seen: HashSet<Entity> = HashSet::new();
        let mut results = Vec::with_capacity(entries.len());
        for entry in entries {
            let result = (|| {
                let e = entity(&entry.entity)?;
                if !seen.insert(e.clone()) {
                    return Err(invalid("The same entity appears twice in the request"));
                }
                let mut keys = HashSet::new();
                let mut changes = Vec::new();
                for op in &entry.ops {
                    if !keys.insert(op.key.as_str()) {
                        return Err(invalid(format!(
                            "Duplicate quota key {} for one entity",
                            op.key
                        )));
                    }
                    changes.push((check_op(&e, op)?, (!op.remove).then_some(op.value)));
                }
                Ok((e, changes))
            })();
            match result {
                Ok((e, changes)) => {
                    if !validate_only {
                        for (key, value) in changes {
                            match (&e, key) {
                                (Entity::Client(q), Key::Client(t)) => {
                                    self.clients.set(q.clone(), t, value)
                                }
                                (Entity::Ip(n), Key::ConnectionRate) => match value {
                                    Some(v) => {
                                        self.ips.rates.insert(n.clone(), v);
                                    }
                                    None => {
                                        self.ips.rates.remove(n);
                                    }
                                },
                                _ => {}
                            }
                        }
                    }
                    results.push(Ok(()));
                }
                Err(err) => results.push(Err(err)),
            }
        }
        results
    }

    /// Every entity with at least one quota, and its own values (not the
    /// quota that applies to it after precedence).
    fn entities(&self) -> BTreeMap<WireEntity, Vec<(String, f64)>> {
        let mut out: BTreeMap<WireEntity, Vec<(String, f64)>> = BTreeMap::new();
        for (q, t, v) in self.clients.entries() {
            out.entry(to_wire(&Entity::Client(q)))
                .or_default()
                .push((t.key().to_string(), v));
        }
        for (n, v) in &self.ips.rates {
            out.entry(to_wire(&Entity::Ip(n.clone())))
                .or_default()
                .push((CONNECTION_CREATION_RATE.into(), *v));
        }
        out
    }

    /// DescribeClientQuotas: the entities the filter selects, with their values.
    pub fn describe(
        &self,
        components: &[Component],
        strict: bool,
    ) -> Result<Vec<DescribedEntity>, QuotaApiError> {
        let mut types = HashSet::new();
        for c in components {
            match c.entity_type.as_str() {
                "" => return Err(invalid("Invalid empty entity type in the filter")),
                USER | CLIENT_ID | IP => {}
                other => {
                    return Err(QuotaApiError {
                        code: UNSUPPORTED_VERSION,
                        message: format!("Custom entity type {other} is not supported"),
                    })
                }
            }
            if !types.insert(c.entity_type.as_str()) {
                return Err(invalid(format!(
                    "Entity type {} appears twice in the filter",
                    c.entity_type
                )));
            }
            match (c.match_type, &c.name) {
                (0, Some(_)) | (1, None) | (2, None) => {}
                (0, None) => return Err(invalid("An EXACT match needs a name")),
                (1 | 2, Some(_)) => {
                    return Err(invalid("A DEFAULT or SPECIFIED match takes no name"))
                }
                (m, _) => return Err(invalid(format!("Unknown match type {m}"))),
            }
        }
        if types.contains(IP) && (types.contains(USER) || types.contains(CLIENT_ID)) {
            return Err(invalid(
                "An ip filter cannot be combined with user or client-id",
            ));
        }
        Ok(self
            .entities()
            .into_iter()
            .filter(|(wire, _)| {
                let holds = components.iter().all(|c| {
                    wire.iter().any(|(t, n)| {
                        *t == c.entity_type
                            && match c.match_type {
                                0 => n == &c.name,
                                1 => n.is_none(),
                                _ => n.is_some(),
                            }
                    })
                });
                holds && (!strict || wire.len() == components.len())
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(parts: &[(&str, Option<&str>)]) -> WireEntity {
        parts
            .iter()
            .map(|(t, n)| (t.to_string(), n.map(String::from)))
            .collect()
    }

    fn set(entity: WireEntity, key: &str, value: f64) -> AlterEntry {
        AlterEntry {
            entity,
            ops: vec![Op {
                key: key.into(),
                value,
                remove: false,
            }],
        }
    }

    fn comp(t: &str, m: i8, n: Option<&str>) -> Component {
        Component {
            entity_type: t.into(),
            match_type: m,
            name: n.map(String::from),
        }
    }

    fn store() -> QuotaStore {
        let mut s = QuotaStore::default();
        let r = s.alter(
            &[
                set(e(&[(USER, Some("alice"))]), "producer_byte_rate", 1024.0),
                set(
                    e(&[(USER, Some("alice")), (CLIENT_ID, Some("app"))]),
                    "consumer_byte_rate",
                    2048.0,
                ),
                set(e(&[(USER, None)]), "request_percentage", 50.5),
                set(e(&[(CLIENT_ID, None)]), "producer_byte_rate", 10.0),
                set(e(&[(IP, Some("10.0.0.1"))]), CONNECTION_CREATION_RATE, 5.0),
            ],
            false,
        );
        assert!(r.iter().all(Result::is_ok), "{r:?}");
        s
    }

    #[test]
    fn what_kafka_configs_sends_and_reads_back() {
        let s = store();
        // kafka-configs.sh --describe --entity-type users --entity-name alice
        let got = s
            .describe(&[comp(USER, 0, Some("alice"))], true)
            .expect("valid");
        assert_eq!(
            got,
            vec![(
                e(&[(USER, Some("alice"))]),
                vec![("producer_byte_rate".into(), 1024.0)]
            )]
        );
        // Not strict: alice's (user, client-id) entity too.
        assert_eq!(
            s.describe(&[comp(USER, 0, Some("alice"))], false)
                .expect("valid")
                .len(),
            2
        );
        // DEFAULT and SPECIFIED.
        let defaults = s.describe(&[comp(USER, 1, None)], true).expect("valid");
        assert_eq!(
            defaults,
            vec![(
                e(&[(USER, None)]),
                vec![("request_percentage".into(), 50.5)]
            )]
        );
        assert_eq!(
            s.describe(&[comp(USER, 2, None)], false)
                .expect("valid")
                .len(),
            2
        );
        assert_eq!(
            s.describe(&[comp(CLIENT_ID, 1, None)], false)
                .expect("valid")
                .len(),
            1
        );
        assert_eq!(
            s.describe(&[comp(IP, 2, None)], true).expect("valid").len(),
            1
        );
        // No components: everything, or nothing when strict.
        assert_eq!(s.describe(&[], false).expect("valid").len(), 5);
        assert_eq!(s.describe(&[], true).expect("valid").len(), 0);
    }

    #[test]
    fn removal_and_validate_only() {
        let mut s = store();
        let remove = AlterEntry {
            entity: e(&[(USER, Some("alice"))]),
            ops: vec![Op {
                key: "producer_byte_rate".into(),
                value: 0.0,
                remove: true,
            }],
        };
        assert_eq!(s.alter(std::slice::from_ref(&remove), true), vec![Ok(())]);
        assert_eq!(
            s.describe(&[comp(USER, 0, Some("alice"))], true)
                .expect("valid")
                .len(),
            1
        );
        assert_eq!(s.alter(std::slice::from_ref(&remove), false), vec![Ok(())]);
        assert!(s
            .describe(&[comp(USER, 0, Some("alice"))], true)
            .expect("valid")
            .is_empty());
        // Removing what is not set succeeds and changes nothing.
        assert_eq!(s.alter(&[remove], false), vec![Ok(())]);
        // The quota that applies follows.
        let key = s
            .clients
            .share_key(QuotaType::ProducerByteRate, "alice", "x");
        assert_eq!(
            s.clients.limit(QuotaType::ProducerByteRate, &key),
            Some(10.0)
        );
    }

    #[test]
    fn alter_validates_each_entry_whole() {
        let mut s = QuotaStore::default();
        let entries = vec![
            set(e(&[(USER, Some("a"))]), "producer_byte_rate", 0.0),
            set(e(&[(USER, Some("b"))]), "producer_byte_rate", 1.5),
            set(e(&[(USER, Some("c"))]), "request_percentage", 1.5),
            set(e(&[(USER, Some("d"))]), "bogus", 1.0),
            set(e(&[(IP, Some("10.0.0.1"))]), "producer_byte_rate", 1.0),
            set(
                e(&[(IP, Some("host.example"))]),
                CONNECTION_CREATION_RATE,
                1.0,
            ),
            set(
                e(&[(IP, None), (USER, None)]),
                CONNECTION_CREATION_RATE,
                1.0,
            ),
            set(e(&[(USER, Some(""))]), "producer_byte_rate", 1.0),
            set(
                e(&[(USER, Some("e")), (USER, Some("f"))]),
                "producer_byte_rate",
                1.0,
            ),
            set(e(&[("group", Some("g"))]), "producer_byte_rate", 1.0),
            set(vec![], "producer_byte_rate", 1.0),
            AlterEntry {
                entity: e(&[(USER, Some("g"))]),
                ops: vec![
                    Op {
                        key: "producer_byte_rate".into(),
                        value: 5.0,
                        remove: false,
                    },
                    Op {
                        key: "consumer_byte_rate".into(),
                        value: -1.0,
                        remove: false,
                    },
                ],
            },
            set(e(&[(USER, Some("h"))]), "producer_byte_rate", f64::NAN),
            set(e(&[(USER, Some("c"))]), "consumer_byte_rate", 7.0),
        ];
        let r = s.alter(&entries, false);
        let codes: Vec<Option<i16>> = r.iter().map(|x| x.as_ref().err().map(|e| e.code)).collect();
        let mut want = vec![Some(INVALID_REQUEST); entries.len()];
        want[2] = None; // request_percentage takes fractions
        assert_eq!(codes, want, "{r:?}");
        // The refused entry with a good op changed nothing: all or nothing per entity.
        assert!(s
            .describe(&[comp(USER, 0, Some("g"))], true)
            .expect("valid")
            .is_empty());
        assert_eq!(
            s.describe(&[comp(USER, 0, Some("c"))], true)
                .expect("valid")
                .len(),
            1
        );
    }

    #[test]
    fn bad_filters() {
        let s = store();
        for (components, code) in [
            (vec![comp("", 0, Some("x"))], INVALID_REQUEST),
            (vec![comp("group", 0, Some("x"))], UNSUPPORTED_VERSION),
            (vec![comp(USER, 0, None)], INVALID_REQUEST),
            (vec![comp(USER, 1, Some("x"))], INVALID_REQUEST),
            (vec![comp(USER, 3, None)], INVALID_REQUEST),
            (
                vec![comp(USER, 2, None), comp(USER, 1, None)],
                INVALID_REQUEST,
            ),
            (
                vec![comp(IP, 2, None), comp(USER, 2, None)],
                INVALID_REQUEST,
            ),
        ] {
            assert_eq!(
                s.describe(&components, false).map_err(|e| e.code),
                Err(code),
                "{components:?}"
            );
        }
    }
}
