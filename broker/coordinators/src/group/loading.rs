//! Following `__consumer_offsets` leadership: the groups of a partition are
//! loaded when this broker starts leading it and dropped when it stops
//! (Kafka's `GroupMetadataManager` `loadGroupsAndOffsets` /
//! `removeGroupsForPartition`), and every group request first checks that
//! its group's partition is coordinated here (NOT_COORDINATOR sends the
//! client to FindCoordinator, COORDINATOR_LOAD_IN_PROGRESS makes it wait).
//!
//! Owns the load and the drop; what a record means is `records.rs`'s.

use std::collections::HashMap;
use std::sync::{Arc, MutexGuard};
use std::time::Instant;

use kafka_protocol::ResponseError;

use super::coordinator::{code, restore_group, sync_error, GroupCoordinator};
use super::group::{Group, JoinResult};
use super::pending_txn::PendingTxnOffsets;
use super::records::{GroupValue, OffsetValue, RecordKey};
use super::store::OffsetsRecord;
use strata_storage::log::LogError;

impl GroupCoordinator {
    /// Ok when `group` is coordinated here; otherwise the error its
    /// request gets.
    pub fn check_coordinator(&self, group: &str) -> Result<(), ResponseError> {
        self.store
            .coordination()
            .check(self.store.partition_of(group))
            .map(|_| ())
    }

    /// Admits a transaction marker to `__consumer_offsets` partition `p`:
    /// the caller appends it and calls [`Self::complete_txn`] while holding
    /// the guard, so the marker lands either before a load of the
    /// partition starts (the load replays it) or after it finished (the
    /// loaded pending offsets end with it). None while the partition loads
    /// (the sender retries).
    pub(crate) fn admit_txn_marker(&self, p: i32) -> Option<MutexGuard<'_, ()>> {
        let gate = self.load_gate.lock().unwrap_or_else(|e| e.into_inner());
        (self.store.coordination().check(p) != Err(ResponseError::CoordinatorLoadInProgress))
            .then_some(gate)
    }

    /// Loads the partitions this broker now leads and drops those it no
    /// longer leads at the epoch they were loaded at (off the async
    /// workers: a load reads the partition's whole log).
    pub(crate) async fn follow_leadership(self: &Arc<Self>) {
        let me = self.clone();
        let _ = tokio::task::spawn_blocking(move || me.follow_leadership_now()).await;
    }

    /// [`Self::follow_leadership`], on this thread.
    pub fn follow_leadership_now(&self) {
        let changes = self.store.coordination().leadership_changes();
        for p in changes.unload {
            self.unload_partition(p);
        }
        for (p, epoch) in changes.load {
            {
                let _gate = self.load_gate.lock().unwrap_or_else(|e| e.into_inner());
                self.store.coordination().begin_load(p, epoch);
            }
            if let Err(e) = self.load_partition(p, epoch) {
                // Tried again at the next round.
                tracing::error!(partition = p, leader_epoch = epoch, error = %e,
                    "cannot load consumer groups; retrying");
                self.store.coordination().unload(p);
            }
        }
    }

    /// Replays partition `p` and serves its groups (led at `epoch`).
    fn load_partition(&self, p: i32, epoch: i32) -> Result<(), LogError> {
        let started = self.clock.now();
        let mut loaded: HashMap<String, Group> = HashMap::new();
        let mut pending = PendingTxnOffsets::default();
        let records = self
            .store
            .replay_partition(p, |r| apply(&mut loaded, &mut pending, r, started))?;
        loaded.retain(|_, g| !g.members.is_empty() || !g.offsets.is_empty() || g.generation > 0);
        let count = loaded.len();
        {
            let _gate = self.load_gate.lock().unwrap_or_else(|e| e.into_inner());
            let mut groups = self.lock();
            let mut pending_txn = self.pending_txn.lock().unwrap_or_else(|e| e.into_inner());
            // Whatever a request left of an earlier ownership goes.
            groups.retain(|id, _| self.store.partition_of(id) != p);
            pending_txn.retain_groups(|g| self.store.partition_of(g) != p);
            if !self.store.coordination().finish_load(p, epoch) {
                return Ok(());
            }
            groups.extend(loaded);
            pending_txn.merge(pending);
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
                groups = count,
                records,
                elapsed_ms = self
                    .clock
                    .now()
                    .saturating_duration_since(started)
                    .as_millis() as u64,
                "loaded consumer groups"
            );
        }
        Ok(())
    }

    /// Stops coordinating partition `p`: its groups leave memory, and
    /// requests parked on them are answered NOT_COORDINATOR.
    fn unload_partition(&self, p: i32) {
        self.store.coordination().unload(p);
        let mut groups = self.lock();
        let gone: Vec<String> = groups
            .keys()
            .filter(|id| self.store.partition_of(id) == p)
            .cloned()
            .collect();
        for id in &gone {
            let Some(mut g) = groups.remove(id) else {
                continue;
            };
            for m in g.members.values_mut() {
                if let Some(tx) = m.awaiting_join.take() {
                    let _ = tx.send(JoinResult::error(
                        code(ResponseError::NotCoordinator),
                        m.member_id.clone(),
                    ));
                }
                if let Some(tx) = m.awaiting_sync.take() {
                    let _ = tx.send(sync_error(ResponseError::NotCoordinator));
                }
            }
        }
        self.pending_txn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain_groups(|g| self.store.partition_of(g) != p);
        tracing::info!(
            partition = p,
            groups = gone.len(),
            "no longer coordinating consumer groups"
        );
    }
}

/// One replayed record into the groups being loaded.
fn apply(
    groups: &mut HashMap<String, Group>,
    pending: &mut PendingTxnOffsets,
    r: OffsetsRecord,
    now: Instant,
) {
    let (key, value) = match r {
        OffsetsRecord::Record(key, value, Some(producer_id)) => {
            pending.add_replayed(producer_id, key, value);
            return;
        }
        OffsetsRecord::Record(key, value, None) => (key, value),
        OffsetsRecord::Marker {
            producer_id,
            commit,
        } => {
            for (group, topic, part, v) in pending.take(producer_id) {
                if commit {
                    groups
                        .entry(group.clone())
                        .or_insert_with(|| Group::new(&group))
                        .offsets
                        .insert((topic, part), v);
                }
            }
            return;
        }
    };
    let group = key.group().to_string();
    match (key, value) {
        (
            RecordKey::Offset {
                topic, partition, ..
            },
            Some(v),
        ) => {
            if let Ok(v) = OffsetValue::decode(v) {
                groups
                    .entry(group.clone())
                    .or_insert_with(|| Group::new(&group))
                    .offsets
                    .insert((topic, partition), v);
            }
        }
        (
            RecordKey::Offset {
                topic, partition, ..
            },
            None,
        ) => {
            if let Some(g) = groups.get_mut(&group) {
                g.offsets.remove(&(topic, partition));
            }
        }
        (RecordKey::Group { .. }, Some(v)) => {
            if let Ok(v) = GroupValue::decode(v) {
                let g = groups
                    .entry(group.clone())
                    .or_insert_with(|| Group::new(&group));
                restore_group(g, v, now);
            }
        }
        (RecordKey::Group { .. }, None) => {
            groups.remove(&group);
        }
    }
}
