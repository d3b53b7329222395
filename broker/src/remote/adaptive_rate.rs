//! Runs the adaptive history rate (`docs/adaptive-history-rate.md`): every
//! tick it hands the governor (`strata_prefetch::governor`) what the
//! partition logs' commits took and what history served since the last
//! tick, and applies its answer to the remote fetch quota.
//!
//! It owns the ticking only; the decision is the governor's, the limit the
//! quota's. It never blocks: one short lock per tick.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use strata_prefetch::governor::HistoryRate;
use strata_prefetch::quota::UNLIMITED;
use tokio::sync::watch;
use tokio::time::MissedTickBehavior;

use super::TieredStorage;
use crate::commit_latency::CommitLatency;
use crate::config::dynamic::DynamicSettings;

/// How often the rate is judged: a few fsyncs' worth, so a rising hot
/// path is answered within a tenth of a second.
pub const TICK: Duration = Duration::from_millis(100);

impl TieredStorage {
    /// Starts the ticking; it stops once this `TieredStorage` is dropped.
    pub fn start_adaptive_rate(
        self: &Arc<Self>,
        commit_latency: Arc<CommitLatency>,
        dynamic: watch::Receiver<Arc<DynamicSettings>>,
    ) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut ticker = tokio::time::interval(TICK);
            ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
            let stats = match weak.upgrade() {
                Some(me) => me.prefetcher.stats.clone(),
                None => return,
            };
            let mut last_commits = commit_latency.histogram().snapshot();
            let mut last_served = stats.bytes_read.load(Ordering::Relaxed);
            let mut last_gets = stats.gets.load(Ordering::Relaxed);
            let mut last_at = Instant::now();
            let mut was = HistoryRate::Unlimited;
            loop {
                ticker.tick().await;
                let Some(me) = weak.upgrade() else {
                    return;
                };
                let quota = me.prefetcher.quota();
                let now = Instant::now();
                let commits = commit_latency.histogram().snapshot();
                let served = stats.bytes_read.load(Ordering::Relaxed);
                // GETs completed (a counter, not the budget's lock: this task
                // runs on the request runtime, which never waits on a lock
                // the prefetch threads hold).
                let gets = stats.gets.load(Ordering::Relaxed);
                let tick_commits = commits.since(&last_commits);
                let tick_served = served.saturating_sub(last_served);
                let adaptive = dynamic.borrow().adaptive_rate.clone();
                let rate = match adaptive {
                    None => HistoryRate::Unlimited,
                    Some(cfg) => {
                        let mut g = me.adaptive.lock().unwrap_or_else(|e| e.into_inner());
                        if *g.config() != cfg {
                            g.set_config(cfg);
                        }
                        let rate = g.tick(
                            now.saturating_duration_since(last_at),
                            &tick_commits,
                            tick_served,
                            gets > last_gets,
                        );
                        if let Some(t) = g.last_tick() {
                            tracing::trace!(
                                slowest_us = t.slowest_commit.map(|d| d.as_micros() as u64),
                                limit_us = t.limit.map(|d| d.as_micros() as u64),
                                window_slow = t.window_slow,
                                window_commits = t.window_commits,
                                active = t.history_active,
                                slowed = t.slowed,
                                rate = ?t.rate,
                                served = tick_served,
                                "adaptive tick"
                            );
                        }
                        rate
                    }
                };
                quota.set_governed_rate(match rate {
                    HistoryRate::Unlimited => UNLIMITED,
                    HistoryRate::Limited(r) => r.max(1),
                });
                if (was == HistoryRate::Unlimited) != (rate == HistoryRate::Unlimited) {
                    tracing::debug!(?rate, "adaptive history rate");
                }
                was = rate;
                (last_commits, last_served, last_gets, last_at) = (commits, served, gets, now);
            }
        });
    }
}
