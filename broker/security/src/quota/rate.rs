//! A rate over a ring of time windows, as Kafka's quota sensors measure
//! it (`SampledStat` with a `WindowedSum`, measured by `Rate`), and the
//! throttle time that brings an observed rate back to its quota
//! (`QuotaUtils.throttleTime`). Time is handed in (milliseconds), never
//! read here.
//!
//! The ring holds `samples` windows of `window_ms` each. A value is added
//! to the current window; a window `window_ms` old is complete, and the
//! next value starts the next window, reusing the oldest. A window whose
//! start is `samples × window_ms` old is emptied before measuring. The
//! rate is the sum of the windows over the time they span, and that span
//! is never taken as shorter than `samples − 1` whole windows: a client
//! that just connected is measured over ten seconds (by default), not
//! over its first millisecond.

/// `quota.window.num` and `quota.window.size.seconds`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateConfig {
    /// How many windows the ring holds (Kafka's default: 11).
    pub samples: u32,
    /// How long one window is, in milliseconds (Kafka's default: 1,000).
    pub window_ms: i64,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig {
            samples: 11,
            window_ms: 1000,
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Sample {
    start_ms: i64,
    value: f64,
}

/// A rate per second over the ring.
#[derive(Clone, Debug)]
pub struct Rate {
    config: RateConfig,
    samples: Vec<Sample>,
    current: usize,
}

impl Rate {
    pub fn new(config: RateConfig) -> Self {
        let config = RateConfig {
            samples: config.samples.max(2),
            window_ms: config.window_ms.max(1),
        };
        Rate {
            config,
            samples: Vec::with_capacity(config.samples as usize),
            current: 0,
        }
    }

    pub fn config(&self) -> RateConfig {
        self.config
    }

    fn current(&mut self, now_ms: i64) -> &mut Sample {
        if self.samples.is_empty() {
            self.samples.push(Sample {
                start_ms: now_ms,
                value: 0.0,
            });
        }
        &mut self.samples[self.current]
    }

    /// Adds `value` at `now_ms`.
    pub fn record(&mut self, value: f64, now_ms: i64) {
        let window = self.config.window_ms;
        if now_ms - self.current(now_ms).start_ms >= window {
            self.current = (self.current + 1) % self.config.samples as usize;
            if self.current >= self.samples.len() {
                self.samples.push(Sample {
                    start_ms: now_ms,
                    value: 0.0,
                });
            } else {
                self.samples[self.current] = Sample {
                    start_ms: now_ms,
                    value: 0.0,
                };
            }
        }
        self.current(now_ms).value += value;
    }

    fn purge(&mut self, now_ms: i64) {
        let expire = self.config.samples as i64 * self.config.window_ms;
        for s in &mut self.samples {
            if now_ms - s.start_ms >= expire {
                *s = Sample {
                    start_ms: now_ms,
                    value: 0.0,
                };
            }
        }
    }

    /// The span the rate is measured over at `now_ms`, in milliseconds.
    pub fn window_size_ms(&mut self, now_ms: i64) -> i64 {
        self.purge(now_ms);
        let oldest = self
            .samples
            .iter()
            .map(|s| s.start_ms)
            .min()
            .unwrap_or(now_ms);
        let mut elapsed = now_ms - oldest;
        let full = elapsed / self.config.window_ms;
        let min_full = self.config.samples as i64 - 1;
        if full < min_full {
            elapsed += (min_full - full) * self.config.window_ms;
        }
        elapsed.max(1)
    }

    /// The rate per second at `now_ms`.
    pub fn measure(&mut self, now_ms: i64) -> f64 {
        let window = self.window_size_ms(now_ms);
        let total: f64 = self.samples.iter().map(|s| s.value).sum();
        total / (window as f64 / 1000.0)
    }

    /// Records `value`, then answers how long the client must wait for the
    /// rate to come back to `quota` (0 if it is within it): Kafka's
    /// `(observed − quota) / quota × window`, rounded to milliseconds.
    pub fn record_and_throttle(&mut self, value: f64, quota: f64, now_ms: i64) -> i64 {
        self.record(value, now_ms);
        let observed = self.measure(now_ms);
        if observed <= quota {
            return 0;
        }
        let window = self.window_size_ms(now_ms) as f64;
        if quota <= 0.0 {
            // A zero quota: nothing is allowed; wait out the whole window.
            return window.round() as i64;
        }
        ((observed - quota) / quota * window).round() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_rate_is_measured_over_ten_windows() {
        let mut r = Rate::new(RateConfig::default());
        // Kafka's worked example: 20,480 bytes against 1,024 B/s.
        assert_eq!(r.record_and_throttle(20_480.0, 1024.0, 0), 10_000);
        let mut r = Rate::new(RateConfig::default());
        r.record(10_240.0, 0);
        assert_eq!(r.window_size_ms(0), 10_000);
        assert_eq!(r.measure(0), 1024.0);
        // Exactly at the quota is within it.
        let mut r = Rate::new(RateConfig::default());
        assert_eq!(r.record_and_throttle(10_240.0, 1024.0, 0), 0);
    }

    #[test]
    fn the_span_grows_to_eleven_windows_and_old_windows_expire() {
        let mut r = Rate::new(RateConfig::default());
        for t in 0..30 {
            r.record(1000.0, t * 1000);
        }
        // Eleven windows of 1,000 each, the oldest started at 19,000.
        assert_eq!(r.window_size_ms(29_500), 10_500);
        assert!((r.measure(29_500) - 11_000.0 / 10.5).abs() < 1e-9);
        // Long idle: every window has expired.
        assert_eq!(r.measure(100_000), 0.0);
    }

    #[test]
    fn a_steady_client_below_its_quota_is_never_throttled_and_one_above_is() {
        // (At exactly the quota, the value just recorded makes the rate a
        // little higher than the quota for a moment, in Kafka too.)
        let mut below = Rate::new(RateConfig::default());
        let mut above = Rate::new(RateConfig::default());
        let mut throttled = 0;
        for i in 0..600 {
            let t = i * 100;
            assert_eq!(below.record_and_throttle(90.0, 1000.0, t), 0, "at t={t}");
            if above.record_and_throttle(150.0, 1000.0, t) > 0 {
                throttled += 1;
            }
        }
        assert!(throttled > 400, "{throttled}");
    }

    #[test]
    fn throttle_time_brings_the_rate_back_to_the_quota() {
        // After waiting the throttle time with nothing more recorded, the
        // rate measured over the longer span is the quota.
        let mut r = Rate::new(RateConfig {
            samples: 11,
            window_ms: 1000,
        });
        for t in 0..10 {
            r.record(3000.0, t * 1000);
        }
        let now = 9_999;
        let observed = r.measure(now);
        let wait = r.record_and_throttle(0.0, 2000.0, now);
        let window = r.window_size_ms(now) as f64;
        assert!(wait > 0);
        let after = observed * window / (window + wait as f64);
        assert!((after - 2000.0).abs() < 1.0, "{after}");
    }
}
