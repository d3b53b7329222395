//! The replica manager (the role half of Kafka's `ReplicaManager`): makes
//! each partition log this broker hosts lead or follow as the store says,
//! keeps one [`ReplicaFetcher`] per leader it follows, and, for the
//! partitions it leads, reviews the ISR: a follower that has not caught up
//! within `replica.lag.time.max.ms` leaves it, as does one whose
//! fetch-to-ack latency is far above its peers' (docs/slow-followers.md);
//! one that holds everything up to the high watermark joins it
//! (docs/replication.md).
//!
//! It acts after the reconciler created the logs of a store revision; it
//! never creates or removes logs, and writes only ISR changes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::fetcher::{FetcherSettings, ReplicaFetcher};
use super::isr::{alter_isr, bump_leader_epoch, report_log, step_down, step_down_state};
use super::tiered_start::TieredEndSource;
use crate::cluster::records::PartitionState;
use crate::cluster::store::ClusterStore;
use crate::cluster::view::{ClusterSnapshot, ClusterView, PartitionEntry};
use strata_common::config::BrokerConfig;
use strata_storage::log_manager::LogManager;
use strata_storage::partition::ack_latency::SlowFollowerRule;
use strata_storage::partition::Partition;

/// Settings read once at start.
#[derive(Debug, Clone, Copy)]
pub struct ReplicationSettings {
    pub fetcher: FetcherSettings,
    pub max_lag: Duration,
    /// The slow-follower rule (docs/slow-followers.md), without the
    /// partition's min.insync.replicas; None when disabled.
    pub slow_followers: Option<SlowFollowerRule>,
}

impl ReplicationSettings {
    pub fn from_config(me: i32, c: &BrokerConfig) -> Self {
        let r = &c.settings().replica;
        ReplicationSettings {
            fetcher: FetcherSettings {
                me,
                max_bytes_per_partition: r.fetch_max_bytes,
                max_bytes: r.fetch_response_max_bytes,
                max_wait: r.fetch_wait_max,
                backoff: r.fetch_backoff,
                socket_timeout: r.socket_timeout,
            },
            max_lag: r.lag_time_max,
            slow_followers: r.slow_eviction_enable.then(|| SlowFollowerRule {
                ratio: r.slow_eviction_ratio,
                floor: r.slow_eviction_min,
                window: r.slow_eviction_window,
                min_isr: 1,
            }),
        }
    }
}

struct ReplicaManager {
    me: i32,
    store: Arc<dyn ClusterStore>,
    view: ClusterView,
    logs: Arc<LogManager>,
    settings: ReplicationSettings,
    fetchers: HashMap<i32, ReplicaFetcher>,
    tiered: Option<Arc<dyn TieredEndSource>>,
    /// This process's registration id (`Cluster::incarnation`).
    incarnation: uuid::Uuid,
}

/// Starts the manager: it applies roles at every revision the reconciler
/// reports in `applied`, and reviews ISRs on a timer, until `shutdown`.
pub fn start(
    store: Arc<dyn ClusterStore>,
    view: ClusterView,
    logs: Arc<LogManager>,
    settings: ReplicationSettings,
    tiered: Option<Arc<dyn TieredEndSource>>,
    incarnation: uuid::Uuid,
    mut applied: watch::Receiver<i64>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut m = ReplicaManager {
        me: settings.fetcher.me,
        store,
        view,
        logs,
        settings,
        fetchers: HashMap::new(),
        tiered,
        incarnation,
    };
    let review_every =
        (settings.max_lag / 2).clamp(Duration::from_millis(50), Duration::from_secs(1));
    tokio::spawn(async move {
        loop {
            applied.borrow_and_update();
            let snap = m.view.snapshot();
            if snap.connected {
                let (restarted, fenced, stepping_down) = m.apply_roles(&snap);
                m.logs.note_roles_applied();
                m.bump_epochs(restarted).await;
                m.step_down(stepping_down).await;
                m.report_fenced(fenced, &snap).await;
                m.review_isrs(&snap).await;
            }
            tokio::select! {
                r = applied.changed() => if r.is_err() { break },
                _ = tokio::time::sleep(review_every) => {}
                _ = shutdown.changed() => break,
            }
        }
        m.fetchers.clear();
    });
}

/// The hosted partitions on broker `me` (internal topics included), with
/// their logs.
fn hosted<'a>(
    logs: &'a LogManager,
    me: i32,
    snap: &'a ClusterSnapshot,
) -> impl Iterator<Item = (&'a str, i32, &'a PartitionEntry, Arc<Partition>)> + 'a {
    snap.partitions.iter().flat_map(move |(topic, parts)| {
        let local = logs.topic(topic).filter(|t| {
            snap.topics
                .get(topic.as_str())
                .is_some_and(|e| e.record.id == t.id)
        });
        parts.iter().filter_map(move |(p, e)| {
            if !e.state.replicas.contains(&me) {
                return None;
            }
            let partition = local.as_ref()?.partition(*p)?;
            Some((topic.as_str(), *p, e, partition))
        })
    })
}

impl ReplicaManager {
    /// Leaders lead with the store's ISR; followers follow, each leader's
    /// partitions served by its fetcher. Returns the partitions the store
    /// names this broker leader of in a state written before this process
    /// registered, while their logs hold records: the leadership is the
    /// previous incarnation's, and this one leads only at a new epoch
    /// (the bump makes the state newer than the registration).
    ///
    /// Also returns the fenced partitions of quorum topics this broker is
    /// an in-sync replica of: it follows no one at the fencing epoch now,
    /// and reports its log (docs/quorum-acks.md).
    ///
    /// And the partitions it is still named leader of from before this
    /// process while its log is not hydrated, with the state it hands them
    /// over in.
    #[allow(clippy::type_complexity)]
    fn apply_roles(
        &mut self,
        snap: &ClusterSnapshot,
    ) -> (
        Vec<(String, i32, PartitionEntry)>,
        Vec<(String, i32, i32, Arc<Partition>)>,
        Vec<(String, i32, PartitionEntry, PartitionState)>,
    ) {
        let mut restarted = Vec::new();
        let mut stepping_down = Vec::new();
        let mut fenced = Vec::new();
        let mut wanted: BTreeMap<i32, BTreeMap<(String, i32), (Arc<Partition>, i32)>> =
            BTreeMap::new();
        // This process's registration: a leadership written before it was
        // this broker's previous incarnation's.
        let registered_at = snap
            .brokers
            .get(&self.me)
            .filter(|b| b.registration.incarnation == self.incarnation)
            .map(|b| b.broker_epoch);
        for (topic, p, e, part) in hosted(&self.logs, self.me, snap) {
            let s = &e.state;
            let mut lead_unhydrated = false;
            if s.leader == self.me && !part.log().hydrated() {
                // Named leader with a log that lost what this replica
                // acknowledged (log/hydration.rs): another replica leads,
                // or a quorum election runs. Each hand-over takes it out
                // of the ISR (or makes it abstain), so it cannot recur.
                if registered_at.is_none() {
                    continue;
                }
                let quorum = crate::cluster::quorum::is_quorum_topic(snap, topic);
                let live = snap.live_broker_ids();
                let draining = snap.draining_broker_ids();
                if let Some(next) = step_down_state(s, self.me, quorum, &live, &draining) {
                    stepping_down.push((topic.to_string(), p, e.clone(), next));
                    continue;
                }
                lead_unhydrated = true;
                // The only in-sync replica: it leads with what it has, at
                // a new epoch if the leadership is an earlier process's.
                if part.awaits_assignment() && registered_at.is_some_and(|at| e.mod_revision < at) {
                    tracing::warn!(topic = %topic, partition = p,
                        "leading with a log that lost what it acknowledged: no other in-sync replica");
                    restarted.push((topic.to_string(), p, e.clone()));
                    continue;
                }
            }
            if s.leader == self.me && part.awaits_assignment() {
                let holds_records =
                    part.log().log_end_offset() > 0 || part.log().latest_epoch_in_log().is_some();
                match registered_at {
                    // Not in the view yet: wait.
                    None => continue,
                    Some(at) if holds_records && e.mod_revision < at => {
                        restarted.push((topic.to_string(), p, e.clone()));
                        continue;
                    }
                    Some(_) => {}
                }
            }
            if s.leader == self.me {
                // Emptied since the check above (a fetcher of the previous
                // leadership): not now; the next pass hands it over.
                if !part.become_leader_checked(
                    self.me,
                    s.leader_epoch,
                    &s.isr,
                    snap.revision,
                    lead_unhydrated,
                ) {
                    continue;
                }
            } else {
                part.become_follower(self.me, s.leader_epoch, s.leader);
                if s.leader < 0 && s.fencing.is_some() && s.isr.contains(&self.me) {
                    fenced.push((topic.to_string(), p, s.leader_epoch, part.clone()));
                }
                if s.leader >= 0 {
                    wanted
                        .entry(s.leader)
                        .or_default()
                        .insert((topic.to_string(), p), (part, s.leader_epoch));
                }
            }
        }
        self.fetchers.retain(|leader, f| {
            if !wanted.contains_key(leader) {
                f.set_partitions(BTreeMap::new());
                return false;
            }
            true
        });
        for (leader, parts) in wanted {
            let f = self.fetchers.entry(leader).or_insert_with(|| {
                ReplicaFetcher::start(
                    leader,
                    self.view.clone(),
                    self.settings.fetcher,
                    self.tiered.clone(),
                )
            });
            f.set_partitions(parts);
        }
        (restarted, fenced, stepping_down)
    }

    /// Reports, for each fenced quorum partition, what this replica's log
    /// holds, fsynced first; once per fencing epoch and process (the
    /// controller counts a report only with the reporter's broker epoch).
    async fn report_fenced(
        &self,
        fenced: Vec<(String, i32, i32, Arc<Partition>)>,
        snap: &ClusterSnapshot,
    ) {
        let Some(broker_epoch) = snap.brokers.get(&self.me).map(|b| b.broker_epoch) else {
            return;
        };
        for (topic, p, epoch, part) in fenced {
            let reported = snap
                .reports
                .get(&(topic.clone(), p))
                .and_then(|r| r.get(&self.me))
                .is_some_and(|r| r.leader_epoch == epoch && r.broker_epoch == broker_epoch);
            if reported {
                continue;
            }
            let Some(topic_id) = snap.topic(&topic).map(|t| t.record.id) else {
                continue;
            };
            match report_log(
                self.store.as_ref(),
                &topic,
                p,
                self.me,
                epoch,
                broker_epoch,
                topic_id,
                part,
            )
            .await
            {
                Ok(report) => tracing::info!(topic = %topic, partition = p, leader_epoch = epoch,
                    last_epoch = report.last_epoch, log_end = report.log_end, abstains = report.abstains,
                    high_watermark = report.high_watermark, "reported the log for a quorum election"),
                Err(e) => tracing::warn!(topic = %topic, partition = p, error = %e,
                    "cannot report the log for a quorum election; retrying"),
            }
        }
    }

    /// Hands over each partition this broker is still named leader of
    /// while its log lost what it acknowledged (`isr::step_down_state`).
    async fn step_down(&self, stepping_down: Vec<(String, i32, PartitionEntry, PartitionState)>) {
        for (topic, p, entry, next) in stepping_down {
            match step_down(self.store.as_ref(), &topic, p, &entry, next.clone()).await {
                Ok(true) => tracing::warn!(topic = %topic, partition = p, leader = next.leader,
                    leader_epoch = next.leader_epoch,
                    "restarted without the log it led with: handed the leadership over"),
                Ok(false) => {}
                Err(e) => tracing::warn!(topic = %topic, partition = p, error = %e,
                    "cannot hand over the leadership; retrying"),
            }
        }
    }

    /// Bumps the leader epoch of each partition a restarted leader takes
    /// back; it leads once the view shows the new epoch.
    async fn bump_epochs(&self, restarted: Vec<(String, i32, PartitionEntry)>) {
        for (topic, p, entry) in restarted {
            match bump_leader_epoch(self.store.as_ref(), &topic, p, &entry, self.me).await {
                Ok(true) => tracing::info!(topic = %topic, partition = p,
                    leader_epoch = entry.state.leader_epoch + 1, "leading again after a restart at a new epoch"),
                Ok(false) => {}
                Err(e) => tracing::warn!(topic = %topic, partition = p, error = %e,
                    "cannot bump the leader epoch; retrying"),
            }
        }
    }

    /// For each partition this broker leads: shrinks the ISR by the
    /// followers that fell behind and expands it by the live ones caught
    /// up. The roles follow when the view shows the change.
    async fn review_isrs(&mut self, snap: &ClusterSnapshot) {
        // A broker in a controlled shutdown is not taken back into an ISR
        // (the controller takes it out).
        let live: BTreeSet<i32> = snap
            .live_broker_ids()
            .difference(&snap.draining_broker_ids())
            .copied()
            .collect();
        let mut changes = Vec::new();
        for (topic, p, e, part) in hosted(&self.logs, self.me, snap) {
            if e.state.leader != self.me || !part.is_leader() {
                continue;
            }
            let rule = self.settings.slow_followers.map(|r| SlowFollowerRule {
                min_isr: part.log().config().min_insync_replicas.max(1) as usize,
                ..r
            });
            let review = part.isr_review(
                &e.state.replicas,
                &live,
                self.settings.max_lag,
                rule.as_ref(),
            );
            if review.out_of_sync.is_empty() && review.caught_up.is_empty() {
                continue;
            }
            changes.push((topic.to_string(), p, e.clone(), part, review));
        }
        for (topic, p, entry, part, review) in changes {
            let isr: Vec<i32> = entry
                .state
                .replicas
                .iter()
                .copied()
                .filter(|id| {
                    (entry.state.isr.contains(id) && !review.out_of_sync.contains(id))
                        || review.caught_up.contains(id)
                        || *id == self.me
                })
                .collect();
            let written =
                alter_isr(self.store.as_ref(), &topic, p, &entry, self.me, isr.clone()).await;
            match written {
                Ok(Some(revision)) => {
                    tracing::info!(topic = %topic, partition = p, isr = ?isr,
                        shrunk = ?review.out_of_sync, expanded = ?review.caught_up,
                        slow = ?review.slow, "ISR changed");
                    if !review.slow.is_empty() {
                        part.note_slow_evictions(review.slow.len() as u64);
                    }
                    part.note_isr_change(
                        review.out_of_sync.len() as u64,
                        review.caught_up.len() as u64,
                    );
                    for id in &review.caught_up {
                        part.isr_addition_written(*id, revision);
                    }
                    for id in &review.out_of_sync {
                        part.isr_removal_written(*id, revision);
                    }
                }
                outcome => {
                    if let Err(e) = outcome {
                        tracing::warn!(topic = %topic, partition = p, error = %e, "ISR change not written");
                    }
                    for id in &review.caught_up {
                        part.isr_addition_failed(*id);
                    }
                    for id in &review.out_of_sync {
                        part.isr_removal_failed(*id);
                    }
                }
            }
        }
    }
}
