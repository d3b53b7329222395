//! The log cleaner's threads (Kafka's `LogCleaner` manager part): OS
//! threads off the request runtime, niced, each with its share of the
//! dedupe buffer and of the I/O budget, taking the dirtiest due partition
//! no other thread holds. A pass itself is `cleaner.rs`.

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc, Condvar, Mutex};

use super::cleaner_state::CleanerState;
use std::time::{Duration, Instant};

use super::offset_map::{OffsetMap, Throttle};
use super::partition_log::{LogError, PartitionLog};

/// Starts `log.cleaner.threads` OS threads (off the request runtime), each
/// with its share of the dedupe buffer and of the I/O budget, cleaning the
/// dirtiest due log of `logs()` and waiting `log.cleaner.backoff.ms`
/// when none is due. Each thread first calls `lower_priority` with
/// `log.cleaner.threads.nice` (the caller's way to lower a thread's
/// priority; the log knows no scheduler). A pass reads `clock` for what
/// is due (`min.compaction.lag.ms`, `delete.retention.ms`). The threads
/// run until `Cleaners::stop`.
pub fn start_cleaners(
    settings: &strata_common::config::settings::CleanerSettings,
    logs: impl Fn() -> Vec<(Arc<PartitionLog>, Arc<CleanerState>)> + Send + Sync + 'static,
    lower_priority: fn(i32),
    clock: strata_common::clock::SharedClock,
) -> Cleaners {
    let threads = settings.threads;
    let memory = settings.dedupe_buffer_size;
    let rate = settings.io_max_bytes_per_second;
    let backoff = settings.backoff;
    let nice = settings.threads_nice;
    let logs = Arc::new(logs);
    let stop = Arc::new(StopSignal::default());
    let (exited_tx, exited) = mpsc::channel();
    let mut running = 0;
    for _ in 0..threads {
        let logs = logs.clone();
        let stop = stop.clone();
        let exited_tx = exited_tx.clone();
        let clock = clock.clone();
        let started = std::thread::Builder::new()
            .name("strata-log-cleaner".into())
            .spawn(move || {
                // Cleaning is background work: producers and tail readers
                // get the CPU first (the prefetcher's threads do the same).
                lower_priority(nice);
                let mut map = OffsetMap::with_memory(memory / threads);
                while !stop.is_set() {
                    let mut throttle = Throttle::new(rate / threads as f64);
                    let now = clock.now_ms();
                    if !clean_dirtiest(&logs(), now, &mut map, &mut throttle) {
                        stop.wait(backoff);
                    }
                }
                let _ = exited_tx.send(());
            });
        match started {
            Ok(_) => running += 1,
            Err(e) => tracing::error!(error = %e, "cannot start the log cleaner"),
        }
    }
    Cleaners {
        stop,
        exited,
        running,
    }
}

/// The running cleaner threads.
#[derive(Debug)]
pub struct Cleaners {
    stop: Arc<StopSignal>,
    exited: mpsc::Receiver<()>,
    running: usize,
}

impl Cleaners {
    /// Asks the threads to stop and waits, at most `limit`, for them to
    /// finish the pass each may be in. Returns how many are still running
    /// (0 when all have stopped; the rest are left to end with the process).
    pub fn stop(self, limit: Duration) -> usize {
        self.stop.set();
        let deadline = Instant::now() + limit;
        let mut left = self.running;
        while left > 0 {
            let wait = deadline.saturating_duration_since(Instant::now());
            match self.exited.recv_timeout(wait) {
                Ok(()) => left -= 1,
                Err(_) => break,
            }
        }
        left
    }
}

/// A flag the cleaner threads wait on between passes.
#[derive(Debug, Default)]
struct StopSignal {
    stopped: Mutex<bool>,
    changed: Condvar,
}

impl StopSignal {
    fn set(&self) {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.changed.notify_all();
    }

    fn is_set(&self) -> bool {
        *self.stopped.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits `timeout`, or less if the flag is set meanwhile.
    fn wait(&self, timeout: Duration) {
        let guard = self.stopped.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self
            .changed
            .wait_timeout_while(guard, timeout, |stopped| !*stopped);
    }
}

/// Cleans the dirtiest due log of `logs` (each with the cleaner's state
/// for it) that no other cleaner thread holds. Returns whether a pass ran.
pub fn clean_dirtiest(
    logs: &[(Arc<PartitionLog>, Arc<CleanerState>)],
    now: i64,
    map: &mut OffsetMap,
    throttle: &mut Throttle,
) -> bool {
    let mut due: Vec<(f64, &Arc<PartitionLog>, &Arc<CleanerState>)> = logs
        .iter()
        .filter_map(|(l, state)| {
            l.cleanability(state.tiered_part().as_deref(), now)
                .filter(|c| c.due)
                .map(|c| (c.dirty_ratio, l, state))
        })
        .collect();
    due.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (_, log, state) in due {
        if !state.try_hold() {
            continue;
        }
        let started = Instant::now();
        let result = log.clean(state.tiered_part(), now, map, throttle, false);
        state.release();
        let stats = &state.stats;
        match result {
            Ok(Some(s)) => {
                stats.passes.fetch_add(1, Ordering::Relaxed);
                stats.bytes_read.fetch_add(s.bytes_read, Ordering::Relaxed);
                stats
                    .bytes_written
                    .fetch_add(s.bytes_written, Ordering::Relaxed);
                stats
                    .records_removed
                    .fetch_add(s.records_removed, Ordering::Relaxed);
                stats
                    .remote_segments_replaced
                    .fetch_add(s.remote_segments_replaced, Ordering::Relaxed);
                tracing::info!(topic = %log.topic(), partition = log.partition(),
                    dirty_ratio = s.dirty_ratio, read = s.bytes_read, written = s.bytes_written,
                    removed = s.records_removed, remote_replaced = s.remote_segments_replaced,
                    ms = started.elapsed().as_millis() as u64, "cleaned");
                return true;
            }
            Ok(None) => {}
            Err(LogError::Closed) => {}
            Err(e) => {
                stats.errors.fetch_add(1, Ordering::Relaxed);
                tracing::error!(topic = %log.topic(), partition = log.partition(), error = %e,
                    "cleaning pass failed; the log is left as it was");
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata_common::config::settings::CleanerSettings;

    #[test]
    fn stop_wakes_idle_threads_and_joins_them() {
        let settings = CleanerSettings {
            enable: true,
            threads: 2,
            dedupe_buffer_size: 1 << 20,
            io_max_bytes_per_second: f64::MAX,
            // Far longer than the stop limit: stopping must not wait it out.
            backoff: Duration::from_secs(3600),
            threads_nice: 0,
        };
        let cleaners = start_cleaners(&settings, Vec::new, |_| {}, strata_common::clock::system());
        assert_eq!(cleaners.stop(Duration::from_secs(30)), 0);
    }
}
