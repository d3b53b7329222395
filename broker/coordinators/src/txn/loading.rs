//! Following `__transaction_state` leadership: the transactional ids of a
//! partition are loaded when this broker starts leading it — prepared
//! transactions found there are completed — and dropped when it stops
//! (Kafka's `TransactionStateManager` `loadTransactionsForTxnTopicPartition`
//! / `removeTransactionsForTxnTopicPartition`). Every request for an id
//! first checks that its partition is coordinated here.
//!
//! Owns the load and the drop; the state machine is `coordinator.rs`'s.

use std::collections::HashMap;
use std::sync::Arc;

use super::coordinator::{TransactionCoordinator, TxnError, TxnMetadata};
use super::records::{decode_key, TxnValue};
use crate::group::records::partition_for;
use strata_cluster::coordinator_log::Replayed;
use strata_storage::log::LogError;

impl TransactionCoordinator {
    /// The partition of `__transaction_state` that holds `id`.
    pub(crate) fn partition_of(&self, id: &str) -> i32 {
        partition_for(id, self.log.partitions())
    }

    /// Ok (with the coordinator epoch) when `id` is coordinated here;
    /// otherwise NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS.
    pub fn check_coordinator(&self, id: &str) -> Result<i32, TxnError> {
        self.log.check(self.partition_of(id))
    }

    /// Loads the partitions this broker now leads and drops those it no
    /// longer leads at the epoch they were loaded at (off the async
    /// workers: a load reads the partition's whole log).
    pub(crate) async fn follow_leadership(self: &Arc<Self>) {
        let me = self.clone();
        let _ = tokio::task::spawn_blocking(move || me.follow_leadership_now()).await;
    }

    /// [`Self::follow_leadership`], on this thread (inside a Tokio
    /// runtime: the prepared transactions it finds are completed by
    /// tasks).
    pub fn follow_leadership_now(self: &Arc<Self>) {
        let changes = self.log.leadership_changes();
        for p in changes.unload {
            self.unload_partition(p);
        }
        for (p, epoch) in changes.load {
            self.log.begin_load(p, epoch);
            match self.load_partition(p, epoch) {
                Ok(prepared) => {
                    for id in prepared {
                        let me = self.clone();
                        tokio::spawn(async move { me.complete(&id).await });
                    }
                }
                Err(e) => {
                    // Tried again at the next round.
                    tracing::error!(partition = p, leader_epoch = epoch, error = %e,
                        "cannot load transaction state; retrying");
                    self.log.unload(p);
                }
            }
        }
    }

    /// Replays partition `p` and serves its ids (led at `epoch`). Returns
    /// the ids whose transaction was found prepared: their markers are
    /// written again.
    fn load_partition(&self, p: i32, epoch: i32) -> Result<Vec<String>, LogError> {
        let started = self.clock.now();
        let mut loaded: HashMap<String, TxnMetadata> = HashMap::new();
        let records = self.log.replay_partition(p, |r| {
            let Replayed::Record { key, value, .. } = r else {
                return;
            };
            let Ok(id) = decode_key(key) else { return };
            match value.map(TxnValue::decode) {
                None => {
                    loaded.remove(&id);
                }
                Some(Ok(v)) => {
                    loaded.insert(id, TxnMetadata::from_value(v));
                }
                Some(Err(e)) => {
                    tracing::warn!(transactional_id = %id, error = %e, "skipping undecodable transaction state")
                }
            }
        })?;
        if let Some(max) = loaded.values().map(|t| t.producer_id).max() {
            // Ids another coordinator handed out are never issued again.
            self.producer_ids.reserve_above(max).map_err(LogError::Io)?;
        }
        let prepared: Vec<String> = loaded
            .iter()
            .filter(|(_, t)| t.state.is_prepared())
            .map(|(id, _)| id.clone())
            .collect();
        let count = loaded.len();
        {
            let mut txns = self.lock();
            // Whatever a request left of an earlier ownership goes.
            txns.retain(|id, _| self.partition_of(id) != p);
            if !self.log.finish_load(p, epoch) {
                return Ok(Vec::new());
            }
            txns.extend(loaded);
        }
        // An empty partition (most of them, most of the time) loads
        // quietly.
        if records == 0 {
            tracing::debug!(
                partition = p,
                leader_epoch = epoch,
                "coordinating an empty partition"
            );
        } else {
            tracing::info!(
                partition = p,
                leader_epoch = epoch,
                transactional_ids = count,
                prepared = prepared.len(),
                records,
                elapsed_ms = self
                    .clock
                    .now()
                    .saturating_duration_since(started)
                    .as_millis() as u64,
                "loaded transaction state"
            );
        }
        Ok(prepared)
    }

    /// Stops coordinating partition `p`: its ids leave memory (the new
    /// coordinator completes what was prepared).
    fn unload_partition(&self, p: i32) {
        self.log.unload(p);
        let mut txns = self.lock();
        let before = txns.len();
        txns.retain(|id, _| self.partition_of(id) != p);
        tracing::info!(
            partition = p,
            transactional_ids = before - txns.len(),
            "no longer coordinating transactions"
        );
    }
}
