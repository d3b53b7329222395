//! A latency histogram that many threads record into without locks: the
//! broker's hot path records how long its appends take to become durable,
//! and the history rate governor ([`crate::governor`]) and `/metrics` read
//! it.
//!
//! It owns the counts only. It never decides anything; readers take
//! [`LatencyHistogram::snapshot`]s and subtract them to get an interval.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Buckets per doubling of the latency: each bucket is 2^(1/8) (9 %) wider
/// than the one before.
const PER_OCTAVE: usize = 8;
/// 1 µs to 2^24 µs (16.8 s); longer latencies count in the last bucket.
const OCTAVES: usize = 24;
pub const BUCKETS: usize = PER_OCTAVE * OCTAVES;

#[derive(Debug)]
pub struct LatencyHistogram {
    counts: [AtomicU64; BUCKETS],
    sum_micros: AtomicU64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            counts: [const { AtomicU64::new(0) }; BUCKETS],
            sum_micros: AtomicU64::new(0),
        }
    }
}

impl LatencyHistogram {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn record(&self, latency: Duration) {
        let us = latency.as_micros().min(u64::MAX as u128) as u64;
        self.counts[bucket_of(us)].fetch_add(1, Ordering::Relaxed);
        self.sum_micros.fetch_add(us, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            counts: std::array::from_fn(|i| self.counts[i].load(Ordering::Relaxed)),
            sum_micros: self.sum_micros.load(Ordering::Relaxed),
        }
    }
}

/// The counts at one moment (cumulative since the histogram was made).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub counts: [u64; BUCKETS],
    pub sum_micros: u64,
}

impl Default for Snapshot {
    fn default() -> Self {
        Snapshot {
            counts: [0; BUCKETS],
            sum_micros: 0,
        }
    }
}

impl Snapshot {
    /// What was recorded between `earlier` and this snapshot.
    pub fn since(&self, earlier: &Snapshot) -> Snapshot {
        Snapshot {
            counts: std::array::from_fn(|i| self.counts[i].saturating_sub(earlier.counts[i])),
            sum_micros: self.sum_micros.saturating_sub(earlier.sum_micros),
        }
    }

    /// Adds `other`'s samples to these.
    pub fn add(&mut self, other: &Snapshot) {
        for (c, o) in self.counts.iter_mut().zip(other.counts.iter()) {
            *c += o;
        }
        self.sum_micros += other.sum_micros;
    }

    /// Samples certainly slower than `d` (in buckets wholly above it).
    pub fn count_above(&self, d: Duration) -> u64 {
        let us = d.as_secs_f64() * 1e6;
        self.counts
            .iter()
            .enumerate()
            .filter(|(i, _)| *i > 0 && upper_bound_micros(i - 1) >= us)
            .map(|(_, c)| c)
            .sum()
    }

    pub fn count(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The latency below which a fraction `q` of the samples fall (the
    /// upper bound of the bucket holding it); `None` without samples.
    pub fn quantile(&self, q: f64) -> Option<Duration> {
        let total = self.count();
        if total == 0 {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Some(duration_of(upper_bound_micros(i)));
            }
        }
        Some(duration_of(upper_bound_micros(BUCKETS - 1)))
    }

    /// Cumulative counts at each power of two microseconds (Prometheus
    /// `le` buckets): `(upper bound in seconds, samples at or below it)`.
    pub fn cumulative_octaves(&self) -> Vec<(f64, u64)> {
        let mut out = Vec::with_capacity(OCTAVES);
        let mut seen = 0;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c;
            if (i + 1) % PER_OCTAVE == 0 {
                out.push((upper_bound_micros(i) / 1e6, seen));
            }
        }
        out
    }
}

fn bucket_of(us: u64) -> usize {
    if us <= 1 {
        return 0;
    }
    // Bucket i holds (2^(i/8), 2^((i+1)/8)] µs.
    let i = ((us as f64).log2() * PER_OCTAVE as f64).ceil() as usize;
    i.saturating_sub(1).min(BUCKETS - 1)
}

fn upper_bound_micros(i: usize) -> f64 {
    2f64.powf((i + 1) as f64 / PER_OCTAVE as f64)
}

fn duration_of(micros: f64) -> Duration {
    Duration::from_secs_f64(micros / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_hold_their_bounds() {
        for us in [1u64, 2, 3, 10, 999, 1000, 1001, 65_536, 10_000_000] {
            let i = bucket_of(us);
            assert!(upper_bound_micros(i) >= us as f64, "{us} above bucket {i}");
            if i > 0 {
                assert!(
                    upper_bound_micros(i - 1) < us as f64,
                    "{us} fits bucket {}",
                    i - 1
                );
            }
        }
        assert_eq!(bucket_of(u64::MAX), BUCKETS - 1);
    }

    #[test]
    fn quantiles_within_a_bucket() {
        let h = LatencyHistogram::new();
        for ms in 1..=100u64 {
            h.record(Duration::from_millis(ms));
        }
        let s = h.snapshot();
        assert_eq!(s.count(), 100);
        for (q, want_ms) in [(0.5, 50.0), (0.9, 90.0), (0.99, 99.0), (1.0, 100.0)] {
            let got = s.quantile(q).unwrap().as_secs_f64() * 1e3;
            assert!(
                got >= want_ms && got <= want_ms * 1.1,
                "q{q}: {got} ms, want {want_ms}"
            );
        }
        assert_eq!(s.sum_micros, 5050 * 1000);
    }

    #[test]
    fn an_interval_is_the_difference_of_snapshots() {
        let h = LatencyHistogram::new();
        h.record(Duration::from_millis(100));
        let a = h.snapshot();
        for _ in 0..9 {
            h.record(Duration::from_millis(2));
        }
        let d = h.snapshot().since(&a);
        assert_eq!(d.count(), 9);
        assert!(d.quantile(1.0).unwrap() < Duration::from_millis(3));
        assert_eq!(Snapshot::default().quantile(0.5), None);
        assert_eq!(h.snapshot().count_above(Duration::from_millis(50)), 1);
        assert_eq!(h.snapshot().count_above(Duration::from_millis(1)), 10);
        assert_eq!(h.snapshot().count_above(Duration::from_millis(200)), 0);
        let octaves = h.snapshot().cumulative_octaves();
        assert_eq!(octaves.len(), OCTAVES);
        assert_eq!(octaves.last().unwrap().1, 10);
        assert!(octaves
            .windows(2)
            .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1));
    }
}
