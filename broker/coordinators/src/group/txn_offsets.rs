//! Offsets committed inside a transaction (TxnOffsetCommit; KIP-98,
//! KIP-447): written to `__consumer_offsets` as part of the producer's
//! transaction and held here, pending, until the transaction coordinator
//! ends it; a commit makes them the group's committed offsets, an abort
//! drops them. While one is pending for a partition, an OffsetFetch that
//! requires stable offsets is answered UNSTABLE_OFFSET_COMMIT.
//! Replay rebuilds the same state from the log's records and markers.

use kafka_protocol::ResponseError;

use super::coordinator::{check_member, code, GroupCoordinator};
use super::group::Group;
use super::offsets::OffsetCommit;
use strata_cluster::coordinator_log::CoordinatorWriteError;
use strata_storage::partition::CommitWait;

/// A TxnOffsetCommit request, decoded.
#[derive(Debug)]
pub struct TxnOffsetCommitRequest {
    pub group_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// v3+ (KIP-447): the member's generation and id, checked like an
    /// OffsetCommit's when given.
    pub generation: i32,
    pub member_id: String,
    pub instance_id: Option<String>,
    pub offsets: Vec<OffsetCommit>,
}

impl GroupCoordinator {
    /// Writes offsets as part of a producer's transaction; they become the
    /// group's committed offsets when the transaction commits. One error
    /// code per entry of `offsets`.
    pub async fn txn_commit(&self, req: TxnOffsetCommitRequest) -> Vec<i16> {
        let n = req.offsets.len();
        let all = |e: ResponseError| vec![code(e); n];
        if req.group_id.is_empty() {
            return all(ResponseError::InvalidGroupId);
        }
        let mut result = vec![0i16; n];
        let (write, written) = {
            let mut groups = self.lock();
            if !req.member_id.is_empty() || req.generation >= 0 {
                match groups.get_mut(&req.group_id) {
                    Some(group) if !group.is_empty() => {
                        if let Some(e) =
                            check_member(group, &req.member_id, req.instance_id.as_deref())
                        {
                            return all(e);
                        }
                        if req.generation != group.generation {
                            return all(ResponseError::IllegalGeneration);
                        }
                        if let Some(m) = group.members.get_mut(&req.member_id) {
                            m.last_heartbeat = self.clock.now();
                        }
                    }
                    _ => return all(ResponseError::IllegalGeneration),
                }
            }
            let (records, written) = self.offset_records(&req.group_id, &req.offsets, &mut result);
            if records.is_empty() {
                return result;
            }
            let producer = Some((req.producer_id, req.producer_epoch));
            match self.store.append_for(&req.group_id, &records, producer) {
                Ok(w) => {
                    let mut pending = self.pending_txn.lock().unwrap_or_else(|e| e.into_inner());
                    let mine = pending.by_producer.entry(req.producer_id).or_default();
                    for (i, v) in &written {
                        let o = &req.offsets[*i];
                        mine.push((
                            req.group_id.clone(),
                            o.topic.clone(),
                            o.partition,
                            v.clone(),
                        ));
                    }
                    (w, written)
                }
                Err(e) => {
                    let fenced = matches!(
                        e,
                        CoordinatorWriteError::Log(strata_storage::log::LogError::Sequence(
                            strata_storage::log::producer_state::SequenceError::InvalidProducerEpoch { .. }
                        ))
                    );
                    let err = if fenced {
                        ResponseError::InvalidProducerEpoch
                    } else {
                        tracing::warn!(group = %req.group_id, error = %e, "writing transactional offsets failed");
                        e.code()
                    };
                    for (i, _) in &written {
                        result[*i] = code(err);
                    }
                    return result;
                }
            }
        };
        let err = match write.committed(self.cfg.commit_timeout).await {
            CommitWait::Committed => None,
            CommitWait::TimedOut => Some(ResponseError::RequestTimedOut),
            CommitWait::NotLeader => Some(ResponseError::NotCoordinator),
        };
        if let Some(err) = err {
            for (i, _) in written {
                result[i] = code(err);
            }
        }
        result
    }

    /// The transaction coordinator wrote `producer_id`'s marker to the
    /// offsets partition: its pending offsets are committed or dropped.
    pub fn complete_txn(&self, producer_id: i64, commit: bool) {
        let mut groups = self.lock();
        let taken = self
            .pending_txn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take(producer_id);
        if !commit {
            return;
        }
        for (group, topic, partition, v) in taken {
            groups
                .entry(group.clone())
                .or_insert_with(|| Group::new(&group))
                .offsets
                .insert((topic, partition), v);
        }
    }

    /// A transaction has offsets pending for this group partition.
    pub fn has_pending_txn_offset(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.pending_txn
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_pending(group, topic, partition)
    }

    /// The `__consumer_offsets` partition holding `group`.
    pub fn offsets_partition_of(&self, group: &str) -> i32 {
        self.store.partition_of(group)
    }
}
