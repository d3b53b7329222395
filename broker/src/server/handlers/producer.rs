//! InitProducerId for idempotent producers: a fresh producer id with epoch
//! 0. Transactions are not supported yet, so a transactional id is refused
//! with a message rather than half-served.

use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::server::Broker;

pub async fn init_producer_id(
    req: InitProducerIdRequest,
    _version: i16,
    b: &Broker,
) -> InitProducerIdResponse {
    let mut r = InitProducerIdResponse::default();
    r.producer_id = ProducerId(-1);
    r.producer_epoch = -1;
    if req.transactional_id.is_some() {
        r.error_code = ResponseError::InvalidRequest.code();
        tracing::warn!(
            "InitProducerId with a transactional id refused: transactions are not supported yet"
        );
        return r;
    }
    match b.producer_ids.next_id() {
        Ok(id) => {
            r.producer_id = ProducerId(id);
            r.producer_epoch = 0;
        }
        Err(e) => {
            tracing::error!(error = %e, "cannot reserve producer ids");
            r.error_code = ResponseError::CoordinatorNotAvailable.code();
        }
    }
    r
}
