//! Raising a [`PartitionLog`]'s log start offset on request: a client's
//! DeleteRecords on the leader, and a follower taking its leader's log
//! start (Kafka's `maybeIncrementLogStartOffset`, reasons
//! `ClientRecordDeletion` and `LeaderOffsetIncremented`). Offsets below the
//! new start are never served again: local segments entirely below it are
//! deleted at once, the local log start moves up to it, and the log start
//! clients see (remote part included) never goes below it. The tiering
//! manager carries it into the bucket's catalog (`LocalLog::deleted_before`).

use std::sync::atomic::Ordering;

use super::partition_log::{LogError, PartitionLog};
use super::producer_state::ProducerStateManager;
use super::sealed::delete_whole_segments_below;

impl PartitionLog {
    /// Offsets below this were deleted by request (0: none since the log
    /// was opened; after a restart the local checkpoint and the bucket's
    /// catalog hold what was deleted before).
    pub fn deleted_before(&self) -> i64 {
        self.deleted_before.load(Ordering::Acquire)
    }

    /// A client's DeleteRecords up to `offset` (exclusive). `offset` must
    /// not be above the high watermark (OFFSET_OUT_OF_RANGE, as Kafka).
    /// Returns the log start offset afterwards; a request below it changes
    /// nothing.
    pub fn delete_records_before(&self, offset: i64) -> Result<i64, LogError> {
        let hw = self.high_watermark();
        if offset < 0 || offset > hw {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset(),
                log_end_offset: hw,
            });
        }
        self.raise_log_start(offset)
    }

    /// A follower takes its leader's log start, as far as its own high
    /// watermark: what the leader no longer serves, it does not keep.
    pub fn follow_leader_log_start(&self, leader_log_start: i64) -> Result<(), LogError> {
        let offset = leader_log_start.min(self.high_watermark());
        if offset > self.log_start_offset() {
            self.raise_log_start(offset)?;
        }
        Ok(())
    }

    fn raise_log_start(&self, offset: i64) -> Result<i64, LogError> {
        let mut removed = 0usize;
        let start = {
            let mut inner = self.lock_open()?;
            self.deleted_before.fetch_max(offset, Ordering::AcqRel);
            if offset > inner.log_start_offset {
                removed = delete_whole_segments_below(&mut inner, offset)?;
                inner.log_start_offset = offset;
                if removed > 0 {
                    if let Some(first) = inner.segments.keys().next().copied() {
                        ProducerStateManager::delete_snapshots_below(self.dir(), first)?;
                    }
                }
            }
            self.global_start(inner.log_start_offset)
        };
        if removed > 0 {
            tracing::info!(topic = %self.topic(), partition = self.partition(), segments = removed,
                log_start_offset = start, "deleted local segments below the log start (DeleteRecords)");
        }
        Ok(start)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use crate::log::batch::{self, testing};
    use crate::log::partition_log::{LogError, PartitionLog, SharedConfig};
    use strata_common::config::{BrokerConfig, TopicConfig};

    fn log_with_segments_of(dir: &std::path::Path, segment_bytes: u32) -> Arc<PartitionLog> {
        let sets = vec![format!("log.segment.bytes={segment_bytes}")];
        let broker = BrokerConfig::load(None, &sets).unwrap();
        let cfg = SharedConfig::new(TopicConfig::resolve(&broker, &BTreeMap::new()));
        crate::log::test_logs::create(dir, cfg)
    }

    /// `batches` batches of 4 records each, made durable.
    fn append(log: &PartitionLog, batches: usize) {
        for i in 0..batches {
            let b = testing::batch(4, 100, i as i64 * 10);
            let h = batch::validate_all(&b).unwrap();
            log.append(&b, &h).unwrap();
        }
        log.flush().unwrap();
    }

    #[test]
    fn deleting_records_moves_the_log_start_and_drops_whole_segments() {
        let dir = tempfile::tempdir().unwrap();
        let log = log_with_segments_of(dir.path(), 1000);
        append(&log, 20);
        let segments = log.segment_count();
        assert!(segments >= 5, "small segments: {segments}");
        let hw = log.high_watermark();
        assert_eq!(hw, 80);

        assert!(matches!(
            log.delete_records_before(hw + 1),
            Err(LogError::OffsetOutOfRange { .. })
        ));
        assert_eq!(log.delete_records_before(37).unwrap(), 37);
        assert_eq!(log.log_start_offset(), 37);
        assert_eq!(log.local_log_start_offset(), 37);
        assert!(log.segment_count() < segments, "segments below 37 are gone");
        assert!(matches!(
            log.read(36, 1 << 20, true),
            Err(LogError::OffsetOutOfRange { .. })
        ));
        let read = log.read(37, 1 << 20, true).unwrap();
        assert_eq!(read.log_start_offset, 37);
        assert!(!read.records.is_empty());

        assert_eq!(
            log.delete_records_before(10).unwrap(),
            37,
            "never backwards"
        );
        assert_eq!(
            log.delete_records_before(hw).unwrap(),
            hw,
            "up to the high watermark"
        );
        assert_eq!(log.segment_count(), 1, "only the active segment is left");
        assert_eq!(log.deleted_before(), hw);
        append(&log, 1);
        assert_eq!(log.high_watermark(), hw + 4, "appends go on");
    }

    #[test]
    fn a_follower_takes_the_leaders_log_start_up_to_its_high_watermark() {
        let dir = tempfile::tempdir().unwrap();
        let log = log_with_segments_of(dir.path(), 1 << 20);
        append(&log, 5);
        log.follow_leader_log_start(1_000).unwrap();
        assert_eq!(log.log_start_offset(), 20);
        log.follow_leader_log_start(5).unwrap();
        assert_eq!(log.log_start_offset(), 20, "never backwards");
    }
}
