//! Group commit of a [`PartitionLog`]: flush rounds fsync whatever was
//! appended since the last one and then advance the durable end, and with
//! it the high watermark (`ends.rs`), which acks=all producers wait for
//! (`crate::partition::commit_wait`) and below which readers read. Each round's
//! commit latency (from the oldest append it covers) is recorded for the
//! hot path's metrics and the adaptive history rate.
//!
//! It owns when appended data becomes durable and visible. It never writes
//! records: appends belong to `partition_log`.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::partition_log::PartitionLog;

/// Where flush rounds report their commit latency (the log manager hands
/// in the broker's histogram, which `/metrics` and the adaptive history
/// rate read). The log knows only this trait, not who reads it.
pub trait CommitLatencySink: Send + Sync + std::fmt::Debug {
    fn record(&self, latency: Duration);
}

impl PartitionLog {
    /// Waits until the high watermark reaches `offset` (exclusive end) or
    /// the timeout passes. Returns whether it did.
    pub async fn wait_durable(&self, end_offset: i64, timeout: Duration) -> bool {
        let mut rx = self.high_watermark.subscribe();
        let reached = tokio::time::timeout(timeout, async {
            rx.wait_for(|hw| *hw >= end_offset).await.is_ok()
        })
        .await;
        matches!(reached, Ok(true))
    }

    /// One flush round: fsyncs everything appended so far and advances the
    /// high watermark. Blocking; run off the async workers. Returns the
    /// commit latency of the round: how long ago the oldest append it made
    /// durable happened (`None` if there was nothing to flush).
    pub fn flush(&self) -> io::Result<Option<Duration>> {
        let (file, target, since, truncations) = {
            let mut inner = match self.lock_open() {
                Ok(i) => i,
                Err(_) => return Ok(None),
            };
            let target = inner.log_end_offset();
            if target <= self.durable_end_offset() {
                return Ok(None);
            }
            inner.active_mut().persist_indexes()?;
            let since = inner.unflushed_since.take();
            (inner.active().file()?, target, since, inner.truncations)
        };
        file.sync_data()?;
        // The high watermark follows from the durable end and, when
        // replicated, the bound the partition sets (`ends.rs`). A
        // truncation since the snapshot makes this round's end stale.
        let inner = self.lock();
        if inner.truncations == truncations {
            self.set_durable_end(&inner, target);
        }
        drop(inner);
        Ok(since.map(|t| t.elapsed()))
    }

    /// Runs flush rounds whenever appends ask for one, until closed, and
    /// records each round's commit latency in `commit_latency`, if given.
    pub(crate) async fn run_flusher(
        self: Arc<Self>,
        commit_latency: Option<Arc<dyn CommitLatencySink>>,
    ) {
        loop {
            self.flush_requested.notified().await;
            if self.closed.load(Ordering::Acquire) {
                return;
            }
            let log = self.clone();
            match tokio::task::spawn_blocking(move || log.flush()).await {
                Ok(Ok(latency)) => {
                    if let (Some(latency), Some(h)) = (latency, &commit_latency) {
                        h.record(latency);
                    }
                }
                Ok(Err(e)) => {
                    // An fsync failure means the page cache may have dropped
                    // data we cannot rewrite: stop rather than ack it.
                    tracing::error!(topic = %self.topic(), partition = self.partition(), error = %e,
                        "fsync failed; stopping the broker to avoid acknowledging lost data");
                    std::process::exit(70);
                }
                Err(e) => tracing::error!(error = %e, "flush task failed"),
            }
        }
    }
}
