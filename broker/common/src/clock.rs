//! The broker's clocks: wall time in Kafka's unit (milliseconds since the
//! Unix epoch, as record timestamps, LogAppendTime and retention use it)
//! and monotonic time for deadlines. Components that reason about time
//! take a `Clock` in their constructor (`SystemClock` in the broker,
//! `ManualClock` in tests, which then move time instead of sleeping);
//! `now_ms()` is the wall clock for code not yet given one.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A source of time.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Monotonic time, for deadlines and elapsed time.
    fn now(&self) -> Instant;
    /// Wall time: milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

/// A shared clock, as constructors take it.
pub type SharedClock = Arc<dyn Clock>;

/// The machine's clocks.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    fn now_ms(&self) -> i64 {
        now_ms()
    }
}

/// The machine's clocks, shared.
pub fn system() -> SharedClock {
    Arc::new(SystemClock)
}

/// A clock that moves only when told to (tests): both readings start at
/// the machine's time when it is made and advance together.
#[derive(Debug)]
pub struct ManualClock {
    start: Instant,
    start_ms: i64,
    elapsed: Mutex<Duration>,
}

impl ManualClock {
    pub fn new() -> Arc<Self> {
        Arc::new(ManualClock {
            start: Instant::now(),
            start_ms: now_ms(),
            elapsed: Mutex::new(Duration::ZERO),
        })
    }

    /// Moves both readings forward by `by`.
    pub fn advance(&self, by: Duration) {
        let mut e = self.elapsed.lock().unwrap_or_else(|e| e.into_inner());
        *e += by;
    }

    fn elapsed(&self) -> Duration {
        *self.elapsed.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        self.start + self.elapsed()
    }

    fn now_ms(&self) -> i64 {
        self.start_ms
            .saturating_add(i64::try_from(self.elapsed().as_millis()).unwrap_or(i64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let c = ManualClock::new();
        let (t, ms) = (c.now(), c.now_ms());
        assert_eq!((c.now(), c.now_ms()), (t, ms));
        c.advance(Duration::from_millis(1500));
        assert_eq!(c.now(), t + Duration::from_millis(1500));
        assert_eq!(c.now_ms(), ms + 1500);
    }
}
