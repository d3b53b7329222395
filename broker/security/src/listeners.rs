//! Named listeners as Kafka configures them: `listeners`,
//! `advertised.listeners`, `listener.security.protocol.map`,
//! `inter.broker.listener.name` and `security.inter.broker.protocol`,
//! with Kafka's rules (`KafkaConfig`, `CoreUtils.listenerListToEndPoints`).
//!
//! A listener is `NAME://host:port`; the name is case-insensitive (kept
//! upper-case, Kafka's `ListenerName.normalised`) and maps to one of the
//! four security protocols; an empty host is every interface; an IPv6
//! address is written in brackets. Names must differ, and so must ports
//! (but for an IPv4 and an IPv6 address sharing one); advertised
//! listeners are a subset of the listeners by name, default to them, and
//! cannot advertise `0.0.0.0`; the inter-broker listener is named by
//! `inter.broker.listener.name` or by the protocol
//! `security.inter.broker.protocol` (not both) and must be advertised.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::IpAddr;

/// Kafka's security protocols (and their wire ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    pub const ALL: &'static [SecurityProtocol] = &[
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// Kafka's `SecurityProtocol.id`.
    pub fn id(self) -> i16 {
        match self {
            SecurityProtocol::Plaintext => 0,
            SecurityProtocol::Ssl => 1,
            SecurityProtocol::SaslPlaintext => 2,
            SecurityProtocol::SaslSsl => 3,
        }
    }

    /// Case-insensitive, as Kafka's `SecurityProtocol.forName`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|p| p.name().eq_ignore_ascii_case(name.trim()))
    }

    pub fn uses_tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    pub fn uses_sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One listener: its name, where it binds (or is advertised), its protocol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub name: String,
    /// `None`: every interface.
    pub host: Option<String>,
    pub port: u16,
    pub protocol: SecurityProtocol,
}

/// Listener settings Kafka would refuse; the broker does not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ListenerError(pub String);

fn err(m: impl Into<String>) -> ListenerError {
    ListenerError(m.into())
}

/// `listener.security.protocol.map`'s default.
pub const DEFAULT_PROTOCOL_MAP: &str =
    "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL";

/// Parses `listener.security.protocol.map` (`NAME:PROTOCOL,…`).
pub fn parse_protocol_map(value: &str) -> Result<HashMap<String, SecurityProtocol>, ListenerError> {
    let mut out = HashMap::new();
    for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, protocol) = entry.split_once(':').ok_or_else(|| {
            err(format!(
                "listener.security.protocol.map: `{entry}` is not NAME:PROTOCOL"
            ))
        })?;
        let protocol = SecurityProtocol::from_name(protocol).ok_or_else(|| {
            err(format!(
                "Invalid security protocol `{}` defined in listener.security.protocol.map",
                protocol.trim()
            ))
        })?;
        if out
            .insert(name.trim().to_ascii_uppercase(), protocol)
            .is_some()
        {
            return Err(err(format!(
                "listener.security.protocol.map names {} twice",
                name.trim()
            )));
        }
    }
    Ok(out)
}

/// Parses a `listeners` or `advertised.listeners` value.
pub fn parse_endpoints(
    setting: &str,
    value: &str,
    protocols: &HashMap<String, SecurityProtocol>,
    require_distinct_ports: bool,
) -> Result<Vec<Endpoint>, ListenerError> {
    let mut out: Vec<Endpoint> = Vec::new();
    for item in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (name, rest) = item
            .split_once("://")
            .ok_or_else(|| err(format!("{setting}: `{item}` is not NAME://host:port")))?;
        let name = name.trim().to_ascii_uppercase();
        let (host, port) = rest
            .rsplit_once(':')
            .ok_or_else(|| err(format!("{setting}: `{item}` has no port")))?;
        let host = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        if !host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-%._:".contains(c))
        {
            return Err(err(format!("{setting}: `{item}` has an invalid host")));
        }
        let port: u16 = port.parse().map_err(|_| {
            err(format!(
                "{setting}: `{item}` has an invalid port (0 to 65535)"
            ))
        })?;
        let protocol = *protocols.get(&name).ok_or_else(|| {
            err(format!(
                "No security protocol defined for listener {name} (listener.security.protocol.map)"
            ))
        })?;
        out.push(Endpoint {
            name,
            host: (!host.is_empty()).then(|| host.to_string()),
            port,
            protocol,
        });
    }
    for (i, a) in out.iter().enumerate() {
        if out[..i].iter().any(|b| b.name == a.name) {
            return Err(err(format!(
                "Each listener must have a different name, {setting}: {value}"
            )));
        }
    }
    if require_distinct_ports {
        let mut by_port: BTreeMap<u16, Vec<&Endpoint>> = BTreeMap::new();
        for e in out.iter().filter(|e| e.port != 0) {
            by_port.entry(e.port).or_default().push(e);
        }
        for (port, eps) in by_port.into_iter().filter(|(_, eps)| eps.len() > 1) {
            let ip = |e: &&Endpoint| e.host.as_deref().and_then(|h| h.parse::<IpAddr>().ok());
            let v4_and_v6 = eps.len() == 2
                && matches!((ip(&eps[0]), ip(&eps[1])), (Some(a), Some(b)) if a.is_ipv4() != b.is_ipv4());
            if !v4_and_v6 {
                return Err(err(format!(
                    "Each listener must have a different port (or be an IPv4 and an IPv6 address), {setting}: {value}, port: {port}"
                )));
            }
        }
    }
    Ok(out)
}

/// The broker's listeners, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listeners {
    pub listeners: Vec<Endpoint>,
    pub advertised: Vec<Endpoint>,
    /// The listener brokers talk to each other on.
    pub inter_broker: String,
}

/// The raw values of the settings (None: unset).
#[derive(Clone, Debug, Default)]
pub struct ListenerSettings<'a> {
    pub listeners: &'a str,
    pub advertised_listeners: Option<&'a str>,
    pub protocol_map: Option<&'a str>,
    pub inter_broker_listener_name: Option<&'a str>,
    pub security_inter_broker_protocol: Option<&'a str>,
}

impl Listeners {
    pub fn parse(s: &ListenerSettings<'_>) -> Result<Listeners, ListenerError> {
        let protocols = parse_protocol_map(s.protocol_map.unwrap_or(DEFAULT_PROTOCOL_MAP))?;
        let listeners = parse_endpoints("listeners", s.listeners, &protocols, true)?;
        if listeners.is_empty() {
            return Err(err("listeners must name at least one listener"));
        }
        let advertised = match s.advertised_listeners {
            Some(v) => parse_endpoints("advertised.listeners", v, &protocols, false)?,
            None => listeners.clone(),
        };
        if advertised
            .iter()
            .any(|e| e.host.as_deref() == Some("0.0.0.0"))
        {
            return Err(err("advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address."));
        }
        if let Some(extra) = advertised
            .iter()
            .find(|a| !listeners.iter().any(|l| l.name == a.name))
        {
            return Err(err(format!(
                "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners ({} is not)",
                extra.name
            )));
        }
        let inter_broker = match (s.inter_broker_listener_name, s.security_inter_broker_protocol) {
            (Some(_), Some(_)) => {
                return Err(err("Only one of inter.broker.listener.name and security.inter.broker.protocol should be set."))
            }
            (Some(name), None) => {
                let name = name.trim().to_ascii_uppercase();
                if !protocols.contains_key(&name) {
                    return Err(err(format!(
                        "Listener with name {name} defined in inter.broker.listener.name not found in listener.security.protocol.map."
                    )));
                }
                name
            }
            (None, protocol) => {
                let protocol = protocol.unwrap_or("PLAINTEXT");
                SecurityProtocol::from_name(protocol)
                    .ok_or_else(|| {
                        err(format!("Invalid security protocol `{protocol}` defined in security.inter.broker.protocol"))
                    })?
                    .name()
                    .to_string()
            }
        };
        if !advertised.iter().any(|e| e.name == inter_broker) {
            return Err(err(format!(
                "inter.broker.listener.name must be a listener name defined in advertised.listeners ({inter_broker} is not)"
            )));
        }
        Ok(Listeners {
            listeners,
            advertised,
            inter_broker,
        })
    }

    /// A listener by name.
    pub fn get(&self, name: &str) -> Option<&Endpoint> {
        self.listeners
            .iter()
            .find(|e| e.name.eq_ignore_ascii_case(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(listeners: &str) -> Result<Listeners, ListenerError> {
        Listeners::parse(&ListenerSettings {
            listeners,
            ..Default::default()
        })
    }

    #[test]
    fn kafkas_usual_setups() {
        let l = parse("PLAINTEXT://:9092").expect("valid");
        assert_eq!(
            l.listeners[0],
            Endpoint {
                name: "PLAINTEXT".into(),
                host: None,
                port: 9092,
                protocol: SecurityProtocol::Plaintext
            }
        );
        assert_eq!(l.inter_broker, "PLAINTEXT");
        let l = Listeners::parse(&ListenerSettings {
            listeners: "client://0.0.0.0:9093,BROKER://10.0.0.5:9094",
            advertised_listeners: Some("CLIENT://kafka.example:9093,BROKER://10.0.0.5:9094"),
            protocol_map: Some("CLIENT:SASL_SSL,BROKER:ssl"),
            inter_broker_listener_name: Some("broker"),
            security_inter_broker_protocol: None,
        })
        .expect("valid");
        assert_eq!(
            l.get("client").map(|e| e.protocol),
            Some(SecurityProtocol::SaslSsl)
        );
        assert_eq!(l.advertised[0].host.as_deref(), Some("kafka.example"));
        assert_eq!(l.inter_broker, "BROKER");
        // IPv4 and IPv6 on one port; IPv6 in brackets.
        let l = Listeners::parse(&ListenerSettings {
            listeners: "A://127.0.0.1:9092,B://[::1]:9092",
            protocol_map: Some("A:PLAINTEXT,B:PLAINTEXT"),
            inter_broker_listener_name: Some("A"),
            ..Default::default()
        })
        .expect("valid");
        assert_eq!(l.listeners[1].host.as_deref(), Some("::1"));
        // By protocol: SASL_SSL names the SASL_SSL listener.
        let l = Listeners::parse(&ListenerSettings {
            listeners: "PLAINTEXT://:9092,SASL_SSL://:9093",
            security_inter_broker_protocol: Some("sasl_ssl"),
            ..Default::default()
        })
        .expect("valid");
        assert_eq!(l.inter_broker, "SASL_SSL");
    }

    #[test]
    fn kafkas_refusals() {
        for (settings, want) in [
            (
                ListenerSettings {
                    listeners: "PLAINTEXT://:9092,plaintext://:9093",
                    ..Default::default()
                },
                "different name",
            ),
            (
                ListenerSettings {
                    listeners: "PLAINTEXT://:9092,SSL://:9092",
                    ..Default::default()
                },
                "different port",
            ),
            (
                ListenerSettings {
                    listeners: "CLIENT://:9092",
                    ..Default::default()
                },
                "No security protocol",
            ),
            (
                ListenerSettings {
                    listeners: "PLAINTEXT://:99999",
                    ..Default::default()
                },
                "invalid port",
            ),
            (
                ListenerSettings {
                    listeners: "PLAINTEXT:9092",
                    ..Default::default()
                },
                "NAME://host:port",
            ),
            (
                ListenerSettings {
                    listeners: "",
                    ..Default::default()
                },
                "at least one",
            ),
            (
                ListenerSettings {
                    listeners: "PLAINTEXT://:9092",
                    advertised_listeners: Some("PLAINTEXT://0.0.0.0:9092"),
                    ..Default::default()
                },
                "0.0.0.0",
            ),
            (
                ListenerSettings {
                    listeners: "PLAINTEXT://:9092",
                    advertised_listeners: Some("SSL://h:9093"),
                    ..Default::default()
                },
                "subset",
            ),
            (
                ListenerSettings {
                    listeners: "PLAINTEXT://:9092",
                    inter_broker_listener_name: Some("PLAINTEXT"),
                    security_inter_broker_protocol: Some("PLAINTEXT"),
                    ..Default::default()
                },
                "Only one of",
            ),
            (
                ListenerSettings {
                    listeners: "SSL://:9093",
                    ..Default::default()
                },
                "advertised.listeners (PLAINTEXT is not)",
            ),
            (
                ListenerSettings {
                    listeners: "PLAINTEXT://:9092",
                    protocol_map: Some("PLAINTEXT:TLS"),
                    ..Default::default()
                },
                "Invalid security protocol `TLS`",
            ),
            (
                ListenerSettings {
                    listeners: "PLAINTEXT://:9092",
                    inter_broker_listener_name: Some("OTHER"),
                    ..Default::default()
                },
                "not found in listener.security.protocol.map",
            ),
        ] {
            let e = Listeners::parse(&settings).expect_err(want).to_string();
            assert!(e.contains(want), "{want}: {e}");
        }
        // Advertised listeners may share ports (they are other hosts).
        assert!(Listeners::parse(&ListenerSettings {
            listeners: "PLAINTEXT://:9092,SSL://:9093",
            advertised_listeners: Some("PLAINTEXT://a:9092,SSL://b:9092"),
            ..Default::default()
        })
        .is_ok());
    }
}
