//! Leader elections, the controller's job (Kafka's
//! `PartitionChangeBuilder`): when a partition's leader is not a live
//! broker, the first live in-sync replica (in replica order) becomes leader
//! at the next leader epoch; with none, the partition goes offline (leader
//! -1, epoch bumped) and keeps its ISR, so the first ISR member to return
//! is elected cleanly. `unclean.leader.election.enable` lets a live replica
//! outside the ISR lead instead (it may lack acknowledged records). Dead
//! followers leave the ISR while the leader lives.
//!
//! The same pass completes reassignments whose target replicas are all in
//! sync (`reassignment.rs`). Quorum topics (`quorum.ack.enable`) change
//! leaders in two steps instead, a fence and a choice from the replicas'
//! reports (`quorum.rs`, docs/quorum-acks.md).
//!
//! Every change is a transaction guarded by the controller epoch (the
//! `controller` key's create revision) and the partition key's revision: a
//! deposed controller, or a change that raced another, writes nothing.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::controller::Role;
use super::partition_writes::write_partition_state_and;
use super::quorum;
use super::records::{reports_prefix, PartitionState};
use super::store::{ClusterStore, Op};
use super::view::{ClusterSnapshot, ClusterView};

/// The state `state` should move to given the live brokers, of which
/// `draining` are in a controlled shutdown; None if it stays. A draining
/// leader hands over to the first live in-sync replica that is not
/// draining (keeping the lead if there is none); draining followers leave
/// the ISR, as dead ones do.
pub(crate) fn elect(
    state: &PartitionState,
    live: &BTreeSet<i32>,
    draining: &BTreeSet<i32>,
    unclean: bool,
) -> Option<PartitionState> {
    let mut next = state.clone();
    let staying = |id: &i32| live.contains(id) && !draining.contains(id);
    if state.leader >= 0 && draining.contains(&state.leader) && live.contains(&state.leader) {
        let successor = state
            .replicas
            .iter()
            .find(|id| staying(id) && state.isr.contains(id));
        if let Some(&leader) = successor {
            next.leader = leader;
            next.leader_epoch = state.leader_epoch + 1;
            next.isr.retain(staying);
        } else {
            next.isr.retain(|id| staying(id) || *id == state.leader);
        }
    } else if state.leader >= 0 && live.contains(&state.leader) {
        next.isr.retain(|id| staying(id) || *id == state.leader);
    } else {
        // A draining replica leads only if no other in-sync one lives.
        let in_sync = state
            .replicas
            .iter()
            .find(|id| staying(id) && state.isr.contains(id))
            .or_else(|| {
                state
                    .replicas
                    .iter()
                    .find(|id| live.contains(id) && state.isr.contains(id))
            });
        // A replica a reassignment is adding may hold nothing yet.
        let any_live = state
            .replicas
            .iter()
            .find(|id| live.contains(id) && !state.adding_replicas.contains(id));
        match (in_sync, any_live) {
            (Some(&leader), _) => {
                next.leader = leader;
                next.isr.retain(|id| staying(id) || *id == leader);
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
pub(crate) async fn run_once(
    store: &dyn ClusterStore,
    snap: &ClusterSnapshot,
    epoch: i64,
    settings: ElectionSettings,
    backoff: &FenceBackoff,
) -> usize {
    let now = Instant::now();
    let live = snap.live_broker_ids();
    let draining = snap.draining_broker_ids();
    let mut written = 0;
    for (topic, parts) in &snap.partitions {
        let quorum = quorum::is_quorum_topic(snap, topic);
        for (p, entry) in parts.iter() {
            let mut also = Vec::new();
            let (next, why) = if quorum {
                // Leader changes fence first; the fenced partition gets the
                // leader its replicas' reports prove (docs/quorum-acks.md).
                let chosen = quorum::choose_leader(
                    &entry.state,
                    &quorum::reports_for(snap, topic, *p),
                    &snap.brokers,
                    &draining,
                    quorum::min_insync(snap, topic, settings.min_insync_default),
                    if settings.unclean {
                        quorum::Unclean::OnceNoProofCanCome
                    } else {
                        quorum::Unclean::Never
                    },
                );
                if let Some(next) = chosen {
                    // A move away from a live leader that ended with it
                    // leading again (its successor lacked acknowledged
                    // records) is not tried again at once.
                    if let Some(f) = &entry.state.fencing {
                        if f.preferred.is_some_and(|p| p != next.leader)
                            && next.leader == f.previous_leader
                        {
                            backoff.hold(topic, *p, now);
                        }
                    }
                    also.push(Op::delete_prefix(reports_prefix(topic, *p)));
                    (
                        next,
                        "quorum partition leader chosen from the replicas' reports",
                    )
                } else if let Some(next) = elect(&entry.state, &live, &draining, settings.unclean)
                    .filter(|_| {
                        !(live.contains(&entry.state.leader) && backoff.holds(topic, *p, now))
                    })
                    .and_then(|next| quorum::fence_instead(&entry.state, &next, &snap.brokers))
                {
                    (next, "quorum partition fenced for a leader change")
                } else {
                    continue;
                }
            } else {
                match elect(&entry.state, &live, &draining, settings.unclean) {
                    Some(next) => (next, "partition leadership changed"),
                    None => match super::reassignment::complete(&entry.state, &live) {
                        Some(next) => (next, "partition reassignment completed"),
                        None => continue,
                    },
                }
            };
            let txn = write_partition_state_and(
                store,
                topic,
                *p,
                entry.mod_revision,
                Some(epoch),
                &next,
                also,
            )
            .await;
            match txn {
                Ok(Some(_)) => {
                    written += 1;
                    tracing::info!(
                        topic = %topic, partition = p, replicas = ?next.replicas,
                        leader = next.leader, leader_epoch = next.leader_epoch, isr = ?next.isr,
                        "{why}"
                    );
                }
                // Someone else changed it, or this controller was deposed:
                // the next pass sees the new state.
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(topic = %topic, partition = p, error = %e, "election write failed")
                }
            }
        }
    }
    written
}

/// Quorum partitions whose live leader is not fenced again before an
/// instant: its last move failed for want of a caught-up successor. One
/// per controller process, shared by the elections and the leader balance
/// (an operator's ElectLeaders fences once per request).
#[derive(Clone, Default)]
pub struct FenceBackoff(Arc<Mutex<HashMap<(String, i32), Instant>>>);

impl FenceBackoff {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<(String, i32), Instant>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Leaves `topic`-`partition`'s live leader alone for a while.
    pub fn hold(&self, topic: &str, partition: i32, now: Instant) {
        self.map()
            .insert((topic.to_string(), partition), now + FENCE_BACKOFF);
    }

    /// Whether `topic`-`partition`'s live leader is left alone at `now`.
    pub fn holds(&self, topic: &str, partition: i32, now: Instant) -> bool {
        let mut m = self.map();
        m.retain(|_, until| *until > now);
        m.contains_key(&(topic.to_string(), partition))
    }
}

/// How long such a partition is left alone.
const FENCE_BACKOFF: Duration = Duration::from_secs(10);

/// The controller's election settings, read once at start.
#[derive(Debug, Clone, Copy)]
pub struct ElectionSettings {
    /// `unclean.leader.election.enable`.
    pub unclean: bool,
    /// The broker's `min.insync.replicas` (a topic's override wins).
    pub min_insync_default: i32,
}

/// What an operator's election (ElectLeaders) wants of a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ElectionType {
    /// The first replica leads again, if it is live, in sync and not
    /// shutting down.
    Preferred,
    /// A partition without a live leader takes any live replica.
    Unclean,
}

/// Why an operator's election changed nothing (Kafka's error codes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ElectionRefused {
    /// The partition already has the leader asked for.
    NotNeeded,
    /// The preferred replica cannot lead now (dead, out of sync, leaving).
    PreferredNotAvailable,
    /// No live replica may lead.
    NoEligibleLeader,
}

/// The state an operator's election moves `state` to.
pub fn operator_election(
    state: &PartitionState,
    live: &BTreeSet<i32>,
    draining: &BTreeSet<i32>,
    kind: ElectionType,
) -> Result<PartitionState, ElectionRefused> {
    let mut next = state.clone();
    match kind {
        ElectionType::Preferred => {
            let Some(&preferred) = state.replicas.first() else {
                return Err(ElectionRefused::PreferredNotAvailable);
            };
            if state.leader == preferred {
                return Err(ElectionRefused::NotNeeded);
            }
            if !live.contains(&preferred)
                || draining.contains(&preferred)
                || !state.isr.contains(&preferred)
            {
                return Err(ElectionRefused::PreferredNotAvailable);
            }
            next.leader = preferred;
        }
        ElectionType::Unclean => {
            if state.leader >= 0 && live.contains(&state.leader) {
                return Err(ElectionRefused::NotNeeded);
            }
            // An in-sync replica first (staying, then any), as Kafka:
            // only without one may a replica that lacks records lead.
            let staying = |id: &&i32| live.contains(*id) && !draining.contains(*id);
            let in_sync = |id: &&i32| state.isr.contains(*id);
            let Some(&leader) = state
                .replicas
                .iter()
                .find(|id| staying(id) && in_sync(id))
                .or_else(|| {
                    state
                        .replicas
                        .iter()
                        .find(|id| live.contains(*id) && in_sync(id))
                })
                .or_else(|| {
                    state
                        .replicas
                        .iter()
                        .filter(|id| !state.adding_replicas.contains(*id))
                        .find(staying)
                })
                .or_else(|| {
                    state
                        .replicas
                        .iter()
                        .find(|id| live.contains(*id) && !state.adding_replicas.contains(*id))
                })
            else {
                return Err(ElectionRefused::NoEligibleLeader);
            };
            next.leader = leader;
            if !state.isr.contains(&leader) {
                next.isr = vec![leader];
            }
        }
    }
    next.leader_epoch = state.leader_epoch + 1;
    next.partition_epoch = state.partition_epoch + 1;
    Ok(next)
}

/// While this broker is the controller, elects at every change of the
/// view (and every second, to retry what failed).
pub fn start(
    store: Arc<dyn ClusterStore>,
    view: ClusterView,
    mut role: watch::Receiver<Role>,
    settings: ElectionSettings,
    backoff: FenceBackoff,
    mut shutdown: watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        let mut snapshots = view.subscribe();
        loop {
            let current = *role.borrow_and_update();
            if let Role::Active { epoch } = current {
                let snap = snapshots.borrow_and_update().clone();
                if snap.connected {
                    run_once(store.as_ref(), &snap, epoch, settings, &backoff).await;
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
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            fencing: None,
        }
    }

    fn live(ids: &[i32]) -> BTreeSet<i32> {
        ids.iter().copied().collect()
    }

    #[test]
    fn a_live_leader_stays_and_dead_followers_leave_the_isr() {
        let s = state(&[1, 2, 3], 1, 4, &[1, 2, 3]);
        assert_eq!(elect(&s, &live(&[1, 2, 3]), &live(&[]), false), None);
        let next = elect(&s, &live(&[1, 3]), &live(&[]), false).unwrap();
        assert_eq!(
            (next.leader, next.leader_epoch, next.isr.clone()),
            (1, 4, vec![1, 3])
        );
        assert_eq!(next.partition_epoch, 8);
    }

    #[test]
    fn the_first_live_in_sync_replica_takes_over_at_the_next_epoch() {
        let s = state(&[1, 2, 3], 1, 4, &[1, 3]);
        let next = elect(&s, &live(&[2, 3]), &live(&[]), false).unwrap();
        assert_eq!((next.leader, next.leader_epoch, next.isr), (3, 5, vec![3]));
    }

    #[test]
    fn with_no_live_isr_member_the_partition_goes_offline_unless_unclean() {
        let s = state(&[1, 2], 1, 4, &[1]);
        let offline = elect(&s, &live(&[2]), &live(&[]), false).unwrap();
        assert_eq!(
            (offline.leader, offline.leader_epoch, offline.isr.clone()),
            (-1, 5, vec![1])
        );
        // Nothing more to do until an ISR member returns.
        assert_eq!(elect(&offline, &live(&[2]), &live(&[]), false), None);
        let back = elect(&offline, &live(&[1, 2]), &live(&[]), false).unwrap();
        assert_eq!((back.leader, back.leader_epoch, back.isr), (1, 6, vec![1]));
        let unclean = elect(&s, &live(&[2]), &live(&[]), true).unwrap();
        assert_eq!(
            (unclean.leader, unclean.leader_epoch, unclean.isr),
            (2, 5, vec![2])
        );
    }

    #[test]
    fn a_draining_broker_hands_leadership_to_a_staying_isr_member() {
        let s = state(&[1, 2, 3], 1, 4, &[1, 2, 3]);
        let next = elect(&s, &live(&[1, 2, 3]), &live(&[1]), false).unwrap();
        assert_eq!(
            (next.leader, next.leader_epoch, next.isr),
            (2, 5, vec![2, 3])
        );
        // A draining follower leaves the ISR; the leader stays.
        let next = elect(&s, &live(&[1, 2, 3]), &live(&[3]), false).unwrap();
        assert_eq!(
            (next.leader, next.leader_epoch, next.isr),
            (1, 4, vec![1, 2])
        );
        // With no other in-sync replica it keeps the lead.
        let alone = state(&[1, 2], 1, 4, &[1]);
        assert_eq!(elect(&alone, &live(&[1, 2]), &live(&[1]), false), None);
        // A dead leader's successor is a staying replica if there is one.
        let next = elect(&s, &live(&[2, 3]), &live(&[2]), false).unwrap();
        assert_eq!((next.leader, next.isr), (3, vec![3]));
    }

    #[test]
    fn operator_elections_follow_kafkas_rules() {
        let s = state(&[1, 2, 3], 2, 4, &[1, 2, 3]);
        let next =
            operator_election(&s, &live(&[1, 2, 3]), &live(&[]), ElectionType::Preferred).unwrap();
        assert_eq!(
            (next.leader, next.leader_epoch, next.partition_epoch),
            (1, 5, 8)
        );
        assert_eq!(
            operator_election(
                &next,
                &live(&[1, 2, 3]),
                &live(&[]),
                ElectionType::Preferred
            ),
            Err(ElectionRefused::NotNeeded)
        );
        for (alive, leaving, isr) in [
            (&[2, 3][..], &[][..], &[1, 2, 3][..]),
            (&[1, 2, 3], &[1], &[1, 2, 3]),
            (&[1, 2, 3], &[], &[2, 3]),
        ] {
            let s = state(&[1, 2, 3], 2, 4, isr);
            assert_eq!(
                operator_election(&s, &live(alive), &live(leaving), ElectionType::Preferred),
                Err(ElectionRefused::PreferredNotAvailable)
            );
        }
        let offline = state(&[1, 2], -1, 4, &[1]);
        let next =
            operator_election(&offline, &live(&[2]), &live(&[]), ElectionType::Unclean).unwrap();
        assert_eq!((next.leader, next.isr), (2, vec![2]));
        // A live in-sync replica wins over an earlier one out of sync.
        let s = state(&[1, 2, 3], -1, 4, &[3]);
        let next =
            operator_election(&s, &live(&[2, 3]), &live(&[]), ElectionType::Unclean).unwrap();
        assert_eq!((next.leader, next.isr), (3, vec![3]));
        assert_eq!(
            operator_election(&offline, &live(&[]), &live(&[]), ElectionType::Unclean),
            Err(ElectionRefused::NoEligibleLeader)
        );
    }

    #[test]
    fn a_single_replica_partition_follows_its_broker() {
        let s = state(&[5], 5, 0, &[5]);
        let off = elect(&s, &live(&[1, 2]), &live(&[]), false).unwrap();
        assert_eq!((off.leader, off.leader_epoch), (-1, 1));
        let on = elect(&off, &live(&[1, 2, 5]), &live(&[]), false).unwrap();
        assert_eq!((on.leader, on.leader_epoch, on.isr), (5, 2, vec![5]));
    }
}
