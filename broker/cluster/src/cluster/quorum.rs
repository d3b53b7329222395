//! Leader changes of quorum topics (`quorum.ack.enable`,
//! docs/quorum-acks.md). There acks=all completes once k =
//! `min.insync.replicas` replicas hold a batch, so an ISR member may lack
//! an acknowledged record, and a leader may not simply be picked from the
//! ISR. A change goes in two steps, both the controller's:
//!
//! 1. **Fence** ([`fence_instead`]): the partition gets no leader at the
//!    next epoch. Each live ISR member stops following the old epoch,
//!    fsyncs, and reports its log (`replica_reports/...`).
//! 2. **Choose** ([`choose_leader`]): if the previous leader reported, its
//!    high watermark is exactly what was acknowledged, and any reporter
//!    holding it in the same epoch qualifies. Otherwise reports from
//!    n − k + 1 of the n ISR members include one holding every
//!    acknowledged record (k of them hold it, and the old leader can no
//!    longer gather k), so the greatest (last epoch, log end) qualifies.
//!
//! The ISR is kept through a change: members leave only by the leader's
//! rule that k members holding the high watermark remain.
//!
//! Pure decisions over partition states and reports: it never writes.

use std::collections::{BTreeMap, BTreeSet};

use super::records::{Fencing, PartitionState, ReplicaReport};
use super::view::{ClusterSnapshot, LiveBroker};

/// The topic config that makes a topic a quorum topic.
pub const QUORUM_ACK: &str = "quorum.ack.enable";

/// Whether `topic` acknowledges at a quorum.
pub fn is_quorum_topic(snap: &ClusterSnapshot, topic: &str) -> bool {
    snap.topic(topic).is_some_and(|t| {
        t.record
            .configs
            .get(QUORUM_ACK)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    })
}

/// The reports on `topic`-`partition` of the topic's current incarnation.
pub fn reports_for(
    snap: &ClusterSnapshot,
    topic: &str,
    partition: i32,
) -> BTreeMap<i32, ReplicaReport> {
    let Some(id) = snap.topic(topic).map(|t| t.record.id) else {
        return BTreeMap::new();
    };
    snap.reports
        .get(&(topic.to_string(), partition))
        .map(|r| {
            r.iter()
                .filter(|(_, r)| r.topic_id == id)
                .map(|(n, r)| (*n, r.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// The topic's `min.insync.replicas` (its override, else `default`).
pub fn min_insync(snap: &ClusterSnapshot, topic: &str, default: i32) -> i32 {
    snap.topic(topic)
        .and_then(|t| t.record.configs.get("min.insync.replicas"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// For a quorum topic, what an ISR-mode decision `next` becomes: a leader
/// change fences instead (for `next.leader` if it names one); a change of
/// the ISR alone is left to the leader. None: nothing to write.
/// `live` gives the leader's broker epoch, if it is live.
pub fn fence_instead(
    state: &PartitionState,
    next: &PartitionState,
    live: &BTreeMap<i32, LiveBroker>,
) -> Option<PartitionState> {
    if state.leader < 0 || next.leader == state.leader {
        return None;
    }
    let mut fenced = state.clone();
    fenced.leader = -1;
    fenced.leader_epoch = state.leader_epoch + 1;
    fenced.partition_epoch = state.partition_epoch + 1;
    fenced.fencing = Some(Fencing {
        previous_leader: state.leader,
        previous_broker_epoch: live.get(&state.leader).map(|b| b.broker_epoch),
        preferred: (next.leader >= 0).then_some(next.leader),
    });
    Some(fenced)
}

/// When a fenced quorum partition may take a leader without proof that it
/// holds every acknowledged record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unclean {
    /// Never (`unclean.leader.election.enable=false`).
    Never,
    /// Once no proof can come: too few live in-sync replicas that have
    /// not abstained (`unclean.leader.election.enable=true`).
    OnceNoProofCanCome,
    /// At once, if no proof is there yet (an operator's UNCLEAN
    /// ElectLeaders).
    Now,
}

/// The reports that count for `state`'s fencing: at its epoch, from ISR
/// members that are live in the same incarnation that reported.
/// Abstentions included (callers split them).
fn valid_reports<'a>(
    state: &PartitionState,
    reports: &'a BTreeMap<i32, ReplicaReport>,
    live: &BTreeMap<i32, LiveBroker>,
) -> BTreeMap<i32, &'a ReplicaReport> {
    reports
        .iter()
        .filter(|(id, r)| {
            r.leader_epoch == state.leader_epoch
                && state.isr.contains(id)
                && live
                    .get(id)
                    .is_some_and(|b| b.broker_epoch == r.broker_epoch)
        })
        .map(|(id, r)| (*id, r))
        .collect()
}

/// The leader a fenced quorum partition gets now, as its new state (same
/// epoch, ISR kept, fencing cleared); None while the reports do not yet
/// prove any candidate holds every acknowledged record. `unclean` says
/// when a live replica may lead without that proof.
pub fn choose_leader(
    state: &PartitionState,
    reports: &BTreeMap<i32, ReplicaReport>,
    live: &BTreeMap<i32, LiveBroker>,
    draining: &BTreeSet<i32>,
    min_insync: i32,
    unclean: Unclean,
) -> Option<PartitionState> {
    if state.leader >= 0 {
        return None;
    }
    let all = valid_reports(state, reports, live);
    // A replica whose log was created empty and has not caught up since
    // abstains: it proves nothing, and no proof will come from it.
    let abstained: BTreeSet<i32> = all
        .iter()
        .filter(|(_, r)| r.abstains)
        .map(|(id, _)| *id)
        .collect();
    let valid: BTreeMap<i32, &ReplicaReport> =
        all.into_iter().filter(|(_, r)| !r.abstains).collect();
    let fencing = state.fencing.clone().unwrap_or(Fencing {
        previous_leader: -1,
        previous_broker_epoch: None,
        preferred: None,
    });
    let order = |id: &i32| {
        state
            .replicas
            .iter()
            .position(|r| r == id)
            .unwrap_or(usize::MAX)
    };
    let staying = |id: &i32| !draining.contains(id);
    let pick = |eligible: Vec<i32>| -> Option<i32> {
        if let Some(p) = fencing.preferred.filter(|p| eligible.contains(p)) {
            return Some(p);
        }
        let mut e = eligible;
        e.sort_by_key(|id| (!staying(id), *id == fencing.previous_leader, order(id)));
        e.first().copied()
    };
    // The previous leader's high watermark bounds what was acknowledged
    // only if this very process led at the fenced epoch (not restarted,
    // not elected and fenced before it led) and its high watermark
    // reached that epoch's start (what earlier leaders acknowledged).
    let fenced_alive = valid.get(&fencing.previous_leader).filter(|r| {
        Some(r.broker_epoch) == fencing.previous_broker_epoch
            && r.led_epoch == state.leader_epoch - 1
            && r.high_watermark >= r.epoch_start
    });
    let n = state.isr.len();
    let k = (min_insync.max(1) as usize).min(n.max(1));
    let needed = (n + 1).saturating_sub(k).max(1);
    let chosen = if let Some(prev) = fenced_alive {
        // The previous leader, fenced alive, stopped at exactly what it
        // had acknowledged: its high watermark.
        let eligible = valid
            .iter()
            .filter(|(_, r)| r.last_epoch == prev.last_epoch && r.log_end >= prev.high_watermark)
            .map(|(id, _)| *id)
            .collect();
        pick(eligible)
    } else {
        if valid.len() >= needed {
            let best = valid.values().map(|r| (r.last_epoch, r.log_end)).max()?;
            let eligible = valid
                .iter()
                .filter(|(_, r)| (r.last_epoch, r.log_end) == best)
                .map(|(id, _)| *id)
                .collect();
            pick(eligible)
        } else {
            None
        }
    };
    // A proof may still come while enough live in-sync replicas have not
    // abstained to make n - k + 1 reports, or while the previous leader,
    // fenced alive, has not reported (its report alone proves a leader).
    let proof_may_come = state
        .isr
        .iter()
        .filter(|id| live.contains_key(id) && !abstained.contains(id))
        .count()
        >= needed
        || fencing.previous_broker_epoch.is_some_and(|at| {
            live.get(&fencing.previous_leader)
                .is_some_and(|b| b.broker_epoch == at)
                && !valid.contains_key(&fencing.previous_leader)
                && !abstained.contains(&fencing.previous_leader)
        });
    let mut next = state.clone();
    next.fencing = None;
    next.partition_epoch = state.partition_epoch + 1;
    match chosen {
        Some(leader) => next.leader = leader,
        // Availability over durability, as ISR topics: when an operator
        // asks, or once no proof can come (fewer live ISR members that did
        // not abstain than reports needed). The greatest log reported is
        // taken first, to lose as little as possible.
        None if unclean == Unclean::Now
            || (unclean == Unclean::OnceNoProofCanCome && !proof_may_come) =>
        {
            let candidate = |id: &i32| live.contains_key(id) && !state.adding_replicas.contains(id);
            let best_reported = valid
                .iter()
                .filter(|(id, _)| candidate(id))
                .max_by_key(|(id, r)| (r.last_epoch, r.log_end, staying(id)))
                .map(|(id, _)| *id);
            // Then a live replica that did not abstain (staying first), and
            // only then one whose log is known to have lost records.
            let unreported =
                |stay: bool| {
                    state.replicas.iter().copied().find(|id| {
                        candidate(id) && !abstained.contains(id) && (!stay || staying(id))
                    })
                };
            let leader = best_reported
                .or_else(|| unreported(true))
                .or_else(|| unreported(false))
                .or_else(|| state.replicas.iter().copied().find(|id| candidate(id)))?;
            next.leader = leader;
            next.isr = vec![leader];
        }
        None => return None,
    }
    Some(next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::records::BrokerRegistration;

    fn state(leader: i32, epoch: i32, isr: &[i32]) -> PartitionState {
        PartitionState {
            replicas: vec![1, 2, 3],
            leader,
            leader_epoch: epoch,
            isr: isr.to_vec(),
            partition_epoch: 7,
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            fencing: None,
        }
    }

    fn live(ids: &[i32]) -> BTreeMap<i32, LiveBroker> {
        ids.iter()
            .map(|id| {
                (
                    *id,
                    LiveBroker {
                        registration: BrokerRegistration {
                            node_id: *id,
                            host: "h".into(),
                            port: 1,
                            rack: None,
                            incarnation: uuid::Uuid::nil(),
                            shutting_down: false,
                            endpoints: Vec::new(),
                        },
                        broker_epoch: 100 + i64::from(*id),
                    },
                )
            })
            .collect()
    }

    fn report(id: i32, epoch: i32, last_epoch: i32, end: i64, hw: i64) -> (i32, ReplicaReport) {
        (
            id,
            ReplicaReport {
                leader_epoch: epoch,
                broker_epoch: 100 + i64::from(id),
                last_epoch,
                log_end: end,
                high_watermark: hw,
                led_epoch: -1,
                epoch_start: 0,
                topic_id: uuid::Uuid::nil(),
                abstains: false,
            },
        )
    }

    /// `r`, from a process that led at `epoch` from offset `start`.
    fn led(mut r: (i32, ReplicaReport), epoch: i32, start: i64) -> (i32, ReplicaReport) {
        r.1.led_epoch = epoch;
        r.1.epoch_start = start;
        r
    }

    #[test]
    fn a_leader_change_fences_and_an_isr_change_is_the_leaders() {
        let s = state(1, 4, &[1, 2, 3]);
        let mut next = s.clone();
        next.leader = 2;
        next.leader_epoch = 5;
        next.isr = vec![2, 3];
        let f = fence_instead(&s, &next, &live(&[1, 2, 3])).unwrap();
        assert_eq!(
            (f.leader, f.leader_epoch, f.isr.clone()),
            (-1, 5, vec![1, 2, 3])
        );
        assert_eq!(
            f.fencing,
            Some(Fencing {
                previous_leader: 1,
                previous_broker_epoch: Some(101),
                preferred: Some(2)
            })
        );
        let mut shrink = s.clone();
        shrink.isr = vec![1, 2];
        assert_eq!(fence_instead(&s, &shrink, &live(&[1, 2, 3])), None);
    }

    #[test]
    fn without_the_old_leader_n_minus_k_plus_one_reports_elect_the_longest_log() {
        let mut s = state(-1, 5, &[1, 2, 3]);
        s.fencing = Some(Fencing {
            previous_leader: 1,
            previous_broker_epoch: None,
            preferred: None,
        });
        let one: BTreeMap<_, _> = [report(2, 5, 4, 90, 80)].into_iter().collect();
        // k = 2 of n = 3: two reports needed.
        assert_eq!(
            choose_leader(
                &s,
                &one,
                &live(&[2, 3]),
                &BTreeSet::new(),
                2,
                Unclean::Never
            ),
            None
        );
        let two: BTreeMap<_, _> = [report(2, 5, 4, 90, 80), report(3, 5, 4, 100, 80)]
            .into_iter()
            .collect();
        let next = choose_leader(
            &s,
            &two,
            &live(&[2, 3]),
            &BTreeSet::new(),
            2,
            Unclean::Never,
        )
        .unwrap();
        assert_eq!(
            (next.leader, next.leader_epoch, next.isr.clone()),
            (3, 5, vec![1, 2, 3])
        );
        assert_eq!(next.fencing, None);
        // Reports of an earlier fencing, or of a dead or restarted
        // broker, do not count.
        let stale: BTreeMap<_, _> = [report(2, 4, 4, 90, 80), report(3, 5, 4, 100, 80)]
            .into_iter()
            .collect();
        assert_eq!(
            choose_leader(
                &s,
                &stale,
                &live(&[2, 3]),
                &BTreeSet::new(),
                2,
                Unclean::Never
            ),
            None
        );
        assert_eq!(
            choose_leader(&s, &two, &live(&[3]), &BTreeSet::new(), 2, Unclean::Never),
            None
        );
        // A later epoch beats a longer log.
        let epochs: BTreeMap<_, _> = [report(2, 5, 4, 90, 80), report(3, 5, 3, 100, 80)]
            .into_iter()
            .collect();
        assert_eq!(
            choose_leader(
                &s,
                &epochs,
                &live(&[2, 3]),
                &BTreeSet::new(),
                2,
                Unclean::Never
            )
            .map(|n| n.leader),
            Some(2)
        );
    }

    #[test]
    fn a_reporting_old_leader_lets_its_preferred_successor_lead_if_it_holds_the_high_watermark() {
        let mut s = state(-1, 5, &[1, 2, 3]);
        s.fencing = Some(Fencing {
            previous_leader: 1,
            previous_broker_epoch: Some(101),
            preferred: Some(2),
        });
        let draining: BTreeSet<i32> = [1].into_iter().collect();
        let r: BTreeMap<_, _> = [
            led(report(1, 5, 4, 120, 100), 4, 50),
            report(2, 5, 4, 100, 95),
        ]
        .into_iter()
        .collect();
        let next = choose_leader(&s, &r, &live(&[1, 2, 3]), &draining, 2, Unclean::Never).unwrap();
        assert_eq!(next.leader, 2);
        // Elected at 4 but fenced before it led (its high watermark is a
        // follower's), or its high watermark short of its epoch's start:
        // no shortcut; two reports of three, the greatest log.
        for prev in [
            report(1, 5, 4, 120, 100),
            led(report(1, 5, 4, 120, 40), 4, 50),
        ] {
            let r: BTreeMap<_, _> = [prev, report(2, 5, 4, 100, 95)].into_iter().collect();
            let next =
                choose_leader(&s, &r, &live(&[1, 2, 3]), &draining, 2, Unclean::Never).unwrap();
            assert_eq!(next.leader, 1, "2 may lack what 1 acknowledged");
        }
        // 2 lacks acknowledged records: the old leader keeps leading
        // rather than lose them (3 has not reported).
        let r: BTreeMap<_, _> = [
            led(report(1, 5, 4, 120, 100), 4, 50),
            report(2, 5, 4, 99, 95),
        ]
        .into_iter()
        .collect();
        let next = choose_leader(&s, &r, &live(&[1, 2, 3]), &draining, 2, Unclean::Never).unwrap();
        assert_eq!(next.leader, 1);
        // Restarted since it was fenced, its high watermark proves
        // nothing: two reports of three, the greatest log.
        let mut restarted = live(&[1, 2, 3]);
        restarted.get_mut(&1).unwrap().broker_epoch = 900;
        let mut r2 = r.clone();
        r2.get_mut(&1).unwrap().broker_epoch = 900;
        r2.get_mut(&1).unwrap().high_watermark = 0;
        let next = choose_leader(&s, &r2, &restarted, &draining, 2, Unclean::Never).unwrap();
        assert_eq!(next.leader, 1, "the longest log, not 2 which lacks records");
    }

    #[test]
    fn with_no_proof_only_an_unclean_election_takes_a_live_replica() {
        let mut s = state(-1, 5, &[1, 2, 3]);
        s.fencing = Some(Fencing {
            previous_leader: 1,
            previous_broker_epoch: None,
            preferred: None,
        });
        let r: BTreeMap<_, _> = [report(3, 5, 4, 100, 80)].into_iter().collect();
        assert_eq!(
            choose_leader(&s, &r, &live(&[3]), &BTreeSet::new(), 2, Unclean::Never),
            None
        );
        let next = choose_leader(
            &s,
            &r,
            &live(&[3]),
            &BTreeSet::new(),
            2,
            Unclean::OnceNoProofCanCome,
        )
        .unwrap();
        assert_eq!((next.leader, next.isr.clone()), (3, vec![3]));
        // While enough in-sync replicas live to prove a leader, unclean
        // waits for their reports.
        assert_eq!(
            choose_leader(
                &s,
                &r,
                &live(&[2, 3]),
                &BTreeSet::new(),
                2,
                Unclean::OnceNoProofCanCome
            ),
            None
        );
    }

    #[test]
    fn abstentions_prove_nothing_and_let_an_unclean_election_fire() {
        let mut s = state(-1, 5, &[1, 2, 3]);
        s.fencing = Some(Fencing {
            previous_leader: 1,
            previous_broker_epoch: None,
            preferred: None,
        });
        let mut empty = report(2, 5, -1, 0, 0);
        empty.1.abstains = true;
        let r: BTreeMap<_, _> = [empty.clone(), report(3, 5, 4, 100, 80)]
            .into_iter()
            .collect();
        // Two reports, one an abstention: no proof (k = 2 of n = 3).
        assert_eq!(
            choose_leader(&s, &r, &live(&[2, 3]), &BTreeSet::new(), 2, Unclean::Never),
            None
        );
        // 2 abstained: only 3 can still prove, fewer than two reports, so
        // unclean fires now and takes the greatest reported log.
        let next = choose_leader(
            &s,
            &r,
            &live(&[2, 3]),
            &BTreeSet::new(),
            2,
            Unclean::OnceNoProofCanCome,
        )
        .unwrap();
        assert_eq!((next.leader, next.isr.clone()), (3, vec![3]));
        // An operator's unclean election does not wait for reports.
        let none = BTreeMap::new();
        let next =
            choose_leader(&s, &none, &live(&[2, 3]), &BTreeSet::new(), 2, Unclean::Now).unwrap();
        assert_eq!(next.leader, 2);
        assert_eq!(
            choose_leader(
                &s,
                &none,
                &live(&[2, 3]),
                &BTreeSet::new(),
                2,
                Unclean::OnceNoProofCanCome
            ),
            None,
            "2 and 3 may still report"
        );
        // The previous leader, fenced alive, has yet to report: its report
        // alone may prove a leader, so unclean waits for it.
        let mut alive = s.clone();
        alive.fencing = Some(Fencing {
            previous_leader: 1,
            previous_broker_epoch: Some(101),
            preferred: Some(2),
        });
        let only_abstention: BTreeMap<_, _> = [empty.clone()].into_iter().collect();
        assert_eq!(
            choose_leader(
                &alive,
                &only_abstention,
                &live(&[1, 2]),
                &BTreeSet::new(),
                2,
                Unclean::OnceNoProofCanCome
            ),
            None
        );
        // Forced, an abstainer is the last choice.
        let mut order = s.clone();
        order.replicas = vec![2, 1, 3];
        let next = choose_leader(
            &order,
            &only_abstention,
            &live(&[1, 2]),
            &BTreeSet::new(),
            2,
            Unclean::Now,
        )
        .unwrap();
        assert_eq!(next.leader, 1);
        // A clean choice is taken first, even when unclean is allowed.
        let clean: BTreeMap<_, _> = [report(2, 5, 4, 90, 80), report(3, 5, 4, 100, 80)]
            .into_iter()
            .collect();
        let next = choose_leader(
            &s,
            &clean,
            &live(&[2, 3]),
            &BTreeSet::new(),
            2,
            Unclean::Now,
        )
        .unwrap();
        assert_eq!((next.leader, next.isr.clone()), (3, vec![1, 2, 3]));
    }
}
