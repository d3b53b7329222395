//! Offset lookups a partition's leader answers: ListOffsets (earliest, the
//! log start, remote included; latest, the high watermark or, read
//! committed, the last stable offset; the max timestamp; the earliest
//! local offset, KIP-405; the latest tiered offset, KIP-1005; and the
//! first offset at or after a timestamp, looked up in the bucket first
//! when the answer lies below the local log start) and OffsetForLeaderEpoch
//! (KIP-101, KIP-320: where a leader epoch ended in this log). As in Kafka,
//! a read committed lookup never answers an offset at or above the last
//! stable offset.

use kafka_protocol::ResponseError;

use super::ReplicaManager;
use crate::log::LogError;
use crate::remote::remote_log_reader::RemoteLogReader;

/// ListOffsets' special timestamps.
pub const LATEST: i64 = -1;
pub const EARLIEST: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;
pub const EARLIEST_LOCAL: i64 = -4;
pub const LATEST_TIERED: i64 = -5;

/// An offset found: the offset, its timestamp (-1 for the special
/// lookups) and the leader epoch the partition is led at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FoundOffset {
    pub offset: i64,
    pub timestamp: i64,
    pub leader_epoch: i32,
}

/// Why a lookup failed, local or remote (both answer KAFKA_STORAGE_ERROR).
#[derive(Debug, thiserror::Error)]
enum LookupError {
    #[error(transparent)]
    Local(#[from] LogError),
    #[error("remote read: {0}")]
    Remote(#[from] strata_prefetch::PrefetchError),
}

impl ReplicaManager {
    /// ListOffsets for one partition: `timestamp` is a time in ms or one
    /// of the special values above; `current_leader_epoch` is -1 when not
    /// given. `Ok(None)`: no such offset (Kafka's -1).
    pub async fn list_offset(
        &self,
        topic: &str,
        partition: i32,
        timestamp: i64,
        current_leader_epoch: i32,
        read_committed: bool,
    ) -> Result<Option<FoundOffset>, ResponseError> {
        if let Some(code) = self.not_leader(topic, partition) {
            return Err(code);
        }
        let handle = self.logs.topic(topic);
        let Some(log) = handle.as_ref().and_then(|t| t.log(partition)) else {
            return Err(ResponseError::UnknownTopicOrPartition);
        };
        // A stale or future current leader epoch (KIP-320, v4+).
        super::check_current_epoch(&log, current_leader_epoch)?;
        let rp = match (&self.remote, &handle) {
            (Some(r), Some(t)) if log.remote_log_start_offset().is_some() => r
                .manifest_view(t, partition)
                .map(|view| (RemoteLogReader::new(r), view)),
            _ => None,
        };
        let fetchable = if read_committed {
            log.last_stable_offset()
        } else {
            log.high_watermark()
        };
        let found: Result<Option<(i64, i64)>, LookupError> = match timestamp {
            LATEST => Ok(Some((fetchable, -1))),
            EARLIEST => Ok(Some((log.log_start_offset(), -1))),
            EARLIEST_LOCAL => Ok(Some((log.local_log_start_offset(), -1))),
            LATEST_TIERED => {
                let tiered = handle
                    .as_ref()
                    .filter(|_| log.config().remote_storage_enable)
                    .and_then(|t| self.remote.as_ref()?.partition(t, partition))
                    .and_then(|rp| rp.manifest().next_offset());
                // Kafka: nothing tiered (or no remote log), offset -1
                // with epoch -1.
                Ok(tiered.map(|next| (next - 1, -1)))
            }
            MAX_TIMESTAMP => match log.max_timestamp_offset() {
                Ok(local) => match &rp {
                    Some((r, rp)) => r
                        .max_timestamp_offset(
                            rp,
                            log.local_log_start_offset(),
                            local.map(|(_, ts)| ts).unwrap_or(i64::MIN),
                        )
                        .await
                        .map(|remote| remote.or(local))
                        .map_err(LookupError::from),
                    None => Ok(local),
                },
                Err(e) => Err(e.into()),
            },
            ts if ts >= 0 => {
                let remote = match &rp {
                    Some((r, rp)) => r
                        .offset_for_timestamp(rp, ts, log.local_log_start_offset())
                        .await
                        .map_err(LookupError::from),
                    None => Ok(None),
                };
                match remote {
                    Ok(Some(found)) => Ok(Some(found)),
                    Ok(None) => log.offset_for_timestamp(ts).map_err(LookupError::from),
                    Err(e) => Err(e),
                }
            }
            // Unknown special timestamps (the handler refuses clients'
            // before they get here).
            _ => return Err(ResponseError::UnsupportedVersion),
        };
        let found = match (timestamp, found) {
            (MAX_TIMESTAMP, Ok(Some((offset, _)))) | (0.., Ok(Some((offset, _))))
                if offset >= fetchable =>
            {
                Ok(None)
            }
            // Found in a segment whose head DeleteRecords cut off: the
            // first offset still there.
            (0.., Ok(Some((offset, ts)))) if offset < log.log_start_offset() => {
                Ok(Some((log.log_start_offset(), ts)))
            }
            (_, found) => found,
        };
        match found {
            Ok(found) => Ok(found.map(|(offset, timestamp)| FoundOffset {
                offset,
                timestamp,
                leader_epoch: log.leader_epoch(),
            })),
            Err(e) => {
                tracing::error!(topic = %log.topic(), error = %e, "offset lookup failed");
                Err(super::errors::offset_lookup())
            }
        }
    }

    /// OffsetForLeaderEpoch for one partition: the largest epoch at or
    /// below `requested` this leader's log has, and the offset where it
    /// ended. Only the leader answers; a stale or future
    /// `current_leader_epoch` (-1: not given) is refused as in Kafka.
    pub fn end_offset_for_epoch(
        &self,
        topic: &str,
        partition: i32,
        current_leader_epoch: i32,
        requested: i32,
    ) -> Result<(i32, i64), ResponseError> {
        if let Some(code) = self.not_leader(topic, partition) {
            return Err(code);
        }
        let log = self
            .logs
            .log(topic, partition)
            .ok_or(ResponseError::UnknownTopicOrPartition)?;
        super::check_current_epoch(&log, current_leader_epoch)?;
        Ok(log.end_offset_for_epoch(requested))
    }
}
