//! The tiering manager's wall clock: what a round measures `retention.ms`,
//! `local.retention.ms` and `segment.ms` against. The broker passes its own
//! (the logs' clock), so a test that moves time moves the manager's too.

use std::fmt;

/// Wall time in Kafka's unit: milliseconds since the Unix epoch.
pub trait WallClock: Send + Sync + fmt::Debug {
    fn now_ms(&self) -> i64;
}

/// The machine's wall clock (0 if it is before the epoch).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemWallClock;

impl WallClock for SystemWallClock {
    fn now_ms(&self) -> i64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    }
}
