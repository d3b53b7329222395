//! The coordinator's clocks: `tick` runs every timer that is due (member
//! sessions, KIP-394 pending members, join and sync phases, the initial
//! rebalance delay) and says when the next one is; `start_background`
//! sleeps until then, and runs offset expiry on its interval (the log
//! cleaner compacts `__consumer_offsets`, docs/compaction.md).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::coordinator::GroupCoordinator;
use super::group::GroupState;

/// Longest sleep of the timer task between passes: a deadline created
/// after a pass (a new member, a new rebalance) is acted on at most this late.
const MAX_TIMER_SLEEP: Duration = Duration::from_millis(100);
/// Shortest sleep between passes, so a deadline that is already due cannot
/// make the timer task spin.
const MIN_TIMER_SLEEP: Duration = Duration::from_millis(1);

impl GroupCoordinator {
    /// Runs every timer that is due: expired sessions, pending members that
    /// never joined, rebalance phases past their deadline, delayed joins.
    /// Returns the earliest deadline still pending, when the next pass is due.
    pub fn tick(&self) -> Option<Instant> {
        let now = self.clock.now();
        let mut groups = self.lock();
        let mut next: Option<Instant> = None;
        let mut wake_at = |t: Instant| next = Some(next.map_or(t, |n| n.min(t)));
        for group in groups.values_mut() {
            group.pending_members.retain(|_, since| {
                now.duration_since(*since)
                    < Duration::from_millis(self.cfg.max_session_timeout_ms.max(0) as u64)
            });
            let expired: Vec<String> = group
                .members
                .values()
                .filter(|m| m.awaiting_join.is_none())
                .filter(|m| now >= m.session_deadline())
                .map(|m| m.member_id.clone())
                .collect();
            for id in &expired {
                tracing::info!(group = %group.id, member = %id, "member session expired; removed");
                group.remove_member(id);
            }
            if !expired.is_empty() {
                self.after_member_removed(group, now);
            }
            if group.state == GroupState::CompletingRebalance
                && group.phase_deadline.is_some_and(|d| now >= d)
            {
                let unsynced: Vec<String> = group
                    .members
                    .values()
                    .filter(|m| m.awaiting_sync.is_none())
                    .map(|m| m.member_id.clone())
                    .collect();
                for id in unsynced {
                    tracing::info!(group = %group.id, member = %id, "member did not sync within the rebalance timeout; removed");
                    group.remove_member(&id);
                }
                self.prepare_rebalance(group, now);
            }
            self.maybe_complete_join(group, now);
            for m in group.members.values().filter(|m| m.awaiting_join.is_none()) {
                wake_at(m.session_deadline());
            }
            let pending_limit =
                Duration::from_millis(self.cfg.max_session_timeout_ms.max(0) as u64);
            for since in group.pending_members.values() {
                wake_at(*since + pending_limit);
            }
            if matches!(
                group.state,
                GroupState::PreparingRebalance | GroupState::CompletingRebalance
            ) {
                group.phase_deadline.into_iter().for_each(&mut wake_at);
                group.join_not_before.into_iter().for_each(&mut wake_at);
            }
        }
        next
    }

    /// Starts the timeout and offset-expiry loops.
    pub fn start_background(self: &Arc<Self>, retention_check: Duration) {
        let me = self.clone();
        tokio::spawn(async move {
            // Sleep until the earliest deadline the last pass saw (a session
            // expiry, a rebalance timeout, the initial join delay), so a
            // member expires at its deadline as in Kafka; never longer than
            // MAX_TIMER_SLEEP, which bounds how late a deadline created after
            // the pass (a new member, a new rebalance) is noticed.
            loop {
                let next = me.tick();
                let now = me.clock.now();
                let cap = now + MAX_TIMER_SLEEP;
                let wake = next.map_or(cap, |d| d.min(cap)).max(now + MIN_TIMER_SLEEP);
                tokio::time::sleep_until(wake.into()).await;
            }
        });
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(retention_check);
            tick.tick().await;
            loop {
                tick.tick().await;
                let m = me.clone();
                if let Err(e) = tokio::task::spawn_blocking(move || m.expire_offsets()).await {
                    tracing::error!(error = %e, "offsets expiry task failed");
                }
            }
        });
        let me = self.clone();
        let every = self
            .logs
            .broker_config()
            .settings()
            .group
            .lag_sample_interval;
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let m = me.clone();
                if let Err(e) = tokio::task::spawn_blocking(move || m.sample_lag()).await {
                    tracing::error!(error = %e, "consumer lag sampling task failed");
                }
            }
        });
    }
}

impl GroupCoordinator {
    /// Committed offsets on partitions this broker does not host.
    pub(crate) fn remote_lag_wanted(&self) -> super::remote_lag::Wanted {
        let groups = self.lock();
        let mut out = super::remote_lag::Wanted::new();
        for g in groups.values() {
            for ((t, p), v) in &g.offsets {
                if v.offset >= 0
                    && !strata_common::topic_name::is_internal(t)
                    && self.logs.partition(t, *p).is_none()
                {
                    out.entry((t.clone(), *p)).or_default().insert(v.offset);
                }
            }
        }
        out
    }

    /// Asks the leaders of partitions this broker does not host for
    /// their high watermarks, every lag sample interval (in a cluster).
    pub fn start_remote_lag(self: &Arc<Self>, leader_of: super::remote_lag::LeaderOf) {
        let me = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(me.lag_interval());
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut clients = std::collections::HashMap::new();
            loop {
                tick.tick().await;
                let wanted = me.remote_lag_wanted();
                super::remote_lag::refresh(wanted, &me.remote, &leader_of, &mut clients).await;
            }
        });
    }
}
