//! `Ownership`: which partitions of a coordinator's internal topic this
//! broker coordinates, at which leader epoch, and whether their state is
//! loaded yet — the bookkeeping of Kafka's `onElection` / `onResignation`.
//! A coordinator serves a key only while the key's partition is loaded
//! here; it loads a partition when this broker leads it and drops it as
//! soon as it no longer leads it at the epoch it loaded at
//! (docs/coordinators.md).
//!
//! Knows partition numbers and leader epochs, never records or logs.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use kafka_protocol::ResponseError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The partition's records are being replayed.
    Loading(i32),
    /// Coordinated here at this leader epoch.
    Loaded(i32),
}

impl State {
    fn epoch(self) -> i32 {
        match self {
            State::Loading(e) | State::Loaded(e) => e,
        }
    }
}

/// What a coordinator must do to follow its partitions' leadership.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Partitions to drop: no longer led here at the epoch loaded.
    pub unload: Vec<i32>,
    /// (partition, leader epoch) to load: led here, not loaded at that epoch.
    pub load: Vec<(i32, i32)>,
}

#[derive(Debug, Default)]
pub(crate) struct Ownership {
    parts: Mutex<BTreeMap<i32, State>>,
}

impl Ownership {
    fn lock(&self) -> MutexGuard<'_, BTreeMap<i32, State>> {
        self.parts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Compares what is owned with `leading(p)` (the epoch this broker
    /// leads partition `p` at, None when it does not) for `0..partitions`.
    pub fn changes(&self, partitions: i32, leading: impl Fn(i32) -> Option<i32>) -> Changes {
        let parts = self.lock();
        let mut out = Changes::default();
        for (&p, state) in parts.iter() {
            if p >= partitions || leading(p) != Some(state.epoch()) {
                out.unload.push(p);
            }
        }
        for p in 0..partitions {
            if let Some(epoch) = leading(p) {
                if parts.get(&p).map(|s| s.epoch()) != Some(epoch) {
                    out.load.push((p, epoch));
                }
            }
        }
        out
    }

    /// Partition `p` starts loading at `epoch`: keys in it get
    /// COORDINATOR_LOAD_IN_PROGRESS until [`Self::finish_load`].
    pub fn begin_load(&self, p: i32, epoch: i32) {
        self.lock().insert(p, State::Loading(epoch));
    }

    /// Partition `p`'s state is in memory: it is coordinated here. False
    /// (and nothing changes) if it was dropped or reloaded meanwhile.
    pub fn finish_load(&self, p: i32, epoch: i32) -> bool {
        let mut parts = self.lock();
        match parts.get_mut(&p) {
            Some(s) if *s == State::Loading(epoch) => {
                *s = State::Loaded(epoch);
                true
            }
            _ => false,
        }
    }

    /// Partition `p` is no longer coordinated here.
    pub fn unload(&self, p: i32) {
        self.lock().remove(&p);
    }

    /// The leader epoch partition `p` is coordinated at; NOT_COORDINATOR
    /// when it is not led here, COORDINATOR_LOAD_IN_PROGRESS while loading.
    pub fn check(&self, p: i32) -> Result<i32, ResponseError> {
        match self.lock().get(&p) {
            Some(State::Loaded(e)) => Ok(*e),
            Some(State::Loading(_)) => Err(ResponseError::CoordinatorLoadInProgress),
            None => Err(ResponseError::NotCoordinator),
        }
    }

    /// The partitions coordinated here, loaded or loading.
    pub fn owned(&self) -> Vec<i32> {
        self.lock().keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leads_load_and_resignations_unload() {
        let o = Ownership::default();
        let led = |p: i32| (p == 1 || p == 3).then_some(4);
        let c = o.changes(5, led);
        assert_eq!(c.load, vec![(1, 4), (3, 4)]);
        assert!(c.unload.is_empty());
        o.begin_load(1, 4);
        assert_eq!(o.check(1), Err(ResponseError::CoordinatorLoadInProgress));
        assert_eq!(o.check(2), Err(ResponseError::NotCoordinator));
        assert!(o.finish_load(1, 4));
        assert_eq!(o.check(1), Ok(4));
        // Led again at a newer epoch: drop and load again.
        let c = o.changes(5, |p| (p == 1).then_some(5));
        assert_eq!(c.unload, vec![1]);
        assert_eq!(c.load, vec![(1, 5)]);
        o.unload(1);
        assert_eq!(o.check(1), Err(ResponseError::NotCoordinator));
        // A load overtaken by a newer one does not finish.
        o.begin_load(1, 5);
        o.begin_load(1, 6);
        assert!(!o.finish_load(1, 5));
        assert_eq!(o.check(1), Err(ResponseError::CoordinatorLoadInProgress));
    }
}
