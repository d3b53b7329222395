//! InitProducerId: for an idempotent producer a fresh producer id with
//! epoch 0; with a transactional id, the transaction coordinator's producer
//! id and next epoch for it (which fences older producers of the id). With
//! an authorizer, as Kafka (KIP-679): a transactional id needs WRITE on it
//! (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer needs
//! IDEMPOTENT_WRITE on the cluster or WRITE on any topic
//! (CLUSTER_AUTHORIZATION_FAILED).

use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;
use strata_security::acl::{AclOperation, ResourceType, CLUSTER_NAME};

use crate::server::authz::Caller;
use crate::server::Broker;
use crate::txn::ProducerIdAndEpoch;

pub async fn init_producer_id(
    req: InitProducerIdRequest,
    version: i16,
    b: &Broker,
    caller: &Caller,
) -> InitProducerIdResponse {
    let mut r = InitProducerIdResponse::default();
    r.producer_id = ProducerId(-1);
    r.producer_epoch = -1;
    let allowed = match &req.transactional_id {
        Some(id) => caller
            .may(AclOperation::Write, ResourceType::TransactionalId, &id.0)
            .then_some(())
            .ok_or(ResponseError::TransactionalIdAuthorizationFailed),
        None => (caller.may_quietly(
            AclOperation::IdempotentWrite,
            ResourceType::Cluster,
            CLUSTER_NAME,
        ) || caller.may_on_any(AclOperation::Write, ResourceType::Topic))
        .then_some(())
        .ok_or(ResponseError::ClusterAuthorizationFailed),
    };
    if let Err(e) = allowed {
        r.error_code = e.code();
        return r;
    }
    if let Some(id) = &req.transactional_id {
        // v3+ (KIP-360): a client that already holds an id and epoch.
        let expected = (req.producer_id.0 >= 0).then_some(ProducerIdAndEpoch {
            producer_id: req.producer_id.0,
            producer_epoch: req.producer_epoch,
        });
        match b
            .txns
            .init_producer_id(id, req.transaction_timeout_ms, expected)
            .await
        {
            Ok(p) => {
                r.producer_id = ProducerId(p.producer_id);
                r.producer_epoch = p.producer_epoch;
            }
            // PRODUCER_FENCED exists from v4 (KIP-588).
            Err(ResponseError::ProducerFenced) if version < 4 => {
                r.error_code = ResponseError::InvalidProducerEpoch.code()
            }
            Err(e) => r.error_code = e.code(),
        }
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
