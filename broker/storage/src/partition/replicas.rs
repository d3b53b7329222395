//! The partition's replication methods: taking a role (lead, follow, wait
//! for the store), follower progress and the ISR review, and the bound
//! they put on the log's high watermark (`replica_state.rs` holds the
//! state and the rule; docs/replication.md).
//!
//! Role changes hold `leader_isr_update` for writing (`mod.rs`); the bound
//! is handed to the log only under the replication state's lock, so the
//! last one handed down is the newest state's.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::ack_latency::{AckLatency, SlowFollowerRule};
use super::replica_state::{FollowerProgress, IsrReview, ReplicaState, Role, IN_FLIGHT};
use super::Partition;

/// A follower that has not fetched for this long no longer keeps the
/// leader's record of appends (`AckLatency`) from being trimmed.
const TRIM_SILENCE: Duration = Duration::from_secs(10);

impl Partition {
    /// Leads the partition at `epoch` with `isr` (this broker `me`
    /// included or not), as the store says at `revision`. Follower
    /// progress is kept across ISR changes at one epoch and starts unknown
    /// at a new leadership; as Kafka's leader does on taking over, the
    /// epoch starts at the current log end in the epoch cache.
    pub fn become_leader(&self, me: i32, epoch: i32, isr: &[i32], revision: i64) {
        self.become_leader_checked(me, epoch, isr, revision, true);
    }

    /// [`Self::become_leader`], refused (false) if the log is not hydrated
    /// (`log/hydration.rs`) unless `allow_unhydrated`: checked under
    /// `leader_isr_update`, which a follower's emptying of the log holds
    /// for reading, so a log emptied since the caller looked never leads
    /// by accident.
    pub fn become_leader_checked(
        &self,
        me: i32,
        epoch: i32,
        isr: &[i32],
        revision: i64,
        allow_unhydrated: bool,
    ) -> bool {
        let _changing = self.changing_role();
        if !allow_unhydrated && !self.log.hydrated() {
            return false;
        }
        self.log.begin_leader_epoch(epoch);
        let cfg = self.log.config();
        let quorum = cfg
            .quorum_ack
            .then(|| cfg.min_insync_replicas.max(1) as usize);
        let epoch_start = self.log.epoch_start_offset();
        let mut st = self.replicas();
        st.me = me;
        if epoch >= 0 {
            st.led = Some((epoch, epoch_start));
        }
        let others: BTreeSet<i32> = isr.iter().copied().filter(|id| *id != me).collect();
        let new_leadership = match st.role {
            Role::Leader { epoch: led_at, .. } => led_at != epoch,
            Role::Follower { .. } => true,
        };
        if new_leadership {
            let now = self.log.clock().now();
            let followers = others
                .iter()
                .map(|id| (*id, FollowerProgress::unknown(Some(now))))
                .collect();
            st.role = Role::Leader {
                epoch,
                isr: others,
                pending: BTreeMap::new(),
                followers,
                acks: AckLatency::default(),
                quorum,
                removing: BTreeMap::new(),
            };
        } else if let Role::Leader {
            isr,
            pending,
            quorum: q,
            removing,
            ..
        } = &mut st.role
        {
            *q = quorum;
            // A pending addition is settled once the store shows it, or
            // shows a state at least as new as its write (then without it).
            pending.retain(|id, written| !others.contains(id) && *written > revision);
            // A removal likewise, once the store no longer shows it.
            removing.retain(|id, written| others.contains(id) && *written > revision);
            *isr = others;
        }
        self.publish_bound(&st);
        drop(st);
        // It leads: it holds what it acknowledged from here on.
        self.log.mark_hydrated();
        true
    }

    /// Follows `leader` at `epoch`: appends now come only from
    /// [`Self::append_as_follower`] at that epoch. The epoch cache is left
    /// to the leader's batches.
    pub fn become_follower(&self, me: i32, epoch: i32, leader: i32) {
        let _changing = self.changing_role();
        self.log.note_followed_epoch(epoch);
        let mut st = self.replicas();
        st.me = me;
        let current = self.log.high_watermark();
        match &mut st.role {
            Role::Follower {
                leader: l,
                epoch: e,
                ..
            } if *e <= epoch => {
                *l = leader;
                *e = epoch;
            }
            Role::Follower { .. } => {}
            role => {
                *role = Role::Follower {
                    leader,
                    epoch,
                    leader_high_watermark: current,
                }
            }
        }
        // A leader's bound no longer holds: the high watermark stays
        // where it is until the new leader's is known.
        self.publish_bound(&st);
    }

    /// In a cluster, before the store assigns a role: the log neither
    /// appends nor serves, and its high watermark falls back to the log
    /// start (what the replicas hold is learnt again from the leader, so
    /// a restarted broker never shows records no follower has).
    pub(crate) fn await_assignment(&self) {
        let _changing = self.changing_role();
        let mut st = self.replicas();
        st.role = Role::Follower {
            leader: -1,
            epoch: -1,
            leader_high_watermark: self.log.local_log_start_offset(),
        };
        self.log.reset_high_watermark_to_start();
        drop(st);
    }

    /// The log waits for the store to give it a role (`await_assignment`).
    pub fn awaits_assignment(&self) -> bool {
        matches!(
            self.replicas().role,
            Role::Follower {
                leader: -1,
                epoch: -1,
                ..
            }
        )
    }

    /// This broker leads the partition (a single broker always does).
    pub fn is_leader(&self) -> bool {
        matches!(self.replicas().role, Role::Leader { .. })
    }

    /// This broker still leads at `epoch` (the epoch an append carried):
    /// if so, nothing was truncated since that append.
    pub fn leads_at(&self, epoch: i32) -> bool {
        match self.replicas().role {
            Role::Leader { epoch: e, .. } if e >= 0 => e == epoch,
            Role::Leader { .. } => self.log.leader_epoch() == epoch,
            Role::Follower { .. } => false,
        }
    }

    /// The leader epoch this broker leads the partition at; None on a
    /// follower (a single broker always leads).
    pub fn leading_epoch(&self) -> Option<i32> {
        match self.replicas().role {
            Role::Leader { epoch, .. } if epoch >= 0 => Some(epoch),
            Role::Leader { .. } => Some(self.log.leader_epoch()),
            Role::Follower { .. } => None,
        }
    }

    /// The leader epoch the cluster layer made this broker leader at;
    /// None on a follower and on a single broker (which has no epochs of
    /// the store's).
    pub fn cluster_leader_epoch(&self) -> Option<i32> {
        match self.replicas().role {
            Role::Leader { epoch, .. } if epoch >= 0 => Some(epoch),
            _ => None,
        }
    }

    /// The leader this broker follows, if it follows.
    pub fn following(&self) -> Option<i32> {
        match self.replicas().role {
            Role::Follower { leader, .. } => Some(leader),
            Role::Leader { .. } => None,
        }
    }

    /// How many replicas are in sync, this leader included (acks=all's
    /// `min.insync.replicas` check); 0 on a follower.
    pub fn in_sync_replicas(&self) -> usize {
        match &self.replicas().role {
            // A quorum topic's removals under way count as done.
            Role::Leader {
                isr,
                removing,
                quorum: Some(_),
                ..
            } => isr.iter().filter(|id| !removing.contains_key(id)).count() + 1,
            Role::Leader { isr, .. } => isr.len() + 1,
            Role::Follower { .. } => 0,
        }
    }

    /// Records a follower's fetch at `fetch_offset` (its durable end) and
    /// advances the high watermark. False when this broker does not lead.
    #[cfg(test)]
    pub(crate) fn record_follower_fetch(&self, replica: i32, fetch_offset: i64) -> bool {
        self.record_follower_fetch_from(replica, fetch_offset, -1)
    }

    /// [`Self::record_follower_fetch`], with the log start the follower
    /// sent (-1: none).
    pub fn record_follower_fetch_from(
        &self,
        replica: i32,
        fetch_offset: i64,
        log_start: i64,
    ) -> bool {
        let leader_end = self.log.log_end_offset();
        let now = self.log.clock().now();
        let mut st = self.replicas();
        let Role::Leader {
            followers, acks, ..
        } = &mut st.role
        else {
            return false;
        };
        let f = followers
            .entry(replica)
            .or_insert(FollowerProgress::unknown(None));
        acks.note_fetch(replica, f.end, fetch_offset.min(leader_end), now);
        // Kafka's rule: caught up now if it has the whole log; caught up
        // at its previous fetch if it has what the log held then.
        if fetch_offset >= leader_end {
            f.last_caught_up = Some(now);
        } else if f.leader_end_at_last_fetch >= 0 && fetch_offset >= f.leader_end_at_last_fetch {
            f.last_caught_up = f.last_caught_up.max(f.last_fetch);
        }
        f.end = fetch_offset.min(leader_end);
        f.last_fetch = Some(now);
        f.log_start = log_start;
        f.leader_end_at_last_fetch = leader_end;
        // Appends every follower still copying holds are of no more use;
        // one silent for a while (dead, cut off) does not pin them.
        if let Some(min_end) = followers
            .values()
            .filter(|f| {
                f.end >= 0
                    && f.last_fetch
                        .is_some_and(|t| now.saturating_duration_since(t) < TRIM_SILENCE)
            })
            .map(|f| f.end)
            .min()
        {
            acks.trim(min_end);
        }
        self.publish_bound(&st);
        true
    }

    /// A leader's append (records or a marker) ended at `end`: remembered
    /// to measure how long each follower takes to copy it. Nothing on a
    /// leader without followers (a single broker) or on a follower.
    pub(super) fn note_leader_append(&self, end: i64) {
        let mut st = self.replicas();
        if let Role::Leader {
            isr,
            followers,
            acks,
            ..
        } = &mut st.role
        {
            if !isr.is_empty() || !followers.is_empty() {
                acks.note_append(end, self.log.clock().now());
            }
        }
    }

    /// Each follower's fetch-to-ack p99 over `window`, as this leader
    /// measured it (empty on a follower).
    pub fn follower_ack_p99s(&self, window: Duration) -> Vec<(i32, Duration)> {
        match &self.replicas().role {
            Role::Leader { acks, .. } => acks.p99s(window, self.log.clock().now()),
            Role::Follower { .. } => Vec::new(),
        }
    }

    /// Each follower's progress, as this leader knows it.
    pub fn follower_progress(&self) -> Vec<(i32, FollowerProgress)> {
        match &self.replicas().role {
            Role::Leader { followers, .. } => followers.iter().map(|(id, f)| (*id, *f)).collect(),
            Role::Follower { .. } => Vec::new(),
        }
    }

    /// What should leave or join the ISR: in-sync followers behind the
    /// log end that have not caught up within `max_lag` (Kafka's rule),
    /// and `live` members of `replicas` outside it that hold everything up
    /// to the high watermark and the current epoch's start and caught up
    /// within `max_lag`. Those to join count toward the high watermark
    /// from now on (checked and marked under one lock), until
    /// [`Self::isr_addition_written`] or [`Self::isr_addition_failed`].
    ///
    /// With a `slow` rule, in-sync followers whose fetch-to-ack p99 is far
    /// above their peers' also leave (never below its `min_isr`), and one
    /// that left so rejoins only after a healthy window
    /// (docs/slow-followers.md).
    pub fn isr_review(
        &self,
        replicas: &[i32],
        live: &BTreeSet<i32>,
        max_lag: Duration,
        slow: Option<&SlowFollowerRule>,
    ) -> IsrReview {
        let leader_end = self.log.log_end_offset();
        let epoch_start = self.log.epoch_start_offset();
        let now = self.log.clock().now();
        let recent = |f: &FollowerProgress| {
            f.last_caught_up
                .is_some_and(|t| now.duration_since(t) <= max_lag)
        };
        let mut st = self.replicas();
        let me = st.me;
        let hw = self.log.high_watermark();
        let Role::Leader {
            isr,
            pending,
            followers,
            acks,
            quorum,
            removing,
            ..
        } = &mut st.role
        else {
            return IsrReview::default();
        };
        let mut review = IsrReview::default();
        for id in isr.iter() {
            let in_sync = followers
                .get(id)
                .is_some_and(|f| f.end >= leader_end || recent(f));
            if !in_sync {
                review.out_of_sync.push(*id);
            }
        }
        if let Some(rule) = slow {
            acks.expire(rule.window, now);
            let still: Vec<i32> = isr
                .iter()
                .copied()
                .filter(|id| !review.out_of_sync.contains(id))
                .collect();
            review.slow = acks.slow_followers(&still, still.len() + 1, rule, now);
            review
                .out_of_sync
                .extend(review.slow.iter().map(|(id, _)| *id));
        }
        if let Some(k) = *quorum {
            // A quorum topic keeps k ISR members (this leader among them)
            // holding the high watermark: an election that hears from
            // n - k + 1 of them then finds every acknowledged record
            // (docs/quorum-acks.md). A follower that lacks it may leave.
            // Removals under way count as done; the high watermark already
            // leaves them out until the store settles them.
            let holds = |id: &i32| followers.get(id).is_some_and(|f| f.end >= hw);
            let mut remaining: Vec<i32> = isr
                .iter()
                .copied()
                .filter(|id| !removing.contains_key(id))
                .collect();
            let mut leaving = Vec::new();
            for id in std::mem::take(&mut review.out_of_sync) {
                if removing.contains_key(&id) {
                    continue;
                }
                let after: Vec<i32> = remaining.iter().copied().filter(|x| *x != id).collect();
                let holders_after = 1 + after.iter().filter(|x| holds(x)).count();
                if !holds(&id) || holders_after >= k.min(after.len() + 1) {
                    remaining = after;
                    removing.insert(id, IN_FLIGHT);
                    leaving.push(id);
                } else {
                    acks.rejoined(id);
                }
            }
            review.out_of_sync = leaving;
            let leaving = &review.out_of_sync;
            review.slow.retain(|(id, _)| leaving.contains(id));
        }
        let in_sync_now: Vec<i32> = isr.iter().copied().collect();
        for id in replicas {
            if *id == me || isr.contains(id) || pending.contains_key(id) || !live.contains(id) {
                continue;
            }
            if followers
                .get(id)
                .is_some_and(|f| f.end >= hw && f.end >= epoch_start && recent(f))
                && slow.is_none_or(|rule| acks.may_rejoin(*id, &in_sync_now, rule, now))
            {
                acks.rejoined(*id);
                pending.insert(*id, IN_FLIGHT);
                review.caught_up.push(*id);
            }
        }
        review
    }

    /// The ISR change adding `id` was written at store `revision`: it
    /// stays counted until a view at least that new is applied.
    pub fn isr_addition_written(&self, id: i32, revision: i64) {
        if let Role::Leader { pending, .. } = &mut self.replicas().role {
            if let Some(r) = pending.get_mut(&id) {
                *r = revision;
            }
        }
    }

    /// A quorum topic's ISR change removing `id` was written at store
    /// `revision`: it stays left out until a view that new is applied.
    pub fn isr_removal_written(&self, id: i32, revision: i64) {
        if let Role::Leader { removing, .. } = &mut self.replicas().role {
            if let Some(r) = removing.get_mut(&id) {
                *r = revision;
            }
        }
    }

    /// The ISR change removing `id` was not written: it counts again.
    pub fn isr_removal_failed(&self, id: i32) {
        let mut st = self.replicas();
        if let Role::Leader { removing, acks, .. } = &mut st.role {
            removing.remove(&id);
            // Not taken out: not judged as taken out either.
            acks.eviction_not_written(id);
        }
        self.publish_bound(&st);
    }

    /// The cluster leader epoch this process last led at, with its start
    /// offset (None if it has not led in this process).
    pub fn led_epoch(&self) -> Option<(i32, i64)> {
        self.replicas().led
    }

    /// The ISR change adding `id` was not written: the store's ISR rules.
    pub fn isr_addition_failed(&self, id: i32) {
        let mut st = self.replicas();
        if let Role::Leader { pending, .. } = &mut st.role {
            pending.remove(&id);
        }
        self.publish_bound(&st);
    }

    /// Counts a written ISR change.
    pub fn note_isr_change(&self, removed: u64, added: u64) {
        let mut st = self.replicas();
        st.isr_shrinks += u64::from(removed > 0);
        st.isr_expands += u64::from(added > 0);
    }

    /// Counts followers taken out of the ISR for their ack latency.
    pub fn note_slow_evictions(&self, n: u64) {
        self.replicas().slow_evictions += n;
    }

    /// Followers this broker took out of the ISR for their ack latency.
    pub fn slow_evictions(&self) -> u64 {
        self.replicas().slow_evictions
    }

    /// (ISR shrinks, ISR expands) this broker wrote for the partition.
    pub fn isr_changes(&self) -> (u64, u64) {
        let st = self.replicas();
        (st.isr_shrinks, st.isr_expands)
    }

    /// A follower learnt the high watermark of the leader of `epoch`
    /// (ignored once it follows another leadership).
    pub fn set_leader_high_watermark(&self, hw: i64, epoch: i32) {
        let copied_this_epoch = self.log.latest_epoch_in_log() == Some(epoch);
        let mut st = self.replicas();
        // Caught up with a leader once, holding a batch of its epoch: the
        // log now holds everything before that epoch began and what the
        // leader acknowledged since (a high watermark alone can be far
        // below what was acknowledged, e.g. a restarted leader's), so a
        // replica created empty reports from here on.
        let hydrate = copied_this_epoch
            && self.log.durable_end_offset() >= hw
            && matches!(st.role, Role::Follower { epoch: e, .. } if e == epoch);
        if let Role::Follower {
            leader_high_watermark,
            epoch: e,
            ..
        } = &mut st.role
        {
            if *e == epoch {
                *leader_high_watermark = hw;
            }
        }
        self.publish_bound(&st);
        drop(st);
        if hydrate && !self.log.hydrated() {
            self.log.mark_hydrated();
        }
    }

    /// Hands the log the bound `st` puts on its high watermark (called
    /// with the replication state's lock held).
    fn publish_bound(&self, st: &ReplicaState) {
        let bound = st.high_watermark_bound(self.log.high_watermark());
        self.log.bound_high_watermark(bound);
    }
}
