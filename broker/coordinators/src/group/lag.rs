//! Consumer lag per group and partition, measured rather than guessed:
//! the records between a group's committed offset and the partition's
//! high watermark, the age of the oldest unconsumed record, the rates at
//! which the group consumes and producers append (over
//! `group.lag.window.ms`), and from them the catch-up estimate:
//! lag / (consume rate − produce rate), or *not catching up* when the
//! group does not consume faster than the partition grows ("a day of lag
//! is not recoverable by reading faster" made visible).
//!
//! The coordinator's sampler (`timers.rs`) feeds it every
//! `group.lag.sample.interval.ms` for the partitions whose log this broker
//! holds, and for the others from their leaders' answers
//! (`remote_lag.rs`); `/metrics` reads it. Bookkeeping only: it never changes a
//! group, never reads the object store.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where a group's partition stands.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CatchUp {
    /// Nothing to consume.
    CaughtUp,
    /// At the measured rates, the lag is gone in this many seconds.
    Draining { seconds: f64 },
    /// The group does not consume faster than the partition grows.
    NotCatchingUp,
    /// Not measured for long enough to tell.
    Unknown,
}

/// One group's standing on one partition.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PartitionLag {
    pub committed: i64,
    pub high_watermark: i64,
    pub lag_records: i64,
    /// Age of the oldest unconsumed record (0 without lag; None when its
    /// timestamp cannot be read locally).
    pub lag_seconds: Option<f64>,
    /// Records per second, over the window (None: too few samples).
    pub consume_rate: Option<f64>,
    pub produce_rate: Option<f64>,
    pub catch_up: CatchUp,
}

/// The estimate from a lag and two rates (records per second).
pub fn catch_up(lag: i64, consume_rate: Option<f64>, produce_rate: Option<f64>) -> CatchUp {
    if lag <= 0 {
        return CatchUp::CaughtUp;
    }
    match (consume_rate, produce_rate) {
        (Some(c), Some(p)) if c > p => CatchUp::Draining {
            seconds: lag as f64 / (c - p),
        },
        (Some(_), Some(_)) => CatchUp::NotCatchingUp,
        _ => CatchUp::Unknown,
    }
}

/// (when, value) samples over a window; the rate is the slope between
/// the oldest and the newest.
#[derive(Debug, Default)]
struct Series(VecDeque<(Instant, i64)>);

impl Series {
    fn push(&mut self, at: Instant, v: i64, window: Duration) {
        // A value that went back (offsets reset, a truncated log) starts
        // the series over: a negative rate means nothing.
        if self.0.back().is_some_and(|(_, last)| v < *last) {
            self.0.clear();
        }
        self.0.push_back((at, v));
        while self
            .0
            .front()
            .is_some_and(|(t, _)| at.saturating_duration_since(*t) > window)
            && self.0.len() > 2
        {
            self.0.pop_front();
        }
    }

    /// Per second, once the samples span at least `min_span`.
    fn rate(&self, min_span: Duration) -> Option<f64> {
        let (t0, v0) = self.0.front()?;
        let (t1, v1) = self.0.back()?;
        let span = t1.saturating_duration_since(*t0);
        if span < min_span || span.is_zero() {
            return None;
        }
        Some((v1 - v0) as f64 / span.as_secs_f64())
    }
}

type PartitionKey = (String, i32);
type GroupKey = (String, String, i32);

#[derive(Debug, Default)]
struct GroupPartition {
    committed: Series,
    /// (committed offset, timestamp of its batch) read last.
    timestamp: Option<(i64, Option<i64>)>,
    seen: Option<Instant>,
}

#[derive(Debug, Default)]
struct Inner {
    logs: HashMap<PartitionKey, Series>,
    groups: HashMap<GroupKey, GroupPartition>,
}

/// The samples of every group's committed offsets and every sampled
/// partition's high watermark.
#[derive(Debug)]
pub struct LagTracker {
    window: Duration,
    inner: Mutex<Inner>,
}

/// One sample: a group's committed offset on a partition whose high
/// watermark is `high_watermark` now.
#[derive(Debug, Clone)]
pub struct Observation {
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub committed: i64,
    pub high_watermark: i64,
}

impl LagTracker {
    pub fn new(window: Duration) -> Self {
        LagTracker {
            window: window.max(Duration::from_secs(1)),
            inner: Mutex::new(Inner::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Rates need samples over a quarter of the window at least.
    fn min_span(&self) -> Duration {
        self.window / 4
    }

    /// Takes one round of samples at `now`; entries not seen in it (a
    /// deleted group, a partition moved away) are forgotten.
    /// `timestamp_of(topic, partition, offset)` reads the timestamp of
    /// the batch at an offset; it is called only when a committed offset
    /// changed.
    pub fn record(
        &self,
        now: Instant,
        observations: &[Observation],
        timestamp_of: impl Fn(&str, i32, i64) -> Option<i64>,
    ) {
        let mut logs_seen: HashMap<PartitionKey, i64> = HashMap::new();
        for o in observations {
            logs_seen.insert((o.topic.clone(), o.partition), o.high_watermark);
        }
        // Timestamps first, without the lock (a disk read each).
        let wanted: Vec<(usize, i64)> = {
            let inner = self.lock();
            observations
                .iter()
                .enumerate()
                .filter(|(_, o)| o.committed < o.high_watermark)
                .filter(|(_, o)| {
                    let key = (o.group.clone(), o.topic.clone(), o.partition);
                    inner
                        .groups
                        .get(&key)
                        .and_then(|g| g.timestamp)
                        .is_none_or(|(at, _)| at != o.committed)
                })
                .map(|(i, o)| (i, o.committed))
                .collect()
        };
        let read: Vec<(usize, i64, Option<i64>)> = wanted
            .into_iter()
            .map(|(i, c)| {
                let o = &observations[i];
                (i, c, timestamp_of(&o.topic, o.partition, c))
            })
            .collect();
        let mut inner = self.lock();
        let window = self.window;
        for (key, hw) in &logs_seen {
            inner
                .logs
                .entry(key.clone())
                .or_default()
                .push(now, *hw, window);
        }
        inner.logs.retain(|k, _| logs_seen.contains_key(k));
        for o in observations {
            let g = inner
                .groups
                .entry((o.group.clone(), o.topic.clone(), o.partition))
                .or_default();
            g.committed.push(now, o.committed, window);
            g.seen = Some(now);
        }
        for (i, c, ts) in read {
            let o = &observations[i];
            if let Some(g) = inner
                .groups
                .get_mut(&(o.group.clone(), o.topic.clone(), o.partition))
            {
                g.timestamp = Some((c, ts));
            }
        }
        inner.groups.retain(|_, g| g.seen == Some(now));
    }

    /// Every sampled group partition's standing at `now_ms` (wall clock,
    /// for record ages), sorted by group, topic, partition.
    pub fn snapshot(&self, now_ms: i64) -> Vec<(GroupKey, PartitionLag)> {
        let inner = self.lock();
        let min_span = self.min_span();
        let mut out: Vec<(GroupKey, PartitionLag)> = inner
            .groups
            .iter()
            .filter_map(|(key, g)| {
                let (_, committed) = *g.committed.0.back()?;
                let log = inner.logs.get(&(key.1.clone(), key.2))?;
                let (_, hw) = *log.0.back()?;
                let lag = (hw - committed).max(0);
                let lag_seconds = if lag == 0 {
                    Some(0.0)
                } else {
                    g.timestamp
                        .filter(|(at, _)| *at == committed)
                        .and_then(|(_, ts)| ts)
                        .map(|ts| ((now_ms - ts).max(0)) as f64 / 1e3)
                };
                let consume_rate = g.committed.rate(min_span);
                let produce_rate = log.rate(min_span);
                Some((
                    key.clone(),
                    PartitionLag {
                        committed,
                        high_watermark: hw,
                        lag_records: lag,
                        lag_seconds,
                        consume_rate,
                        produce_rate,
                        catch_up: catch_up(lag, consume_rate, produce_rate),
                    },
                ))
            })
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// Each sampled partition's append rate (records per second).
    pub(crate) fn produce_rates(&self) -> Vec<(PartitionKey, f64)> {
        let inner = self.lock();
        let min_span = self.min_span();
        let mut out: Vec<(PartitionKey, f64)> = inner
            .logs
            .iter()
            .filter_map(|(k, s)| Some((k.clone(), s.rate(min_span)?)))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(group: &str, partition: i32, committed: i64, hw: i64) -> Observation {
        Observation {
            group: group.into(),
            topic: "t".into(),
            partition,
            committed,
            high_watermark: hw,
        }
    }

    #[test]
    fn the_estimate_follows_the_rates() {
        assert_eq!(catch_up(0, None, None), CatchUp::CaughtUp);
        assert_eq!(catch_up(10, None, Some(1.0)), CatchUp::Unknown);
        assert_eq!(
            catch_up(1000, Some(30.0), Some(10.0)),
            CatchUp::Draining { seconds: 50.0 }
        );
        // Equal rates never drain; a stopped consumer neither.
        assert_eq!(
            catch_up(1000, Some(10.0), Some(10.0)),
            CatchUp::NotCatchingUp
        );
        assert_eq!(catch_up(1000, Some(0.0), Some(0.0)), CatchUp::NotCatchingUp);
    }

    #[test]
    fn a_faster_consumer_drains_and_a_slower_one_does_not() {
        let t = Instant::now();
        let lag = LagTracker::new(Duration::from_secs(60));
        // Producer 100/s on both partitions; group "fast" consumes 300/s
        // on partition 0; group "slow" 50/s on partition 1.
        for s in 0..=30i64 {
            let hw = 10_000 + 100 * s;
            lag.record(
                t + Duration::from_secs(s as u64),
                &[
                    obs("fast", 0, 1_000 + 300 * s, hw),
                    obs("slow", 1, 1_000 + 50 * s, hw),
                ],
                |_, _, off| Some(1_000_000 + off),
            );
        }
        let snap = lag.snapshot(2_000_000);
        let fast = snap.iter().find(|(k, _)| k.0 == "fast").unwrap().1;
        let slow = snap.iter().find(|(k, _)| k.0 == "slow").unwrap().1;
        assert_eq!(fast.lag_records, 13_000 - 10_000);
        match fast.catch_up {
            CatchUp::Draining { seconds } => assert!((seconds - 15.0).abs() < 1e-6, "{seconds}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(slow.catch_up, CatchUp::NotCatchingUp);
        // The oldest unconsumed record's age: its batch's timestamp.
        let committed = slow.committed;
        assert_eq!(
            slow.lag_seconds,
            Some((2_000_000 - (1_000_000 + committed)) as f64 / 1e3)
        );
        let rates = lag.produce_rates();
        assert!(
            rates.iter().all(|(_, r)| (*r - 100.0).abs() < 1e-6),
            "{rates:?}"
        );
    }

    #[test]
    fn too_short_a_history_is_unknown_and_gone_entries_are_forgotten() {
        let t = Instant::now();
        let lag = LagTracker::new(Duration::from_secs(60));
        lag.record(t, &[obs("g", 0, 5, 10)], |_, _, _| None);
        lag.record(
            t + Duration::from_secs(1),
            &[obs("g", 0, 6, 11)],
            |_, _, _| None,
        );
        let snap = lag.snapshot(0);
        assert_eq!(snap[0].1.catch_up, CatchUp::Unknown);
        // The batch's timestamp could not be read: no age rather than a guess.
        assert_eq!(snap[0].1.lag_seconds, None);
        lag.record(t + Duration::from_secs(2), &[], |_, _, _| None);
        assert!(lag.snapshot(0).is_empty());
        assert!(lag.produce_rates().is_empty());
    }

    #[test]
    fn an_offset_reset_backwards_starts_the_rate_over() {
        let t = Instant::now();
        let lag = LagTracker::new(Duration::from_secs(40));
        for s in 0..20u64 {
            lag.record(
                t + Duration::from_secs(s),
                &[obs("g", 0, 100 * s as i64, 5_000)],
                |_, _, _| Some(0),
            );
        }
        // Reset to the start: the old samples would give a negative rate.
        lag.record(
            t + Duration::from_secs(20),
            &[obs("g", 0, 0, 5_000)],
            |_, _, _| Some(0),
        );
        let snap = lag.snapshot(0);
        assert_eq!(snap[0].1.consume_rate, None);
        assert_eq!(snap[0].1.lag_records, 5_000);
    }
}
