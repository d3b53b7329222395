//! Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete, DeleteGroups,
//! offset expiry (tombstones; the log cleaner compacts `__consumer_offsets`)
//! — the parts of the [`GroupCoordinator`] that write and read the offsets
//! log.

use bytes::Bytes;
use kafka_protocol::ResponseError;

use super::coordinator::{check_member, code, GroupCoordinator};
use super::group::{Group, GroupState};
use super::records::{OffsetValue, RecordKey};
use super::store::PendingWrite;
use strata_storage::partition::CommitWait;

/// One partition's committed offset, as OffsetFetch returns it.
#[derive(Debug, Clone)]
pub struct CommittedOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

/// One partition of an OffsetCommit.
#[derive(Debug, Clone)]
pub struct OffsetCommit {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
}

/// Offset records of a commit, and which entries of it they are (with the
/// value written).
pub(super) type OffsetRecords = (Vec<(RecordKey, Option<Bytes>)>, Vec<(usize, OffsetValue)>);

impl GroupCoordinator {
    /// The records committing `offsets` for `group_id`; an entry for an
    /// unknown partition or with oversized metadata gets its error in
    /// `result` instead.
    pub(super) fn offset_records(
        &self,
        group_id: &str,
        offsets: &[OffsetCommit],
        result: &mut [i16],
    ) -> OffsetRecords {
        let now = self.clock.now_ms();
        let mut records = Vec::new();
        let mut written = Vec::new();
        for (i, o) in offsets.iter().enumerate() {
            if !self.partition_exists(&o.topic, o.partition) {
                result[i] = code(ResponseError::UnknownTopicOrPartition);
                continue;
            }
            if o.metadata.len() > self.cfg.offset_metadata_max_bytes {
                result[i] = code(ResponseError::OffsetMetadataTooLarge);
                continue;
            }
            let value = OffsetValue {
                offset: o.offset,
                leader_epoch: o.leader_epoch,
                metadata: o.metadata.clone(),
                commit_timestamp: now,
            };
            records.push((
                RecordKey::Offset {
                    group: group_id.to_string(),
                    topic: o.topic.clone(),
                    partition: o.partition,
                },
                Some(value.encode()),
            ));
            written.push((i, value));
        }
        (records, written)
    }

    /// Commits offsets; returns one error code per entry of `offsets`, or a
    /// group-level error applied to all.
    pub async fn commit(
        &self,
        group_id: &str,
        generation: i32,
        member_id: &str,
        instance_id: Option<&str>,
        offsets: Vec<OffsetCommit>,
    ) -> Vec<i16> {
        let all = |e: ResponseError| vec![code(e); offsets.len()];
        if group_id.is_empty() {
            return all(ResponseError::InvalidGroupId);
        }
        let pending: Option<(PendingWrite, Vec<usize>)>;
        let mut result = vec![0i16; offsets.len()];
        {
            let mut groups = self.lock();
            let exists = groups.contains_key(group_id);
            if generation < 0 && member_id.is_empty() {
                // A commit from outside the group protocol (admin tools,
                // manual assignment): only while the group has no members.
                if groups.get(group_id).is_some_and(|g| !g.is_empty()) {
                    return all(ResponseError::UnknownMemberId);
                }
            } else {
                let Some(group) = groups.get_mut(group_id) else {
                    return all(ResponseError::IllegalGeneration);
                };
                if let Some(e) = check_member(group, member_id, instance_id) {
                    return all(e);
                }
                if generation != group.generation {
                    return all(ResponseError::IllegalGeneration);
                }
                if group.state == GroupState::CompletingRebalance {
                    return all(ResponseError::RebalanceInProgress);
                }
                if let Some(m) = group.members.get_mut(member_id) {
                    m.last_heartbeat = self.clock.now();
                }
            }
            let (records, values) = self.offset_records(group_id, &offsets, &mut result);
            if records.is_empty() {
                return result;
            }
            let written: Vec<usize> = values.iter().map(|(i, _)| *i).collect();
            match self.store.append(group_id, &records) {
                Ok(w) => {
                    if !exists {
                        groups.insert(group_id.to_string(), Group::new(group_id));
                    }
                    if let Some(group) = groups.get_mut(group_id) {
                        for (i, v) in values {
                            let o = &offsets[i];
                            group.offsets.insert((o.topic.clone(), o.partition), v);
                        }
                    }
                    pending = Some((w, written));
                }
                Err(e) => {
                    tracing::warn!(group = group_id, error = %e, "writing offsets failed");
                    for &i in &written {
                        result[i] = code(e.code());
                    }
                    pending = None;
                }
            }
        }
        if let Some((w, written)) = pending {
            let err = match w.committed(self.cfg.commit_timeout).await {
                CommitWait::Committed => None,
                CommitWait::TimedOut => Some(ResponseError::RequestTimedOut),
                CommitWait::NotLeader => Some(ResponseError::NotCoordinator),
            };
            if let Some(err) = err {
                for i in written {
                    result[i] = code(err);
                }
            }
        }
        result
    }

    /// Committed offsets of a group: all of them, or those asked for (-1
    /// for partitions without a commit).
    pub fn fetch(
        &self,
        group_id: &str,
        wanted: Option<Vec<(String, Vec<i32>)>>,
    ) -> Vec<CommittedOffset> {
        let groups = self.lock();
        Self::fetch_from(&groups, group_id, wanted)
    }

    /// [`Self::fetch`] on the coordinator of `group_id` only: checked
    /// under the groups' lock, so a partition dropped meanwhile is not
    /// answered with no offsets (NOT_COORDINATOR instead).
    pub fn fetch_checked(
        &self,
        group_id: &str,
        wanted: Option<Vec<(String, Vec<i32>)>>,
    ) -> Result<Vec<CommittedOffset>, ResponseError> {
        let groups = self.lock();
        self.check_coordinator(group_id)?;
        Ok(Self::fetch_from(&groups, group_id, wanted))
    }

    fn fetch_from(
        groups: &std::collections::HashMap<String, Group>,
        group_id: &str,
        wanted: Option<Vec<(String, Vec<i32>)>>,
    ) -> Vec<CommittedOffset> {
        let group = groups.get(group_id);
        let get = |t: &str, p: i32| group.and_then(|g| g.offsets.get(&(t.to_string(), p)));
        match wanted {
            None => group
                .map(|g| {
                    g.offsets
                        .iter()
                        .map(|((t, p), v)| CommittedOffset {
                            topic: t.clone(),
                            partition: *p,
                            offset: v.offset,
                            leader_epoch: v.leader_epoch,
                            metadata: v.metadata.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            Some(w) => w
                .into_iter()
                .flat_map(|(t, ps)| ps.into_iter().map(move |p| (t.clone(), p)))
                .map(|(t, p)| match get(&t, p) {
                    Some(v) => CommittedOffset {
                        topic: t,
                        partition: p,
                        offset: v.offset,
                        leader_epoch: v.leader_epoch,
                        metadata: v.metadata.clone(),
                    },
                    None => CommittedOffset {
                        topic: t,
                        partition: p,
                        offset: -1,
                        leader_epoch: -1,
                        metadata: String::new(),
                    },
                })
                .collect(),
        }
    }

    /// OffsetDelete: refused for topics the live group is subscribed to.
    pub async fn delete_offsets(
        &self,
        group_id: &str,
        partitions: Vec<(String, i32)>,
    ) -> Result<Vec<i16>, i16> {
        let pending = {
            let mut groups = self.lock();
            let Some(group) = groups.get_mut(group_id) else {
                return Err(code(ResponseError::GroupIdNotFound));
            };
            if group.state != GroupState::Empty
                && group.protocol_type.as_deref() != Some("consumer")
                && !group.members.is_empty()
            {
                return Err(code(ResponseError::NonEmptyGroup));
            }
            let subscribed = if group.members.is_empty() {
                Some(Default::default())
            } else {
                group.subscribed_topics()
            };
            let mut out = Vec::with_capacity(partitions.len());
            let mut deletable = Vec::new();
            for (t, p) in &partitions {
                if subscribed
                    .as_ref()
                    .is_none_or(|s: &std::collections::HashSet<String>| s.contains(t))
                {
                    out.push(code(ResponseError::GroupSubscribedToTopic));
                    continue;
                }
                deletable.push((t.clone(), *p));
                out.push(0);
            }
            let records = remove_offsets(group, &deletable);
            let w = if records.is_empty() {
                None
            } else {
                self.store.append(group_id, &records).ok()
            };
            (out, w)
        };
        let (out, w) = pending;
        if let Some(w) = w {
            w.committed(self.cfg.commit_timeout).await;
        }
        Ok(out)
    }

    /// DeleteGroups: only groups without members; removes their offsets.
    pub async fn delete_group(&self, group_id: &str) -> i16 {
        let w = {
            let mut groups = self.lock();
            let Some(group) = groups.get_mut(group_id) else {
                return code(ResponseError::GroupIdNotFound);
            };
            if !group.members.is_empty() {
                return code(ResponseError::NonEmptyGroup);
            }
            let keys: Vec<(String, i32)> = group.offsets.keys().cloned().collect();
            let mut records = remove_offsets(group, &keys);
            records.push((
                RecordKey::Group {
                    group: group_id.to_string(),
                },
                None,
            ));
            groups.remove(group_id);
            self.store.append(group_id, &records)
        };
        match w {
            Ok(w) => match w.committed(self.cfg.commit_timeout).await {
                CommitWait::Committed => {
                    tracing::info!(group = group_id, "deleted group");
                    0
                }
                CommitWait::TimedOut => code(ResponseError::RequestTimedOut),
                CommitWait::NotLeader => code(ResponseError::NotCoordinator),
            },
            Err(e) => {
                tracing::warn!(group = group_id, error = %e, "writing group tombstones failed");
                code(e.code())
            }
        }
    }

    /// A topic was deleted: its committed offsets go too.
    pub fn remove_topic(&self, topic: &str) {
        let mut groups = self.lock();
        for group in groups.values_mut() {
            let keys: Vec<(String, i32)> = group
                .offsets
                .keys()
                .filter(|(t, _)| t == topic)
                .cloned()
                .collect();
            if keys.is_empty() {
                continue;
            }
            let records = remove_offsets(group, &keys);
            if let Err(e) = self.store.append(&group.id, &records) {
                tracing::error!(group = %group.id, error = %e, "writing offset tombstones failed");
            }
        }
    }

    /// Expires offsets of empty groups older than `offsets.retention.minutes`
    /// (counted from the later of the commit and the group becoming empty).
    pub(crate) fn expire_offsets(&self) {
        if self.cfg.offsets_retention_ms <= 0 {
            return;
        }
        let now = self.clock.now_ms();
        let mut groups = self.lock();
        let mut dead = Vec::new();
        for group in groups.values_mut() {
            if !group.members.is_empty() || group.state != GroupState::Empty {
                continue;
            }
            let since = group.state_timestamp_ms;
            let keys: Vec<(String, i32)> = group
                .offsets
                .iter()
                .filter(|(_, v)| {
                    v.commit_timestamp.max(since) + self.cfg.offsets_retention_ms < now
                })
                .map(|(k, _)| k.clone())
                .collect();
            let mut records = remove_offsets(group, &keys);
            if group.offsets.is_empty() {
                records.push((
                    RecordKey::Group {
                        group: group.id.clone(),
                    },
                    None,
                ));
                dead.push(group.id.clone());
            }
            if !keys.is_empty() {
                tracing::info!(group = %group.id, expired = keys.len(), "expired committed offsets of an empty group");
            }
            if !records.is_empty() {
                if let Err(e) = self.store.append(&group.id, &records) {
                    tracing::error!(group = %group.id, error = %e, "writing expiry tombstones failed");
                }
            }
        }
        for id in dead {
            groups.remove(&id);
        }
    }
}

/// Removes committed offsets from a group and returns their tombstones.
fn remove_offsets(group: &mut Group, keys: &[(String, i32)]) -> Vec<(RecordKey, Option<Bytes>)> {
    keys.iter()
        .filter(|k| group.offsets.remove(*k).is_some())
        .map(|(t, p)| {
            let key = RecordKey::Offset {
                group: group.id.clone(),
                topic: t.clone(),
                partition: *p,
            };
            (key, None)
        })
        .collect()
}
