//! The byte rate at which history may be served to clients
//! (`remote.log.manager.fetch.max.bytes.per.second`, Kafka's KIP-956 name):
//! a token bucket the Fetch handler asks before it starts remote reads and
//! charges with what they returned.
//!
//! Two limits feed it: the operator's (`set_rate`) and the adaptive
//! governor's (`set_governed_rate`, `docs/adaptive-history-rate.md`); the
//! lower one applies.
//!
//! It owns the bucket only. It never waits and never reads: the caller
//! decides what a fetch does while the quota is used up (see
//! `docs/remote-fetch-quota.md`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// No limit (Kafka's default, `Long.MAX_VALUE`, or 0).
pub const UNLIMITED: u64 = 0;

#[derive(Debug)]
pub struct FetchQuota {
    state: Mutex<Bucket>,
    /// Fetches whose remote part waited for the quota, and how long.
    pub throttled: AtomicU64,
    pub throttle_micros: AtomicU64,
}

#[derive(Debug)]
struct Bucket {
    /// Bytes per second in effect (the lower of the two); `UNLIMITED` for
    /// none.
    rate: u64,
    /// The operator's limit and the governor's.
    configured: u64,
    governed: u64,
    /// Bytes that may be served now; negative after a read that returned
    /// more than was left (the next reads wait it off). At most one
    /// second's worth accumulates.
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn lower_limit(&self) -> u64 {
        match (self.configured, self.governed) {
            (UNLIMITED, g) => g,
            (c, UNLIMITED) => c,
            (c, g) => c.min(g),
        }
    }

    fn apply(&mut self, now: Instant) {
        let rate = self.lower_limit();
        if rate == self.rate {
            return;
        }
        self.refill(now);
        self.rate = rate;
        self.tokens = match rate {
            UNLIMITED => 0.0,
            // Keeps what was earned (or owed) under the old rate, within
            // the new burst.
            _ => self.tokens.min(burst(rate)),
        };
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = now;
        if self.rate != UNLIMITED {
            self.tokens = (self.tokens + dt * self.rate as f64).min(burst(self.rate));
        }
    }
}

impl FetchQuota {
    /// `rate` bytes per second; 0 or more than 2^62: no limit.
    pub fn new(rate: u64) -> Self {
        let rate = normalize(rate);
        FetchQuota {
            state: Mutex::new(Bucket {
                rate,
                configured: rate,
                governed: UNLIMITED,
                tokens: burst(rate),
                at: Instant::now(),
            }),
            throttled: AtomicU64::new(0),
            throttle_micros: AtomicU64::new(0),
        }
    }

    /// Changes the operator's rate (a dynamic setting); the bucket starts
    /// full.
    pub fn set_rate(&self, rate: u64) {
        let rate = normalize(rate);
        let mut b = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if b.configured != rate {
            b.configured = rate;
            b.rate = b.lower_limit();
            b.tokens = burst(b.rate);
            b.at = Instant::now();
        }
    }

    /// Changes the governor's rate (`UNLIMITED`: none). Called often; what
    /// the bucket holds carries over.
    pub fn set_governed_rate(&self, rate: u64) {
        let rate = normalize(rate);
        let mut b = self.state.lock().unwrap_or_else(|e| e.into_inner());
        b.governed = rate;
        b.apply(Instant::now());
    }

    /// The operator's rate.
    pub fn configured_rate(&self) -> u64 {
        self.state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .configured
    }

    /// The rate in effect (the lower of the operator's and the governor's).
    pub fn effective_rate(&self) -> u64 {
        self.state.lock().unwrap_or_else(|e| e.into_inner()).rate
    }

    /// How long until history may be served again; `None`: now.
    pub fn delay(&self) -> Option<Duration> {
        self.delay_at(Instant::now())
    }

    fn delay_at(&self, now: Instant) -> Option<Duration> {
        let mut b = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if b.rate == UNLIMITED {
            return None;
        }
        b.refill(now);
        (b.tokens <= 0.0).then(|| Duration::from_secs_f64((-b.tokens + 1.0) / b.rate as f64))
    }

    /// Counts bytes served from history.
    pub fn charge(&self, bytes: usize) {
        self.charge_at(bytes, Instant::now());
    }

    fn charge_at(&self, bytes: usize, now: Instant) {
        let mut b = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if b.rate == UNLIMITED {
            return;
        }
        b.refill(now);
        b.tokens -= bytes as f64;
    }

    /// Records a fetch that waited `waited` for the quota.
    pub fn throttled(&self, waited: Duration) {
        self.throttled.fetch_add(1, Ordering::Relaxed);
        self.throttle_micros
            .fetch_add(waited.as_micros() as u64, Ordering::Relaxed);
    }
}

/// What may be served at once after an idle spell: a tenth of a second's
/// worth. Larger bursts let the read-ahead of every catching-up reader
/// run at full speed at once, which is what the quota exists to prevent.
fn burst(rate: u64) -> f64 {
    rate as f64 / 10.0
}

fn normalize(rate: u64) -> u64 {
    if rate > 1 << 62 {
        UNLIMITED
    } else {
        rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unlimited_never_delays() {
        for rate in [0, i64::MAX as u64] {
            let q = FetchQuota::new(rate);
            q.charge(usize::MAX / 2);
            assert_eq!(q.delay(), None);
            assert_eq!(q.configured_rate(), UNLIMITED);
        }
    }

    #[test]
    fn a_tenth_of_a_second_of_burst_then_the_rate() {
        let q = FetchQuota::new(1000);
        let t0 = Instant::now();
        assert_eq!(q.delay_at(t0), None, "starts with a burst's worth");
        q.charge_at(150, t0);
        // 50 bytes of debt at 1000 B/s: 50 ms.
        let d = q.delay_at(t0).expect("in debt");
        assert!((d.as_secs_f64() - 0.051).abs() < 0.005, "{d:?}");
        assert!(q.delay_at(t0 + Duration::from_millis(40)).is_some());
        assert_eq!(q.delay_at(t0 + Duration::from_millis(60)), None);
        // Idle time earns at most a tenth of a second's worth.
        let later = t0 + Duration::from_secs(60);
        assert_eq!(q.delay_at(later), None);
        q.charge_at(101, later);
        assert!(q.delay_at(later).is_some(), "burst is capped");
    }

    #[test]
    fn served_bytes_over_time_follow_the_rate() {
        // A reader that takes 300 bytes whenever it may, for 10 s of
        // simulated time: the burst plus 10 s at the rate.
        let q = FetchQuota::new(10_000);
        let t0 = Instant::now();
        let mut now = t0;
        let mut served = 0usize;
        while now < t0 + Duration::from_secs(10) {
            match q.delay_at(now) {
                None => {
                    q.charge_at(300, now);
                    served += 300;
                }
                Some(d) => now += d,
            }
        }
        assert!((100_000..=101_500).contains(&served), "{served}");
    }

    #[test]
    fn the_lower_of_the_operators_and_the_governors_rate_applies() {
        let q = FetchQuota::new(0);
        q.set_governed_rate(1000);
        assert_eq!((q.configured_rate(), q.effective_rate()), (UNLIMITED, 1000));
        q.set_rate(500);
        assert_eq!((q.configured_rate(), q.effective_rate()), (500, 500));
        q.set_governed_rate(200);
        assert_eq!(q.effective_rate(), 200);
        q.set_governed_rate(UNLIMITED);
        assert_eq!(q.effective_rate(), 500);
        q.set_rate(0);
        assert_eq!(q.effective_rate(), UNLIMITED);
        assert_eq!(q.delay(), None);
    }

    #[test]
    fn a_governed_change_keeps_the_debt() {
        // The governor moves the rate every tick; a reader in debt must not
        // be forgiven by it (a full bucket each time would let the whole
        // burst through ten times a second).
        let q = FetchQuota::new(0);
        let t0 = Instant::now();
        q.set_governed_rate(1000);
        q.charge_at(1100, t0); // 100 burst, 1000 of debt
        q.set_governed_rate(2000);
        assert!(q.delay_at(t0).is_some(), "debt forgiven");
    }

    #[test]
    fn a_new_rate_applies_at_once() {
        let q = FetchQuota::new(1000);
        q.charge(10_000);
        assert!(q.delay().is_some());
        q.set_rate(0);
        assert_eq!(q.delay(), None);
        q.set_rate(1 << 20);
        assert_eq!(q.delay(), None);
        assert_eq!(q.configured_rate(), 1 << 20);
    }
}
