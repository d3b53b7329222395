//! The broker's Kafka listeners: binds each one (`listeners`, or the
//! single PLAINTEXT listener of `--listen`), builds its TLS acceptor and
//! SASL settings, and works out what it advertises (`advertised.listeners`,
//! or `--advertised-listener`). The accept loops are `server::serve`.

use std::net::SocketAddr;
use std::sync::Arc;

use strata_security::listeners::SecurityProtocol;
use strata_security::sasl::{SaslServerConfig, ScramCredentials};
use tokio::net::TcpListener;

use super::connection::{ListenerContext, SaslContext};
use crate::config::security::SecuritySettings;

/// Where clients are told to reach one listener.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Advertised {
    /// The listener's name, upper case.
    pub name: String,
    pub host: String,
    pub port: i32,
}

/// A bound listener, ready to accept.
#[derive(Debug)]
pub struct BoundListener {
    pub tcp: TcpListener,
    pub local: SocketAddr,
    pub context: Arc<ListenerContext>,
    pub advertised: Advertised,
}

/// The broker's listeners.
#[derive(Debug)]
pub struct Bound {
    pub listeners: Vec<BoundListener>,
    /// The listener other brokers replicate over (its advertised
    /// endpoint is the one the cluster registers).
    pub inter_broker: String,
}

/// What binding needs of the command line.
#[derive(Debug, Clone)]
pub struct ListenFlags<'a> {
    pub listen: &'a str,
    /// `--listen` was given explicitly (it may not be with `listeners`).
    pub listen_given: bool,
    pub advertised_listener: Option<&'a str>,
}

fn split_host_port(s: &str, what: &str) -> Result<(String, u16), String> {
    let (host, port) = s
        .rsplit_once(':')
        .ok_or_else(|| format!("{what} must be HOST:PORT, got `{s}`"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("{what} has an invalid port in `{s}`"))?;
    Ok((
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port,
    ))
}

/// The host to advertise for a bound address without an advertised one.
fn advertise_local(local: SocketAddr, name: &str) -> String {
    let ip = local.ip();
    if ip.is_unspecified() {
        tracing::warn!(
            listener = name,
            "listening on all interfaces without an advertised address; advertising 127.0.0.1"
        );
        "127.0.0.1".to_string()
    } else {
        ip.to_string()
    }
}

/// Binds every listener.
pub async fn bind(
    settings: &SecuritySettings,
    flags: &ListenFlags<'_>,
    credentials: Arc<dyn ScramCredentials>,
    decoy_key: [u8; 32],
) -> Result<Bound, String> {
    let Some(configured) = &settings.listeners else {
        let tcp = TcpListener::bind(flags.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", flags.listen))?;
        let local = tcp.local_addr().map_err(|e| e.to_string())?;
        let (host, port) = match flags.advertised_listener {
            Some(a) => split_host_port(a, "--advertised-listener")?,
            None => (advertise_local(local, "PLAINTEXT"), local.port()),
        };
        return Ok(Bound {
            listeners: vec![BoundListener {
                tcp,
                local,
                context: Arc::new(ListenerContext {
                    name: Arc::from("PLAINTEXT"),
                    protocol: SecurityProtocol::Plaintext,
                    tls: None,
                    mapper: None,
                    sasl: None,
                }),
                advertised: Advertised {
                    name: "PLAINTEXT".to_string(),
                    host,
                    port: i32::from(port),
                },
            }],
            inter_broker: "PLAINTEXT".to_string(),
        });
    };
    if flags.listen_given {
        return Err(
            "--listen and the listeners setting were both given: use one (listeners names every listener)"
                .to_string(),
        );
    }
    if flags.advertised_listener.is_some() {
        return Err(
            "--advertised-listener cannot be used with the listeners setting: set advertised.listeners"
                .to_string(),
        );
    }
    let mut out = Vec::new();
    for endpoint in &configured.listeners {
        let security = settings
            .listener(&endpoint.name)
            .ok_or_else(|| format!("listener {} has no security settings", endpoint.name))?;
        let host = endpoint
            .host
            .clone()
            .unwrap_or_else(|| "0.0.0.0".to_string());
        let addr = if host.contains(':') {
            format!("[{host}]:{}", endpoint.port)
        } else {
            format!("{host}:{}", endpoint.port)
        };
        let tcp = TcpListener::bind(&addr)
            .await
            .map_err(|e| format!("cannot listen on {addr} (listener {}): {e}", endpoint.name))?;
        let local = tcp.local_addr().map_err(|e| e.to_string())?;
        let tls = match &security.ssl {
            Some(ssl) => Some(tokio_rustls::TlsAcceptor::from(
                super::tls::server_config(&endpoint.name, ssl).map_err(|e| e.to_string())?,
            )),
            None => None,
        };
        let sasl = security.sasl.as_ref().map(|s| SaslContext {
            config: Arc::new(SaslServerConfig {
                mechanisms: s.mechanisms.clone(),
                plain: s.plain.clone(),
                max_reauth_ms: s.max_reauth_ms,
                decoy_key,
                oauth: None,
            }),
            credentials: credentials.clone(),
            max_receive_size: s.max_receive_size,
            failed_delay: settings.failed_authentication_delay,
        });
        let advertised = match configured
            .advertised
            .iter()
            .find(|a| a.name == endpoint.name)
        {
            Some(a) => Advertised {
                name: a.name.clone(),
                host: a
                    .host
                    .clone()
                    .unwrap_or_else(|| advertise_local(local, &a.name)),
                port: i32::from(if a.port == 0 { local.port() } else { a.port }),
            },
            None => Advertised {
                name: endpoint.name.clone(),
                host: advertise_local(local, &endpoint.name),
                port: i32::from(local.port()),
            },
        };
        out.push(BoundListener {
            tcp,
            local,
            context: Arc::new(ListenerContext {
                name: Arc::from(endpoint.name.as_str()),
                protocol: endpoint.protocol,
                tls,
                // On SASL_SSL the SASL identity is the principal: Kafka
                // applies the mapping rules on SSL listeners only.
                mapper: security
                    .ssl
                    .as_ref()
                    .filter(|_| endpoint.protocol == SecurityProtocol::Ssl)
                    .map(|s| s.principal_mapper.clone()),
                sasl,
            }),
            advertised,
        });
    }
    Ok(Bound {
        listeners: out,
        inter_broker: configured.inter_broker.clone(),
    })
}
