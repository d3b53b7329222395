//! `auto.leader.rebalance.enable` (Kafka's auto leader rebalance): after
//! failovers and restarts, leaderships pile up on the brokers that stayed,
//! and those carry every produce request. Every
//! `leader.imbalance.check.interval.seconds` the controller counts, per
//! broker, the partitions that prefer it (their first replica) but are led
//! elsewhere; above `leader.imbalance.per.broker.percentage` of them, it
//! runs the preferred election of ElectLeaders on each (only where the
//! preferred replica is live, in sync and not shutting down).
//!
//! It writes partition state guarded by the controller epoch and the
//! key's revision, like every controller change; it never touches logs.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::controller::Role;
use super::elections::{operator_election, ElectionType, FenceBackoff};
use super::partition_writes::write_partition_state;
use super::records::PartitionState;
use super::store::ClusterStore;
use super::view::{ClusterSnapshot, ClusterView};

/// Settings read once at start.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BalanceSettings {
    pub interval: Duration,
    /// Percent of a broker's preferred partitions led elsewhere that it
    /// tolerates.
    pub max_imbalance_pct: i32,
}

/// The preferred elections a balance check wants: (topic, partition, the
/// key's revision, next state).
pub(crate) fn preferred_elections(
    snap: &ClusterSnapshot,
    max_imbalance_pct: i32,
) -> Vec<(String, i32, i64, PartitionState)> {
    let live = snap.live_broker_ids();
    let draining = snap.draining_broker_ids();
    // Per preferred broker: how many partitions prefer it, and those of
    // them led elsewhere.
    type Preferred<'a> = (usize, Vec<(&'a str, i32)>);
    let mut preferred: BTreeMap<i32, Preferred> = BTreeMap::new();
    for (topic, parts) in &snap.partitions {
        for (p, e) in parts.iter() {
            let Some(&first) = e.state.replicas.first() else {
                continue;
            };
            if e.state.reassigning() {
                continue;
            }
            let entry = preferred.entry(first).or_default();
            entry.0 += 1;
            if e.state.leader != first {
                entry.1.push((topic.as_str(), *p));
            }
        }
    }
    let mut out = Vec::new();
    for (broker, (total, misled)) in preferred {
        if misled.is_empty() || !live.contains(&broker) || draining.contains(&broker) {
            continue;
        }
        // Kafka's test: imbalance ratio strictly above the percentage.
        if misled.len() as u64 * 100 <= total as u64 * max_imbalance_pct.max(0) as u64 {
            continue;
        }
        for (topic, p) in misled {
            let Some(e) = snap.partition(topic, p) else {
                continue;
            };
            if let Ok(next) = operator_election(&e.state, &live, &draining, ElectionType::Preferred)
            {
                // A quorum topic fences first (docs/quorum-acks.md).
                let next = if super::quorum::is_quorum_topic(snap, topic) {
                    match super::quorum::fence_instead(&e.state, &next, &snap.brokers) {
                        Some(fenced) => fenced,
                        None => continue,
                    }
                } else {
                    next
                };
                out.push((topic.to_string(), p, e.mod_revision, next));
            }
        }
    }
    out
}

/// While this broker is the controller, checks the balance every
/// `settings.interval`.
pub fn start(
    store: Arc<dyn ClusterStore>,
    view: ClusterView,
    mut role: watch::Receiver<Role>,
    settings: BalanceSettings,
    backoff: FenceBackoff,
    mut shutdown: watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = tokio::time::sleep(settings.interval) => {}
                r = role.changed() => { if r.is_err() { return } continue }
                _ = shutdown.changed() => return,
            }
            let Role::Active { epoch } = *role.borrow_and_update() else {
                continue;
            };
            let snap = view.snapshot();
            if !snap.connected {
                continue;
            }
            let now = std::time::Instant::now();
            for (topic, p, revision, next) in preferred_elections(&snap, settings.max_imbalance_pct)
            {
                // A quorum partition whose last move found its preferred
                // replica short of acknowledged records is left alone a
                // while, or each check would fence it again.
                if next.fencing.is_some() && backoff.holds(&topic, p, now) {
                    continue;
                }
                let txn =
                    write_partition_state(store.as_ref(), &topic, p, revision, Some(epoch), &next)
                        .await;
                match txn {
                    Ok(Some(_)) => tracing::info!(topic = %topic, partition = p,
                        leader = next.leader, leader_epoch = next.leader_epoch,
                        "preferred leader elected (auto leader rebalance)"),
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "auto leader rebalance: store write failed");
                        break;
                    }
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::records::BrokerRegistration;
    use crate::cluster::view::{LiveBroker, PartitionEntry};

    fn snapshot(parts: &[(i32, &[i32], i32, &[i32])], live: &[i32]) -> ClusterSnapshot {
        let mut snap = ClusterSnapshot::default();
        for id in live {
            snap.brokers.insert(
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
                    broker_epoch: 1,
                },
            );
        }
        let mut map = BTreeMap::new();
        for (p, replicas, leader, isr) in parts {
            map.insert(
                *p,
                PartitionEntry {
                    state: PartitionState {
                        replicas: replicas.to_vec(),
                        leader: *leader,
                        leader_epoch: 2,
                        isr: isr.to_vec(),
                        partition_epoch: 4,
                        adding_replicas: vec![],
                        removing_replicas: vec![],
                        fencing: None,
                    },
                    mod_revision: 100 + *p as i64,
                    create_revision: 1,
                },
            );
        }
        snap.partitions.insert("t".into(), Arc::new(map));
        snap.connected = true;
        snap
    }

    #[test]
    fn leaderships_go_back_to_preferred_replicas_above_the_threshold() {
        // Broker 1 prefers partitions 0 and 1 and leads neither (100%);
        // broker 2 prefers 2 and leads it.
        let snap = snapshot(
            &[
                (0, &[1, 2], 2, &[1, 2]),
                (1, &[1, 2], 2, &[1, 2]),
                (2, &[2, 1], 2, &[1, 2]),
            ],
            &[1, 2],
        );
        let mut moves: Vec<(i32, i32, i32)> = preferred_elections(&snap, 10)
            .into_iter()
            .map(|(_, p, _, next)| (p, next.leader, next.leader_epoch))
            .collect();
        moves.sort();
        assert_eq!(moves, vec![(0, 1, 3), (1, 1, 3)]);
    }

    #[test]
    fn below_the_threshold_or_out_of_sync_nothing_moves() {
        // Broker 1 prefers 4 partitions and leads 3 (25% misled).
        let parts: Vec<(i32, &[i32], i32, &[i32])> = vec![
            (0, &[1, 2], 1, &[1, 2]),
            (1, &[1, 2], 1, &[1, 2]),
            (2, &[1, 2], 1, &[1, 2]),
            (3, &[1, 2], 2, &[1, 2]),
        ];
        assert!(preferred_elections(&snapshot(&parts, &[1, 2]), 30).is_empty());
        assert_eq!(preferred_elections(&snapshot(&parts, &[1, 2]), 10).len(), 1);
        // The preferred replica out of the ISR: no election.
        let out_of_sync = snapshot(&[(0, &[1, 2], 2, &[2])], &[1, 2]);
        assert!(preferred_elections(&out_of_sync, 0).is_empty());
        // The preferred broker is gone: no election.
        let gone = snapshot(&[(0, &[1, 2], 2, &[1, 2])], &[2]);
        assert!(preferred_elections(&gone, 0).is_empty());
    }
}
