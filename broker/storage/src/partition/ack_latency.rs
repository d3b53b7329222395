//! How long each follower takes to copy what the leader appends (the
//! slow-follower rule, docs/slow-followers.md): the leader remembers when
//! each recent append ended at which offset, and each follower fetch that
//! moves the follower's durable end past an append yields one sample, the
//! time from that append to this fetch: the latency this follower adds to
//! every acks=all write.
//!
//! A follower whose p99 over the window is more than `ratio` times the
//! median p99 of its in-sync peers (and above a floor) is slow: the leader
//! takes it out of the ISR (never below `min.insync.replicas`), and takes
//! it back once a whole window after that shows it healthy.
//!
//! Pure bookkeeping over `Instant`s: it never touches the log, the store or
//! the network (`replicas.rs` feeds it under the replication state's lock).

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// Appends remembered (the oldest go first; a follower further behind
/// is the lag rule's business).
const MAX_APPENDS: usize = 4096;
/// Samples kept per follower within the window.
const MAX_SAMPLES: usize = 1024;
/// Fewer samples than this in the window decide nothing.
pub(crate) const MIN_SAMPLES: usize = 20;

/// The slow-follower rule's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowFollowerRule {
    /// A follower whose p99 exceeds this many times its peers' median is slow.
    pub ratio: f64,
    /// ...and exceeds this.
    pub floor: Duration,
    /// The p99 is taken over this window; a slow follower rejoins after a
    /// whole window of healthy samples.
    pub window: Duration,
    /// The ISR never shrinks below this for latency.
    pub min_isr: usize,
}

#[derive(Debug, Default)]
struct FollowerSamples {
    samples: VecDeque<(Instant, Duration)>,
    /// Taken out of the ISR for latency at this time.
    evicted_at: Option<Instant>,
    /// When the samples began (this leadership, or its last rejoin): a
    /// follower is judged only after half a window of them, so a start or
    /// a catch-up does not pass for slowness.
    since: Option<Instant>,
}

/// The leader's record of appends and each follower's ack latency.
#[derive(Debug, Default)]
pub(crate) struct AckLatency {
    /// (log end after the append, when).
    appends: VecDeque<(i64, Instant)>,
    /// The newest append dropped by `trim` or the cap: a follower that
    /// comes back from behind it waited at least since then.
    dropped: Option<(i64, Instant)>,
    followers: HashMap<i32, FollowerSamples>,
}

impl AckLatency {
    pub(crate) fn note_append(&mut self, end: i64, now: Instant) {
        if self.appends.back().is_some_and(|(e, _)| *e >= end) {
            return;
        }
        if self.appends.len() == MAX_APPENDS {
            self.dropped = self.appends.pop_front().or(self.dropped);
        }
        self.appends.push_back((end, now));
    }

    /// A fetch moved `replica`'s durable end from `old_end` to `new_end`:
    /// the oldest append it now holds in full or in part waited until now.
    pub(crate) fn note_fetch(&mut self, replica: i32, old_end: i64, new_end: i64, now: Instant) {
        if old_end < 0 || new_end <= old_end {
            return;
        }
        // Appends every follower holds are of no more use.
        let idx = self.appends.partition_point(|(end, _)| *end <= old_end);
        let Some((_, mut at)) = self.appends.get(idx).copied() else {
            return;
        };
        // Its oldest covered append was dropped (it was silent, or far
        // behind): it waited at least since the newest dropped one.
        if idx == 0 {
            if let Some((end, dropped_at)) = self.dropped {
                if end > old_end {
                    at = at.min(dropped_at);
                }
            }
        }
        let f = self.followers.entry(replica).or_default();
        f.since.get_or_insert(now);
        if f.samples.len() == MAX_SAMPLES {
            f.samples.pop_front();
        }
        f.samples
            .push_back((now, now.saturating_duration_since(at)));
    }

    /// Drops appends every follower still copying holds (`min_end`).
    pub fn trim(&mut self, min_end: i64) {
        while self.appends.front().is_some_and(|(end, _)| *end <= min_end) {
            self.dropped = self.appends.pop_front().or(self.dropped);
        }
    }

    /// `replica`'s p99 over the window ending `now` (and, for a follower
    /// taken out for latency, since then), if it has at least
    /// [`MIN_SAMPLES`] samples there.
    pub fn p99(&self, replica: i32, window: Duration, now: Instant) -> Option<Duration> {
        let f = self.followers.get(&replica)?;
        let from = now.checked_sub(window).unwrap_or(now);
        p99_since(f, f.evicted_at.map_or(from, |t| t.max(from)))
    }

    /// Forgets samples older than the window.
    pub fn expire(&mut self, window: Duration, now: Instant) {
        let from = now.checked_sub(window).unwrap_or(now);
        for f in self.followers.values_mut() {
            while f.samples.front().is_some_and(|(t, _)| *t < from) {
                f.samples.pop_front();
            }
        }
    }

    /// Of the in-sync followers `isr`, the slow ones to take out now,
    /// slowest first, keeping at least `rule.min_isr` replicas (the
    /// leader included) of `in_sync_after_lag` in sync.
    pub fn slow_followers(
        &mut self,
        isr: &[i32],
        in_sync_after_lag: usize,
        rule: &SlowFollowerRule,
        now: Instant,
    ) -> Vec<(i32, Duration)> {
        let p99s: Vec<(i32, Duration)> = isr
            .iter()
            .filter_map(|id| Some((*id, self.p99(*id, rule.window, now)?)))
            .collect();
        let observed = |id: &i32| {
            self.followers
                .get(id)
                .and_then(|f| f.since)
                .is_some_and(|t| now.saturating_duration_since(t) >= rule.window / 2)
        };
        let mut slow: Vec<(i32, Duration)> = p99s
            .iter()
            .filter(|(id, _)| observed(id))
            .filter(|(id, p)| {
                let peers: Vec<Duration> = p99s
                    .iter()
                    .filter(|(o, _)| o != id)
                    .map(|(_, d)| *d)
                    .collect();
                is_slow(*p, &peers, rule)
            })
            .copied()
            .collect();
        slow.sort_by_key(|s| std::cmp::Reverse(s.1));
        slow.truncate(in_sync_after_lag.saturating_sub(rule.min_isr));
        for (id, _) in &slow {
            let f = self.followers.entry(*id).or_default();
            f.evicted_at = Some(now);
        }
        slow
    }

    /// Whether `replica`, if it was taken out for latency, may rejoin:
    /// at once while the ISR (`isr` and the leader) is below
    /// `min.insync.replicas` (durability wins, as when evicting); else
    /// once a whole window has passed since, if its p99 since then is not
    /// slow against the in-sync followers `isr`, or too few writes came
    /// to tell (the lag rule has found it caught up). A follower never
    /// taken out for latency may.
    pub(crate) fn may_rejoin(
        &mut self,
        replica: i32,
        isr: &[i32],
        rule: &SlowFollowerRule,
        now: Instant,
    ) -> bool {
        let Some(evicted_at) = self.followers.get(&replica).and_then(|f| f.evicted_at) else {
            return true;
        };
        if isr.len() + 1 < rule.min_isr {
            return true;
        }
        if now.saturating_duration_since(evicted_at) < rule.window {
            return false;
        }
        let Some(own) = self.p99(replica, rule.window, now) else {
            return true;
        };
        let peers: Vec<Duration> = isr
            .iter()
            .filter(|id| **id != replica)
            .filter_map(|id| self.p99(*id, rule.window, now))
            .collect();
        if is_slow(own, &peers, rule) {
            return false;
        }
        true
    }

    /// The ISR change taking `replica` out was not written: it is still
    /// in sync, judged as before (its samples kept).
    pub(crate) fn eviction_not_written(&mut self, replica: i32) {
        if let Some(f) = self.followers.get_mut(&replica) {
            f.evicted_at = None;
        }
    }

    /// `replica` joins the ISR (or stays in it): its samples start over.
    /// Those taken while it caught up measured the backlog it copied, not
    /// the delay it adds to writes, and would evict it at once.
    pub fn rejoined(&mut self, replica: i32) {
        if let Some(f) = self.followers.get_mut(&replica) {
            f.evicted_at = None;
            f.samples.clear();
            f.since = None;
        }
    }

    /// Each follower's p99 over the whole window, evicted or not (for the
    /// metrics).
    pub(crate) fn p99s(&self, window: Duration, now: Instant) -> Vec<(i32, Duration)> {
        let from = now.checked_sub(window).unwrap_or(now);
        let mut out: Vec<(i32, Duration)> = self
            .followers
            .iter()
            .filter_map(|(id, f)| Some((*id, p99_since(f, from)?)))
            .collect();
        out.sort_by_key(|(id, _)| *id);
        out
    }
}

/// The p99 of `f`'s samples taken at or after `from`, if there are enough.
fn p99_since(f: &FollowerSamples, from: Instant) -> Option<Duration> {
    let mut recent: Vec<Duration> = f
        .samples
        .iter()
        .filter(|(t, _)| *t >= from)
        .map(|(_, d)| *d)
        .collect();
    if recent.len() < MIN_SAMPLES {
        return None;
    }
    // The 99th percentile rounded down: with fewer than 100 samples one
    // stall is not the p99 (a single pause must not evict). A selection,
    // not a sort: this runs under the replication state's lock.
    let rank = ((recent.len() as f64) * 0.99).floor() as usize;
    let at = rank.saturating_sub(1).min(recent.len() - 1);
    Some(*recent.select_nth_unstable(at).1)
}

/// Slow: above the floor and more than `ratio` times the median of the
/// peers' p99s (no peers: never).
fn is_slow(p99: Duration, peers: &[Duration], rule: &SlowFollowerRule) -> bool {
    if p99 <= rule.floor || peers.is_empty() {
        return false;
    }
    let mut peers = peers.to_vec();
    peers.sort_unstable();
    let median = if peers.len() % 2 == 1 {
        peers[peers.len() / 2]
    } else {
        (peers[peers.len() / 2 - 1] + peers[peers.len() / 2]) / 2
    };
    p99.as_secs_f64() > rule.ratio * median.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(min_isr: usize) -> SlowFollowerRule {
        SlowFollowerRule {
            ratio: 3.0,
            floor: Duration::from_millis(50),
            window: Duration::from_secs(10),
            min_isr,
        }
    }

    /// `n` appends of one offset each from offset `first`, 10 ms apart,
    /// each follower acknowledging each its `delay` later.
    fn feed_from(l: &mut AckLatency, start: Instant, delays: &[(i32, u64)], first: i64, n: i64) {
        for i in first..first + n {
            let at = start + Duration::from_millis((i - first) as u64 * 10);
            l.note_append(i + 1, at);
            for (id, delay) in delays {
                l.note_fetch(*id, i, i + 1, at + Duration::from_millis(*delay));
            }
        }
    }

    fn feed(l: &mut AckLatency, start: Instant, delays: &[(i32, u64)], n: i64) {
        feed_from(l, start, delays, 0, n)
    }

    #[test]
    fn a_sample_is_the_wait_of_the_oldest_append_a_fetch_covers() {
        let t = Instant::now();
        let mut l = AckLatency::default();
        l.note_append(10, t);
        l.note_append(20, t + Duration::from_millis(5));
        l.note_append(30, t + Duration::from_millis(9));
        // From 10 to 30: the append that ended at 20 waited since t+5.
        l.note_fetch(2, 10, 30, t + Duration::from_millis(25));
        assert_eq!(l.followers[&2].samples[0].1, Duration::from_millis(20));
        // No progress, or a follower that has not fetched yet: no sample.
        l.note_fetch(2, 30, 30, t + Duration::from_millis(30));
        l.note_fetch(3, -1, 30, t + Duration::from_millis(30));
        assert_eq!(l.followers[&2].samples.len(), 1);
        assert!(!l.followers.contains_key(&3));
    }

    #[test]
    fn the_follower_far_slower_than_its_peers_is_taken_out_but_never_below_min_isr() {
        let t = Instant::now();
        let mut l = AckLatency::default();
        feed(&mut l, t, &[(2, 5), (3, 6), (4, 400)], 100);
        // Judged only after half a window of samples.
        assert!(l
            .slow_followers(&[2, 3, 4], 4, &rule(2), t + Duration::from_secs(2))
            .is_empty());
        let now = t + Duration::from_secs(6);
        assert_eq!(
            l.p99(4, Duration::from_secs(10), now),
            Some(Duration::from_millis(400))
        );
        let slow = l.slow_followers(&[2, 3, 4], 4, &rule(2), now);
        assert_eq!(slow, vec![(4, Duration::from_millis(400))]);
        // At min.insync.replicas already: durability wins.
        let mut l = AckLatency::default();
        feed(&mut l, t, &[(2, 5), (3, 400)], 100);
        assert!(l.slow_followers(&[2, 3], 3, &rule(3), now).is_empty());
    }

    #[test]
    fn uniformly_slow_or_fast_followers_and_too_few_samples_decide_nothing() {
        let t = Instant::now();
        let now = t + Duration::from_secs(2);
        let mut l = AckLatency::default();
        feed(&mut l, t, &[(2, 300), (3, 320)], 100);
        assert!(l.slow_followers(&[2, 3], 3, &rule(1), now).is_empty());
        // Three times slower, but below the floor.
        let mut l = AckLatency::default();
        feed(&mut l, t, &[(2, 2), (3, 30)], 100);
        assert!(l.slow_followers(&[2, 3], 3, &rule(1), now).is_empty());
        let mut l = AckLatency::default();
        feed(&mut l, t, &[(2, 5), (3, 400)], (MIN_SAMPLES - 1) as i64);
        assert!(l.slow_followers(&[2, 3], 3, &rule(1), now).is_empty());
    }

    #[test]
    fn one_stall_among_fewer_than_a_hundred_writes_is_not_the_p99() {
        let t = Instant::now();
        let mut l = AckLatency::default();
        feed(&mut l, t, &[(2, 5), (3, 5)], 50);
        l.note_append(51, t + Duration::from_millis(600));
        l.note_fetch(2, 50, 51, t + Duration::from_millis(605));
        l.note_fetch(3, 50, 51, t + Duration::from_millis(1_000));
        let now = t + Duration::from_secs(6);
        assert_eq!(
            l.p99(3, Duration::from_secs(10), now),
            Some(Duration::from_millis(5))
        );
        assert!(l.slow_followers(&[2, 3], 3, &rule(1), now).is_empty());
    }

    #[test]
    fn a_slow_follower_rejoins_after_a_healthy_window() {
        let t = Instant::now();
        let mut l = AckLatency::default();
        feed(&mut l, t, &[(2, 5), (3, 400)], 100);
        let evicted = t + Duration::from_secs(6);
        assert_eq!(l.slow_followers(&[2, 3], 2, &rule(1), evicted).len(), 1);
        // Not within the window, whatever it does.
        assert!(!l.may_rejoin(3, &[2], &rule(1), evicted + Duration::from_secs(5)));
        // Healthy samples for a whole window after the eviction.
        let later = evicted + Duration::from_secs(1);
        for i in 0..200i64 {
            let at = later + Duration::from_millis(i as u64 * 50);
            l.note_append(1000 + i + 1, at);
            l.note_fetch(2, 1000 + i, 1000 + i + 1, at + Duration::from_millis(5));
            l.note_fetch(3, 1000 + i, 1000 + i + 1, at + Duration::from_millis(7));
        }
        let now = evicted + Duration::from_secs(11);
        assert!(l.may_rejoin(3, &[2], &rule(1), now));
        l.rejoined(3);
        assert!(l.may_rejoin(3, &[2], &rule(1), now));
        // Back in the ISR, it is judged on what it does from now on.
        assert_eq!(l.p99(3, Duration::from_secs(10), now), None);
        assert!(l.slow_followers(&[2, 3], 3, &rule(1), now).is_empty());
        // Below min.insync.replicas without it: back at once. Idle since
        // its eviction (no writes to measure): back after the window.
        let mut idle = AckLatency::default();
        feed(&mut idle, t, &[(2, 5), (3, 400)], 100);
        idle.slow_followers(&[2, 3], 3, &rule(2), evicted);
        assert!(idle.may_rejoin(3, &[], &rule(2), evicted + Duration::from_secs(1)));
        assert!(!idle.may_rejoin(3, &[2], &rule(2), evicted + Duration::from_secs(1)));
        assert!(idle.may_rejoin(3, &[2], &rule(2), evicted + Duration::from_secs(10)));
        // Still slow after the window: stays out.
        let mut l = AckLatency::default();
        feed(&mut l, t, &[(2, 5), (3, 400)], 100);
        l.slow_followers(&[2, 3], 2, &rule(1), evicted);
        feed_from(&mut l, evicted, &[(2, 5), (3, 400)], 100, 1000);
        assert!(!l.may_rejoin(3, &[2], &rule(1), evicted + Duration::from_secs(10)));
    }

    #[test]
    fn an_eviction_not_written_leaves_the_follower_judged_as_before() {
        let t = Instant::now();
        let mut l = AckLatency::default();
        feed(&mut l, t, &[(2, 5), (3, 6), (4, 400)], 100);
        let now = t + Duration::from_secs(6);
        assert_eq!(l.slow_followers(&[2, 3, 4], 4, &rule(2), now).len(), 1);
        assert!(!l.may_rejoin(4, &[2, 3], &rule(2), now), "taken out");
        l.eviction_not_written(4);
        // Still in the ISR: its samples count, and it is slow again.
        assert_eq!(
            l.p99(4, Duration::from_secs(10), now),
            Some(Duration::from_millis(400))
        );
        assert!(l.may_rejoin(4, &[2, 3], &rule(2), now), "never taken out");
        assert_eq!(l.slow_followers(&[2, 3, 4], 4, &rule(2), now).len(), 1);
    }

    #[test]
    fn a_follower_back_from_behind_trimmed_appends_is_measured_from_them() {
        let t = Instant::now();
        let mut l = AckLatency::default();
        l.note_append(10, t);
        l.note_append(20, t + Duration::from_secs(1));
        l.note_append(30, t + Duration::from_secs(20));
        // The others passed 20 while follower 3 was silent.
        l.trim(20);
        l.note_fetch(3, 5, 30, t + Duration::from_secs(21));
        let f = &l.followers[&3];
        assert_eq!(f.samples.back().map(|s| s.1), Some(Duration::from_secs(20)));
    }
}
