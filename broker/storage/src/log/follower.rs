//! A follower's writes to its partition log: the leader's batches stored
//! byte for byte at their own offsets and leader epochs (producer state,
//! transaction markers and the epoch cache applied as the leader applied
//! them), and truncation of a divergent tail back to where the new
//! leader's log and this one agree.
//!
//! It never assigns offsets or stamps epochs (that is the leader's
//! append, `partition_log.rs`) and never decides where to truncate (the
//! replica fetcher asks the leader, OffsetForLeaderEpoch).

use std::time::Instant;

use super::batch::{BatchError, BatchScanner};
use super::cleaner_checkpoint::CleanerCheckpoint;
use super::control::decode_marker;
use super::partition_log::{settings, LogError, LogInner, PartitionLog};
use super::producer_state::{rebuild_producer_state, ProducerStateManager};
use super::segment::LogSegment;
use super::txn_index::AbortedTxn;

impl PartitionLog {
    /// Appends `records` (whole batches from the leader, the last possibly
    /// cut short by the fetch's size limit) as they are. Batches this log
    /// already holds are skipped; a batch may start past the log end (the
    /// leader's compaction leaves offset gaps) but never inside it. The
    /// partition above checked that it still follows the leadership the
    /// batches came from. Returns the new log end. The caller makes it
    /// durable ([`Self::flush`]).
    pub(crate) fn append_as_follower(&self, records: &[u8]) -> Result<i64, LogError> {
        let now = self.clock.now_ms();
        let mut inner = self.lock_open()?;
        let mut scanner = BatchScanner::new(records, true);
        let mut appended = false;
        let mut result = Ok(());
        for (pos, h) in scanner.by_ref() {
            let leo = inner.log_end_offset();
            if h.last_offset() < leo {
                continue;
            }
            if h.base_offset < leo {
                result = Err(LogError::NotContiguous {
                    log_end_offset: leo,
                    base_offset: h.base_offset,
                });
                break;
            }
            if let Err(e) = self.append_replicated(&mut inner, &records[pos..pos + h.size], &h, now)
            {
                result = Err(e);
                break;
            }
            appended = true;
        }
        if let Some(reason) = scanner.stopped_by.take() {
            // A batch cut by the fetch's limits is expected; anything else
            // is damage on the way or at the leader.
            if result.is_ok() && !matches!(reason, BatchError::Truncated { .. }) {
                result = Err(LogError::Corrupt(reason));
            }
        }
        // What went in before an error stays, and is accounted for.
        let leo = inner.log_end_offset();
        if appended {
            inner.unflushed_since.get_or_insert_with(Instant::now);
        }
        drop(inner);
        if appended {
            self.log_end.send_replace(leo);
        }
        result.map(|()| leo)
    }

    /// Stores one replicated batch at its own offset.
    fn append_replicated(
        &self,
        inner: &mut LogInner,
        bytes: &[u8],
        h: &super::batch::BatchHeader,
        now: i64,
    ) -> Result<(), LogError> {
        let cfg = self.config();
        if inner.active().should_roll(
            h.size as u64,
            h.last_offset(),
            cfg.segment_bytes,
            cfg.max_segment_ms(),
            now,
        ) {
            self.roll_locked(inner, &cfg)?;
        }
        inner.active_mut().append(bytes, h, now)?;
        self.record_epoch(h.partition_leader_epoch, h.base_offset);
        if h.is_control() {
            apply_marker(inner, h, bytes)?;
        } else {
            inner.producers.update(h);
        }
        Ok(())
    }

    /// A batch of `epoch` was stored at `base_offset`: a newer epoch's
    /// start goes into the cache.
    fn record_epoch(&self, epoch: i32, base_offset: i64) {
        let mut cache = self.epochs.lock().unwrap_or_else(|e| e.into_inner());
        if cache.latest_epoch().is_none_or(|e| e < epoch) {
            if let Err(e) = cache.assign(epoch, base_offset) {
                tracing::warn!(topic = %self.topic(), partition = self.partition(), error = %e,
                    "cannot write the leader epoch checkpoint");
            }
        }
    }

    /// Removes every record at or above `offset` (a divergent tail the
    /// replica fetcher found): later segments go, the
    /// one holding `offset` is cut there (at the start of the batch
    /// holding it) and its indexes rebuilt, producer state is rebuilt from
    /// the newest snapshot below, the epoch cache, the cleaner's
    /// checkpoint and the high watermark follow. Below the log start, the
    /// log is emptied to start at `offset`.
    pub(crate) fn truncate_to(&self, offset: i64) -> Result<(), LogError> {
        let cfg = self.config();
        let mut inner = self.lock_open()?;
        if offset >= inner.log_end_offset() {
            return Ok(());
        }
        let keep = inner.segments.range(..=offset).next_back().map(|(b, _)| *b);
        let Some(keep) = keep.filter(|_| offset > inner.log_start_offset) else {
            drop(inner);
            return self.truncate_fully_and_start_at(offset);
        };
        let doomed: Vec<i64> = inner.segments.range(keep + 1..).map(|(b, _)| *b).collect();
        for base in doomed {
            if let Some(seg) = inner.segments.remove(&base) {
                seg.delete_files()?;
            }
        }
        let mut end = offset;
        if let Some(mut seg) = inner.segments.remove(&keep) {
            let slice = seg.slice()?;
            let cut = match slice.seek(seg.position_hint(offset), offset)? {
                Some((pos, h)) => {
                    end = h.base_offset.min(offset);
                    pos
                }
                None => slice.end,
            };
            drop(slice);
            let path = seg.log_path();
            seg.release_file();
            super::file_pool::global().forget(&path);
            drop(seg);
            let file = std::fs::OpenOptions::new().write(true).open(&path)?;
            file.set_len(cut)?;
            file.sync_data()?;
            drop(file);
            let (mut seg, _) = LogSegment::open(self.dir(), keep, settings(&cfg), true)?;
            // The active segment now.
            seg.mark_reopened(self.clock.now_ms());
            inner.segments.insert(keep, seg);
        }
        let end = end.max(inner.log_start_offset);
        inner.producers = rebuild_producer_state(self.dir(), &mut inner.segments, end)?;
        inner.unflushed_since = None;
        inner.truncations += 1;
        super::partition_log::fsync_dir(self.dir())?;
        self.after_truncation(&inner, end)?;
        drop(inner);
        tracing::info!(topic = %self.topic(), partition = self.partition(), end, "truncated the log");
        Ok(())
    }

    /// Empties the log so that it starts (and ends) at `offset`: every
    /// segment, snapshot and epoch entry goes.
    pub(crate) fn truncate_fully_and_start_at(&self, offset: i64) -> Result<(), LogError> {
        self.restart_at(offset, None)
    }

    /// Empties the log so that it starts at the bucket's end `offset`
    /// (KIP-1023): what lies below is read from the bucket. The producer
    /// state is the one uploaded with the last tiered segment (open
    /// transactions kept: their coordinator is alive and its markers will
    /// come through replication), and the epoch cache starts with
    /// `last_epoch`, the epoch of the last tiered batch.
    pub(crate) fn start_at_tiered_end(
        &self,
        offset: i64,
        last_epoch: i32,
        producer_snapshot: Option<&[u8]>,
    ) -> Result<(), LogError> {
        let producers = producer_snapshot.and_then(ProducerStateManager::decode);
        if producer_snapshot.is_some() && producers.is_none() {
            tracing::warn!(topic = %self.topic(), partition = self.partition(),
                "the bucket's producer state snapshot is unreadable; idempotent producers start over");
        }
        self.restart_at(offset, Some((last_epoch, producers.unwrap_or_default())))
    }

    fn restart_at(
        &self,
        offset: i64,
        from_bucket: Option<(i32, ProducerStateManager)>,
    ) -> Result<(), LogError> {
        let cfg = self.config();
        let mut inner = self.lock_open()?;
        // Emptied: counted in a quorum election again once caught up.
        self.mark_unhydrated()?;
        let all: Vec<i64> = inner.segments.keys().copied().collect();
        for base in all {
            if let Some(seg) = inner.segments.remove(&base) {
                seg.delete_files()?;
            }
        }
        ProducerStateManager::delete_snapshots_below(self.dir(), i64::MAX)?;
        let (seed_epoch, producers) = match from_bucket {
            Some((e, p)) => {
                // On disk before the segment: a restart finds the state.
                p.write_snapshot(self.dir(), offset)?;
                (Some(e), p)
            }
            None => (None, ProducerStateManager::default()),
        };
        let seg = LogSegment::create(self.dir(), offset, settings(&cfg))?;
        inner.segments.insert(offset, seg);
        inner.log_start_offset = offset;
        inner.producers = producers;
        inner.unflushed_since = None;
        inner.truncations += 1;
        super::partition_log::fsync_dir(self.dir())?;
        {
            let mut cache = self.epochs.lock().unwrap_or_else(|e| e.into_inner());
            cache.truncate_from_end(offset)?;
            cache.truncate_from_start(offset)?;
        }
        self.after_truncation(&inner, offset)?;
        if let (Some(e), true) = (seed_epoch, offset > 0) {
            // After the truncation (which drops entries from the end on),
            // at the last tiered offset: the entry names that batch's
            // epoch and, below the log start, survives a restart.
            let mut cache = self.epochs.lock().unwrap_or_else(|e| e.into_inner());
            cache.assign(e, offset - 1)?;
        }
        drop(inner);
        tracing::info!(topic = %self.topic(), partition = self.partition(), offset,
            from_bucket = seed_epoch.is_some(), "emptied the log to start at the leader's offset");
        Ok(())
    }

    /// The log now ends at `end` (its lock held): the epoch cache, the
    /// cleaner's checkpoint, the durable end and the high watermark follow.
    fn after_truncation(&self, inner: &LogInner, end: i64) -> Result<(), LogError> {
        let mut cache = self.epochs.lock().unwrap_or_else(|e| e.into_inner());
        if let Err(e) = cache.truncate_from_end(end) {
            tracing::warn!(topic = %self.topic(), partition = self.partition(), error = %e,
                "cannot write the leader epoch checkpoint");
        }
        drop(cache);
        let mut cleaner = CleanerCheckpoint::load(self.dir());
        if cleaner.cleaned_through > end || cleaner.first_dirty > end {
            cleaner.cleaned_through = cleaner.cleaned_through.min(end);
            cleaner.first_dirty = cleaner.first_dirty.min(end);
            cleaner.store(self.dir())?;
        }
        self.reset_ends_after_truncation(inner, end);
        Ok(())
    }
}

/// Applies a replicated control batch: the transaction it ends, and the
/// segment's `.txnindex` entry for an abort (as the leader's marker write).
fn apply_marker(
    inner: &mut LogInner,
    h: &super::batch::BatchHeader,
    bytes: &[u8],
) -> Result<(), LogError> {
    let Some(marker) = decode_marker(h, bytes) else {
        return Ok(());
    };
    if let Some(done) = inner.producers.complete_txn(h, marker) {
        if done.aborted {
            let lso = inner
                .producers
                .first_unstable_offset()
                .unwrap_or(h.next_offset())
                .min(h.next_offset());
            inner.active_mut().txn_index_mut().append(AbortedTxn {
                producer_id: done.producer_id,
                first_offset: done.first_offset,
                last_offset: done.last_offset,
                last_stable_offset: lso,
            })?;
        }
    }
    Ok(())
}
