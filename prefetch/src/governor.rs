//! The adaptive history rate (`remote.fetch.adaptive.*`,
//! `docs/adaptive-history-rate.md`): finds, while the broker runs, the rate
//! at which history can be served without slowing the hot path, the way a
//! scavenger congestion controller (LEDBAT, RFC 6817) finds the bandwidth
//! nobody else is using.
//!
//! Every tick it is told what the hot path's commits (append to durable)
//! took and how many bytes history served. It learns the quiet commit
//! latency (the p99 of commits made while history was idle) and counts, over
//! the last second, the commits slower than that plus the headroom. While
//! more of them than a quiet second has (at least 2, and over 0.75 %) come with
//! history being served, it cuts the rate by 30 %; otherwise, while the
//! rate is in use, it raises it by 1.6 % a tick. With no hot-path traffic
//! there is nobody to protect, and history runs unlimited.
//!
//! It owns that decision only: pure arithmetic on what it is given, no
//! clock, no I/O, no threads. The caller applies the rate (to the
//! [`FetchQuota`](crate::FetchQuota)) and keeps the ticks coming.

use std::collections::VecDeque;
use std::time::Duration;

use crate::latency::Snapshot;

#[derive(Debug, Clone, PartialEq)]
pub struct GovernorConfig {
    /// Lowest rate it ever sets, bytes per second: a catch-up always
    /// progresses, however loaded the hot path is.
    pub min_rate: u64,
    /// How far above its quiet p99 a commit may take, in percent, before it
    /// counts as slowed.
    pub headroom_percent: u64,
}

impl Default for GovernorConfig {
    fn default() -> Self {
        GovernorConfig {
            min_rate: 8 << 20,
            headroom_percent: 50,
        }
    }
}

/// Fewer commits than this in a tick: the hot path is idle.
const MIN_COMMITS: u64 = 2;
/// Commits of history-idle ticks needed before their p99 is trusted as
/// the quiet level; until then the fastest tick stands in for it.
const MIN_QUIET_COMMITS: u64 = 200;
/// The headroom is at least this much: a millisecond of jitter on a
/// sub-millisecond commit (tmpfs, battery-backed caches) is nobody's loss.
const MIN_HEADROOM: Duration = Duration::from_millis(1);
/// The quiet level is remembered in this many slots of this length.
const QUIET_SLOTS: usize = 10;
const QUIET_SLOT: Duration = Duration::from_secs(30);
/// History counts as active this long after it last served a byte: a
/// reader's fetches come in bursts, and the load between them (GETs, the
/// reader's own work) is still history's.
const ACTIVE_AFTER: Duration = Duration::from_secs(2);
/// Slow commits are counted over this many ticks.
const WINDOW_TICKS: usize = 10;
/// Slowed: at least this many slow commits in the window ...
const SLOW_COMMITS: u64 = 2;
/// ... and more than this share of its commits. A quiet hot path has
/// fewer by the quiet level's definition (under 1 % slower than its p99,
/// fewer still beyond the headroom); and the tail's p99 is what is to be
/// kept, so slow commits are to stay well under 1 % of them.
const SLOW_SHARE: f64 = 0.0075;
/// The cut when slowed, and the raise per tick otherwise.
const DECREASE: f64 = 0.7;
const INCREASE: f64 = 1.0 / 64.0;

/// What the governor decided for the next tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HistoryRate {
    /// No limit from the governor (the operator's own cap still applies).
    Unlimited,
    /// At most this many bytes per second.
    Limited(u64),
}

#[derive(Debug, Default)]
struct QuietSlot {
    /// Commits of the ticks in which history was idle.
    idle: Snapshot,
    /// The fastest slowest-commit of any tick.
    fastest_tick: Option<Duration>,
}

#[derive(Debug)]
pub struct Governor {
    cfg: GovernorConfig,
    /// The rate it applies while the hot path is busy, bytes per second.
    rate: f64,
    /// What the quiet level is learnt from, newest last.
    quiet: VecDeque<QuietSlot>,
    /// Time into the newest slot.
    slot_age: Duration,
    /// Served bytes per second, smoothed over about a second.
    served_rate: f64,
    /// Time since history last served a byte (or was busy).
    since_active: Duration,
    /// (commits, slow commits) of the last ticks, newest last.
    window: VecDeque<(u64, u64)>,
    last: Option<TickReport>,
    /// Times it cut the rate.
    pub decreases: u64,
}

/// One tick's inputs and outcome, for logs and `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TickReport {
    /// The tick's slowest commit.
    pub slowest_commit: Option<Duration>,
    /// What a commit took to count as slowed (quiet p99 plus headroom).
    pub limit: Option<Duration>,
    /// Commits and slow commits in the window.
    pub window_commits: u64,
    pub window_slow: u64,
    pub history_active: bool,
    pub slowed: bool,
    pub rate: HistoryRate,
}

impl Governor {
    pub fn new(cfg: GovernorConfig) -> Self {
        let rate = cfg.min_rate.max(1) as f64;
        Governor {
            cfg,
            rate,
            quiet: VecDeque::with_capacity(QUIET_SLOTS),
            slot_age: Duration::ZERO,
            served_rate: 0.0,
            since_active: ACTIVE_AFTER,
            window: VecDeque::with_capacity(WINDOW_TICKS),
            last: None,
            decreases: 0,
        }
    }

    pub fn config(&self) -> &GovernorConfig {
        &self.cfg
    }

    pub fn set_config(&mut self, cfg: GovernorConfig) {
        self.rate = self.rate.max(cfg.min_rate.max(1) as f64);
        self.cfg = cfg;
    }

    /// The quiet commit latency it measures against, once it has one: the
    /// p99 of the commits made while history was idle, or, before there
    /// are enough of those, the fastest tick's slowest commit.
    pub fn quiet_latency(&self) -> Option<Duration> {
        let mut idle = Snapshot::default();
        for slot in &self.quiet {
            idle.add(&slot.idle);
        }
        if idle.count() >= MIN_QUIET_COMMITS {
            return idle.quantile(0.99);
        }
        self.quiet.iter().filter_map(|s| s.fastest_tick).min()
    }

    pub fn last_tick(&self) -> Option<TickReport> {
        self.last
    }

    /// One tick of `elapsed`: `commits` is what the hot path's commits took
    /// during it, `served` the bytes history served, `busy` whether history
    /// did work that served nothing yet (GETs completed).
    pub fn tick(
        &mut self,
        elapsed: Duration,
        commits: &Snapshot,
        served: u64,
        busy: bool,
    ) -> HistoryRate {
        let secs = elapsed.as_secs_f64().max(1e-3);
        self.served_rate += secs.min(1.0) * (served as f64 / secs - self.served_rate);
        self.since_active = match served > 0 || busy {
            true => Duration::ZERO,
            false => self.since_active.saturating_add(elapsed),
        };
        let history_active = self.since_active < ACTIVE_AFTER;
        let min_rate = self.cfg.min_rate.max(1) as f64;

        if commits.count() < MIN_COMMITS {
            // Nobody on the hot path to protect.
            self.last = Some(TickReport {
                slowest_commit: commits.quantile(1.0),
                limit: None,
                window_commits: 0,
                window_slow: 0,
                history_active,
                slowed: false,
                rate: HistoryRate::Unlimited,
            });
            return HistoryRate::Unlimited;
        }
        self.learn_quiet(elapsed, commits, !history_active);
        let limit = self.quiet_latency().map(|quiet| {
            quiet
                .mul_f64(1.0 + self.cfg.headroom_percent as f64 / 100.0)
                .max(quiet + MIN_HEADROOM)
        });
        let slow = limit.map_or(0, |l| commits.count_above(l));
        if self.window.len() == WINDOW_TICKS {
            self.window.pop_front();
        }
        self.window.push_back((commits.count(), slow));
        let (n, k) = self
            .window
            .iter()
            .fold((0, 0), |(n, k), (a, b)| (n + a, k + b));
        let slowed = k >= SLOW_COMMITS && k as f64 > SLOW_SHARE * n as f64;
        if slowed && history_active {
            // Cut from what history actually got, not from a limit it was
            // not using; then wait for fresh evidence.
            self.rate = (self.rate.min(self.served_rate) * DECREASE).max(min_rate);
            self.window.clear();
            self.decreases += 1;
        } else if !slowed && self.served_rate >= self.rate / 2.0 {
            // Raise a limit only while it is in use (RFC 7661's rule): an
            // unused limit says nothing about what the hot path can bear.
            self.rate += (self.rate * INCREASE).max(min_rate / 16.0);
        }
        let rate = HistoryRate::Limited(self.rate.round() as u64);
        self.last = Some(TickReport {
            slowest_commit: commits.quantile(1.0),
            limit,
            window_commits: n,
            window_slow: k,
            history_active,
            slowed,
            rate,
        });
        rate
    }

    fn learn_quiet(&mut self, elapsed: Duration, commits: &Snapshot, idle: bool) {
        self.slot_age += elapsed;
        if self.quiet.is_empty() || self.slot_age >= QUIET_SLOT {
            if self.quiet.len() == QUIET_SLOTS {
                self.quiet.pop_front();
            }
            self.quiet.push_back(QuietSlot::default());
            self.slot_age = Duration::ZERO;
        }
        let Some(slot) = self.quiet.back_mut() else {
            return;
        };
        if idle {
            slot.idle.add(commits);
        }
        if let Some(slowest) = commits.quantile(1.0) {
            slot.fastest_tick = Some(slot.fastest_tick.map_or(slowest, |f| f.min(slowest)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::latency::LatencyHistogram;

    const TICK: Duration = Duration::from_millis(100);
    const MB: f64 = 1e6;

    /// A tick of `n` commits of 1.5 ms, `slow` of which took `slow_ms`.
    fn commits(n: u64, slow: u64, slow_ms: f64) -> Snapshot {
        let h = LatencyHistogram::new();
        for i in 0..n {
            h.record(ms(if i < slow { slow_ms } else { 1.5 }));
        }
        h.snapshot()
    }

    fn quiet_tick() -> Snapshot {
        commits(20, 0, 0.0)
    }

    fn ms(n: f64) -> Duration {
        Duration::from_secs_f64(n / 1e3)
    }

    fn limit(r: HistoryRate) -> f64 {
        match r {
            HistoryRate::Limited(b) => b as f64,
            HistoryRate::Unlimited => f64::INFINITY,
        }
    }

    /// Learns the quiet level from `ticks` ticks of 20 commits of 1.5 ms
    /// while history is idle.
    fn learn(g: &mut Governor, ticks: usize) {
        for _ in 0..ticks {
            g.tick(TICK, &quiet_tick(), 0, false);
        }
    }

    /// A hot path of 20 commits a tick, none of them slow while history is
    /// served below `capacity` bytes/s and more of them (8 ms each) the more
    /// it exceeds it, beside a catch-up that would take 400 MB/s. Returns
    /// the rate and whether the tick found the hot path slowed.
    fn simulate(g: &mut Governor, capacity: f64, ticks: usize) -> Vec<(f64, bool)> {
        let mut rate = HistoryRate::Limited(g.rate as u64);
        let mut out = Vec::new();
        for _ in 0..ticks {
            let served = (400.0 * MB).min(limit(rate)) * TICK.as_secs_f64();
            let load = served / TICK.as_secs_f64();
            let slow = match load > capacity {
                true => ((load - capacity) / capacity * 10.0).ceil().min(20.0) as u64,
                false => 0,
            };
            rate = g.tick(TICK, &commits(20, slow, 8.0), served as u64, true);
            out.push((limit(rate), g.last_tick().expect("a tick").slowed));
        }
        out
    }

    #[test]
    fn no_hot_path_traffic_means_no_limit() {
        let mut g = Governor::new(GovernorConfig::default());
        for _ in 0..50 {
            assert_eq!(
                g.tick(TICK, &Snapshot::default(), 40_000_000, true),
                HistoryRate::Unlimited
            );
        }
        // A single commit is not traffic either.
        assert_eq!(
            g.tick(TICK, &commits(1, 0, 0.0), 4_000_000, true),
            HistoryRate::Unlimited
        );
    }

    #[test]
    fn starts_low_and_finds_what_the_hot_path_bears() {
        let capacity = 40.0 * MB;
        let mut g = Governor::new(GovernorConfig::default());
        learn(&mut g, 30);
        let run = simulate(&mut g, capacity, 600);
        let first = run[0].0;
        assert!(
            first <= 9.0 * MB,
            "starts at the floor, not at full speed: {first}"
        );
        // After the climb (60 s of simulated time), it stays near the
        // capacity: above half of it on average, rarely over it.
        let settled = &run[100..];
        let mean =
            settled.iter().map(|(r, _)| r.min(400.0 * MB)).sum::<f64>() / settled.len() as f64;
        let slowed = settled.iter().filter(|(_, c)| *c).count() as f64 / settled.len() as f64;
        assert!(
            mean > 0.6 * capacity && mean < 1.3 * capacity,
            "mean rate {mean}"
        );
        assert!(slowed < 0.08, "slowed {:.1} % of ticks", slowed * 100.0);
        assert!(g.decreases > 3, "never probed: {}", g.decreases);
    }

    #[test]
    fn a_hot_path_that_bears_nothing_keeps_history_at_the_floor() {
        let mut g = Governor::new(GovernorConfig::default());
        learn(&mut g, 30);
        let run = simulate(&mut g, 1.0, 300);
        let floor = GovernorConfig::default().min_rate as f64;
        assert!(
            run[50..].iter().all(|(r, _)| *r <= floor * 1.2),
            "{:?}",
            &run[50..60]
        );
        assert!(run.iter().all(|(r, _)| *r >= floor), "below the floor");
    }

    #[test]
    fn a_lone_slow_commit_is_not_a_slowed_hot_path() {
        let mut g = Governor::new(GovernorConfig::default());
        learn(&mut g, 30);
        let mut rate = g.rate;
        // One 30 ms commit a second (1 in 200), as a quiet disk has: the
        // rate keeps rising.
        for i in 0..100 {
            let served = (rate * TICK.as_secs_f64()) as u64;
            let tick = commits(20, (i % 10 == 0) as u64, 30.0);
            rate = limit(g.tick(TICK, &tick, served, true));
        }
        assert_eq!(g.decreases, 0);
        assert!(
            rate > 2.0 * GovernorConfig::default().min_rate as f64,
            "{rate}"
        );
        // Two in a second (1 %) are a slowed hot path.
        for (per_window, cut) in [(1, false), (2, true)] {
            let mut g = Governor::new(GovernorConfig::default());
            learn(&mut g, 30);
            for i in 0..WINDOW_TICKS {
                let served = (g.rate * TICK.as_secs_f64()) as u64;
                g.tick(
                    TICK,
                    &commits(20, (i < per_window) as u64, 30.0),
                    served,
                    true,
                );
            }
            assert_eq!(
                g.decreases > 0,
                cut,
                "{per_window} slow commits in a window"
            );
        }
    }

    #[test]
    fn a_slow_hot_path_that_history_does_not_cause_is_left_alone() {
        let mut g = Governor::new(GovernorConfig::default());
        learn(&mut g, 300);
        let before = g.rate;
        // History idle, a slow commit in every tick (5 % of them, too few
        // among 6000 quiet ones to move the quiet p99): slowed, but not
        // history's doing, so no cut; and no raise either, as the limit is
        // not in use.
        for _ in 0..WINDOW_TICKS {
            g.tick(TICK, &commits(20, 1, 30.0), 0, false);
        }
        let r = g.last_tick().unwrap();
        assert!(r.slowed && !r.history_active, "{r:?}");
        assert_eq!(g.rate, before);
        assert_eq!(g.decreases, 0);
        // Served in bursts (a byte now, then GETs in flight, then nothing
        // for a second): active all along, so slow commits are history's.
        let mut g = Governor::new(GovernorConfig::default());
        learn(&mut g, 30);
        g.tick(TICK, &quiet_tick(), 1, true);
        for i in 0..10 {
            g.tick(TICK, &commits(20, 10, 30.0), 0, i < 3);
        }
        assert!(g.decreases > 0, "bursty history went unnoticed");
    }

    #[test]
    fn the_quiet_level_is_the_p99_of_commits_while_history_is_idle() {
        let mut g = Governor::new(GovernorConfig::default());
        assert_eq!(g.quiet_latency(), None);
        // Busy ticks only: the fastest tick's slowest commit stands in.
        g.tick(TICK, &commits(20, 1, 9.0), 1000, true);
        g.tick(TICK, &commits(20, 1, 6.0), 1000, true);
        let q = g.quiet_latency().unwrap();
        assert!(q >= ms(6.0) && q < ms(6.6), "{q:?}");
        g.tick(TICK, &commits(20, 20, 1.0), 1000, true);
        assert!(g.quiet_latency().unwrap() < ms(1.1));
        // For 2 s after history served, its ticks are not quiet ones ...
        for _ in 0..19 {
            g.tick(TICK, &commits(20, 20, 20.0), 0, false);
        }
        // ... then 400 commits of 2.5 ms are: their p99 wins, not the
        // fastest tick's.
        for _ in 0..20 {
            g.tick(TICK, &commits(20, 20, 2.5), 0, false);
        }
        let q = g.quiet_latency().unwrap();
        assert!(q >= ms(2.5) && q < ms(2.8), "{q:?}");
        let r = g.last_tick().unwrap();
        assert!(r.limit.unwrap() >= ms(3.75), "headroom of 50 %: {r:?}");
    }

    #[test]
    fn the_quiet_level_is_forgotten_after_its_memory() {
        let mut g = Governor::new(GovernorConfig::default());
        // 800 commits of a slow disk, history idle ...
        for _ in 0..40 {
            g.tick(TICK, &commits(20, 20, 10.0), 0, false);
        }
        // ... then five minutes and more of a fast one: 1.3 % of all the
        // idle commits were slow, enough to hold the p99 if remembered.
        for _ in 0..(QUIET_SLOTS as u32 * QUIET_SLOT.as_secs() as u32 * 10 + 10) {
            g.tick(TICK, &commits(20, 20, 1.0), 0, false);
        }
        let q = g.quiet_latency().unwrap();
        assert!(q < ms(1.1), "still remembers the old level: {q:?}");
    }
}
