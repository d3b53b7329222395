//! `Partition`: one topic partition as this broker replicates it, Kafka's
//! `kafka.cluster.Partition`. It owns the replica role (leader or
//! follower, at which leader epoch), the ISR and each follower's
//! progress, and the bound these put on the high watermark. Below it, the
//! partition's local log (`crate::log::PartitionLog`, Kafka's
//! `UnifiedLog`) holds segments, offsets, producer state and flushes, and
//! knows nothing of replicas (docs/partition-layer.md).
//!
//! Every write goes through here: a leader's append or marker at the
//! epoch it leads at, a follower's copy or truncation for the leadership
//! it follows. Role changes hold `leader_isr_update` for writing and
//! writes hold it for reading (Kafka's `leaderIsrUpdateLock`), so an
//! append or truncation in progress finishes under the role it started
//! with, and a log emptied by a follower never leads by accident.
//!
//! Lock order: `leader_isr_update`, then the replication state, then the
//! log's locks. The log never calls up. Reads (fetch, offsets, the
//! cleaner, tiering) go to the log directly: [`Partition::log`].

pub mod ack_latency;
mod commit_wait;
pub mod replica_state;
mod replicas;

pub use commit_wait::CommitWait;

use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::log::batch::BatchHeader;
use crate::log::control::Marker;
use crate::log::{AppendInfo, AppendOrigin, LogError, PartitionLog};
use replica_state::{ReplicaState, Role};

#[derive(Debug)]
pub struct Partition {
    log: Arc<PartitionLog>,
    /// Held for writing by role changes, for reading by writes.
    leader_isr_update: RwLock<()>,
    /// Leader or follower, the ISR and the followers' progress
    /// (`replica_state.rs`).
    state: Mutex<ReplicaState>,
}

impl Partition {
    /// The partition over `log`, led by this broker alone (a single
    /// broker's role; the cluster layer assigns others).
    pub fn new(log: Arc<PartitionLog>) -> Arc<Self> {
        Arc::new(Partition {
            log,
            leader_isr_update: RwLock::new(()),
            state: Mutex::new(ReplicaState::new()),
        })
    }

    /// The partition's local log: what reads, offsets, retention, the
    /// cleaner and tiering act on.
    pub fn log(&self) -> &Arc<PartitionLog> {
        &self.log
    }
    pub fn topic(&self) -> &str {
        self.log.topic()
    }
    pub fn partition(&self) -> i32 {
        self.log.partition()
    }

    fn replicas(&self) -> MutexGuard<'_, ReplicaState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
    fn writing(&self) -> RwLockReadGuard<'_, ()> {
        self.leader_isr_update
            .read()
            .unwrap_or_else(|e| e.into_inner())
    }
    fn changing_role(&self) -> RwLockWriteGuard<'_, ()> {
        self.leader_isr_update
            .write()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The epoch a leader's write is stamped with; refused on a follower.
    fn append_epoch(&self) -> Result<i32, LogError> {
        match self.replicas().role {
            Role::Leader { epoch, .. } if epoch >= 0 => Ok(epoch),
            // A single broker stamps the log's own epoch.
            Role::Leader { .. } => Ok(self.log.leader_epoch()),
            Role::Follower { .. } => Err(LogError::NotLeader),
        }
    }

    /// A follower's write (copy or truncation) for the leadership at
    /// `epoch`: refused once the partition follows a newer one or leads.
    fn check_follower_epoch(&self, epoch: i32) -> Result<(), LogError> {
        match self.replicas().role {
            Role::Follower { epoch: e, .. } if e == epoch => Ok(()),
            _ => Err(LogError::StaleLeaderEpoch { epoch }),
        }
    }

    /// A producer's validated batches, appended if this broker leads (see
    /// [`PartitionLog`]'s `append_as_leader` for `records` and `headers`).
    pub fn append(&self, records: &[u8], headers: &[BatchHeader]) -> Result<AppendInfo, LogError> {
        self.append_from(records, headers, AppendOrigin::Client)
    }

    /// [`Self::append`] for `origin`: a coordinator's own batches skip the
    /// idempotence checks, a verified producer's carry its guard.
    pub fn append_from(
        &self,
        records: &[u8],
        headers: &[BatchHeader],
        origin: AppendOrigin,
    ) -> Result<AppendInfo, LogError> {
        let _writing = self.writing();
        let epoch = self.append_epoch()?;
        let info = self.log.append_as_leader(records, headers, origin, epoch)?;
        if !info.duplicate {
            self.note_leader_append(info.last_offset + 1);
        }
        Ok(info)
    }

    /// A transaction marker for `producer_id` at `producer_epoch`, appended
    /// if this broker leads.
    pub fn append_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        marker: Marker,
    ) -> Result<AppendInfo, LogError> {
        let _writing = self.writing();
        let epoch = self.append_epoch()?;
        let info = self
            .log
            .append_marker_as_leader(producer_id, producer_epoch, marker, epoch)?;
        self.note_leader_append(info.last_offset + 1);
        Ok(info)
    }

    /// The leader's batches, copied while following the leadership at
    /// `epoch` (refused once it follows a newer one): the new log end.
    pub fn append_as_follower(&self, records: &[u8], epoch: i32) -> Result<i64, LogError> {
        self.follower_write(epoch, |log| log.append_as_follower(records))
    }

    /// Truncates a divergent tail at `offset`, following the leadership
    /// at `epoch`.
    pub fn truncate_to(&self, offset: i64, epoch: i32) -> Result<(), LogError> {
        self.follower_truncation(epoch, |log| log.truncate_to(offset))
    }

    /// Empties the log to start at `offset`, following the leadership at
    /// `epoch`.
    pub fn truncate_fully_and_start_at(&self, offset: i64, epoch: i32) -> Result<(), LogError> {
        self.follower_truncation(epoch, |log| log.truncate_fully_and_start_at(offset))
    }

    /// Empties the log to start at the bucket's end `offset` (KIP-1023),
    /// following the leadership at `epoch`; see the log's
    /// `start_at_tiered_end`.
    pub fn start_at_tiered_end(
        &self,
        offset: i64,
        last_epoch: i32,
        producer_snapshot: Option<&[u8]>,
        epoch: i32,
    ) -> Result<(), LogError> {
        self.follower_truncation(epoch, |log| {
            log.start_at_tiered_end(offset, last_epoch, producer_snapshot)
        })
    }

    /// A follower's write for the leadership at `epoch`, refused once the
    /// partition follows a newer one or leads; role changes wait for it.
    fn follower_write<T>(
        &self,
        epoch: i32,
        write: impl FnOnce(&PartitionLog) -> Result<T, LogError>,
    ) -> Result<T, LogError> {
        let _writing = self.writing();
        self.check_follower_epoch(epoch)?;
        write(&self.log)
    }

    /// [`Self::follower_write`] that takes the log back: the leader's high
    /// watermark this follower knows then goes no further than the log's
    /// new end (the log lowered its own high watermark and bound already).
    fn follower_truncation(
        &self,
        epoch: i32,
        truncate: impl FnOnce(&PartitionLog) -> Result<(), LogError>,
    ) -> Result<(), LogError> {
        self.follower_write(epoch, |log| {
            truncate(log)?;
            let end = log.log_end_offset();
            if let Role::Follower {
                leader_high_watermark,
                ..
            } = &mut self.replicas().role
            {
                *leader_high_watermark = (*leader_high_watermark).min(end);
            }
            Ok(())
        })
    }

    /// A follower of `epoch` whose fetch found nothing past its own log
    /// end, everything of it fsynced: it holds the leader's whole log,
    /// and a leader holds every acknowledged record (the quorum rule
    /// elected it so). This covers a partition nobody writes to, where
    /// the batch-of-the-epoch rule of `set_leader_high_watermark` never
    /// fires (`log/hydration.rs`).
    pub fn caught_up_with_leader(&self, epoch: i32) {
        let _writing = self.writing();
        if self.check_follower_epoch(epoch).is_ok() {
            self.log.mark_hydrated_if_durable();
        }
    }
}

#[cfg(test)]
mod tests;
