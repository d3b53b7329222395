//! A consumer's fetch (Kafka's `ReplicaManager.fetchMessages`): whole
//! batches from each partition up to the high watermark (read uncommitted)
//! or the last stable offset (read committed, with the aborted
//! transactions among the records returned), within the fetch's and each
//! partition's byte limit, with the long poll (`max_wait` / `min_bytes`)
//! driven by high-watermark changes.
//!
//! Where each partition's records come from is decided here: the local
//! log; below the local log start, the historical read path (all such
//! partitions of a fetch together, through [`RemoteLogReader`]); and where
//! a local batch is corrupt or lost, the bucket's copy of its segment. A
//! consumer sees one continuous log.
//!
//! As in Kafka (KIP-74), the first batch of the first partition with data
//! is returned even if it exceeds the limits. From Fetch v11 (KIP-392) a
//! consumer may read from an in-sync follower, and a leader asked by a
//! consumer in another rack names the replica to read from instead
//! (`replication::read_replica` decides), reading nothing.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::select_all;
use kafka_protocol::ResponseError;
use tokio::time::Instant;
use uuid::Uuid;

use strata_catalog::ManifestView;

use super::ReplicaManager;
use crate::cluster::view::ClusterSnapshot;
use crate::log::{Isolation, LogError, PartitionLog, ReadResult};
use crate::log_manager::Topic;
use crate::remote::remote_log_reader::{
    RemoteFetch, RemoteFetchOutcome, RemoteFetchPartition, RemoteLogReader,
};
use crate::replication::read_replica::{self, ReplicaSelector};
use strata_format::txn_index::AbortedTxn;
use strata_storage::partition::Partition;

/// How a fetch names a topic: by name (Fetch v0–12) or by id (v13+,
/// KIP-516).
#[derive(Debug, Clone, Copy)]
pub enum TopicRef<'a> {
    Name(&'a str),
    Id(Uuid),
}

/// One partition a fetch asks for.
#[derive(Debug, Clone)]
pub struct FetchPartition {
    pub partition: i32,
    pub fetch_offset: i64,
    /// The partition's byte limit (`partition_max_bytes`).
    pub max_bytes: usize,
    /// KIP-320: -1 when not given.
    pub current_leader_epoch: i32,
    /// A follower's log start (replica fetches only; -1 otherwise).
    pub log_start_offset: i64,
}

/// A topic a fetch asks for, and its partitions.
#[derive(Debug, Clone)]
pub struct FetchTopic<'a> {
    pub topic: TopicRef<'a>,
    pub partitions: Vec<FetchPartition>,
}

/// A consumer's fetch, as the handler decoded it.
#[derive(Debug, Clone)]
pub struct FetchParams<'a> {
    pub max_wait: Duration,
    pub min_bytes: usize,
    /// The response's byte limit (`usize::MAX`: none).
    pub max_bytes: usize,
    pub read_committed: bool,
    /// Fetch v11+ (KIP-392): an in-sync follower may serve the read.
    pub follower_reads: bool,
    /// The consumer's rack (`rack_id`, v11+; empty when not given).
    pub client_rack: &'a str,
    /// Who fetches (read-ahead streams and priority classes of the
    /// historical read path).
    pub client_id: &'a str,
    /// `/<ip>`, as the group coordinator records members' hosts.
    pub host: &'a str,
}

/// One partition's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchPartitionData {
    pub partition: i32,
    pub error: Option<ResponseError>,
    pub high_watermark: i64,
    pub last_stable_offset: i64,
    pub log_start_offset: i64,
    pub records: Bytes,
    /// Read committed: the aborted transactions among `records` (None
    /// for read uncommitted, as on the wire).
    pub aborted_transactions: Option<Vec<AbortedTxn>>,
    /// KIP-392: the replica the consumer should read from (-1: this one).
    pub preferred_read_replica: i32,
}

impl FetchPartitionData {
    pub(super) fn new(partition: i32, aborted_transactions: Option<Vec<AbortedTxn>>) -> Self {
        FetchPartitionData {
            partition,
            error: None,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            records: Bytes::new(),
            aborted_transactions,
            preferred_read_replica: -1,
        }
    }
}

/// A fetch's answer: every partition asked for, in request order, and how
/// much of it came from the bucket.
#[derive(Debug)]
pub struct FetchResult {
    pub partitions: Vec<FetchPartitionData>,
    /// Record bytes read through the historical read path: a response with
    /// any is encoded and written on the prefetch runtime (see
    /// `dispatch::Outgoing`).
    pub history_bytes: usize,
}

struct Target {
    partition: i32,
    log: Option<Arc<PartitionLog>>,
    /// The error when `log` is `None`: UNKNOWN_TOPIC_ID for a topic id no
    /// topic has (v13+), else UNKNOWN_TOPIC_OR_PARTITION, or why this
    /// broker does not serve it.
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

impl ReplicaManager {
    /// Serves a consumer's fetch; see the module's note.
    pub async fn fetch(&self, params: FetchParams<'_>, topics: Vec<FetchTopic<'_>>) -> FetchResult {
        let deadline = Instant::now() + params.max_wait;
        let selector = self.config.settings().replica_selector;
        let snap = self.cluster.view.snapshot();
        let own_rack = self.rack();
        // Another replica is looked for only when one may serve the client
        // better: a cluster, the rack-aware selector, a client in another
        // rack than this broker's. Then once per request, the brokers that
        // may.
        let redirects = selector == ReplicaSelector::RackAware
            && self.cluster.clustered
            && !params.client_rack.is_empty()
            && own_rack.as_deref() != Some(params.client_rack);
        let serving: BTreeSet<i32> = if redirects {
            snap.live_broker_ids()
                .difference(&snap.draining_broker_ids())
                .copied()
                .collect()
        } else {
            BTreeSet::new()
        };
        let mut targets = Vec::new();
        for t in topics {
            // The topic's name in the cluster (also when this broker hosts
            // no replica of it, so a misdirected fetch hears who leads).
            let (topic, missing, cluster_name) = match t.topic {
                TopicRef::Id(id) => {
                    let topic = self.logs.topic_by_id(id);
                    let name = snap.topic_by_id(id).map(|(n, _)| n.to_string());
                    let missing = match (&topic, &name) {
                        (None, None) => ResponseError::UnknownTopicId,
                        _ => ResponseError::UnknownTopicOrPartition,
                    };
                    (topic, missing, name)
                }
                TopicRef::Name(name) => (
                    self.logs.topic(name),
                    ResponseError::UnknownTopicOrPartition,
                    Some(name.to_string()),
                ),
            };
            for p in t.partitions {
                // The leader serves; from v11 an in-sync follower too.
                let replica = topic.as_ref().and_then(|t| t.partition(p.partition));
                // A stale or future current leader epoch (KIP-320, v9+).
                let refused = cluster_name
                    .as_deref()
                    .and_then(|n| {
                        if params.follower_reads {
                            self.not_readable_here(n, p.partition)
                        } else {
                            self.not_leader(n, p.partition)
                        }
                    })
                    .or_else(|| {
                        let l = replica.as_ref()?;
                        super::check_current_epoch(l.log(), p.current_leader_epoch).err()
                    });
                let replica = match refused {
                    Some(_) => None,
                    None => replica,
                };
                let as_follower = replica.as_ref().is_some_and(|l| l.following().is_some());
                let preferred = match (&replica, cluster_name.as_deref()) {
                    (Some(l), Some(n)) if redirects && !as_follower => self.preferred_replica(
                        &snap,
                        &serving,
                        n,
                        p.partition,
                        l,
                        params.client_rack,
                        p.fetch_offset,
                    ),
                    _ => None,
                };
                targets.push(Target {
                    partition: p.partition,
                    missing: refused.unwrap_or(missing),
                    log: replica.map(|r| r.log().clone()),
                    handle: topic.clone(),
                    fetch_offset: p.fetch_offset,
                    max_bytes: p.max_bytes,
                    preferred,
                    as_follower,
                    empty_above_end: as_follower && p.current_leader_epoch < 0,
                });
            }
        }
        loop {
            // Subscribe before reading so an append between the read and
            // the wait is not missed.
            let mut watchers: Vec<_> = targets
                .iter()
                .filter_map(|t| t.log.as_ref().map(|l| l.subscribe()))
                .collect();
            let read = self.read_all(&params, &targets, deadline).await;
            // A consumer sent to another replica hears it at once (as
            // Kafka does since KAFKA-13767), not after the long poll.
            if read.total >= params.min_bytes
                || read.any_error
                || Instant::now() >= deadline
                || watchers.is_empty()
                || targets.iter().any(|t| t.preferred.is_some())
            {
                return finish(&targets, read);
            }
            let changes = watchers.iter_mut().map(|w| Box::pin(w.changed()));
            if tokio::time::timeout_at(deadline, select_all(changes))
                .await
                .is_err()
            {
                let read = self.read_all(&params, &targets, deadline).await;
                return finish(&targets, read);
            }
        }
    }

    /// The replica a consumer in `client_rack` should read
    /// `topic`-`partition` from instead of this leader (KIP-392), if any.
    #[allow(clippy::too_many_arguments)]
    fn preferred_replica(
        &self,
        snap: &ClusterSnapshot,
        serving: &BTreeSet<i32>,
        topic: &str,
        partition: i32,
        replica: &Partition,
        client_rack: &str,
        fetch_offset: i64,
    ) -> Option<i32> {
        let entry = snap.partition(topic, partition)?;
        let rack_of = |id: i32| {
            snap.brokers
                .get(&id)
                .and_then(|l| l.registration.rack.as_deref())
        };
        let log = replica.log();
        let progress = replica.follower_progress();
        let followers = entry
            .state
            .replicas
            .iter()
            .filter(|id| **id != self.node_id)
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
        let own_rack = self.rack();
        let chosen = read_replica::preferred_read_replica(
            ReplicaSelector::RackAware,
            &read_replica::Selection {
                leader: read_replica::ReplicaView {
                    id: self.node_id,
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
                max_fetch_age: self.config.settings().replica.fetch_wait_max * 2
                    + Duration::from_secs(1),
            },
        );
        // Only an offset the follower can serve: in its local log, or in
        // the bucket (which every replica reads).
        chosen.filter(|_| {
            fetch_offset >= log.local_log_start_offset()
                || log
                    .remote_log_start_offset()
                    .is_some_and(|r| fetch_offset >= r)
        })
    }

    /// The tiered view of `t`'s partition, if its fetch offset lies in the
    /// remote part of the log (below the local start, at or above the log
    /// start).
    fn remote_partition(&self, t: &Target, log: &PartitionLog) -> Option<Arc<ManifestView>> {
        if t.fetch_offset >= log.local_log_start_offset() || t.fetch_offset < log.log_start_offset()
        {
            return None;
        }
        self.remote
            .as_ref()?
            .manifest_view(t.handle.as_ref()?, t.partition)
    }

    /// The tiered view of `t`'s partition if the bucket holds the segment
    /// with its fetch offset, wherever the local log starts.
    fn tiered_copy(&self, t: &Target) -> Option<Arc<ManifestView>> {
        let view = self
            .remote
            .as_ref()?
            .manifest_view(t.handle.as_ref()?, t.partition)?;
        view.current()
            .segment_for_offset(t.fetch_offset)
            .is_some()
            .then_some(view)
    }

    /// Reads every partition: local ones at once; those below the local
    /// log start together through the historical read path, waiting for
    /// them at most until `deadline` (what is not ready then is returned
    /// empty and keeps loading into the cache for the next fetch).
    async fn read_all(
        &self,
        params: &FetchParams<'_>,
        targets: &[Target],
        deadline: Instant,
    ) -> ReadAll {
        let response_max = params.max_bytes;
        let read_committed = params.read_committed;
        let mut out = Vec::with_capacity(targets.len());
        let mut total = 0usize;
        let mut any_error = false;
        let mut remote_pending: Vec<(usize, Arc<ManifestView>)> = Vec::new();
        let isolation = if read_committed {
            Isolation::ReadCommitted
        } else {
            Isolation::ReadUncommitted
        };
        for (i, t) in targets.iter().enumerate() {
            let mut pd = FetchPartitionData::new(t.partition, read_committed.then(Vec::new));
            let Some(log) = &t.log else {
                pd.error = Some(t.missing);
                // Kafka answers a partition its metadata lacks before
                // reading, with an empty list, not null.
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
                pd.preferred_read_replica = replica;
                read_replica::note_redirect();
                out.push(pd);
                continue;
            }
            let remaining = response_max.saturating_sub(total);
            let limit = t.max_bytes.min(remaining);
            match log.read_below(t.fetch_offset, limit, total == 0, isolation) {
                Ok(read) => total += fill(&mut pd, read, log),
                Err(LogError::OffsetOutOfRange { .. }) => match self.remote_partition(t, log) {
                    Some(rp) => remote_pending.push((i, rp)),
                    None if t.empty_above_end && t.fetch_offset > log.log_end_offset() => {
                        fill(&mut pd, remote_result(log, Bytes::new()), log);
                    }
                    None => {
                        out_of_range(&mut pd);
                        any_error = true;
                    }
                },
                // The bucket's copy, where the segment was tiered already.
                Err(e @ (LogError::CorruptStored { .. } | LogError::LostLocally { .. })) => {
                    match self.tiered_copy(t) {
                        Some(rp) => {
                            tracing::error!(topic = %log.topic(), partition = t.partition, error = %e,
                            "serving the bucket's copy of a corrupt local batch");
                            remote_pending.push((i, rp));
                        }
                        None => {
                            tracing::error!(topic = %log.topic(), partition = t.partition, error = %e,
                            "fetch read failed: corrupt batch, no copy in the bucket");
                            read_error(&mut pd, log, super::errors::read(&e));
                            any_error = true;
                        }
                    }
                }
                Err(e) => {
                    tracing::error!(topic = %log.topic(), partition = t.partition, error = %e, "fetch read failed");
                    read_error(&mut pd, log, super::errors::read(&e));
                    any_error = true;
                }
            }
            out.push(pd);
        }
        let remote = match &self.remote {
            Some(remote) if !remote_pending.is_empty() => remote,
            _ => {
                return ReadAll {
                    partitions: out,
                    total,
                    any_error,
                    history_bytes: 0,
                }
            }
        };
        let partitions = remote_pending
            .into_iter()
            .filter_map(|(i, rp)| {
                let t = &targets[i];
                let log = t.log.as_ref()?;
                Some(RemoteFetchPartition {
                    slot: i,
                    topic: log.topic().to_string(),
                    partition: t.partition,
                    // The reader's priority class follows its consumer
                    // group, which the coordinator knows by client and host.
                    group: self.groups.group_of_reader(
                        params.client_id,
                        params.host,
                        log.topic(),
                        t.partition,
                    ),
                    remote: rp,
                    fetch_offset: t.fetch_offset,
                    max_bytes: t.max_bytes,
                })
            })
            .collect();
        let reader = RemoteLogReader::new(remote);
        let result = reader
            .fetch(RemoteFetch {
                client_id: params.client_id,
                partitions,
                bytes_left: response_max.saturating_sub(total),
                nothing_local: total == 0,
                read_committed,
                deadline,
            })
            .await;
        for (i, outcome) in result.outcomes {
            let t = &targets[i];
            let Some(log) = &t.log else { continue };
            let pd = &mut out[i];
            match outcome {
                RemoteFetchOutcome::Records { records, aborted } => {
                    total += fill_with(pd, remote_result(log, records), log, aborted)
                }
                RemoteFetchOutcome::NotReady => {
                    fill(pd, remote_result(log, Bytes::new()), log);
                }
                RemoteFetchOutcome::NotRemote => {
                    // A gap no segment covers (left while remote storage
                    // was off): continue where the local log starts, as a
                    // compacted log would.
                    let limit = t.max_bytes.min(response_max.saturating_sub(total));
                    match log.read_below(log.local_log_start_offset(), limit, total == 0, isolation)
                    {
                        Ok(read) => total += fill(pd, read, log),
                        Err(_) => {
                            out_of_range(pd);
                            any_error = true;
                        }
                    }
                }
                RemoteFetchOutcome::SegmentRemoved(key) => {
                    tracing::info!(topic = %log.topic(), partition = t.partition, key = %key,
                        "remote segment removed by retention during a fetch");
                    out_of_range(pd);
                    any_error = true;
                }
                RemoteFetchOutcome::Failed(e) => {
                    tracing::warn!(topic = %log.topic(), partition = t.partition, offset = t.fetch_offset,
                        error = %e, "remote read failed; the client will retry");
                    read_error(pd, log, super::errors::remote_read());
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
}

/// One pass over a fetch's partitions.
struct ReadAll {
    partitions: Vec<FetchPartitionData>,
    /// Record bytes in `partitions`.
    total: usize,
    any_error: bool,
    /// Of `total`, the bytes read from the bucket.
    history_bytes: usize,
}

/// A fetch's last read as its answer, counting what was served as a
/// follower.
fn finish(targets: &[Target], read: ReadAll) -> FetchResult {
    for (t, pd) in targets.iter().zip(&read.partitions) {
        if t.as_follower {
            read_replica::note_follower_read(pd.records.len());
        }
    }
    FetchResult {
        partitions: read.partitions,
        history_bytes: read.history_bytes,
    }
}

fn fill(pd: &mut FetchPartitionData, read: ReadResult, log: &PartitionLog) -> usize {
    fill_with(pd, read, log, Vec::new())
}

/// [`fill`], for a read committed fetch with the aborted transactions the
/// bucket's part of the log already contributed (`remote_aborted`).
fn fill_with(
    pd: &mut FetchPartitionData,
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
        .and_then(|a| Some((a, crate::log::batch::offset_range(&read.records)?)))
    {
        let mut all = remote_aborted;
        for t in log.aborted_transactions(from, end) {
            if !all.contains(&t) {
                all.push(t);
            }
        }
        *aborted = all;
    }
    let n = read.records.len();
    pd.records = read.records;
    n
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
fn out_of_range(pd: &mut FetchPartitionData) {
    pd.error = Some(ResponseError::OffsetOutOfRange);
    pd.high_watermark = -1;
    pd.last_stable_offset = -1;
    pd.log_start_offset = -1;
    pd.records = Bytes::new();
}

/// A read that failed (`errors.rs` gives `code`), with the partition's
/// offsets as Kafka reports them beside the error.
fn read_error(pd: &mut FetchPartitionData, log: &PartitionLog, code: ResponseError) {
    pd.error = Some(code);
    pd.high_watermark = log.high_watermark();
    pd.last_stable_offset = log.last_stable_offset();
    pd.log_start_offset = log.log_start_offset();
}
