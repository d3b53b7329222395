//! TLS for a listener: the rustls server config built from the listener's
//! PEM key store and trust store (`ssl.*` settings, typed in
//! `config::security`), and the principal a client certificate names.
//!
//! A client certificate is checked against the trust store by rustls
//! (chain, validity dates, key usage); its principal is `User:` and the
//! certificate's subject as Java prints it, passed through
//! `ssl.principal.mapping.rules` (Kafka's default builder).

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use strata_security::dn::subject_dn;
use strata_security::principal::KafkaPrincipal;
use strata_security::principal_mapping::PrincipalMapper;

use crate::config::security::{ClientAuth, KeyStore, SslListener, TrustStore};

/// A listener's TLS settings could not be turned into a server config.
#[derive(Debug, thiserror::Error)]
#[error("listener {listener}: {message}")]
pub struct TlsSetupError {
    pub listener: String,
    pub message: String,
}

fn read(path: &std::path::Path, what: &str) -> Result<Vec<u8>, String> {
    std::fs::read(path).map_err(|e| format!("cannot read {what} {}: {e}", path.display()))
}

/// The rustls server config of a TLS listener.
pub fn server_config(
    listener: &str,
    ssl: &SslListener,
) -> Result<Arc<ServerConfig>, TlsSetupError> {
    build(ssl).map_err(|message| TlsSetupError {
        listener: listener.to_string(),
        message,
    })
}

fn build(ssl: &SslListener) -> Result<Arc<ServerConfig>, String> {
    let (key_pem, chain_pem, source) = match &ssl.keystore {
        KeyStore::File(path) => {
            let bytes = read(path, "the key store (ssl.keystore.location)")?;
            (
                bytes.clone(),
                bytes,
                format!("ssl.keystore.location {}", path.display()),
            )
        }
        KeyStore::Inline { key, chain } => (
            key.as_bytes().to_vec(),
            chain.as_bytes().to_vec(),
            "ssl.keystore.key / ssl.keystore.certificate.chain".to_string(),
        ),
    };
    if String::from_utf8_lossy(&key_pem).contains("ENCRYPTED PRIVATE KEY") {
        return Err(format!(
            "{source}: the private key is encrypted; Strata reads unencrypted PKCS#8 keys only"
        ));
    }
    let key = PrivateKeyDer::from_pem_slice(&key_pem)
        .map_err(|e| format!("{source}: no private key in PEM ({e})"))?;
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&chain_pem)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{source}: unreadable certificate ({e})"))?;
    if chain.is_empty() {
        return Err(format!("{source}: no certificate in PEM"));
    }
    let mut versions: Vec<&'static rustls::SupportedProtocolVersion> = Vec::new();
    if ssl.tls13 {
        versions.push(&rustls::version::TLS13);
    }
    if ssl.tls12 {
        versions.push(&rustls::version::TLS12);
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("ssl.enabled.protocols: {e}"))?;
    let builder = match (&ssl.truststore, ssl.client_auth) {
        (Some(trust), auth) if auth != ClientAuth::None => {
            let pem = match trust {
                TrustStore::File(path) => read(path, "the trust store (ssl.truststore.location)")?,
                TrustStore::Inline(text) => text.as_bytes().to_vec(),
            };
            let mut roots = RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert =
                    cert.map_err(|e| format!("trust store: unreadable certificate ({e})"))?;
                roots
                    .add(cert)
                    .map_err(|e| format!("trust store: unusable certificate ({e})"))?;
            }
            if roots.is_empty() {
                return Err("the trust store holds no certificate".to_string());
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            let verifier = verifier.build().map_err(|e| format!("trust store: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
        _ => builder.with_no_client_auth(),
    };
    let config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("{source}: the key does not fit the certificate ({e})"))?;
    Ok(Arc::new(config))
}

/// The principal of a TLS connection: its client certificate's subject,
/// mapped by the rules, or `User:ANONYMOUS` without one (Kafka's).
pub fn principal(
    certificates: Option<&[CertificateDer<'_>]>,
    mapper: &PrincipalMapper,
) -> Result<KafkaPrincipal, String> {
    let Some(leaf) = certificates.and_then(|c| c.first()) else {
        return Ok(KafkaPrincipal::anonymous());
    };
    let dn = subject_dn(leaf.as_ref()).map_err(|e| format!("client certificate subject: {e}"))?;
    let name = mapper.name(&dn).map_err(|e| e.to_string())?;
    Ok(KafkaPrincipal::user(name))
}
