//! The partition log's side of transactions: writing a coordinator's
//! marker (and, for an abort, the segment's `.txnindex` entry), the last
//! stable offset, and the aborted transactions a read committed fetch must
//! be told about. The transaction's state machine lives in the coordinator
//! (`crate::txn`); this module never decides whether to commit or abort.

use std::time::Instant;

use super::batch::{self, BatchHeader};
use super::control::{encode_marker, Marker};
use super::partition_log::{AppendInfo, LogError, PartitionLog};
use super::txn_index::AbortedTxn;

impl PartitionLog {
    /// Appends a transaction marker for `producer_id` at `producer_epoch`,
    /// stamped `leader_epoch` (the partition above checked that this
    /// broker leads at it). A marker from an epoch older than the
    /// producer's is refused (the coordinator that sent it was fenced).
    pub(crate) fn append_marker_as_leader(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        marker: Marker,
        leader_epoch: i32,
    ) -> Result<AppendInfo, LogError> {
        let cfg = self.config();
        let now = self.clock.now_ms();
        let mut bytes = encode_marker(producer_id, producer_epoch, marker, now);
        let mut inner = self.lock_open()?;
        inner
            .producers
            .check_marker(producer_id, producer_epoch)
            .and_then(|()| {
                inner
                    .producers
                    .check_coordinator_epoch(producer_id, marker.coordinator_epoch)
            })
            .map_err(LogError::Marker)?;
        let offset = inner.log_end_offset();
        let mut header = BatchHeader::parse_header_only(&bytes)?;
        if inner.active().should_roll(
            header.size as u64,
            offset,
            cfg.segment_bytes,
            cfg.max_segment_ms(),
            now,
        ) {
            self.roll_locked(&mut inner, &cfg)?;
        }
        batch::set_base_offset(&mut bytes, offset);
        let epoch = self.stamp_epoch(&mut bytes, offset, leader_epoch);
        header.base_offset = offset;
        header.partition_leader_epoch = epoch;
        inner.active_mut().append(&bytes, &header, now)?;
        if let Some(done) = inner.producers.complete_txn(&header, marker) {
            if done.aborted {
                let lso = inner
                    .producers
                    .first_unstable_offset()
                    .unwrap_or(offset + 1)
                    .min(offset + 1);
                inner.active_mut().txn_index_mut().append(AbortedTxn {
                    producer_id,
                    first_offset: done.first_offset,
                    last_offset: offset,
                    last_stable_offset: lso,
                })?;
            }
        }
        inner.unflushed_since.get_or_insert_with(Instant::now);
        let log_start_offset = self.global_start(inner.log_start_offset);
        drop(inner);
        self.log_end.send_replace(offset + 1);
        self.flush_requested.notify_one();
        Ok(AppendInfo {
            base_offset: offset,
            last_offset: offset,
            log_append_time: -1,
            log_start_offset,
            duplicate: false,
            leader_epoch,
        })
    }

    /// The last stable offset: the high watermark, or the first offset of
    /// the oldest open transaction if that is lower. Read committed
    /// consumers see nothing at or above it.
    pub fn last_stable_offset(&self) -> i64 {
        let first_unstable = self.lock().producers.first_unstable_offset();
        let hw = self.high_watermark();
        first_unstable.map_or(hw, |f| f.min(hw))
    }

    /// Every producer with state in this partition (DescribeProducers).
    pub fn active_producers(&self) -> Vec<super::producer_state::ActiveProducer> {
        self.lock().producers.active_producers()
    }

    /// Open transactions with records in this partition.
    pub fn ongoing_transactions(&self) -> usize {
        self.lock().producers.ongoing_count()
    }

    /// The aborted transactions whose records may lie in `[from, upper)`, in
    /// marker order: what a read committed fetch returns with those
    /// records. Only local segments are searched (the remote part has its
    /// own `.txnindex` copies).
    pub fn aborted_transactions(&self, from: i64, upper: i64) -> Vec<AbortedTxn> {
        let inner = self.lock();
        let start = inner
            .segments
            .range(..=from)
            .next_back()
            .map(|(b, _)| *b)
            .unwrap_or(i64::MIN);
        let mut out = Vec::new();
        for seg in inner.segments.range(start..).map(|(_, s)| s) {
            for t in seg.txn_index().entries() {
                if t.overlaps(from, upper) {
                    out.push(*t);
                }
                // Every transaction open below `upper` ended before this
                // one's marker (Kafka's stopping rule).
                if t.last_stable_offset >= upper {
                    return out;
                }
            }
        }
        out
    }
}
