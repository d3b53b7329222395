//! Partition reassignment (KIP-455; `kafka-reassign-partitions.sh`,
//! `Admin.alterPartitionReassignments`): moving a partition's replicas to
//! another set of brokers without a moment with fewer in-sync copies than
//! before. A reassignment is written into the partition's state: the
//! target's new brokers join `replicas` as `adding_replicas` (their
//! reconcilers create the logs, they start at the bucket's end when the
//! topic is tiered and fetch like any follower; the leader takes them into
//! the ISR once caught up); the brokers leaving stay as
//! `removing_replicas`, in the ISR, until the controller sees every target
//! replica in sync and completes it: the replicas become the target, the
//! leaving ones drop out of the ISR and, if the leader is leaving, the
//! first in-sync replica of the target leads at the next epoch. Their
//! reconcilers then delete their copies.
//!
//! The functions here decide; the caller writes, guarded by the
//! partition key's revision (docs/reassignment.md).

use std::collections::BTreeSet;

use super::records::PartitionState;

/// Why a reassignment request changes nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReassignRefused {
    /// INVALID_REPLICA_ASSIGNMENT, with the reason an operator reads.
    Invalid(String),
    /// A cancellation of a partition that is not being reassigned.
    NoReassignmentInProgress,
}

/// The replicas before the reassignment under way (its replicas when none
/// is), in the order the reassignment left them (the target's first), as
/// Kafka's `originalReplicas`: a cancellation restores the set, and the
/// preferred leader may differ (ElectLeaders or a new order fixes it).
fn original_replicas(state: &PartitionState) -> Vec<i32> {
    state
        .replicas
        .iter()
        .copied()
        .filter(|id| !state.adding_replicas.contains(id))
        .collect()
}

/// The state that reassigns `state` to `target` (`None` cancels the
/// reassignment under way), given the live brokers. Ok(None): nothing to
/// change (the partition already has exactly these replicas).
pub fn reassign(
    state: &PartitionState,
    target: Option<&[i32]>,
    live: &BTreeSet<i32>,
) -> Result<Option<PartitionState>, ReassignRefused> {
    let original = original_replicas(state);
    let target: Vec<i32> = match target {
        None if !state.reassigning() => return Err(ReassignRefused::NoReassignmentInProgress),
        None => original.clone(),
        Some(t) => {
            validate(t, live)?;
            t.to_vec()
        }
    };
    let mut next = state.clone();
    if target == original {
        // A cancellation, or a target equal to where it started.
        if !state.reassigning() {
            return Ok(None);
        }
        next.replicas = original;
        next.adding_replicas.clear();
        next.removing_replicas.clear();
    } else {
        let same_brokers = {
            let a: BTreeSet<i32> = target.iter().copied().collect();
            let b: BTreeSet<i32> = original.iter().copied().collect();
            a == b
        };
        if same_brokers {
            // A new order only (a new preferred leader): no data moves.
            next.replicas = target;
            next.adding_replicas.clear();
            next.removing_replicas.clear();
        } else {
            next.adding_replicas = target
                .iter()
                .copied()
                .filter(|id| !original.contains(id))
                .collect();
            next.removing_replicas = original
                .iter()
                .copied()
                .filter(|id| !target.contains(id))
                .collect();
            // Target first, so its first replica is the preferred leader.
            next.replicas = target;
            next.replicas.extend(next.removing_replicas.iter().copied());
        }
    }
    // Replicas of an earlier target that this one drops leave at once.
    next.isr.retain(|id| next.replicas.contains(id));
    keep_a_leader(state, &mut next, live)?;
    next.partition_epoch = state.partition_epoch + 1;
    Ok(Some(next))
}

/// The state that completes the reassignment under way in `state`, once
/// every target replica is in the ISR; None before (or without one).
pub fn complete(state: &PartitionState, live: &BTreeSet<i32>) -> Option<PartitionState> {
    if !state.reassigning() {
        return None;
    }
    let target = state.target_replicas();
    if target.is_empty() || !target.iter().all(|id| state.isr.contains(id)) {
        return None;
    }
    let mut next = state.clone();
    next.replicas = target;
    next.adding_replicas.clear();
    next.removing_replicas.clear();
    next.isr.retain(|id| next.replicas.contains(id));
    if !next.replicas.contains(&state.leader) {
        // The leader leaves: the first live in-sync replica of the target
        // leads (none live: offline until one returns, as an election).
        next.leader = next
            .replicas
            .iter()
            .copied()
            .find(|id| live.contains(id) && next.isr.contains(id))
            .unwrap_or(-1);
        next.leader_epoch = state.leader_epoch + 1;
    }
    next.partition_epoch = state.partition_epoch + 1;
    Some(next)
}

fn validate(target: &[i32], live: &BTreeSet<i32>) -> Result<(), ReassignRefused> {
    if target.is_empty() {
        return Err(ReassignRefused::Invalid(
            "the target replica list is empty".into(),
        ));
    }
    let mut seen = BTreeSet::new();
    for id in target {
        if *id < 0 {
            return Err(ReassignRefused::Invalid(format!(
                "replica {id} is not a broker id"
            )));
        }
        if !seen.insert(*id) {
            return Err(ReassignRefused::Invalid(format!(
                "broker {id} appears twice in the target replicas"
            )));
        }
        if !live.contains(id) {
            return Err(ReassignRefused::Invalid(format!(
                "broker {id} is not a live broker of the cluster"
            )));
        }
    }
    Ok(())
}

/// A leader dropped by a new target (an earlier target's replica that led)
/// hands over to the first in-sync replica left, at the next epoch; with
/// none the change is refused rather than taking the partition offline.
fn keep_a_leader(
    state: &PartitionState,
    next: &mut PartitionState,
    live: &BTreeSet<i32>,
) -> Result<(), ReassignRefused> {
    if state.leader < 0 || next.replicas.contains(&state.leader) {
        return Ok(());
    }
    let Some(leader) = next
        .replicas
        .iter()
        .copied()
        .find(|id| live.contains(id) && next.isr.contains(id))
    else {
        return Err(ReassignRefused::Invalid(format!(
            "the leader ({}) would leave and no other replica is in sync",
            state.leader
        )));
    };
    next.leader = leader;
    next.leader_epoch = state.leader_epoch + 1;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(replicas: &[i32], leader: i32, isr: &[i32]) -> PartitionState {
        PartitionState {
            replicas: replicas.to_vec(),
            leader,
            leader_epoch: 3,
            isr: isr.to_vec(),
            partition_epoch: 10,
            adding_replicas: Vec::new(),
            removing_replicas: Vec::new(),
            fencing: None,
        }
    }

    fn live(ids: &[i32]) -> BTreeSet<i32> {
        ids.iter().copied().collect()
    }

    #[test]
    fn a_move_adds_the_target_first_and_removes_the_rest_on_completion() {
        let s = state(&[1, 2, 3], 1, &[1, 2, 3]);
        let all = live(&[1, 2, 3, 4, 5]);
        let started = reassign(&s, Some(&[4, 2, 5]), &all).unwrap().unwrap();
        assert_eq!(started.replicas, vec![4, 2, 5, 1, 3]);
        assert_eq!(started.adding_replicas, vec![4, 5]);
        assert_eq!(started.removing_replicas, vec![1, 3]);
        assert_eq!(started.isr, vec![1, 2, 3]);
        assert_eq!((started.leader, started.leader_epoch), (1, 3));
        assert_eq!(started.partition_epoch, 11);
        assert_eq!(started.target_replicas(), vec![4, 2, 5]);
        // Not before every target replica is in sync.
        assert_eq!(complete(&started, &all), None);
        let mut caught_up = started.clone();
        caught_up.isr = vec![1, 2, 3, 4];
        assert_eq!(complete(&caught_up, &all), None);
        caught_up.isr = vec![1, 2, 3, 4, 5];
        let done = complete(&caught_up, &all).unwrap();
        assert_eq!(done.replicas, vec![4, 2, 5]);
        assert_eq!(done.isr, vec![2, 4, 5]);
        assert!(!done.reassigning());
        // The leader left: the target's first in-sync replica leads.
        assert_eq!((done.leader, done.leader_epoch), (4, 4));
    }

    #[test]
    fn a_staying_leader_keeps_its_epoch() {
        let s = state(&[1, 2, 3], 2, &[1, 2, 3]);
        let mut started = reassign(&s, Some(&[2, 3, 4]), &live(&[1, 2, 3, 4]))
            .unwrap()
            .unwrap();
        started.isr.push(4);
        let done = complete(&started, &live(&[1, 2, 3, 4])).unwrap();
        assert_eq!((done.leader, done.leader_epoch), (2, 3));
        assert_eq!(done.replicas, vec![2, 3, 4]);
    }

    #[test]
    fn cancelling_restores_the_original_replicas() {
        let s = state(&[1, 2, 3], 1, &[1, 2, 3]);
        let all = live(&[1, 2, 3, 4]);
        let mut started = reassign(&s, Some(&[1, 2, 4]), &all).unwrap().unwrap();
        started.isr.push(4);
        let cancelled = reassign(&started, None, &all).unwrap().unwrap();
        assert_eq!(cancelled.replicas, vec![1, 2, 3]);
        assert_eq!(cancelled.isr, vec![1, 2, 3]);
        assert!(!cancelled.reassigning());
        assert_eq!(
            reassign(&s, None, &all),
            Err(ReassignRefused::NoReassignmentInProgress)
        );
        // Asking for the original replicas again is a cancellation too.
        let back = reassign(&started, Some(&[1, 2, 3]), &all).unwrap().unwrap();
        assert_eq!(back.replicas, vec![1, 2, 3]);
    }

    #[test]
    fn a_new_target_replaces_the_one_under_way() {
        let s = state(&[1, 2, 3], 1, &[1, 2, 3]);
        let all = live(&[1, 2, 3, 4, 5]);
        let mut first = reassign(&s, Some(&[1, 2, 4]), &all).unwrap().unwrap();
        first.isr.push(4);
        let second = reassign(&first, Some(&[1, 2, 5]), &all).unwrap().unwrap();
        // Broker 4 was never an original replica: it leaves at once.
        assert_eq!(second.replicas, vec![1, 2, 5, 3]);
        assert_eq!(second.adding_replicas, vec![5]);
        assert_eq!(second.removing_replicas, vec![3]);
        assert_eq!(second.isr, vec![1, 2, 3]);
    }

    #[test]
    fn a_new_order_moves_no_data_and_the_same_replicas_change_nothing() {
        let s = state(&[1, 2, 3], 1, &[1, 2, 3]);
        let all = live(&[1, 2, 3]);
        assert_eq!(reassign(&s, Some(&[1, 2, 3]), &all), Ok(None));
        let reordered = reassign(&s, Some(&[3, 1, 2]), &all).unwrap().unwrap();
        assert_eq!(reordered.replicas, vec![3, 1, 2]);
        assert!(!reordered.reassigning());
        assert_eq!(reordered.leader, 1);
    }

    #[test]
    fn invalid_targets_are_refused_with_a_reason() {
        let s = state(&[1, 2, 3], 1, &[1, 2, 3]);
        let all = live(&[1, 2, 3]);
        for (target, reason) in [
            (&[][..], "empty"),
            (&[1, 1, 2][..], "twice"),
            (&[1, 2, 9][..], "broker 9 is not a live broker"),
            (&[-1, 2][..], "not a broker id"),
        ] {
            match reassign(&s, Some(target), &all) {
                Err(ReassignRefused::Invalid(why)) => assert!(why.contains(reason), "{why}"),
                other => panic!("{target:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_leader_an_earlier_target_added_hands_over_when_dropped() {
        let s = state(&[1, 2, 3], 1, &[1, 2, 3]);
        let all = live(&[1, 2, 3, 4]);
        let mut first = reassign(&s, Some(&[4, 2, 3]), &all).unwrap().unwrap();
        first.isr.push(4);
        first.leader = 4;
        first.leader_epoch = 4;
        let cancelled = reassign(&first, None, &all).unwrap().unwrap();
        // The original set comes back in the order the reassignment left
        // it (target first), as Kafka's cancellation does.
        assert_eq!(cancelled.replicas, vec![2, 3, 1]);
        assert_eq!((cancelled.leader, cancelled.leader_epoch), (2, 5));
    }
}
