//! The listeners' security settings, typed once at load: which listeners
//! there are and their protocols (`listeners`, `advertised.listeners`,
//! `listener.security.protocol.map`, the inter-broker listener), each SASL
//! listener's mechanisms and PLAIN users, each TLS listener's key store,
//! trust store, client authentication and principal mapping rules.
//!
//! Per-listener values follow Kafka: `listener.name.<listener>.<setting>`
//! wins over `<setting>`, and SASL login modules are given per listener
//! and mechanism (`listener.name.<listener>.<mechanism>.sasl.jaas.config`).
//! Files are named here and read by the server when it starts (the PEM
//! stores can be reloaded at run time).

use std::path::PathBuf;
use std::time::Duration;

use strata_security::authorizer::{parse_super_users, AuthorizerConfig};
use strata_security::jaas::JaasConfig;
use strata_security::listeners::{ListenerSettings, Listeners, SecurityProtocol};
use strata_security::plain::PlainUsers;
use strata_security::principal_mapping::PrincipalMapper;
use strata_security::sasl::SaslMechanism;

use super::defs::ConfigDef;
use super::security_defs::LISTENER_OVERRIDABLE;
use super::{broker_def, parse_list, ConfigError, Values};

/// What a `listener.name.<listener>.…` setting names.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PerListener {
    /// A broker setting, for this listener.
    Setting(&'static ConfigDef),
    /// A mechanism's `sasl.jaas.config`.
    Jaas(SaslMechanism),
}

/// Splits `listener.name.<listener>.<rest>` (None: not such a name, or
/// one naming no setting a listener can override).
pub(crate) fn listener_setting(name: &str) -> Option<(String, PerListener)> {
    let rest = name.strip_prefix("listener.name.")?;
    let (listener, setting) = rest.split_once('.')?;
    if listener.is_empty() {
        return None;
    }
    if LISTENER_OVERRIDABLE.contains(&setting) {
        return Some((
            listener.to_string(),
            PerListener::Setting(broker_def(setting)?),
        ));
    }
    let mechanism = setting.strip_suffix(".sasl.jaas.config")?;
    let mechanism = SaslMechanism::from_name(&mechanism.to_ascii_uppercase())?;
    Some((listener.to_string(), PerListener::Jaas(mechanism)))
}

/// Checks a `sasl.jaas.config` value. The message never holds the value
/// (it holds passwords).
pub(crate) fn check_jaas(name: &str, value: &str) -> Result<(), String> {
    let config = JaasConfig::parse(value)
        .map_err(|e| format!("Invalid value for configuration {name}: {e}"))?;
    if let Some((_, PerListener::Jaas(SaslMechanism::Plain))) = listener_setting(name) {
        PlainUsers::from_jaas(&config)
            .map_err(|e| format!("Invalid value for configuration {name}: {e}"))?;
    }
    Ok(())
}

/// A SASL listener's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SaslListener {
    /// `sasl.enabled.mechanisms`, as offered.
    pub mechanisms: Vec<SaslMechanism>,
    /// PLAIN's users (from the listener's `plain.sasl.jaas.config`).
    pub plain: PlainUsers,
    /// `connections.max.reauth.ms` (None: 0, sessions do not end).
    pub max_reauth_ms: Option<i64>,
    /// `sasl.server.max.receive.size`.
    pub max_receive_size: usize,
}

/// Where a PEM key store is.
#[derive(Clone, PartialEq, Eq)]
pub enum KeyStore {
    /// `ssl.keystore.location`: the key, then the chain, in one file.
    File(PathBuf),
    /// `ssl.keystore.key` and `ssl.keystore.certificate.chain`.
    Inline { key: String, chain: String },
}

impl std::fmt::Debug for KeyStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeyStore::File(p) => f.debug_tuple("File").field(p).finish(),
            KeyStore::Inline { .. } => f.write_str("Inline { .. }"),
        }
    }
}

/// Where a PEM trust store is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustStore {
    File(PathBuf),
    Inline(String),
}

/// `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    None,
    Requested,
    Required,
}

/// A TLS listener's settings.
#[derive(Debug, Clone)]
pub struct SslListener {
    pub keystore: KeyStore,
    pub truststore: Option<TrustStore>,
    pub client_auth: ClientAuth,
    pub tls12: bool,
    pub tls13: bool,
    /// `ssl.principal.mapping.rules` as written, and parsed.
    pub principal_mapping_rules: String,
    pub principal_mapper: PrincipalMapper,
}

impl PartialEq for SslListener {
    fn eq(&self, o: &Self) -> bool {
        self.keystore == o.keystore
            && self.truststore == o.truststore
            && self.client_auth == o.client_auth
            && self.tls12 == o.tls12
            && self.tls13 == o.tls13
            && self.principal_mapping_rules == o.principal_mapping_rules
    }
}

/// One listener's security.
#[derive(Debug, Clone, PartialEq)]
pub struct ListenerSecurity {
    /// The listener's name, upper case.
    pub name: String,
    pub protocol: SecurityProtocol,
    /// Some on SASL_PLAINTEXT and SASL_SSL listeners.
    pub sasl: Option<SaslListener>,
    /// Some on SSL and SASL_SSL listeners.
    pub ssl: Option<SslListener>,
}

/// Every listener's security settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SecuritySettings {
    /// None: `listeners` is unset, and the broker has one PLAINTEXT
    /// listener at `--listen`.
    pub listeners: Option<Listeners>,
    /// Each listener's security, in `listeners`' order.
    pub per_listener: Vec<ListenerSecurity>,
    /// `connection.failed.authentication.delay.ms`.
    pub failed_authentication_delay: Duration,
    /// Some when `authorizer.class.name` names the standard authorizer:
    /// `super.users` and `allow.everyone.if.no.acl.found`.
    pub authorizer: Option<AuthorizerConfig>,
}

impl SecuritySettings {
    /// A listener's security by name.
    pub fn listener(&self, name: &str) -> Option<&ListenerSecurity> {
        self.per_listener
            .iter()
            .find(|l| l.name.eq_ignore_ascii_case(name))
    }

    pub(super) fn parse(
        v: &Values,
        failed_authentication_delay: Duration,
        authorizer: Option<AuthorizerConfig>,
    ) -> Result<SecuritySettings, ConfigError> {
        let invalid = ConfigError::Invalid;
        // Every per-listener setting must name a listener that exists.
        let listeners_value = v.value("listeners");
        if listeners_value.trim().is_empty() {
            for name in v.0.keys() {
                if listener_setting(name).is_some() {
                    return Err(invalid(format!(
                        "{name} is set but `listeners` is not: per-listener settings need named listeners"
                    )));
                }
            }
            if v.is_explicit("advertised.listeners") {
                return Err(invalid(
                    "advertised.listeners is set but listeners is not".to_string(),
                ));
            }
            return Ok(SecuritySettings {
                listeners: None,
                per_listener: Vec::new(),
                failed_authentication_delay,
                authorizer,
            });
        }
        let explicit = |n: &str| v.explicit(n).map(str::to_string);
        let advertised = explicit("advertised.listeners");
        let map = explicit("listener.security.protocol.map");
        let ibl = explicit("inter.broker.listener.name");
        let sibp = explicit("security.inter.broker.protocol");
        let listeners = Listeners::parse(&ListenerSettings {
            listeners: &listeners_value,
            advertised_listeners: advertised.as_deref(),
            protocol_map: map.as_deref(),
            inter_broker_listener_name: ibl.as_deref(),
            security_inter_broker_protocol: sibp.as_deref(),
        })
        .map_err(|e| invalid(e.0))?;
        for name in v.0.keys() {
            if let Some((l, _)) = listener_setting(name) {
                if listeners.get(&l).is_none() {
                    return Err(invalid(format!(
                        "{name} names listener {l}, which `listeners` does not define"
                    )));
                }
            }
        }
        let mut per_listener = Vec::new();
        for e in &listeners.listeners {
            let sasl = if e.protocol.uses_sasl() {
                Some(sasl_listener(v, &e.name)?)
            } else {
                None
            };
            let ssl = if e.protocol.uses_tls() {
                Some(ssl_listener(v, &e.name)?)
            } else {
                None
            };
            per_listener.push(ListenerSecurity {
                name: e.name.clone(),
                protocol: e.protocol,
                sasl,
                ssl,
            });
        }
        Ok(SecuritySettings {
            listeners: Some(listeners),
            per_listener,
            failed_authentication_delay,
            authorizer,
        })
    }
}

/// The authorizer's settings, when `authorizer.class.name` names one (the
/// validator has refused every other name).
pub(super) fn authorizer_config(
    class_name: &str,
    super_users: &str,
    allow_everyone_if_no_acl_found: bool,
) -> Result<Option<AuthorizerConfig>, ConfigError> {
    if class_name.trim().is_empty() {
        return Ok(None);
    }
    let super_users = parse_super_users(super_users)
        .map_err(|e| ConfigError::Invalid(format!("super.users: {}", e.0)))?;
    Ok(Some(AuthorizerConfig {
        super_users,
        allow_everyone_if_no_acl_found,
    }))
}

fn sasl_listener(v: &Values, listener: &str) -> Result<SaslListener, ConfigError> {
    let invalid = ConfigError::Invalid;
    let lower = listener.to_ascii_lowercase();
    let mut mechanisms = Vec::new();
    for name in parse_list(&v.for_listener(listener, "sasl.enabled.mechanisms")) {
        match SaslMechanism::from_name(&name) {
            Some(m) if !mechanisms.contains(&m) => mechanisms.push(m),
            Some(_) => {}
            None => {
                return Err(invalid(format!(
                    "listener {listener}: SASL mechanism {name} is not served (Strata serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER); set sasl.enabled.mechanisms"
                )))
            }
        }
    }
    if mechanisms.is_empty() {
        return Err(invalid(format!(
            "listener {listener} is a SASL listener but sasl.enabled.mechanisms is empty"
        )));
    }
    if mechanisms.contains(&SaslMechanism::OAuthBearer) {
        return Err(invalid(format!(
            "listener {listener}: OAUTHBEARER is not served on a listener yet (docs/security-plan.md, step 5)"
        )));
    }
    let plain = if mechanisms.contains(&SaslMechanism::Plain) {
        let name = format!("listener.name.{lower}.plain.sasl.jaas.config");
        let value = v.explicit(&name).ok_or_else(|| {
            invalid(format!(
                "listener {listener} offers PLAIN but {name} is not set (PlainLoginModule required user_<name>=\"<password>\" …;)"
            ))
        })?;
        let jaas = JaasConfig::parse(value)
            .map_err(|e| invalid(format!("Invalid value for configuration {name}: {e}")))?;
        PlainUsers::from_jaas(&jaas)
            .map_err(|e| invalid(format!("Invalid value for configuration {name}: {e}")))?
    } else {
        PlainUsers::default()
    };
    let reauth: i64 = v
        .for_listener(listener, "connections.max.reauth.ms")
        .parse()
        .unwrap_or(0);
    let max_receive_size: usize = v
        .for_listener(listener, "sasl.server.max.receive.size")
        .parse()
        .unwrap_or(524_288);
    Ok(SaslListener {
        mechanisms,
        plain,
        max_reauth_ms: (reauth > 0).then_some(reauth),
        max_receive_size,
    })
}

fn ssl_listener(v: &Values, listener: &str) -> Result<SslListener, ConfigError> {
    let invalid = ConfigError::Invalid;
    let get = |n: &str| v.for_listener(listener, n);
    let set = |n: &str| !get(n).trim().is_empty();
    if !get("ssl.keystore.type").eq_ignore_ascii_case("PEM") {
        return Err(invalid(format!(
            "listener {listener} uses TLS: Strata reads PEM key stores only; set ssl.keystore.type=PEM (it is {})",
            get("ssl.keystore.type")
        )));
    }
    if set("ssl.key.password") {
        return Err(invalid(format!(
            "listener {listener}: encrypted private keys are not supported yet; give an unencrypted PKCS#8 key and unset ssl.key.password"
        )));
    }
    let keystore = match (
        set("ssl.keystore.location"),
        set("ssl.keystore.key"),
        set("ssl.keystore.certificate.chain"),
    ) {
        (true, false, false) => KeyStore::File(PathBuf::from(get("ssl.keystore.location"))),
        (false, true, true) => KeyStore::Inline {
            key: get("ssl.keystore.key"),
            chain: get("ssl.keystore.certificate.chain"),
        },
        (false, false, false) => {
            return Err(invalid(format!(
                "listener {listener} uses TLS but has no key store: set ssl.keystore.location (or ssl.keystore.key and ssl.keystore.certificate.chain)"
            )))
        }
        _ => {
            return Err(invalid(format!(
                "listener {listener}: give ssl.keystore.location, or both ssl.keystore.key and ssl.keystore.certificate.chain, not a mix"
            )))
        }
    };
    let truststore = match (
        set("ssl.truststore.location"),
        set("ssl.truststore.certificates"),
    ) {
        (false, false) => None,
        (true, true) => {
            return Err(invalid(format!(
                "listener {listener}: give ssl.truststore.location or ssl.truststore.certificates, not both"
            )))
        }
        (file, _) => {
            if !get("ssl.truststore.type").eq_ignore_ascii_case("PEM") {
                return Err(invalid(format!(
                    "listener {listener}: Strata reads PEM trust stores only; set ssl.truststore.type=PEM"
                )));
            }
            Some(if file {
                TrustStore::File(PathBuf::from(get("ssl.truststore.location")))
            } else {
                TrustStore::Inline(get("ssl.truststore.certificates"))
            })
        }
    };
    let client_auth = match get("ssl.client.auth").as_str() {
        "required" => ClientAuth::Required,
        "requested" => ClientAuth::Requested,
        _ => ClientAuth::None,
    };
    if client_auth != ClientAuth::None && truststore.is_none() {
        return Err(invalid(format!(
            "listener {listener}: ssl.client.auth={} needs a trust store to check client certificates (ssl.truststore.location)",
            get("ssl.client.auth")
        )));
    }
    let protocols = parse_list(&get("ssl.enabled.protocols"));
    let rules = get("ssl.principal.mapping.rules");
    let principal_mapper = PrincipalMapper::parse(&rules).map_err(|e| {
        invalid(format!(
            "listener {listener}: ssl.principal.mapping.rules: {e}"
        ))
    })?;
    Ok(SslListener {
        keystore,
        truststore,
        client_auth,
        tls12: protocols.iter().any(|p| p == "TLSv1.2"),
        tls13: protocols.iter().any(|p| p == "TLSv1.3"),
        principal_mapping_rules: rules,
        principal_mapper,
    })
}

#[cfg(test)]
mod tests {
    use super::super::BrokerConfig;
    use super::*;

    fn load(sets: &[&str]) -> Result<BrokerConfig, ConfigError> {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        BrokerConfig::load(None, &sets)
    }

    const PLAIN: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required user_alice=\"alice-secret\";";

    #[test]
    fn unset_listeners_mean_the_listen_flag() {
        let c = load(&[]).unwrap();
        assert!(c.settings().security.listeners.is_none());
        let e = load(&["listener.name.client.ssl.client.auth=required"]).unwrap_err();
        assert!(e.to_string().contains("`listeners` is not"), "{e}");
    }

    #[test]
    fn listeners_with_sasl_and_tls() {
        let jaas = format!("listener.name.client.plain.sasl.jaas.config={PLAIN}");
        let c = load(&[
            "listeners=CLIENT://127.0.0.1:9093,BROKER://127.0.0.1:9094",
            "listener.security.protocol.map=CLIENT:SASL_SSL,BROKER:PLAINTEXT",
            "inter.broker.listener.name=BROKER",
            "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-512",
            &jaas,
            "ssl.keystore.type=PEM",
            "ssl.keystore.location=/etc/strata/broker.pem",
            "listener.name.client.ssl.client.auth=requested",
            "ssl.truststore.type=PEM",
            "ssl.truststore.location=/etc/strata/ca.pem",
        ])
        .unwrap();
        let s = &c.settings().security;
        let client = s.listener("client").unwrap();
        assert_eq!(client.protocol, SecurityProtocol::SaslSsl);
        let sasl = client.sasl.as_ref().unwrap();
        assert_eq!(
            sasl.mechanisms,
            vec![
                SaslMechanism::Plain,
                SaslMechanism::Scram(strata_security::scram::ScramMechanism::Sha512)
            ]
        );
        assert_eq!(sasl.plain.len(), 1);
        let ssl = client.ssl.as_ref().unwrap();
        assert_eq!(ssl.client_auth, ClientAuth::Requested);
        assert!(ssl.tls12 && ssl.tls13);
        let broker = s.listener("BROKER").unwrap();
        assert!(broker.sasl.is_none() && broker.ssl.is_none());
        assert_eq!(s.listeners.as_ref().unwrap().inter_broker, "BROKER");
        // The JAAS line is a secret: never in what DescribeConfigs sees by name.
        assert!(!format!("{c:?}").contains("alice-secret"));
    }

    #[test]
    fn refusals_name_the_listener_and_the_setting() {
        let base = [
            "listeners=SASL_SSL://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9094",
            "ssl.keystore.type=PEM",
            "ssl.keystore.location=/k.pem",
        ];
        let with = |extra: &[&str]| {
            let mut v: Vec<&str> = base.to_vec();
            v.extend_from_slice(extra);
            load(&v).unwrap_err().to_string()
        };
        assert!(with(&[]).contains("sasl.enabled.mechanisms"));
        assert!(with(&["sasl.enabled.mechanisms=PLAIN"]).contains("plain.sasl.jaas.config"));
        assert!(with(&[
            "sasl.enabled.mechanisms=SCRAM-SHA-256",
            "ssl.key.password=x"
        ])
        .contains("encrypted private keys"));
        assert!(with(&[
            "sasl.enabled.mechanisms=SCRAM-SHA-256",
            "ssl.client.auth=required"
        ])
        .contains("trust store"));
        assert!(with(&[
            "sasl.enabled.mechanisms=SCRAM-SHA-256",
            "listener.name.other.ssl.client.auth=none"
        ])
        .contains("names listener other"));
        let e = load(&[
            "listeners=SSL://127.0.0.1:9093,PLAINTEXT://127.0.0.1:9094",
            "ssl.keystore.location=/k.pem",
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("ssl.keystore.type=PEM"), "{e}");
        // A broken JAAS line is refused without echoing it.
        let e = load(&["listener.name.x.plain.sasl.jaas.config=org.Foo required user_a=\"pw1\""])
            .unwrap_err()
            .to_string();
        assert!(!e.contains("pw1"), "{e}");
    }
}
