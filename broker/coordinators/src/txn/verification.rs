//! `TxnVerifier`: the partition leader's side of KIP-890 part 1 (Kafka's
//! `AddPartitionsToTxnManager`). Before a producer's first transactional
//! write to a partition, the leader asks the transaction coordinator
//! whether the partition is in the producer's open transaction: locally
//! when this broker coordinates the transactional id, else with an
//! AddPartitionsToTxn v4 `verify_only` request to the coordinator. A
//! zombie producer (an older epoch) or one that skipped AddPartitionsToTxn
//! is refused, so no transactional record lands outside a transaction the
//! coordinator knows, and none can hang the last stable offset.
//!
//! It asks and maps answers to Produce errors; the guard that stops a
//! marker racing the answer lives in the partition's producer state.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, ProducerId, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use super::TransactionCoordinator;
use strata_cluster::cluster::records::BrokerRegistration;
use strata_cluster::replication::client::BrokerClientPool;

/// AddPartitionsToTxn v4: the first version with `verify_only` (brokers
/// only).
const VERIFY_VERSION: i16 = 4;
/// An answer is a code per partition.
const MAX_RESPONSE_BYTES: usize = 16 << 20;

/// Why a partition's transactional write was refused: the Produce error
/// and its message.
pub type Refusal = (ResponseError, String);

#[derive(Debug)]
pub struct TxnVerifier {
    me: i32,
    enabled: bool,
    timeout: Duration,
    /// One connection per coordinator broker, one request at a time.
    clients: BrokerClientPool,
}

impl TxnVerifier {
    /// `enabled`: `transaction.partition.verification.enable`; `timeout`:
    /// how long a coordinator may take to answer, network included.
    pub fn new(me: i32, enabled: bool, timeout: Duration) -> Self {
        TxnVerifier {
            me,
            enabled,
            timeout,
            clients: BrokerClientPool::new(
                format!("strata-txn-verify-{me}"),
                MAX_RESPONSE_BYTES,
                timeout,
            ),
        }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether `producer_id`/`epoch`'s open transaction, under `id`, holds
    /// each of `partitions` (in order). `coordinator`: the broker that
    /// leads `id`'s `__transaction_state` partition, as the cluster view
    /// says (used when this broker does not coordinate `id` itself).
    pub async fn verify(
        &self,
        txns: &TransactionCoordinator,
        coordinator: impl FnOnce() -> Result<BrokerRegistration, String>,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Vec<Result<(), Refusal>> {
        let codes = if txns.check_coordinator(id).is_ok() {
            match txns.verify_partitions(id, producer_id, epoch, partitions) {
                Ok(v) => v
                    .into_iter()
                    .map(|ok| {
                        if ok {
                            0
                        } else {
                            ResponseError::InvalidTxnState.code()
                        }
                    })
                    .collect(),
                Err(e) => vec![e.code(); partitions.len()],
            }
        } else {
            match coordinator() {
                Ok(node) if node.node_id != self.me => {
                    match self.ask(&node, id, producer_id, epoch, partitions).await {
                        Ok(codes) => codes,
                        Err(why) => {
                            tracing::debug!(coordinator = node.node_id, transactional_id = id, error = %why,
                                "transaction verification failed");
                            vec![ResponseError::NetworkException.code(); partitions.len()]
                        }
                    }
                }
                // This broker leads the partition but has not loaded it.
                Ok(_) => vec![ResponseError::CoordinatorLoadInProgress.code(); partitions.len()],
                Err(_) => vec![ResponseError::CoordinatorNotAvailable.code(); partitions.len()],
            }
        };
        codes.into_iter().map(|c| refusal(c, epoch)).collect()
    }

    /// AddPartitionsToTxn v4 `verify_only` to `node`: a code per partition.
    async fn ask(
        &self,
        node: &BrokerRegistration,
        id: &str,
        producer_id: i64,
        epoch: i16,
        partitions: &[(String, i32)],
    ) -> Result<Vec<i16>, String> {
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for (t, p) in partitions {
            by_topic.entry(t.as_str()).or_default().push(*p);
        }
        let mut t = AddPartitionsToTxnTransaction::default();
        t.transactional_id = TransactionalId(StrBytes::from_string(id.to_string()));
        t.producer_id = ProducerId(producer_id);
        t.producer_epoch = epoch;
        t.verify_only = true;
        t.topics = by_topic
            .into_iter()
            .map(|(name, ps)| {
                let mut at = AddPartitionsToTxnTopic::default();
                at.name = TopicName(StrBytes::from_string(name.to_string()));
                at.partitions = ps;
                at
            })
            .collect();
        let mut req = AddPartitionsToTxnRequest::default();
        req.transactions = vec![t];

        let resp = self
            .clients
            .send(
                node.node_id,
                || Ok((node.host.clone(), node.port)),
                &req,
                VERIFY_VERSION,
                self.timeout,
            )
            .await
            .map_err(|e| e.to_string())?;
        if resp.error_code != 0 {
            return Ok(vec![resp.error_code; partitions.len()]);
        }
        let mut codes: HashMap<(String, i32), i16> = HashMap::new();
        for r in resp.results_by_transaction {
            for t in r.topic_results {
                for p in t.results_by_partition {
                    codes.insert(
                        (t.name.0.to_string(), p.partition_index),
                        p.partition_error_code,
                    );
                }
            }
        }
        // A partition the answer left out was not verified.
        Ok(partitions
            .iter()
            .map(|p| {
                codes
                    .get(p)
                    .copied()
                    .unwrap_or(ResponseError::InvalidTxnState.code())
            })
            .collect())
    }
}

/// A coordinator's verification code as the Produce error Kafka's
/// ReplicaManager answers: a fenced producer is INVALID_PRODUCER_EPOCH,
/// and what a retry may cure becomes NOT_ENOUGH_REPLICAS, which every
/// client retries without a metadata refresh.
fn refusal(code: i16, epoch: i16) -> Result<(), Refusal> {
    if code == 0 {
        return Ok(());
    }
    let e = ResponseError::try_from_code(code);
    Err(match e {
        Some(ResponseError::InvalidTxnState) => (
            ResponseError::InvalidTxnState,
            "Partition was not added to the transaction".into(),
        ),
        Some(ResponseError::ProducerFenced | ResponseError::InvalidProducerEpoch) => (
            ResponseError::InvalidProducerEpoch,
            format!(
                "producer epoch {epoch} is fenced: the transaction coordinator has a newer epoch for this transactional id"
            ),
        ),
        Some(
            err @ (ResponseError::ConcurrentTransactions
            | ResponseError::NetworkException
            | ResponseError::CoordinatorLoadInProgress
            | ResponseError::CoordinatorNotAvailable
            | ResponseError::NotCoordinator),
        ) => (
            ResponseError::NotEnoughReplicas,
            format!(
                "Unable to verify the partition has been added to the transaction. Underlying error: {err:?}"
            ),
        ),
        Some(err) => (err, format!("transaction verification failed: {err:?}")),
        None => (
            ResponseError::UnknownServerError,
            format!("transaction verification failed with error code {code}"),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_map_as_kafkas_replica_manager() {
        assert!(refusal(0, 1).is_ok());
        for (from, to) in [
            (
                ResponseError::ProducerFenced,
                ResponseError::InvalidProducerEpoch,
            ),
            (
                ResponseError::InvalidTxnState,
                ResponseError::InvalidTxnState,
            ),
            (
                ResponseError::ConcurrentTransactions,
                ResponseError::NotEnoughReplicas,
            ),
            (
                ResponseError::NotCoordinator,
                ResponseError::NotEnoughReplicas,
            ),
            (
                ResponseError::InvalidProducerIdMapping,
                ResponseError::InvalidProducerIdMapping,
            ),
        ] {
            assert_eq!(refusal(from.code(), 1).unwrap_err().0, to, "{from:?}");
        }
    }
}
