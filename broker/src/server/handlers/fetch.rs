//! Fetch: whole batches from each requested partition up to the high
//! watermark (read uncommitted) or the last stable offset (read committed,
//! with the aborted transactions among the records returned), within
//! `max_bytes` and each partition's limit, with the long poll (`max_wait_ms`
//! / `min_bytes`) driven by high-watermark changes.
//!
//! As in Kafka (KIP-74), the first batch of the first partition with data is
//! returned even if it exceeds the limits, so a consumer can always progress.
//! Offsets below the local log start are handed, all such partitions of a
//! fetch together, to the historical read path's one entry point
//! ([`RemoteLogReader`]); this handler only merges the local and remote
//! answers, so consumers see one continuous log.
//!
//! From v11 (KIP-392) a consumer may read from an in-sync follower, up to
//! the follower's high watermark; a leader asked by a consumer that names
//! its rack answers with the replica of that rack to read from instead
//! (`replication::read_replica` decides), reading nothing.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::select_all;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, PartitionData,
};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;
use tokio::time::Instant;
use uuid::Uuid;

use strata_tiering::RemotePartition;

use crate::cluster::view::ClusterSnapshot;
use crate::log::txn_index::AbortedTxn;
use crate::log::{Isolation, LogError, PartitionLog, ReadResult};
use crate::log_manager::Topic;
use crate::remote::remote_log_reader::{
    RemoteFetch, RemoteFetchOutcome, RemoteFetchPartition, RemoteLogReader,
};
use crate::replication::read_replica::{self, ReplicaSelector};
use crate::server::Broker;

struct Target {
    topic: usize,
    partition: i32,
    log: Option<Arc<PartitionLog>>,
    /// The error when `log` is `None`: UNKNOWN_TOPIC_ID for a topic id no
    /// topic has (v13+), else UNKNOWN_TOPIC_OR_PARTITION.
    missing: ResponseError,
    /// The topic, to find the partition's tiered view when a read falls
    /// below the local log start (looked up only then).
    handle: Option<Arc<Topic>>,
    fetch_offset: i64,
    max_bytes: usize,
    /// The replica the leader sends the consumer to (KIP-392): nothing is
    /// read, the answer names it.
    preferred: Option<i32>,
    /// This broker serves the read as a follower (KIP-392).
    as_follower: bool,
    /// A follower asked past its log end by a consumer that named no
    /// leader epoch answers empty rather than OFFSET_OUT_OF_RANGE (the
    /// consumer may hold an offset this follower has not copied yet, and
    /// without an epoch it would reset instead of asking the leader).
    empty_above_end: bool,
}

pub async fn handle(req: FetchRequest, version: i16, b: &Broker) -> FetchResponse {
    handle_for(req, version, b, &Client::default())
        .await
        .response
}

/// A fetch's answer, with how much of it came from remote segments.
pub struct Fetched {
    pub response: FetchResponse,
    /// Record bytes read through the historical read path: a response with
    /// any is encoded and written on the prefetch runtime (see
    /// `dispatch::Outgoing`).
    pub history_bytes: usize,
}

/// Fetch on behalf of `client`.
pub async fn handle_for(req: FetchRequest, version: i16, b: &Broker, client: &Client) -> Fetched {
    // A follower's fetch (KIP-903 moved its id into `replica_state`).
    let replica = if version >= 15 {
        req.replica_state.replica_id.0
    } else {
        req.replica_id.0
    };
    if replica >= 0 {
        return Fetched {
            response: super::replica_fetch::handle(req, version, replica, &client.host, b).await,
            history_bytes: 0,
        };
    }
    if let Some(code) = session_error(version, req.session_id, req.session_epoch) {
        let mut r = FetchResponse::default();
        r.error_code = code.code();
        return Fetched {
            response: r,
            history_bytes: 0,
        };
    }
    let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
    let response_max = if req.max_bytes <= 0 {
        usize::MAX
    } else {
        req.max_bytes as usize
    };
    let min_bytes = req.min_bytes.max(0) as usize;
    let read_committed = req.isolation_level == 1;
    // From v11 (KIP-392) a consumer names its rack and may read from a
    // follower.
    let follower_reads = version >= 11;
    let client_rack = if follower_reads {
        req.rack_id.to_string()
    } else {
        String::new()
    };
    let selector = ReplicaSelector::from_config(&b.config.value("replica.selector.class"));
    let snap = b.cluster.view.snapshot();
    // Another replica is looked for only when one may serve the client
    // better: a cluster, the rack-aware selector, a client in another rack
    // than this broker's. Then once per request, the brokers that may.
    let redirects = selector == ReplicaSelector::RackAware
        && b.cluster.clustered
        && !client_rack.is_empty()
        && b.rack().as_deref() != Some(client_rack.as_str());
    let serving: BTreeSet<i32> = if redirects {
        snap.live_broker_ids()
            .difference(&snap.draining_broker_ids())
            .copied()
            .collect()
    } else {
        BTreeSet::new()
    };
    let mut names: Vec<(TopicName, Uuid)> = Vec::with_capacity(req.topics.len());
    let mut targets = Vec::new();
    for (ti, t) in req.topics.into_iter().enumerate() {
        // From v13 (KIP-516) topics are named by id only; the response echoes it.
        // The topic's name in the cluster (also when this broker hosts no
        // replica of it, so a misdirected fetch hears who leads).
        let (topic, missing, cluster_name) = if version >= 13 {
            let topic = b.logs.topic_by_id(t.topic_id);
            let name = snap.topic_by_id(t.topic_id).map(|(n, _)| n.to_string());
            let missing = match (&topic, &name) {
                (None, None) => ResponseError::UnknownTopicId,
                _ => ResponseError::UnknownTopicOrPartition,
            };
            (topic, missing, name)
        } else {
            (
                b.logs.topic(&t.topic.0),
                ResponseError::UnknownTopicOrPartition,
                Some(t.topic.0.to_string()),
            )
        };
        let id = if version >= 13 {
            t.topic_id
        } else {
            topic.as_ref().map(|t| t.id).unwrap_or_default()
        };
        names.push((t.topic, id));
        for p in t.partitions {
            // The leader serves; from v11 an in-sync follower too.
            let log = topic.as_ref().and_then(|t| t.partition(p.partition));
            // A stale or future current leader epoch (KIP-320, v9+).
            let refused = cluster_name
                .as_deref()
                .and_then(|n| {
                    if follower_reads {
                        b.not_readable_here(n, p.partition)
                    } else {
                        b.not_leader(n, p.partition)
                    }
                })
                .or_else(|| {
                    let l = log.as_ref()?;
                    super::leader_epoch::check_current_epoch(l, p.current_leader_epoch).err()
                });
            let log = match refused {
                Some(_) => None,
                None => log,
            };
            let as_follower = log.as_ref().is_some_and(|l| l.following().is_some());
            let preferred = match (&log, cluster_name.as_deref()) {
                (Some(l), Some(n)) if redirects && !as_follower => preferred_replica(
                    b,
                    &snap,
                    &serving,
                    n,
                    p.partition,
                    l,
                    &client_rack,
                    p.fetch_offset,
                ),
                _ => None,
            };
            targets.push(Target {
                topic: ti,
                partition: p.partition,
                missing: refused.unwrap_or(missing),
                log,
                handle: topic.clone(),
                fetch_offset: p.fetch_offset,
                max_bytes: p.partition_max_bytes.max(0) as usize,
                preferred,
                as_follower,
                empty_above_end: as_follower && p.current_leader_epoch < 0,
            });
        }
    }
    loop {
        // Subscribe before reading so an append between the read and the
        // wait is not missed.
        let mut watchers: Vec<_> = targets
            .iter()
            .filter_map(|t| t.log.as_ref().map(|l| l.subscribe()))
            .collect();
        let read = read_all(b, client, &targets, response_max, read_committed, deadline).await;
        // A consumer sent to another replica hears it at once (as Kafka
        // does since KAFKA-13767), not after the long poll.
        if read.total >= min_bytes
            || read.any_error
            || Instant::now() >= deadline
            || watchers.is_empty()
            || targets.iter().any(|t| t.preferred.is_some())
        {
            return finish(names, &targets, read, version);
        }
        let changes = watchers.iter_mut().map(|w| Box::pin(w.changed()));
        if tokio::time::timeout_at(deadline, select_all(changes))
            .await
            .is_err()
        {
            let read = read_all(b, client, &targets, response_max, read_committed, deadline).await;
            return finish(names, &targets, read, version);
        }
    }
}

/// The answer of a fetch's last read, counting what was served as a
/// follower.
fn finish(
    names: Vec<(TopicName, Uuid)>,
    targets: &[Target],
    read: ReadAll,
    version: i16,
) -> Fetched {
    for (t, pd) in targets.iter().zip(&read.partitions) {
        if t.as_follower {
            read_replica::note_follower_read(pd.records.as_ref().map_or(0, |r| r.len()));
        }
    }
    Fetched {
        response: build(names, targets, read.partitions, version),
        history_bytes: read.history_bytes,
    }
}

/// The replica a consumer in `client_rack` should read `topic`-`partition`
/// from instead of this leader (KIP-392), if any.
#[allow(clippy::too_many_arguments)]
fn preferred_replica(
    b: &Broker,
    snap: &ClusterSnapshot,
    serving: &BTreeSet<i32>,
    topic: &str,
    partition: i32,
    log: &PartitionLog,
    client_rack: &str,
    fetch_offset: i64,
) -> Option<i32> {
    let entry = snap.partition(topic, partition)?;
    let rack_of = |id: i32| {
        snap.brokers
            .get(&id)
            .and_then(|l| l.registration.rack.as_deref())
    };
    let progress = log.follower_progress();
    let followers = entry
        .state
        .replicas
        .iter()
        .filter(|id| **id != b.node_id)
        .map(|id| read_replica::ReplicaView {
            id: *id,
            rack: rack_of(*id),
            end: progress
                .iter()
                .find(|(f, _)| f == id)
                .map_or(-1, |(_, p)| p.end),
            last_fetch_age: progress
                .iter()
                .find(|(f, _)| f == id)
                .and_then(|(_, p)| p.last_fetch)
                .map(|t| t.elapsed()),
            log_start: progress
                .iter()
                .find(|(f, _)| f == id)
                .map_or(-1, |(_, p)| p.log_start),
        })
        .collect();
    let own_rack = b.rack();
    let chosen = read_replica::preferred_read_replica(
        ReplicaSelector::RackAware,
        &read_replica::Selection {
            leader: read_replica::ReplicaView {
                id: b.node_id,
                rack: own_rack.as_deref(),
                end: log.log_end_offset(),
                last_fetch_age: None,
                log_start: log.log_start_offset(),
            },
            followers,
            isr: &entry.state.isr,
            serving,
            client_rack,
            fetch_offset,
            tiered: log.remote_log_start_offset().is_some(),
            // A healthy follower's long poll returns within
            // replica.fetch.wait.max.ms, and it fetches again at once.
            max_fetch_age: Duration::from_millis(
                b.config.i64("replica.fetch.wait.max.ms").max(0) as u64
            ) * 2
                + Duration::from_secs(1),
        },
    );
    // Only an offset the follower can serve: in its local log, or in the
    // bucket (which every replica reads).
    chosen.filter(|_| {
        fetch_offset >= log.local_log_start_offset()
            || log
                .remote_log_start_offset()
                .is_some_and(|r| fetch_offset >= r)
    })
}

/// Fetch sessions (KIP-227, v7+): Strata declines to create any (a full
/// fetch is answered with session id 0), so, by Kafka's FetchManager rules,
/// a full fetch (epoch 0, or -1) is served whatever session it names (Kafka
/// closes that session), and an incremental one (any other epoch) names a
/// session this broker does not have: FETCH_SESSION_ID_NOT_FOUND, no
/// partitions, and the client falls back to full fetches.
fn session_error(version: i16, session_id: i32, epoch: i32) -> Option<ResponseError> {
    const INITIAL_EPOCH: i32 = 0;
    const FINAL_EPOCH: i32 = -1;
    let _ = session_id;
    (version >= 7 && epoch != INITIAL_EPOCH && epoch != FINAL_EPOCH)
        .then_some(ResponseError::FetchSessionIdNotFound)
}

/// Who sent the fetch (for read-ahead streams and priority classes).
#[derive(Debug, Clone, Default)]
pub struct Client {
    pub client_id: String,
    /// `/<ip>`, as the group coordinator records members' hosts.
    pub host: String,
}

fn base_data(t: &Target, read_committed: bool) -> PartitionData {
    let mut pd = PartitionData::default();
    pd.partition_index = t.partition;
    pd.high_watermark = -1;
    pd.last_stable_offset = -1;
    pd.log_start_offset = -1;
    pd.preferred_read_replica = BrokerId(-1);
    pd.aborted_transactions = read_committed.then(Vec::new);
    pd
}

fn fill(pd: &mut PartitionData, read: ReadResult, log: &PartitionLog) -> usize {
    fill_with(pd, read, log, Vec::new())
}

/// [`fill`], for a read committed fetch with the aborted transactions the
/// bucket's part of the log already contributed (`remote_aborted`).
fn fill_with(
    pd: &mut PartitionData,
    read: ReadResult,
    log: &PartitionLog,
    remote_aborted: Vec<AbortedTxn>,
) -> usize {
    pd.high_watermark = read.high_watermark;
    pd.last_stable_offset = log.last_stable_offset();
    pd.log_start_offset = read.log_start_offset;
    // Read committed only (the list is None otherwise): the headers of
    // the batches returned are scanned for their offset range.
    if let Some((aborted, (from, end))) = pd
        .aborted_transactions
        .as_mut()
        .and_then(|a| Some((a, offset_range(&read.records)?)))
    {
        let mut all = remote_aborted;
        for t in log.aborted_transactions(from, end) {
            if !all.contains(&t) {
                all.push(t);
            }
        }
        *aborted = all
            .into_iter()
            .map(|t| {
                let mut a = AbortedTransaction::default();
                a.producer_id = ProducerId(t.producer_id);
                a.first_offset = t.first_offset;
                a
            })
            .collect();
    }
    let n = read.records.len();
    pd.records = Some(read.records);
    n
}

/// The offsets `[first base offset, next offset after the last batch)` of
/// whole batches (headers only; no CRC work).
fn offset_range(records: &[u8]) -> Option<(i64, i64)> {
    let mut batches = crate::log::batch::BatchScanner::new(records, false);
    let (_, first) = batches.next()?;
    let end = batches
        .last()
        .map_or(first.next_offset(), |(_, h)| h.next_offset());
    Some((first.base_offset, end))
}

fn remote_result(log: &PartitionLog, records: Bytes) -> ReadResult {
    ReadResult {
        records,
        high_watermark: log.high_watermark(),
        log_start_offset: log.log_start_offset(),
    }
}

/// As Kafka's ReplicaManager answers a read that failed: the offsets
/// unknown (-1), the consumer resets with ListOffsets.
fn out_of_range(pd: &mut PartitionData, _log: &PartitionLog) {
    pd.error_code = ResponseError::OffsetOutOfRange.code();
    pd.high_watermark = -1;
    pd.last_stable_offset = -1;
    pd.log_start_offset = -1;
    pd.records = Some(Bytes::new());
}

fn storage_error(pd: &mut PartitionData, log: &PartitionLog) {
    pd.error_code = ResponseError::KafkaStorageError.code();
    pd.high_watermark = log.high_watermark();
    pd.last_stable_offset = log.last_stable_offset();
    pd.log_start_offset = log.log_start_offset();
}

/// The tiered view of `t`'s partition, if its fetch offset lies in the
/// remote part of the log (below the local start, at or above the log start).
fn remote_partition(b: &Broker, t: &Target, log: &PartitionLog) -> Option<Arc<RemotePartition>> {
    if t.fetch_offset >= log.local_log_start_offset() || t.fetch_offset < log.log_start_offset() {
        return None;
    }
    b.remote
        .as_ref()?
        .partition(t.handle.as_ref()?, t.partition)
}

/// The tiered view of `t`'s partition if the bucket holds the segment with
/// its fetch offset, wherever the local log starts.
fn tiered_copy(b: &Broker, t: &Target) -> Option<Arc<RemotePartition>> {
    let rp = b
        .remote
        .as_ref()?
        .partition(t.handle.as_ref()?, t.partition)?;
    rp.manifest()
        .segment_for_offset(t.fetch_offset)
        .is_some()
        .then_some(rp)
}

/// One pass over a fetch's partitions.
struct ReadAll {
    partitions: Vec<PartitionData>,
    /// Record bytes in `partitions`.
    total: usize,
    any_error: bool,
    /// Of `total`, the bytes read from the bucket.
    history_bytes: usize,
}

/// Reads every partition: local ones at once; those below the local log
/// start together through the historical read path, waiting for them at
/// most until `deadline` (what is not ready then is returned empty and
/// keeps loading into the cache for the next fetch).
async fn read_all(
    b: &Broker,
    client: &Client,
    targets: &[Target],
    response_max: usize,
    read_committed: bool,
    deadline: Instant,
) -> ReadAll {
    let mut out = Vec::with_capacity(targets.len());
    let mut total = 0usize;
    let mut any_error = false;
    let mut remote_pending: Vec<(usize, Arc<RemotePartition>)> = Vec::new();
    let isolation = if read_committed {
        Isolation::ReadCommitted
    } else {
        Isolation::ReadUncommitted
    };
    for (i, t) in targets.iter().enumerate() {
        let mut pd = base_data(t, read_committed);
        let Some(log) = &t.log else {
            pd.error_code = t.missing.code();
            // Kafka answers a partition its metadata lacks before reading,
            // with an empty list, not null.
            if matches!(
                t.missing,
                ResponseError::UnknownTopicOrPartition | ResponseError::UnknownTopicId
            ) {
                pd.aborted_transactions = Some(Vec::new());
            }
            any_error = true;
            out.push(pd);
            continue;
        };
        if let Some(replica) = t.preferred {
            // Nothing read: the consumer reads from `replica` from now on.
            fill(&mut pd, remote_result(log, Bytes::new()), log);
            pd.preferred_read_replica = BrokerId(replica);
            read_replica::note_redirect();
            out.push(pd);
            continue;
        }
        let remaining = response_max.saturating_sub(total);
        let limit = t.max_bytes.min(remaining);
        match log.read_below(t.fetch_offset, limit, total == 0, isolation) {
            Ok(read) => total += fill(&mut pd, read, log),
            Err(LogError::OffsetOutOfRange { .. }) => match remote_partition(b, t, log) {
                Some(rp) => remote_pending.push((i, rp)),
                None if t.empty_above_end && t.fetch_offset > log.log_end_offset() => {
                    fill(&mut pd, remote_result(log, Bytes::new()), log);
                }
                None => {
                    out_of_range(&mut pd, log);
                    any_error = true;
                }
            },
            // The bucket's copy, where the segment was tiered already.
            Err(e @ (LogError::CorruptStored { .. } | LogError::LostLocally { .. })) => {
                match tiered_copy(b, t) {
                    Some(rp) => {
                        tracing::error!(topic = %log.topic(), partition = t.partition, error = %e,
                        "serving the bucket's copy of a corrupt local batch");
                        remote_pending.push((i, rp));
                    }
                    None => {
                        tracing::error!(topic = %log.topic(), partition = t.partition, error = %e,
                        "fetch read failed: corrupt batch, no copy in the bucket");
                        storage_error(&mut pd, log);
                        any_error = true;
                    }
                }
            }
            Err(e) => {
                tracing::error!(topic = %log.topic(), partition = t.partition, error = %e, "fetch read failed");
                storage_error(&mut pd, log);
                any_error = true;
            }
        }
        out.push(pd);
    }
    let Some(remote) = &b.remote else {
        return ReadAll {
            partitions: out,
            total,
            any_error,
            history_bytes: 0,
        };
    };
    if remote_pending.is_empty() {
        return ReadAll {
            partitions: out,
            total,
            any_error,
            history_bytes: 0,
        };
    }
    let remote_parts: Vec<(usize, Arc<RemotePartition>)> = remote_pending
        .iter()
        .map(|(i, rp)| (*i, rp.clone()))
        .collect();
    let partitions = remote_pending
        .into_iter()
        .filter_map(|(i, rp)| {
            let t = &targets[i];
            let log = t.log.as_ref()?;
            Some(RemoteFetchPartition {
                slot: i,
                topic: log.topic().to_string(),
                partition: t.partition,
                remote: rp,
                fetch_offset: t.fetch_offset,
                max_bytes: t.max_bytes,
            })
        })
        .collect();
    let reader = RemoteLogReader::new(remote, &b.groups);
    let result = reader
        .fetch(RemoteFetch {
            client_id: &client.client_id,
            host: &client.host,
            partitions,
            bytes_left: response_max.saturating_sub(total),
            nothing_local: total == 0,
            deadline,
        })
        .await;
    for (i, outcome) in result.outcomes {
        let t = &targets[i];
        let Some(log) = &t.log else { continue };
        let pd = &mut out[i];
        match outcome {
            RemoteFetchOutcome::Records(records) => {
                let rp = remote_parts.iter().find(|(s, _)| *s == i).map(|(_, rp)| rp);
                let range = read_committed.then(|| offset_range(&records)).flatten();
                let aborted = match (rp, range) {
                    (Some(rp), Some((from, end))) => {
                        match reader.aborted_transactions(rp, from, end).await {
                            Ok(found) => found,
                            Err(e) => {
                                // Never serve history a read committed
                                // consumer cannot filter: retriable error.
                                tracing::warn!(topic = %log.topic(), partition = t.partition,
                                    error = %e, "reading a remote .txnindex failed");
                                storage_error(pd, log);
                                any_error = true;
                                continue;
                            }
                        }
                    }
                    _ => Vec::new(),
                };
                total += fill_with(pd, remote_result(log, records), log, aborted)
            }
            RemoteFetchOutcome::NotReady => {
                fill(pd, remote_result(log, Bytes::new()), log);
            }
            RemoteFetchOutcome::NotRemote => {
                // A gap no segment covers (left while remote storage was
                // off): continue where the local log starts, as a
                // compacted log would.
                let limit = t.max_bytes.min(response_max.saturating_sub(total));
                match log.read_below(log.local_log_start_offset(), limit, total == 0, isolation) {
                    Ok(read) => total += fill(pd, read, log),
                    Err(_) => {
                        out_of_range(pd, log);
                        any_error = true;
                    }
                }
            }
            RemoteFetchOutcome::SegmentRemoved(key) => {
                tracing::info!(topic = %log.topic(), partition = t.partition, key = %key,
                    "remote segment removed by retention during a fetch");
                out_of_range(pd, log);
                any_error = true;
            }
            RemoteFetchOutcome::Failed(e) => {
                tracing::warn!(topic = %log.topic(), partition = t.partition, offset = t.fetch_offset,
                    error = %e, "remote read failed; the client will retry");
                storage_error(pd, log);
                any_error = true;
            }
        }
    }
    ReadAll {
        partitions: out,
        total,
        any_error,
        history_bytes: result.history_bytes,
    }
}

fn build(
    names: Vec<(TopicName, Uuid)>,
    targets: &[Target],
    partitions: Vec<PartitionData>,
    version: i16,
) -> FetchResponse {
    let mut topics: Vec<FetchableTopicResponse> = names
        .into_iter()
        .map(|(name, id)| {
            let mut t = FetchableTopicResponse::default();
            t.topic = name;
            if version >= 13 {
                t.topic_id = id;
            }
            t
        })
        .collect();
    for (t, pd) in targets.iter().zip(partitions) {
        topics[t.topic].partitions.push(pd);
    }
    let mut r = FetchResponse::default();
    r.responses = topics;
    r
}

#[cfg(test)]
mod session_tests {
    use super::*;

    #[test]
    fn incremental_fetches_name_a_session_strata_never_made() {
        // Full fetches: epoch 0 (would open a session) or -1 (sessionless).
        assert_eq!(session_error(12, 0, -1), None);
        assert_eq!(session_error(12, 0, 0), None);
        assert_eq!(session_error(12, 123, 0), None);
        // Incremental: no such session.
        assert_eq!(
            session_error(12, 123_456, 1),
            Some(ResponseError::FetchSessionIdNotFound)
        );
        assert_eq!(
            session_error(12, 0, 7),
            Some(ResponseError::FetchSessionIdNotFound)
        );
        // Before v7 there are no sessions.
        assert_eq!(session_error(6, 0, 7), None);
    }
}
