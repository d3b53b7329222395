//! Broker settings of listeners, TLS and SASL, under Kafka's names.
//! Descriptions only, like `defs.rs`; `security.rs` types the values.
//!
//! Each setting of `LISTENER_OVERRIDABLE` may also be given for one
//! listener with Kafka's prefix, `listener.name.<listener>.<setting>`
//! (the listener's name in lower case), and SASL's login modules per
//! mechanism as `listener.name.<listener>.<mechanism>.sasl.jaas.config`.

use super::defs::{broker, ConfigDef, ConfigType, Validator};

/// A value checked where it is typed (`security.rs`), with the
/// listener it belongs to.
fn any(_: &str) -> Result<(), String> {
    Ok(())
}

fn check_protocol_map(v: &str) -> Result<(), String> {
    strata_security::listeners::parse_protocol_map(v)
        .map(|_| ())
        .map_err(|e| e.0)
}

fn check_mechanisms(v: &str) -> Result<(), String> {
    for m in super::parse_list(v) {
        if m != "GSSAPI" && strata_security::sasl::SaslMechanism::from_name(&m).is_none() {
            return Err(format!(
                "unknown SASL mechanism {m} (Strata serves PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER)"
            ));
        }
    }
    Ok(())
}

fn check_tls_protocols(v: &str) -> Result<(), String> {
    let list = super::parse_list(v);
    if list.is_empty() {
        return Err("at least one of TLSv1.2 and TLSv1.3 must be enabled".to_string());
    }
    match list
        .iter()
        .find(|p| !["TLSv1.2", "TLSv1.3"].contains(&p.as_str()))
    {
        Some(p) => Err(format!(
            "{p} is not supported: Strata's TLS (rustls) speaks TLSv1.2 and TLSv1.3"
        )),
        None => Ok(()),
    }
}

/// `authorizer.class.name`: Kafka's names for its standard authorizer
/// (KRaft's, and ZooKeeper-era `AclAuthorizer`), which Strata's is.
pub const STANDARD_AUTHORIZERS: &[&str] = &[
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
];

fn check_authorizer(v: &str) -> Result<(), String> {
    let v = v.trim();
    if v.is_empty() || STANDARD_AUTHORIZERS.contains(&v) {
        return Ok(());
    }
    Err(format!(
        "{v} is not an authorizer Strata has: Strata's is Kafka's standard ACL authorizer; set {} (or leave it empty: no authorization)",
        STANDARD_AUTHORIZERS[0]
    ))
}

fn check_super_users(v: &str) -> Result<(), String> {
    strata_security::authorizer::parse_super_users(v)
        .map(|_| ())
        .map_err(|e| {
            format!(
                "{} (super.users is principals separated by ';', as User:admin;User:ops)",
                e.0
            )
        })
}

fn check_mapping_rules(v: &str) -> Result<(), String> {
    strata_security::principal_mapping::PrincipalMapper::parse(v)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// Settings a listener may override with `listener.name.<listener>.`.
pub(crate) const LISTENER_OVERRIDABLE: &[&str] = &[
    "sasl.enabled.mechanisms",
    "sasl.server.max.receive.size",
    "connections.max.reauth.ms",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.key.password",
    "ssl.keystore.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.truststore.password",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.principal.mapping.rules",
];

pub(crate) const SECURITY_BROKER_CONFIGS: &[ConfigDef] = &[
    broker(
        "authorizer.class.name",
        ConfigType::String,
        "",
        Validator::Custom(check_authorizer),
        "The authorizer: org.apache.kafka.metadata.authorizer.StandardAuthorizer (Kafka's ACLs, kept in the cluster store) or empty (every client may do everything).",
    ),
    broker(
        "super.users",
        ConfigType::String,
        "",
        Validator::Custom(check_super_users),
        "Principals the authorizer allows everything, separated by ';' (User:admin;User:ops).",
    ),
    broker(
        "allow.everyone.if.no.acl.found",
        ConfigType::Boolean,
        "false",
        Validator::Bool,
        "Whether a resource no ACL names is open to everyone (Kafka's default: closed).",
    ),
    broker(
        "listeners",
        ConfigType::String,
        "",
        Validator::Custom(any),
        "The broker's listeners, NAME://host:port separated by commas (an empty host: every interface). Unset: one PLAINTEXT listener at --listen.",
    ),
    broker(
        "advertised.listeners",
        ConfigType::String,
        "",
        Validator::Custom(any),
        "Where clients are told to connect, per listener (NAME://host:port). Unset: the listeners themselves.",
    ),
    broker(
        "listener.security.protocol.map",
        ConfigType::String,
        strata_security::listeners::DEFAULT_PROTOCOL_MAP,
        Validator::Custom(check_protocol_map),
        "Each listener name's security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.",
    ),
    broker(
        "inter.broker.listener.name",
        ConfigType::String,
        "",
        Validator::Custom(any),
        "The listener brokers replicate over (Strata requires it to be a PLAINTEXT one for now). Unset: the listener named by security.inter.broker.protocol.",
    ),
    broker(
        "security.inter.broker.protocol",
        ConfigType::String,
        "PLAINTEXT",
        Validator::OneOf(&["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]),
        "The inter-broker listener, by protocol, when inter.broker.listener.name is unset.",
    ),
    broker(
        "sasl.enabled.mechanisms",
        ConfigType::List,
        "GSSAPI",
        Validator::Custom(check_mechanisms),
        "SASL mechanisms a SASL listener offers: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 (GSSAPI, Kafka's default, is not served: a SASL listener must set this).",
    ),
    broker(
        "sasl.server.max.receive.size",
        ConfigType::Int,
        "524288",
        Validator::IntAtLeast(1),
        "Largest frame accepted before a SASL client has authenticated; a larger one closes the connection.",
    ),
    broker(
        "connections.max.reauth.ms",
        ConfigType::Long,
        "0",
        Validator::LongAtLeast(0),
        "How long a SASL session lasts (KIP-368): a client re-authenticates before, or its connection is closed. 0: sessions do not end.",
    ),
    broker(
        "connection.failed.authentication.delay.ms",
        ConfigType::Int,
        "100",
        Validator::IntAtLeast(0),
        "How long a failed authentication waits before its connection closes (slows password guessing).",
    ),
    broker(
        "ssl.keystore.type",
        ConfigType::String,
        "JKS",
        Validator::Custom(any),
        "The key store's format. Strata reads PEM only: a TLS listener must set PEM.",
    ),
    broker(
        "ssl.keystore.location",
        ConfigType::String,
        "",
        Validator::Custom(any),
        "PEM file holding the listener's private key (unencrypted PKCS#8) and its certificate chain, leaf first.",
    ),
    broker(
        "ssl.keystore.certificate.chain",
        ConfigType::Password,
        "",
        Validator::Custom(any),
        "The certificate chain in PEM, inline (with ssl.keystore.key, instead of ssl.keystore.location).",
    ),
    broker(
        "ssl.keystore.key",
        ConfigType::Password,
        "",
        Validator::Custom(any),
        "The private key in PEM (unencrypted PKCS#8), inline.",
    ),
    broker(
        "ssl.key.password",
        ConfigType::Password,
        "",
        Validator::Custom(any),
        "The private key's password. Strata reads unencrypted keys only and refuses to start when this is set.",
    ),
    broker(
        "ssl.keystore.password",
        ConfigType::Password,
        "",
        Validator::Custom(any),
        "Not used with PEM files (accepted for Kafka's property files).",
    ),
    broker(
        "ssl.truststore.type",
        ConfigType::String,
        "JKS",
        Validator::Custom(any),
        "The trust store's format: PEM (needed when a trust store is given).",
    ),
    broker(
        "ssl.truststore.location",
        ConfigType::String,
        "",
        Validator::Custom(any),
        "PEM file of the certificate authorities client certificates are checked against.",
    ),
    broker(
        "ssl.truststore.certificates",
        ConfigType::Password,
        "",
        Validator::Custom(any),
        "The trusted certificates in PEM, inline.",
    ),
    broker(
        "ssl.truststore.password",
        ConfigType::Password,
        "",
        Validator::Custom(any),
        "Not used with PEM files (accepted for Kafka's property files).",
    ),
    broker(
        "ssl.client.auth",
        ConfigType::String,
        "none",
        Validator::OneOf(&["required", "requested", "none"]),
        "Whether a TLS client must (required), may (requested) or does not present a certificate. A certificate's principal is User:<its subject DN> unless ssl.principal.mapping.rules say otherwise.",
    ),
    broker(
        "ssl.enabled.protocols",
        ConfigType::List,
        "TLSv1.2,TLSv1.3",
        Validator::Custom(check_tls_protocols),
        "TLS versions a TLS listener accepts.",
    ),
    broker(
        "ssl.principal.mapping.rules",
        ConfigType::String,
        "DEFAULT",
        Validator::Custom(check_mapping_rules),
        "Rules from a client certificate's subject DN to its principal's name (Kafka's RULE:pattern/replacement/[LU] syntax).",
    ),
];
