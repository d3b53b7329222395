//! Ending transactions: the markers a prepared transaction writes to every
//! partition it touched — in this broker's logs for the partitions it
//! leads, through WriteTxnMarkers to their leaders for the others
//! (`marker_channel.rs`) — the offsets it committed made visible or
//! dropped, then the Complete state. Also the coordinator's timers:
//! transactions open past their timeout are aborted with a bumped epoch
//! (fencing the producer), and idle transactional ids expire.
//!
//! A marker write that fails is retried until it succeeds, the partition
//! is gone, or this broker stops coordinating the id: a prepared
//! transaction always ends, also after a restart or a coordinator
//! failover (the new coordinator completes what it loads prepared).
//! Markers carry the coordinator epoch — the leader epoch of the id's
//! `__transaction_state` partition — so a deposed coordinator's late
//! markers are refused (TRANSACTION_COORDINATOR_FENCED).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::coordinator::{AbortCause, TransactionCoordinator};
use super::marker_channel::{MarkerSpec, Route, SendError};
use super::records::TxnState;
use crate::group::OFFSETS_TOPIC;
use strata_storage::log::control::{Marker, MarkerType};
use strata_storage::log::producer_state::SequenceError;
use strata_storage::log::LogError;
use strata_storage::partition::{CommitWait, Partition};

const RETRY_BACKOFF: Duration = Duration::from_millis(200);

/// Why a marker was not appended here.
#[derive(Debug, thiserror::Error)]
pub enum MarkerWriteError {
    /// The group coordinator is loading the offsets partition: the marker
    /// would race the load (the sender retries).
    #[error("consumer groups of __consumer_offsets-{0} are loading")]
    GroupsLoading(i32),
    #[error(transparent)]
    Log(#[from] LogError),
}

/// Why markers were not all written.
#[derive(Debug)]
pub(crate) enum MarkerFailure {
    /// Try again (no leader, a leader that refused or did not answer).
    Retry(String),
    /// A partition took a marker from a newer coordinator of this
    /// producer: this one is deposed.
    Fenced(String),
}

/// A marker appended to a local log: wait for `end` at `leader_epoch`.
pub struct MarkerWrite {
    pub partition: Arc<Partition>,
    pub end: i64,
    pub leader_epoch: i32,
}

impl TransactionCoordinator {
    /// Writes the markers of `id`'s prepared transaction and completes it.
    pub(super) async fn complete(self: Arc<Self>, id: &str) {
        loop {
            if self.check_coordinator(id).is_err() {
                // Another broker coordinates it now and completes it.
                return;
            }
            match self.try_complete(id).await {
                Ok(()) => return,
                Err(MarkerFailure::Fenced(e)) => {
                    // A newer coordinator wrote markers for this producer:
                    // this broker is a deposed one and stops here.
                    tracing::warn!(transactional_id = id, error = %e,
                        "a newer transaction coordinator took over; not completing");
                    return;
                }
                Err(MarkerFailure::Retry(e)) => {
                    tracing::warn!(transactional_id = id, error = %e, "completing a transaction failed; retrying");
                    tokio::time::sleep(RETRY_BACKOFF).await;
                }
            }
        }
    }

    async fn try_complete(&self, id: &str) -> Result<(), MarkerFailure> {
        let (producer_id, epoch, state, partitions, coordinator_epoch) = {
            let mut txns = self.lock();
            let Ok(coordinator_epoch) = self.check_coordinator(id) else {
                return Ok(());
            };
            let Some(m) = txns.get_mut(id) else {
                return Ok(());
            };
            if !m.state.is_prepared() {
                return Ok(());
            }
            if m.pending {
                return Err(MarkerFailure::Retry("a state change is in flight".into()));
            }
            m.pending = true;
            (
                m.producer_id,
                m.producer_epoch,
                m.state,
                m.partitions.clone(),
                coordinator_epoch,
            )
        };
        let commit = state == TxnState::PrepareCommit;
        let result = self
            .write_markers(
                MarkerSpec {
                    producer_id,
                    producer_epoch: epoch,
                    commit,
                    coordinator_epoch,
                },
                &partitions,
            )
            .await;
        // Only the ownership that began this completion touches memory (a
        // partition dropped or reloaded meanwhile has its own state).
        let next = {
            let mut txns = self.lock();
            if self.check_coordinator(id) != Ok(coordinator_epoch) {
                return Ok(());
            }
            let Some(m) = txns.get_mut(id) else {
                return Ok(());
            };
            if let Err(e) = result {
                m.pending = false;
                return Err(e);
            }
            let mut v = m.value();
            v.state = if commit {
                TxnState::CompleteCommit
            } else {
                TxnState::CompleteAbort
            };
            v.partitions.clear();
            v.last_update_ms = self.clock.now_ms();
            v
        };
        self.transition(id, next, coordinator_epoch)
            .await
            .map_err(|e| MarkerFailure::Retry(format!("writing the completed state: {e:?}")))?;
        tracing::debug!(
            transactional_id = id,
            producer_id,
            commit,
            partitions = partitions.len(),
            "transaction completed"
        );
        Ok(())
    }

    /// Writes the marker to every partition (locally where this broker
    /// leads, through the leaders elsewhere) and waits until each is
    /// committed.
    async fn write_markers(
        &self,
        spec: MarkerSpec,
        partitions: &std::collections::BTreeSet<(String, i32)>,
    ) -> Result<(), MarkerFailure> {
        let marker = Marker::ending(spec.commit, spec.coordinator_epoch);
        let mut waits = Vec::with_capacity(partitions.len());
        let mut remote: BTreeMap<i32, Vec<(String, i32)>> = BTreeMap::new();
        for (topic, partition) in partitions {
            let route = match self.markers.get() {
                Some(channel) => channel.route(topic, *partition),
                None => Route::Local,
            };
            match route {
                Route::Local => {}
                Route::Gone => continue,
                Route::Remote(broker) => {
                    remote
                        .entry(broker)
                        .or_default()
                        .push((topic.clone(), *partition));
                    continue;
                }
                Route::Unavailable => {
                    return Err(MarkerFailure::Retry(format!(
                        "{topic}-{partition}: no leader"
                    )));
                }
            }
            match self.write_marker(
                topic,
                *partition,
                spec.producer_id,
                spec.producer_epoch,
                marker,
            ) {
                Ok(Some(w)) => waits.push(w),
                // Deleted since: nothing left to mark.
                Ok(None) | Err(MarkerWriteError::Log(LogError::Closed)) => {}
                Err(MarkerWriteError::Log(LogError::Marker(
                    e @ SequenceError::CoordinatorFenced { .. },
                ))) => {
                    return Err(MarkerFailure::Fenced(format!("{topic}-{partition}: {e:?}")));
                }
                Err(MarkerWriteError::Log(LogError::Marker(e))) => {
                    // The partition saw a newer epoch of this producer (a
                    // later decision already ended it here), or a newer
                    // coordinator wrote its marker.
                    tracing::warn!(topic, partition, producer_id = spec.producer_id,
                        epoch = spec.producer_epoch, error = ?e, "marker refused as stale");
                }
                Err(e) => return Err(MarkerFailure::Retry(format!("{topic}-{partition}: {e}"))),
            }
        }
        let sends = remote.iter().map(|(broker, parts)| async move {
            match self.markers.get() {
                Some(channel) => channel.send(*broker, spec, parts).await,
                None => Ok(()),
            }
        });
        let mut errors = Vec::new();
        for outcome in futures_util::future::join_all(sends).await {
            match outcome {
                Ok(()) => {}
                Err(SendError::Fenced(e)) => return Err(MarkerFailure::Fenced(e)),
                Err(SendError::Retry(e)) => errors.push(e),
            }
        }
        for w in waits {
            let outcome = w
                .partition
                .wait_committed(w.end, w.leader_epoch, self.cfg.write_timeout)
                .await;
            if outcome != CommitWait::Committed && !w.partition.log().is_closed() {
                errors.push(format!(
                    "{}-{}: marker not committed ({outcome:?})",
                    w.partition.topic(),
                    w.partition.partition()
                ));
            }
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(MarkerFailure::Retry(errors.join("; ")))
        }
    }

    /// Appends one marker to `topic`-`partition` (for the group's offsets
    /// partition, the producer's pending offsets are committed or dropped
    /// with it). Returns the log and what to wait for, or None if the
    /// partition is not hosted here. Also serves WriteTxnMarkers.
    pub fn write_marker(
        &self,
        topic: &str,
        partition: i32,
        producer_id: i64,
        epoch: i16,
        marker: Marker,
    ) -> Result<Option<MarkerWrite>, MarkerWriteError> {
        let Some(replica) = self.logs.partition(topic, partition) else {
            return Ok(None);
        };
        let _admitted = if topic == OFFSETS_TOPIC {
            match self.groups.admit_txn_marker(partition) {
                Some(gate) => Some(gate),
                None => return Err(MarkerWriteError::GroupsLoading(partition)),
            }
        } else {
            None
        };
        let info = replica.append_marker(producer_id, epoch, marker)?;
        if topic == OFFSETS_TOPIC {
            self.groups
                .complete_txn(producer_id, marker.kind == MarkerType::Commit);
        }
        Ok(Some(MarkerWrite {
            partition: replica,
            end: info.last_offset + 1,
            leader_epoch: info.leader_epoch,
        }))
    }

    /// Starts the timers (transactions found prepared are completed by
    /// their partition's load, `loading.rs`).
    pub fn start_background(self: &Arc<Self>) {
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
    pub(crate) async fn abort_timed_out(self: Arc<Self>) {
        let now = self.clock.now_ms();
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
        let cutoff = self.clock.now_ms() - self.cfg.id_expiration_ms;
        let expired: Vec<(String, i32)> = {
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
            let mut out = Vec::with_capacity(ids.len());
            for id in ids {
                let Ok(coordinator_epoch) = self.check_coordinator(&id) else {
                    continue;
                };
                if let Some(m) = txns.get_mut(&id) {
                    m.pending = true;
                    out.push((id, coordinator_epoch));
                }
            }
            out
        };
        for (id, coordinator_epoch) in expired {
            let result = self.persist(&id, None, coordinator_epoch).await;
            let mut txns = self.lock();
            if self.check_coordinator(&id) != Ok(coordinator_epoch) {
                continue;
            }
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
