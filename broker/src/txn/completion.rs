//! Ending transactions: the markers a prepared transaction writes to every
//! partition it touched (Kafka's WriteTxnMarkers, done in-process on a
//! single broker), the offsets it committed made visible or dropped, then
//! the Complete state. Also the coordinator's timers: transactions open
//! past their timeout are aborted with a bumped epoch (fencing the
//! producer), and idle transactional ids expire.
//!
//! A marker write that fails is retried until it succeeds or the partition
//! is gone: a prepared transaction always ends, also after a restart
//! (prepared states found on load are completed here).

use std::sync::Arc;
use std::time::Duration;

use super::coordinator::{AbortCause, TransactionCoordinator};
use super::records::TxnState;

/// The coordinator epoch markers carry: Kafka's is the leader epoch of the
/// coordinator's `__transaction_state` partition, which stays 0 while
/// coordinators do not move between brokers (issue 18, step 4).
const COORDINATOR_EPOCH: i32 = 0;
use crate::clock::now_ms;
use crate::group::OFFSETS_TOPIC;
use crate::log::control::{Marker, MarkerType};
use crate::log::{LogError, PartitionLog};

const RETRY_BACKOFF: Duration = Duration::from_millis(200);

impl TransactionCoordinator {
    /// Writes the markers of `id`'s prepared transaction and completes it.
    pub(super) async fn complete(self: Arc<Self>, id: &str) {
        loop {
            match self.try_complete(id).await {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!(transactional_id = id, error = %e, "completing a transaction failed; retrying");
                    tokio::time::sleep(RETRY_BACKOFF).await;
                }
            }
        }
    }

    async fn try_complete(&self, id: &str) -> Result<(), String> {
        let (producer_id, epoch, state, partitions) = {
            let mut txns = self.lock();
            let Some(m) = txns.get_mut(id) else {
                return Ok(());
            };
            if !m.state.is_prepared() {
                return Ok(());
            }
            if m.pending {
                return Err("a state change is in flight".into());
            }
            m.pending = true;
            (
                m.producer_id,
                m.producer_epoch,
                m.state,
                m.partitions.clone(),
            )
        };
        let commit = state == TxnState::PrepareCommit;
        let result = self
            .write_markers(producer_id, epoch, commit, &partitions)
            .await;
        if let Err(e) = result {
            if let Some(m) = self.lock().get_mut(id) {
                m.pending = false;
            }
            return Err(e);
        }
        let next = {
            let txns = self.lock();
            let Some(m) = txns.get(id) else {
                return Ok(());
            };
            let mut v = m.value();
            v.state = if commit {
                TxnState::CompleteCommit
            } else {
                TxnState::CompleteAbort
            };
            v.partitions.clear();
            v.last_update_ms = now_ms();
            v
        };
        self.transition(id, next)
            .await
            .map_err(|e| format!("writing the completed state: {e:?}"))?;
        tracing::debug!(
            transactional_id = id,
            producer_id,
            commit,
            partitions = partitions.len(),
            "transaction completed"
        );
        Ok(())
    }

    /// Appends a marker to every partition and waits until all are durable.
    async fn write_markers(
        &self,
        producer_id: i64,
        epoch: i16,
        commit: bool,
        partitions: &std::collections::BTreeSet<(String, i32)>,
    ) -> Result<(), String> {
        let marker = Marker {
            kind: if commit {
                MarkerType::Commit
            } else {
                MarkerType::Abort
            },
            coordinator_epoch: COORDINATOR_EPOCH,
        };
        let mut waits = Vec::with_capacity(partitions.len());
        for (topic, partition) in partitions {
            match self.write_marker(topic, *partition, producer_id, epoch, marker) {
                Ok(Some(wait)) => waits.push(wait),
                // Deleted since: nothing left to mark.
                Ok(None) | Err(LogError::Closed) => {}
                Err(LogError::Marker(e)) => {
                    // The partition saw a newer epoch of this producer: a
                    // later coordinator decision already ended it here.
                    tracing::warn!(topic, partition, producer_id, epoch, error = ?e, "marker refused as stale");
                }
                Err(e) => return Err(format!("{topic}-{partition}: {e}")),
            }
        }
        for (log, end) in waits {
            if !log.wait_durable(end, self.cfg.write_timeout).await && !log.is_closed() {
                return Err(format!(
                    "{}-{}: marker not durable within {:?}",
                    log.topic(),
                    log.partition(),
                    self.cfg.write_timeout
                ));
            }
        }
        Ok(())
    }

    /// Appends one marker to `topic`-`partition` (for the group's offsets
    /// partition, the producer's pending offsets are committed or dropped
    /// with it). Returns the log and the offset to wait for, or None if
    /// the partition does not exist. Also serves WriteTxnMarkers.
    pub fn write_marker(
        &self,
        topic: &str,
        partition: i32,
        producer_id: i64,
        epoch: i16,
        marker: Marker,
    ) -> Result<Option<(Arc<PartitionLog>, i64)>, LogError> {
        let Some(log) = self.logs.partition(topic, partition) else {
            return Ok(None);
        };
        let info = log.append_marker(producer_id, epoch, marker)?;
        if topic == OFFSETS_TOPIC {
            self.groups
                .complete_txn(producer_id, marker.kind == MarkerType::Commit);
        }
        Ok(Some((log, info.last_offset + 1)))
    }

    /// Starts the timers, and completes the transactions found prepared
    /// on load.
    pub fn start_background(self: &Arc<Self>) {
        let prepared: Vec<String> = self
            .lock()
            .iter()
            .filter(|(_, m)| m.state.is_prepared())
            .map(|(id, _)| id.clone())
            .collect();
        for id in prepared {
            let me = self.clone();
            tokio::spawn(async move { me.complete(&id).await });
        }
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(me.cfg.abort_check_interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                me.clone().abort_timed_out().await;
            }
        });
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(me.cfg.expiration_check_interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                me.expire_ids().await;
            }
        });
    }

    /// Aborts every transaction open longer than its timeout.
    pub async fn abort_timed_out(self: Arc<Self>) {
        let now = now_ms();
        let expired: Vec<String> = self
            .lock()
            .iter()
            .filter(|(_, m)| {
                m.state == TxnState::Ongoing
                    && !m.pending
                    && m.start_ms + m.timeout_ms as i64 <= now
            })
            .map(|(id, _)| id.clone())
            .collect();
        for id in expired {
            tracing::info!(transactional_id = %id, "aborting a transaction open past its timeout");
            if let Err(e) = self.clone().abort(&id, AbortCause::Timeout).await {
                tracing::warn!(transactional_id = %id, error = ?e, "aborting a timed-out transaction failed");
            }
        }
    }

    /// Removes ids idle longer than `transactional.id.expiration.ms` with
    /// no open transaction (a tombstone in the log).
    async fn expire_ids(&self) {
        let cutoff = now_ms() - self.cfg.id_expiration_ms;
        let expired: Vec<String> = {
            let mut txns = self.lock();
            let ids: Vec<String> = txns
                .iter()
                .filter(|(_, m)| {
                    !m.pending
                        && matches!(
                            m.state,
                            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort
                        )
                        && m.last_update_ms < cutoff
                })
                .map(|(id, _)| id.clone())
                .collect();
            for id in &ids {
                if let Some(m) = txns.get_mut(id) {
                    m.pending = true;
                }
            }
            ids
        };
        for id in expired {
            let result = self.persist(&id, None).await;
            let mut txns = self.lock();
            match result {
                Ok(()) => {
                    txns.remove(&id);
                    tracing::info!(transactional_id = %id, "transactional id expired");
                }
                Err(_) => {
                    if let Some(m) = txns.get_mut(&id) {
                        m.pending = false;
                    }
                }
            }
        }
    }
}
