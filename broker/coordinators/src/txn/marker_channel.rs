//! `TxnMarkerChannel`: where a transaction's markers go in a cluster
//! (Kafka's `TransactionMarkerChannelManager`). A partition this broker
//! leads takes its marker from the local log; one led elsewhere gets it
//! through a WriteTxnMarkers request to its leader, one request per
//! leader broker and decision. The leader appends it and answers once the
//! marker is committed (acks=all), so a prepared transaction is done only
//! when every partition holds its marker.
//!
//! It routes and sends; it never decides a transaction's outcome.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{ProducerId, TopicName, WriteTxnMarkersRequest};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;

use strata_cluster::cluster::view::ClusterView;
use strata_cluster::replication::client::BrokerClientPool;

/// WriteTxnMarkers v1 (flexible, as Kafka 3.9 brokers send it).
const WRITE_TXN_MARKERS_VERSION: i16 = 1;
/// A WriteTxnMarkers response is small: a code per partition.
const MAX_RESPONSE_BYTES: usize = 16 << 20;

/// Where one partition's marker is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// This broker leads it (or runs alone).
    Local,
    /// Broker `n` leads it.
    Remote(i32),
    /// The topic is gone: nothing left to mark.
    Gone,
    /// No leader right now: try again later.
    Unavailable,
}

/// Why a WriteTxnMarkers exchange did not write every marker.
#[derive(Debug)]
pub enum SendError {
    /// Try again (the broker was unreachable, or a partition refused for
    /// now: not its leader, loading, not known to it yet).
    Retry(String),
    /// A partition holds a marker from a newer coordinator of this
    /// producer (TRANSACTION_COORDINATOR_FENCED).
    Fenced(String),
}

/// One marker to send: the producer, its epoch, the decision and the
/// coordinator epoch (the leader epoch of the coordinator's partition).
#[derive(Debug, Clone, Copy)]
pub struct MarkerSpec {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub commit: bool,
    pub coordinator_epoch: i32,
}

#[derive(Debug)]
pub struct TxnMarkerChannel {
    view: ClusterView,
    me: i32,
    timeout: Duration,
    /// One connection per leader broker; markers to one broker go one
    /// request at a time, to different brokers in parallel.
    clients: BrokerClientPool,
}

impl TxnMarkerChannel {
    /// `timeout`: how long a leader may take to commit a marker (the
    /// coordinator's own write timeout), plus the network.
    pub fn new(view: ClusterView, me: i32, timeout: Duration) -> Self {
        TxnMarkerChannel {
            view,
            me,
            timeout,
            clients: BrokerClientPool::new(
                format!("strata-txn-markers-{me}"),
                MAX_RESPONSE_BYTES,
                timeout,
            ),
        }
    }

    /// Where `topic`-`partition`'s marker goes, as the store says now.
    pub fn route(&self, topic: &str, partition: i32) -> Route {
        let snap = self.view.snapshot();
        match snap.partition(topic, partition) {
            None if snap.topic(topic).is_none() && snap.connected => Route::Gone,
            None => Route::Unavailable,
            Some(e) if e.state.leader == self.me => Route::Local,
            Some(e) if e.state.leader >= 0 => Route::Remote(e.state.leader),
            Some(_) => Route::Unavailable,
        }
    }

    /// Sends `marker` for `partitions` to their leader `broker`. Ok once
    /// every partition committed it (or no longer exists there).
    pub async fn send(
        &self,
        broker: i32,
        marker: MarkerSpec,
        partitions: &[(String, i32)],
    ) -> Result<(), SendError> {
        let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
        for (t, p) in partitions {
            by_topic.entry(t.as_str()).or_default().push(*p);
        }
        let mut m = WritableTxnMarker::default();
        m.producer_id = ProducerId(marker.producer_id);
        m.producer_epoch = marker.producer_epoch;
        m.transaction_result = marker.commit;
        m.coordinator_epoch = marker.coordinator_epoch;
        m.topics = by_topic
            .into_iter()
            .map(|(t, ps)| {
                let mut wt = WritableTxnMarkerTopic::default();
                wt.name = TopicName(StrBytes::from_string(t.to_string()));
                wt.partition_indexes = ps;
                wt
            })
            .collect();
        let mut req = WriteTxnMarkersRequest::default();
        req.markers = vec![m];

        // The leader waits up to its commit timeout before answering.
        let view = &self.view;
        let resp = self
            .clients
            .send(
                broker,
                || {
                    view.snapshot()
                        .brokers
                        .get(&broker)
                        .map(|b| (b.registration.host.clone(), b.registration.port))
                        .ok_or_else(|| format!("broker {broker} is not live"))
                },
                &req,
                WRITE_TXN_MARKERS_VERSION,
                self.timeout * 2,
            )
            .await
            .map_err(|e| SendError::Retry(e.to_string()))?;
        let mut failed = Vec::new();
        for r in resp.markers {
            for t in r.topics {
                for p in t.partitions {
                    let code = p.error_code;
                    if code == 0 {
                        continue;
                    }
                    if code == ResponseError::TransactionCoordinatorFenced.code() {
                        return Err(SendError::Fenced(format!(
                            "{}-{}: TRANSACTION_COORDINATOR_FENCED",
                            t.name.0, p.partition_index
                        )));
                    }
                    // UNKNOWN_TOPIC_OR_PARTITION included: the leader's view
                    // may lag ours; a deleted topic is skipped by its route.
                    if code == ResponseError::InvalidProducerEpoch.code() {
                        // A later decision of the coordinator already
                        // ended this producer's transaction there.
                        tracing::warn!(topic = %t.name.0, partition = p.partition_index,
                            producer_id = marker.producer_id, "marker refused as stale");
                        continue;
                    }
                    failed.push(format!("{}-{}: error {code}", t.name.0, p.partition_index));
                }
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(SendError::Retry(format!(
                "broker {broker}: {}",
                failed.join(", ")
            )))
        }
    }
}
