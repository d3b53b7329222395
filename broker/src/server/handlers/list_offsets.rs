//! ListOffsets: earliest (-2, the log start, remote included), latest (-1,
//! the high watermark, or the last stable offset for read committed), max timestamp (-3), earliest local (-4, KIP-405:
//! the first offset on local disk), latest tiered (-5, KIP-1005: the last
//! offset in the object store, -1 when none), and the first offset at or
//! after a timestamp — looked up in the object store first when the
//! answer lies below the local log start. As in Kafka, a read committed
//! lookup never answers an offset at or above the last stable offset.

use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;

use crate::log::{Isolation, LogError};
use crate::remote::remote_log_reader::RemoteLogReader;
use crate::server::Broker;

/// Why a lookup failed, local or remote (both answer KAFKA_STORAGE_ERROR).
#[derive(Debug, thiserror::Error)]
enum LookupError {
    #[error(transparent)]
    Local(#[from] LogError),
    #[error("remote read: {0}")]
    Remote(#[from] strata_prefetch::PrefetchError),
}

pub const LATEST: i64 = -1;
pub const EARLIEST: i64 = -2;
pub const MAX_TIMESTAMP: i64 = -3;
pub const EARLIEST_LOCAL: i64 = -4;
pub const LATEST_TIERED: i64 = -5;

pub async fn handle(req: ListOffsetsRequest, version: i16, b: &Broker) -> ListOffsetsResponse {
    let mut r = ListOffsetsResponse::default();
    let isolation = Isolation::from_level(req.isolation_level);
    let from_client = req.replica_id.0 < 0;
    // Kafka: a partition named more than once gets one INVALID_REQUEST
    // answer (its response is built per distinct partition).
    let mut seen = std::collections::HashMap::<(String, i32), usize>::new();
    for t in &req.topics {
        for p in &t.partitions {
            *seen
                .entry((t.name.0.to_string(), p.partition_index))
                .or_default() += 1;
        }
    }
    for t in req.topics {
        let topic = b.logs.topic(&t.name.0);
        let mut out = ListOffsetsTopicResponse::default();
        out.name = t.name;
        for p in t.partitions {
            let mut pr = ListOffsetsPartitionResponse::default();
            pr.partition_index = p.partition_index;
            pr.timestamp = -1;
            pr.offset = -1;
            // Kafka: -1 unless an offset is found (and before v4, always).
            pr.leader_epoch = -1;
            match seen.get_mut(&(out.name.0.to_string(), p.partition_index)) {
                Some(0) => continue,
                Some(n) if *n > 1 => {
                    *n = 0;
                    pr.error_code = ResponseError::InvalidRequest.code();
                    out.partitions.push(pr);
                    continue;
                }
                _ => {}
            }
            // Strata's own followers ask -4 at v7 (replication::fetcher).
            if from_client && !timestamp_supported(p.timestamp, version) {
                pr.error_code = ResponseError::UnsupportedVersion.code();
                out.partitions.push(pr);
                continue;
            }
            if let Some(code) = b.not_leader(&out.name.0, p.partition_index) {
                pr.error_code = code.code();
                out.partitions.push(pr);
                continue;
            }
            let log = topic.as_ref().and_then(|t| t.partition(p.partition_index));
            // A stale or future current leader epoch (KIP-320, v4+).
            if let Some(Err(code)) = log
                .as_ref()
                .map(|l| super::leader_epoch::check_current_epoch(l, p.current_leader_epoch))
            {
                pr.error_code = code.code();
                out.partitions.push(pr);
                continue;
            }
            match log {
                None => {
                    pr.error_code = ResponseError::UnknownTopicOrPartition.code();
                }
                Some(log) => {
                    let rp = match (&b.remote, &topic) {
                        (Some(r), Some(t)) if log.remote_log_start_offset().is_some() => r
                            .partition(t, p.partition_index)
                            .map(|rp| (RemoteLogReader::new(r, &b.groups), rp)),
                        _ => None,
                    };
                    let fetchable = match isolation {
                        Isolation::ReadCommitted => log.last_stable_offset(),
                        Isolation::ReadUncommitted => log.high_watermark(),
                        Isolation::LogEnd => log.log_end_offset(),
                    };
                    let found: Result<Option<(i64, i64)>, LookupError> = match p.timestamp {
                        LATEST => Ok(Some((fetchable, -1))),
                        EARLIEST => Ok(Some((log.log_start_offset(), -1))),
                        EARLIEST_LOCAL => Ok(Some((log.local_log_start_offset(), -1))),
                        LATEST_TIERED => {
                            let tiered = topic
                                .as_ref()
                                .filter(|_| log.config().remote_storage_enable)
                                .and_then(|t| b.remote.as_ref()?.partition(t, p.partition_index))
                                .and_then(|rp| rp.manifest().next_offset());
                            // Kafka: nothing tiered (or no remote log),
                            // offset -1 with epoch -1.
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
                        _ => {
                            // Unknown special timestamps (clients are
                            // refused above, by timestamp_supported).
                            pr.error_code = ResponseError::UnsupportedVersion.code();
                            Ok(None)
                        }
                    };
                    let found = match (p.timestamp, found) {
                        (MAX_TIMESTAMP, Ok(Some((offset, _)))) | (0.., Ok(Some((offset, _))))
                            if offset >= fetchable =>
                        {
                            Ok(None)
                        }
                        // Found in a segment whose head DeleteRecords cut
                        // off: the first offset still there.
                        (0.., Ok(Some((offset, ts)))) if offset < log.log_start_offset() => {
                            Ok(Some((log.log_start_offset(), ts)))
                        }
                        (_, found) => found,
                    };
                    match found {
                        Ok(Some((offset, ts))) => {
                            pr.offset = offset;
                            pr.timestamp = ts;
                            if version >= 4 {
                                pr.leader_epoch = log.leader_epoch();
                            }
                        }
                        Ok(None) => {}
                        Err(e) => {
                            tracing::error!(topic = %log.topic(), error = %e, "offset lookup failed");
                            pr.error_code = ResponseError::KafkaStorageError.code();
                        }
                    }
                }
            }
            out.partitions.push(pr);
        }
        r.topics.push(out);
    }
    r
}

/// Whether `version` knows the (special) timestamp: -3 from v7, -4 from v8
/// (KIP-405), -5 from v9 in Kafka (KIP-1005; here still v8, see below);
/// other negative values never. Kafka answers the others UNSUPPORTED_VERSION.
fn timestamp_supported(timestamp: i64, version: i16) -> bool {
    match timestamp {
        0.. | LATEST | EARLIEST => true,
        MAX_TIMESTAMP => version >= 7,
        EARLIEST_LOCAL => version >= 8,
        // KIP-1005: from v9.
        LATEST_TIERED => version >= 9,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_timestamps_need_their_version() {
        assert!(timestamp_supported(-1, 0) && timestamp_supported(-2, 0));
        assert!(timestamp_supported(1_700_000_000_000, 1));
        assert!(!timestamp_supported(MAX_TIMESTAMP, 6) && timestamp_supported(MAX_TIMESTAMP, 7));
        assert!(!timestamp_supported(EARLIEST_LOCAL, 7) && timestamp_supported(EARLIEST_LOCAL, 8));
        assert!(!timestamp_supported(LATEST_TIERED, 8) && timestamp_supported(LATEST_TIERED, 9));
        assert!(!timestamp_supported(-6, 9) && !timestamp_supported(i64::MIN, 9));
    }
}
