//! In a cluster, the store is the authority on topics: this task makes the
//! data directory follow it (Kafka's `ReplicaManager.applyDelta` for the
//! logs). For every topic with a partition whose replicas include this
//! broker it creates the local logs (with the cluster's topic id and
//! configs), adds newly assigned partitions, deletes those a reassignment
//! moved away, applies config changes, and removes the local logs of
//! topics the cluster deleted or recreated under a new id. Internal
//! topics are the cluster's like any other once the controller created
//! them; a local copy the cluster never knew is replaced by the cluster's.
//!
//! It reads the store; it never writes it.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::watch;
use uuid::Uuid;

use super::view::{ClusterSnapshot, ClusterView};
use strata_common::topic_name::is_internal;
use strata_storage::log_manager::LogManager;

/// Brings `logs` in line with `snap` for broker `me`. Errors are logged
/// and retried at the next change (the partition stays unavailable here).
pub(crate) fn reconcile(logs: &LogManager, snap: &ClusterSnapshot, me: i32, incarnation: Uuid) {
    if !snap.connected {
        return;
    }
    for (name, entry) in &snap.topics {
        let record = &entry.record;
        let hosted: Vec<i32> = snap
            .partitions
            .get(name)
            .map(|ps| {
                ps.iter()
                    .filter(|(_, e)| e.state.replicas.contains(&me))
                    .map(|(p, _)| *p)
                    .collect()
            })
            .unwrap_or_default();
        let local = logs.topic(name);
        if let Some(t) = &local {
            // An internal topic's copy the cluster never knew: another
            // broker's copy (or a fresh one) became the cluster's. One with
            // records is kept aside, never deleted.
            if t.id != record.id && !t.in_cluster() && is_internal(name) {
                let holds_records = t.logs().iter().any(|l| l.log_end_offset() > 0);
                let gone = if holds_records {
                    logs.retire_topic(name).map(|to| {
                        tracing::error!(topic = %name, kept_in = %to.display(),
                            "the cluster holds another copy of this internal topic; this broker's copy (with records) is kept aside and no longer served")
                    })
                } else {
                    logs.remove_topic(name).map(|_| ())
                };
                if let Err(e) = gone {
                    tracing::warn!(topic = %name, error = %e, "cannot replace a local internal topic");
                    continue;
                }
            }
            if t.id != record.id && t.in_cluster() {
                tracing::info!(topic = %name, "topic recreated in the cluster; removing the old local logs");
                if let Err(e) = logs.remove_topic(name) {
                    tracing::warn!(topic = %name, error = %e, "cannot remove old topic logs");
                    continue;
                }
            }
        }
        let local = logs.topic(name).filter(|t| t.id == record.id);
        // Partitions created while this process was registered: no
        // earlier process of this broker held them, so their new logs lost
        // nothing (log/hydration.rs). Only this process's registration
        // counts: a view that still shows the previous one proves nothing.
        let registered_at = snap
            .brokers
            .get(&me)
            .filter(|b| b.registration.incarnation == incarnation)
            .map(|b| b.broker_epoch);
        let fresh: BTreeSet<i32> = snap
            .partitions
            .get(name)
            .map(|parts| {
                parts
                    .iter()
                    .filter(|(_, e)| registered_at.is_some_and(|at| e.create_revision > at))
                    .map(|(p, _)| *p)
                    .collect()
            })
            .unwrap_or_default();
        let result = match local {
            None if hosted.is_empty() => Ok(()),
            None => logs
                .create_hosted_topic(
                    name,
                    record.id,
                    record.partitions,
                    &hosted,
                    record.configs.clone(),
                    &fresh,
                )
                .map(|_| ()),
            Some(t) => {
                let have: BTreeSet<i32> = t.partitions().iter().map(|l| l.partition()).collect();
                let missing: Vec<i32> = hosted
                    .iter()
                    .copied()
                    .filter(|p| !have.contains(p))
                    .collect();
                // Partitions the store still has, no longer on this broker
                // (a reassignment completed): their logs go.
                let moved: Vec<i32> = have
                    .iter()
                    .copied()
                    .filter(|p| {
                        snap.partition(name, *p)
                            .is_some_and(|e| !e.state.replicas.contains(&me))
                    })
                    .collect();
                let grow = (t.partition_count() as i32) < record.partitions;
                let mut r = Ok(());
                if !moved.is_empty() {
                    tracing::info!(topic = %name, partitions = ?moved, "replicas moved to other brokers; deleting the local copies");
                    r = logs.unhost_partitions(name, &moved);
                }
                if r.is_ok() && (!missing.is_empty() || grow) {
                    r = logs.host_partitions(name, record.partitions, &missing, &fresh);
                }
                if r.is_ok() && t.overrides() != record.configs {
                    r = logs.set_topic_overrides(name, record.configs.clone(), false);
                }
                r
            }
        };
        if let Err(e) = result {
            tracing::warn!(topic = %name, error = %e, "cannot apply the cluster's topic locally");
            continue;
        }
    }
    for t in logs.topics() {
        // Internal topics the store lacks wait for the controller (which
        // may publish its own copy of them).
        if is_internal(&t.name) || snap.topics.contains_key(&t.name) {
            continue;
        }
        if !t.in_cluster() {
            // Never the cluster's (a founding broker publishes its topics
            // before this runs): kept, and not served.
            continue;
        }
        tracing::info!(topic = %t.name, "topic deleted in the cluster; removing its local logs");
        if let Err(e) = logs.remove_topic(&t.name) {
            tracing::warn!(topic = %t.name, error = %e, "cannot remove topic logs");
        }
    }
}

/// Reconciles at every change of the view until `shutdown`. `applied`
/// carries the store revision the data directory follows.
/// Nothing is done before the view reaches `min_revision` (what this
/// broker itself wrote at start): a view older than that could lack a
/// topic just published and have its logs removed.
pub fn start(
    view: ClusterView,
    logs: Arc<LogManager>,
    me: i32,
    incarnation: Uuid,
    min_revision: i64,
    mut shutdown: watch::Receiver<bool>,
) -> watch::Receiver<i64> {
    let (tx, rx) = watch::channel(0i64);
    let mut snapshots = view.subscribe();
    tokio::spawn(async move {
        loop {
            let snap = snapshots.borrow_and_update().clone();
            if snap.revision < min_revision {
                tokio::select! {
                    r = snapshots.changed() => if r.is_err() { return },
                    _ = shutdown.changed() => return,
                }
                continue;
            }
            let l = logs.clone();
            let s = snap.clone();
            // File creation and deletion: off the async workers.
            if tokio::task::spawn_blocking(move || reconcile(&l, &s, me, incarnation))
                .await
                .is_err()
            {
                return;
            }
            let _ = tx.send(snap.revision);
            tokio::select! {
                r = snapshots.changed() => if r.is_err() { return },
                _ = shutdown.changed() => return,
            }
        }
    });
    rx
}
