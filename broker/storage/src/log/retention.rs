//! Removing data from a [`PartitionLog`]: `retention.ms` / `retention.bytes`,
//! and rolling segments on demand or after `segment.ms` (for a compacted
//! topic, also after `max.compaction.lag.ms`).

use super::partition_log::{LogError, PartitionLog};
use super::segment::{retention_timestamp, LogSegment};

impl PartitionLog {
    /// Applies `retention.ms` and `retention.bytes`: deletes whole segments
    /// from the start and advances the log start offset. The active segment
    /// is rolled first when it alone is past retention. Returns the number
    /// of segments deleted.
    pub(crate) fn enforce_retention(&self, now: i64) -> Result<usize, LogError> {
        let cfg = self.config();
        // `cleanup.policy=compact` alone: records live until compacted away.
        if !cfg.delete_retention_applies {
            return Ok(0);
        }
        let mut removed: Vec<LogSegment> = Vec::new();
        {
            let mut inner = self.lock_open()?;
            if cfg.retention_ms >= 0 {
                let cutoff = now - cfg.retention_ms;
                loop {
                    let count = inner.segments.len();
                    let Some(first) = inner.segments.values().next() else {
                        break;
                    };
                    if first.is_empty() || retention_timestamp(first) >= cutoff {
                        break;
                    }
                    if count == 1 {
                        // Only the active segment is left and all of it is
                        // expired: roll so it can go.
                        self.roll_locked(&mut inner, &cfg)?;
                        continue;
                    }
                    if let Some((_, seg)) = inner.segments.pop_first() {
                        removed.push(seg);
                    }
                }
            }
            if cfg.retention_bytes >= 0 {
                let mut total: u64 = inner.segments.values().map(|s| s.size()).sum();
                while inner.segments.len() > 1 {
                    let Some(first) = inner.segments.values().next() else {
                        break;
                    };
                    if total.saturating_sub(first.size()) < cfg.retention_bytes as u64 {
                        break;
                    }
                    total -= first.size();
                    if let Some((_, seg)) = inner.segments.pop_first() {
                        removed.push(seg);
                    }
                }
            }
            if let Some(first) = inner.segments.keys().next().copied() {
                if first > inner.log_start_offset {
                    inner.log_start_offset = first;
                }
            }
            // Unlink under the lock so a concurrent topic deletion and
            // re-creation cannot have new files under these names. Readers
            // holding a slice keep reading the unlinked file.
            for seg in &removed {
                tracing::info!(topic = %self.topic(), partition = self.partition(),
                    base_offset = seg.base_offset(), size = seg.size(), "retention deleted segment");
                seg.delete_files()?;
            }
            if !removed.is_empty() {
                super::producer_state::ProducerStateManager::delete_snapshots_below(
                    self.dir(),
                    inner.log_start_offset,
                )?;
            }
        }
        Ok(removed.len())
    }

    /// Rolls the active segment now if it is not empty; returns the base
    /// offset of the (new) active segment.
    pub fn roll(&self) -> Result<i64, LogError> {
        let cfg = self.config();
        let mut inner = self.lock_open()?;
        if !inner.active().is_empty() {
            self.roll_locked(&mut inner, &cfg)?;
        }
        Ok(inner.active().base_offset())
    }

    /// Rolls the active segment if it is older than `segment.ms` and not empty.
    pub fn roll_if_expired(&self, now: i64) -> Result<bool, LogError> {
        let cfg = self.config();
        let mut inner = self.lock_open()?;
        if inner.active().should_roll(
            0,
            inner.log_end_offset(),
            u64::MAX,
            cfg.max_segment_ms(),
            now,
        ) {
            self.roll_locked(&mut inner, &cfg)?;
            return Ok(true);
        }
        Ok(false)
    }
}
