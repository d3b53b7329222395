//! The log cleaner's threads (Kafka's `LogCleaner` manager part): OS
//! threads off the request runtime, niced, each with its share of the
//! dedupe buffer and of the I/O budget, taking the dirtiest due partition
//! no other thread holds. A pass itself is `cleaner.rs`.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::offset_map::{OffsetMap, Throttle};
use super::partition_log::{LogError, PartitionLog};

/// Starts `log.cleaner.threads` OS threads (off the request runtime), each
/// with its share of the dedupe buffer and of the I/O budget, cleaning the
/// dirtiest due log of `logs()` and sleeping `log.cleaner.backoff.ms`
/// when none is due. Each thread first calls `lower_priority` with
/// `log.cleaner.threads.nice` (the caller's way to lower a thread's
/// priority; the log knows no scheduler).
pub fn start_cleaners(
    settings: &crate::config::settings::CleanerSettings,
    logs: impl Fn() -> Vec<Arc<PartitionLog>> + Send + Sync + 'static,
    lower_priority: fn(i32),
) {
    let threads = settings.threads;
    let memory = settings.dedupe_buffer_size;
    let rate = settings.io_max_bytes_per_second;
    let backoff = settings.backoff;
    let nice = settings.threads_nice;
    let logs = Arc::new(logs);
    for _ in 0..threads {
        let logs = logs.clone();
        let started = std::thread::Builder::new()
            .name("strata-log-cleaner".into())
            .spawn(move || {
                // Cleaning is background work: producers and tail readers
                // get the CPU first (the prefetcher's threads do the same).
                lower_priority(nice);
                let mut map = OffsetMap::with_memory(memory / threads);
                loop {
                    let mut throttle = Throttle::new(rate / threads as f64);
                    let now = crate::clock::now_ms();
                    if !clean_dirtiest(&logs(), now, &mut map, &mut throttle) {
                        std::thread::sleep(backoff);
                    }
                }
            });
        if let Err(e) = started {
            tracing::error!(error = %e, "cannot start the log cleaner");
        }
    }
}

/// Cleans the dirtiest due log of `logs` that no other cleaner thread
/// holds. Returns whether a pass ran.
pub fn clean_dirtiest(
    logs: &[Arc<PartitionLog>],
    now: i64,
    map: &mut OffsetMap,
    throttle: &mut Throttle,
) -> bool {
    let mut due: Vec<(f64, &Arc<PartitionLog>)> = logs
        .iter()
        .filter_map(|l| {
            l.cleanability(now)
                .filter(|c| c.due)
                .map(|c| (c.dirty_ratio, l))
        })
        .collect();
    due.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (_, log) in due {
        if log.cleaning.swap(true, Ordering::AcqRel) {
            continue;
        }
        let started = Instant::now();
        let result = log.clean(now, map, throttle, false);
        log.cleaning.store(false, Ordering::Release);
        let stats = &log.cleaner_stats;
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
