//! Leader elections, the controller's job (Kafka's
//! `PartitionChangeBuilder`): when a partition's leader is not a live
//! broker, the first live in-sync replica (in replica order) becomes leader
//! at the next leader epoch; with none, the partition goes offline (leader
//! -1, epoch bumped) and keeps its ISR, so the first ISR member to return
//! is elected cleanly. `unclean.leader.election.enable` lets a live replica
//! outside the ISR lead instead (it may lack acknowledged records). Dead
//! followers leave the ISR while the leader lives.
//!
//! Every change is a transaction guarded by the controller epoch (the
//! `controller` key's create revision) and the partition key's revision: a
//! deposed controller, or a change that raced another, writes nothing.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::controller::Role;
use super::records::{encode, partition_key, PartitionState, CONTROLLER_KEY};
use super::store::{ClusterStore, Compare, Op};
use super::view::{ClusterSnapshot, ClusterView};

/// The state `state` should move to given the live brokers; None if it
/// stays.
pub fn elect(
    state: &PartitionState,
    live: &BTreeSet<i32>,
    unclean: bool,
) -> Option<PartitionState> {
    let mut next = state.clone();
    if state.leader >= 0 && live.contains(&state.leader) {
        next.isr
            .retain(|id| live.contains(id) || *id == state.leader);
    } else {
        let in_sync = state
            .replicas
            .iter()
            .find(|id| live.contains(id) && state.isr.contains(id));
        let any_live = state.replicas.iter().find(|id| live.contains(id));
        match (in_sync, any_live) {
            (Some(&leader), _) => {
                next.leader = leader;
                next.isr.retain(|id| live.contains(id));
            }
            (None, Some(&leader)) if unclean => {
                next.leader = leader;
                next.isr = vec![leader];
            }
            // Offline: no live replica may lead. The ISR is kept.
            _ => next.leader = -1,
        }
        if next.leader != state.leader {
            next.leader_epoch = state.leader_epoch + 1;
        }
    }
    if next == *state {
        return None;
    }
    next.partition_epoch = state.partition_epoch + 1;
    Some(next)
}

/// One pass over every partition at controller epoch `epoch`. Returns the
/// number of changes written.
pub async fn run_once(
    store: &dyn ClusterStore,
    snap: &ClusterSnapshot,
    epoch: i64,
    unclean: bool,
) -> usize {
    let live: BTreeSet<i32> = snap.brokers.keys().copied().collect();
    let mut written = 0;
    for (topic, parts) in &snap.partitions {
        for (p, entry) in parts.iter() {
            let Some(next) = elect(&entry.state, &live, unclean) else {
                continue;
            };
            let key = partition_key(topic, *p);
            let txn = store
                .txn(
                    vec![
                        Compare::CreateRevision(CONTROLLER_KEY.to_string(), epoch),
                        Compare::ModRevision(key.clone(), entry.mod_revision),
                    ],
                    vec![Op::put(key, encode(&next))],
                )
                .await;
            match txn {
                Ok(o) if o.succeeded => {
                    written += 1;
                    tracing::info!(
                        topic = %topic, partition = p,
                        leader = next.leader, leader_epoch = next.leader_epoch, isr = ?next.isr,
                        "partition leadership changed"
                    );
                }
                // Someone else changed it, or this controller was deposed:
                // the next pass sees the new state.
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(topic = %topic, partition = p, error = %e, "election write failed")
                }
            }
        }
    }
    written
}

/// While this broker is the controller, elects at every change of the
/// view (and every second, to retry what failed).
pub fn start(
    store: Arc<dyn ClusterStore>,
    view: ClusterView,
    mut role: watch::Receiver<Role>,
    unclean: bool,
    mut shutdown: watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        let mut snapshots = view.subscribe();
        loop {
            let current = *role.borrow_and_update();
            if let Role::Active { epoch } = current {
                let snap = snapshots.borrow_and_update().clone();
                if snap.connected {
                    run_once(store.as_ref(), &snap, epoch, unclean).await;
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                r = snapshots.changed() => if r.is_err() { return },
                r = role.changed() => if r.is_err() { return },
                _ = shutdown.changed() => return,
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(replicas: &[i32], leader: i32, epoch: i32, isr: &[i32]) -> PartitionState {
        PartitionState {
            replicas: replicas.to_vec(),
            leader,
            leader_epoch: epoch,
            isr: isr.to_vec(),
            partition_epoch: 7,
        }
    }

    fn live(ids: &[i32]) -> BTreeSet<i32> {
        ids.iter().copied().collect()
    }

    #[test]
    fn a_live_leader_stays_and_dead_followers_leave_the_isr() {
        let s = state(&[1, 2, 3], 1, 4, &[1, 2, 3]);
        assert_eq!(elect(&s, &live(&[1, 2, 3]), false), None);
        let next = elect(&s, &live(&[1, 3]), false).unwrap();
        assert_eq!(
            (next.leader, next.leader_epoch, next.isr.clone()),
            (1, 4, vec![1, 3])
        );
        assert_eq!(next.partition_epoch, 8);
    }

    #[test]
    fn the_first_live_in_sync_replica_takes_over_at_the_next_epoch() {
        let s = state(&[1, 2, 3], 1, 4, &[1, 3]);
        let next = elect(&s, &live(&[2, 3]), false).unwrap();
        assert_eq!((next.leader, next.leader_epoch, next.isr), (3, 5, vec![3]));
    }

    #[test]
    fn with_no_live_isr_member_the_partition_goes_offline_unless_unclean() {
        let s = state(&[1, 2], 1, 4, &[1]);
        let offline = elect(&s, &live(&[2]), false).unwrap();
        assert_eq!(
            (offline.leader, offline.leader_epoch, offline.isr.clone()),
            (-1, 5, vec![1])
        );
        // Nothing more to do until an ISR member returns.
        assert_eq!(elect(&offline, &live(&[2]), false), None);
        let back = elect(&offline, &live(&[1, 2]), false).unwrap();
        assert_eq!((back.leader, back.leader_epoch, back.isr), (1, 6, vec![1]));
        let unclean = elect(&s, &live(&[2]), true).unwrap();
        assert_eq!(
            (unclean.leader, unclean.leader_epoch, unclean.isr),
            (2, 5, vec![2])
        );
    }

    #[test]
    fn a_single_replica_partition_follows_its_broker() {
        let s = state(&[5], 5, 0, &[5]);
        let off = elect(&s, &live(&[1, 2]), false).unwrap();
        assert_eq!((off.leader, off.leader_epoch), (-1, 1));
        let on = elect(&off, &live(&[1, 2, 5]), false).unwrap();
        assert_eq!((on.leader, on.leader_epoch, on.isr), (5, 2, vec![5]));
    }
}
