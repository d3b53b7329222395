//! SaslHandshake and SaslAuthenticate on a listener without SASL (a
//! PLAINTEXT or SSL one): Kafka answers ILLEGAL_SASL_STATE. On a SASL
//! listener the connection's authenticator answers them
//! (`server::connection`), and they never reach dispatch.

use kafka_protocol::messages::{
    SaslAuthenticateRequest, SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};

use super::s;
use crate::server::Broker;

pub async fn handshake(
    _r: SaslHandshakeRequest,
    _version: i16,
    _b: &Broker,
) -> SaslHandshakeResponse {
    let mut resp = SaslHandshakeResponse::default();
    resp.error_code = strata_security::sasl::ILLEGAL_SASL_STATE;
    resp
}

pub async fn authenticate(
    _r: SaslAuthenticateRequest,
    _version: i16,
    _b: &Broker,
) -> SaslAuthenticateResponse {
    let mut resp = SaslAuthenticateResponse::default();
    resp.error_code = strata_security::sasl::ILLEGAL_SASL_STATE;
    resp.error_message = Some(s(
        "SaslAuthenticate on a listener without SASL: this listener's protocol is not SASL_PLAINTEXT or SASL_SSL",
    ));
    resp
}
