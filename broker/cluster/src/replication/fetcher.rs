//! `ReplicaFetcher`: one task per leader broker this broker follows
//! partitions of (Kafka's `ReplicaFetcherThread`). For each partition it
//! first asks the leader where its own newest epoch ended
//! (OffsetForLeaderEpoch) and truncates a divergent tail there; then it
//! fetches from its log end with its node id as `replica_id`, appends the
//! leader's batches as they are, fsyncs them, and only then fetches again:
//! the fetch offset the leader sees is always this replica's durable end
//! (docs/durability.md). The leader's high watermark comes back with
//! every fetch.
//!
//! It owns the connection to one leader and the per-partition fetch
//! state; which partitions it serves is the replica manager's decision.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    BrokerId, FetchRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use tokio::sync::{watch, Notify};
use tokio::time::Instant;
use tracing::Instrument;

use super::client::{BrokerClient, ClientError};
use super::tiered_start::TieredEndSource;
use crate::cluster::view::ClusterView;
use strata_storage::log::{LogError, PartitionLog};
use strata_storage::partition::Partition;

/// Fetch versions this client speaks (replica id in the request body,
/// topics by name).
const FETCH_VERSION: i16 = 12;
const OFFSET_FOR_LEADER_EPOCH_VERSION: i16 = 4;
const LIST_OFFSETS_VERSION: i16 = 7;
/// How soon a partition whose leader is not ready yet is asked again.
const LEADER_NOT_READY_RETRY: Duration = Duration::from_millis(50);
/// ListOffsets' earliest-local timestamp (KIP-405).
const EARLIEST_LOCAL: i64 = -4;

/// Record bytes this broker's fetchers appended as a follower, and how
/// many partitions started at the bucket's end (`/metrics`).
pub(crate) static REPLICATED_BYTES: AtomicU64 = AtomicU64::new(0);
pub(crate) static TIERED_STARTS: AtomicU64 = AtomicU64::new(0);

/// The fetcher's settings (`replica.*` broker configs).
#[derive(Debug, Clone, Copy)]
pub struct FetcherSettings {
    pub me: i32,
    pub max_bytes_per_partition: i32,
    pub max_bytes: i32,
    pub max_wait: Duration,
    pub backoff: Duration,
    pub socket_timeout: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Find the divergence point with the leader first.
    Truncating,
    Fetching,
    /// Refused (stale epoch, not leader yet): retry after this instant.
    Delayed(Instant),
}

#[derive(Debug, Clone)]
struct Followed {
    partition: Arc<Partition>,
    leader_epoch: i32,
    phase: Phase,
}

type Key = (String, i32);

/// A running fetcher; dropping it stops the task.
pub(crate) struct ReplicaFetcher {
    partitions: Arc<Mutex<BTreeMap<Key, Followed>>>,
    changed: Arc<Notify>,
    stop: watch::Sender<bool>,
}

impl Drop for ReplicaFetcher {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

impl ReplicaFetcher {
    pub fn start(
        leader: i32,
        view: ClusterView,
        settings: FetcherSettings,
        tiered: Option<Arc<dyn TieredEndSource>>,
    ) -> ReplicaFetcher {
        let partitions = Arc::new(Mutex::new(BTreeMap::new()));
        let changed = Arc::new(Notify::new());
        let (stop, stopped) = watch::channel(false);
        let task = FetcherTask {
            leader,
            view,
            settings,
            tiered,
            partitions: partitions.clone(),
            changed: changed.clone(),
            stopped,
            round: 0,
        };
        tokio::spawn(
            task.run()
                .instrument(tracing::info_span!("replica_fetcher", leader)),
        );
        ReplicaFetcher {
            partitions,
            changed,
            stop,
        }
    }

    /// Serves exactly `wanted` ((topic, partition) → log and leader
    /// epoch). A partition new here, or at a new epoch, starts by
    /// truncating.
    pub(crate) fn set_partitions(&self, wanted: BTreeMap<Key, (Arc<Partition>, i32)>) {
        let mut parts = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        parts.retain(|k, _| wanted.contains_key(k));
        let mut changed = false;
        for (k, (partition, epoch)) in wanted {
            match parts.get_mut(&k) {
                Some(f) if f.leader_epoch == epoch && Arc::ptr_eq(&f.partition, &partition) => {}
                _ => {
                    parts.insert(
                        k,
                        Followed {
                            partition,
                            leader_epoch: epoch,
                            phase: Phase::Truncating,
                        },
                    );
                    changed = true;
                }
            }
        }
        drop(parts);
        if changed {
            self.changed.notify_one();
        }
    }
}

struct FetcherTask {
    leader: i32,
    view: ClusterView,
    settings: FetcherSettings,
    /// Where an empty replica starts (the bucket's end), when tiering is on.
    tiered: Option<Arc<dyn TieredEndSource>>,
    partitions: Arc<Mutex<BTreeMap<Key, Followed>>>,
    changed: Arc<Notify>,
    stopped: watch::Receiver<bool>,
    round: usize,
}

impl FetcherTask {
    fn is_stopped(&self) -> bool {
        *self.stopped.borrow()
    }

    async fn pause(&mut self, d: Duration) {
        let mut stopped = self.stopped.clone();
        tokio::select! {
            _ = tokio::time::sleep(d) => {}
            _ = stopped.changed() => {}
            _ = self.changed.notified() => {}
        }
    }

    async fn run(mut self) {
        while !self.is_stopped() {
            let Some(reg) = self
                .view
                .snapshot()
                .brokers
                .get(&self.leader)
                .map(|b| b.registration.clone())
            else {
                self.pause(self.settings.backoff).await;
                continue;
            };
            let client = BrokerClient::connect(
                self.leader,
                &reg.host,
                reg.port,
                format!("strata-replica-fetcher-{}", self.settings.me),
                // The first batch may exceed the fetch's limits (a topic's
                // max.message.bytes): room for it, within a bound.
                self.settings
                    .max_bytes
                    .max(self.settings.max_bytes_per_partition) as usize
                    + (128 << 20),
                self.settings.socket_timeout,
            )
            .await;
            let mut client = match client {
                Ok(c) => c,
                Err(e) => {
                    tracing::debug!(error = %e, "cannot reach the leader");
                    self.pause(self.settings.backoff).await;
                    continue;
                }
            };
            if let Err(e) = self.serve(&mut client).await {
                tracing::info!(error = %e, "replica fetcher lost its connection; reconnecting");
                self.pause(self.settings.backoff).await;
            }
        }
    }

    /// Fetch rounds over one connection until it fails or the task stops.
    async fn serve(&mut self, client: &mut BrokerClient) -> Result<(), ClientError> {
        while !self.is_stopped() {
            let now = Instant::now();
            let snapshot: Vec<(Key, Followed)> = {
                let mut parts = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
                for f in parts.values_mut() {
                    if matches!(f.phase, Phase::Delayed(t) if t <= now) {
                        f.phase = Phase::Truncating;
                    }
                }
                parts.iter().map(|(k, f)| (k.clone(), f.clone())).collect()
            };
            let truncating: Vec<_> = snapshot
                .iter()
                .filter(|(_, f)| f.phase == Phase::Truncating)
                .cloned()
                .collect();
            if !truncating.is_empty() {
                self.truncate(client, truncating).await?;
                continue;
            }
            let mut fetching: Vec<_> = snapshot
                .into_iter()
                .filter(|(_, f)| f.phase == Phase::Fetching)
                .collect();
            // A different partition first each round: one that keeps
            // returning data cannot starve the rest of the response.
            if !fetching.is_empty() {
                let n = fetching.len();
                fetching.rotate_left(self.round % n);
                self.round = self.round.wrapping_add(1);
            }
            if fetching.is_empty() {
                // Nothing to fetch now: wait for a change or a delay to end.
                self.pause(Duration::from_millis(100)).await;
                continue;
            }
            self.fetch(client, fetching).await?;
        }
        Ok(())
    }

    fn set_phase(&self, key: &Key, epoch: i32, phase: Phase) {
        let mut parts = self.partitions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(f) = parts.get_mut(key) {
            // A newer assignment replaced it meanwhile: keep that.
            if f.leader_epoch == epoch {
                f.phase = phase;
            }
        }
    }

    fn delay(&self) -> Phase {
        Phase::Delayed(Instant::now() + self.settings.backoff)
    }

    /// After a partition error: a leader that has not applied its own
    /// leadership yet (NOT_LEADER_OR_FOLLOWER, UNKNOWN_LEADER_EPOCH, an
    /// unknown partition) is asked again soon, as it will within moments
    /// of the store's change; anything else waits `replica.fetch.backoff.ms`.
    fn delay_after(&self, e: Option<ResponseError>) -> Phase {
        match e {
            Some(
                ResponseError::NotLeaderOrFollower
                | ResponseError::UnknownLeaderEpoch
                | ResponseError::UnknownTopicOrPartition,
            ) => Phase::Delayed(Instant::now() + self.settings.backoff.min(LEADER_NOT_READY_RETRY)),
            _ => self.delay(),
        }
    }

    /// OffsetForLeaderEpoch for `parts`, then truncation to where each
    /// log and the leader's agree.
    async fn truncate(
        &self,
        client: &mut BrokerClient,
        parts: Vec<(Key, Followed)>,
    ) -> Result<(), ClientError> {
        let mut by_topic: BTreeMap<&str, Vec<OffsetForLeaderPartition>> = BTreeMap::new();
        let mut ready = Vec::new();
        for ((topic, p), f) in &parts {
            let Some(epoch) = f.partition.log().latest_epoch_in_log() else {
                // An empty log has nothing to diverge: it starts at the
                // bucket's end if the partition is tiered, else fetches
                // from its own end.
                ready.push(((topic.clone(), *p), f.clone()));
                continue;
            };
            let mut q = OffsetForLeaderPartition::default();
            q.partition = *p;
            q.current_leader_epoch = f.leader_epoch;
            q.leader_epoch = epoch;
            by_topic.entry(topic.as_str()).or_default().push(q);
        }
        // All at once: each is a read of the bucket.
        futures_util::future::join_all(ready.iter().map(|(key, f)| async move {
            self.start_at_tiered_end(key, f, f.partition.log().log_end_offset() + 1)
                .await;
            self.set_phase(key, f.leader_epoch, Phase::Fetching);
        }))
        .await;
        if by_topic.is_empty() {
            return Ok(());
        }
        let mut req = OffsetForLeaderEpochRequest::default();
        req.replica_id = BrokerId(self.settings.me);
        for (topic, partitions) in by_topic {
            let mut t = OffsetForLeaderTopic::default();
            t.topic = TopicName(StrBytes::from_string(topic.to_string()));
            t.partitions = partitions;
            req.topics.push(t);
        }
        let resp = client
            .send(
                &req,
                OFFSET_FOR_LEADER_EPOCH_VERSION,
                self.settings.socket_timeout,
            )
            .await?;
        for t in resp.topics {
            for r in t.partitions {
                let key = (t.topic.0.to_string(), r.partition);
                let Some((_, f)) = parts.iter().find(|(k, _)| *k == key) else {
                    continue;
                };
                if r.error_code != 0 {
                    let e = ResponseError::try_from_code(r.error_code);
                    tracing::debug!(topic = %key.0, partition = key.1, error = ?e,
                        "leader refused OffsetForLeaderEpoch");
                    self.set_phase(&key, f.leader_epoch, self.delay_after(e));
                    continue;
                }
                let partition = f.partition.clone();
                let (leader_epoch, leader_end) = (r.leader_epoch, r.end_offset);
                let following = f.leader_epoch;
                let result = tokio::task::spawn_blocking(move || {
                    let target = divergence_point(partition.log(), leader_epoch, leader_end);
                    partition.truncate_to(target, following).map(|()| target)
                })
                .await;
                match result {
                    Ok(Ok(_)) => self.set_phase(&key, f.leader_epoch, Phase::Fetching),
                    Ok(Err(e)) => {
                        tracing::warn!(topic = %key.0, partition = key.1, error = %e, "truncation failed");
                        self.set_phase(&key, f.leader_epoch, self.delay());
                    }
                    Err(_) => self.set_phase(&key, f.leader_epoch, self.delay()),
                }
            }
        }
        Ok(())
    }

    /// One Fetch for `parts` and what follows from its answer.
    async fn fetch(
        &self,
        client: &mut BrokerClient,
        parts: Vec<(Key, Followed)>,
    ) -> Result<(), ClientError> {
        let mut req = FetchRequest::default();
        req.replica_id = BrokerId(self.settings.me);
        req.max_wait_ms = self.settings.max_wait.as_millis() as i32;
        req.min_bytes = 1;
        req.max_bytes = self.settings.max_bytes;
        req.isolation_level = 0;
        req.session_id = 0;
        req.session_epoch = -1;
        let mut offsets = BTreeMap::new();
        // Grouped by topic in the (rotated) order of `parts`.
        let mut by_topic: Vec<(&str, Vec<FetchPartition>)> = Vec::new();
        for ((topic, p), f) in &parts {
            let mut q = FetchPartition::default();
            q.partition = *p;
            q.current_leader_epoch = f.leader_epoch;
            // The durable end: what the leader counts as this replica's
            // copy (docs/durability.md). Batches above it that are already
            // here come again and are skipped.
            q.fetch_offset = f.partition.log().durable_end_offset();
            q.log_start_offset = f.partition.log().log_start_offset();
            q.partition_max_bytes = self.settings.max_bytes_per_partition;
            offsets.insert((topic.clone(), *p), q.fetch_offset);
            match by_topic.iter_mut().find(|(t, _)| *t == topic.as_str()) {
                Some((_, qs)) => qs.push(q),
                None => by_topic.push((topic.as_str(), vec![q])),
            }
        }
        for (topic, partitions) in by_topic {
            let mut t = FetchTopic::default();
            t.topic = TopicName(StrBytes::from_string(topic.to_string()));
            t.partitions = partitions;
            req.topics.push(t);
        }
        let timeout = self.settings.max_wait + self.settings.socket_timeout;
        let resp = client.send(&req, FETCH_VERSION, timeout).await?;
        if resp.error_code != 0 {
            tracing::debug!(error = ?ResponseError::try_from_code(resp.error_code), "leader refused the fetch");
            for (key, f) in &parts {
                self.set_phase(key, f.leader_epoch, self.delay());
            }
            return Ok(());
        }
        // The leader fills a response until it is full and returns a
        // partition empty only at its log end, or when earlier partitions
        // filled the response: a response with no records at all says that
        // every partition without an error is at the leader's log end.
        let nothing_returned = resp.responses.iter().all(|t| {
            t.partitions
                .iter()
                .all(|r| r.records.as_ref().is_none_or(|b| b.is_empty()))
        });
        let mut fetched = Vec::new();
        let mut resets = Vec::new();
        for t in resp.responses {
            for r in t.partitions {
                let key = (t.topic.0.to_string(), r.partition_index);
                let Some((_, f)) = parts.iter().find(|(k, _)| *k == key) else {
                    continue;
                };
                match ResponseError::try_from_code(r.error_code) {
                    None => fetched.push(Fetched {
                        key,
                        partition: f.partition.clone(),
                        epoch: f.leader_epoch,
                        records: r.records.unwrap_or_default(),
                        high_watermark: r.high_watermark,
                        log_start_offset: r.log_start_offset,
                    }),
                    Some(ResponseError::OffsetOutOfRange)
                    | Some(ResponseError::OffsetMovedToTieredStorage) => {
                        let fetch_offset = offsets.get(&key).copied().unwrap_or(-1);
                        resets.push((key, f.clone(), fetch_offset, r.log_start_offset));
                    }
                    Some(e) => {
                        tracing::debug!(topic = %key.0, partition = key.1, error = ?e,
                            "leader refused the partition's fetch");
                        self.set_phase(&key, f.leader_epoch, self.delay_after(Some(e)));
                    }
                }
            }
        }
        if !fetched.is_empty() {
            // One blocking task for the whole response: a hand-off to the
            // blocking pool per partition cost more CPU than the writes.
            let keys: Vec<(Key, i32)> = fetched.iter().map(|p| (p.key.clone(), p.epoch)).collect();
            match tokio::task::spawn_blocking(move || write_fetched(fetched, nothing_returned))
                .await
            {
                Ok(written) => {
                    for (key, epoch, result) in written {
                        self.after_write(&key, epoch, result);
                    }
                }
                Err(_) => {
                    for (key, epoch) in keys {
                        self.set_phase(&key, epoch, self.delay());
                    }
                }
            }
        }
        for (key, f, fetch_offset, leader_log_start) in resets {
            self.reset_start(client, &key, &f, fetch_offset, leader_log_start)
                .await?;
        }
        Ok(())
    }

    /// What writing one partition's fetched records came to.
    fn after_write(&self, key: &Key, epoch: i32, result: Result<(), LogError>) {
        match result {
            Ok(()) => {}
            // Superseded by a newer assignment: it takes over.
            Err(LogError::StaleLeaderEpoch { .. }) => {}
            Err(LogError::NotContiguous { .. }) => {
                // Overlapping the leader's batches: diverged. Look for the
                // divergence again, after a pause.
                self.set_phase(key, epoch, self.delay())
            }
            Err(LogError::Io(e)) => {
                // As the leader's flusher: an fsync failure may have lost
                // what it reported durable.
                tracing::error!(topic = %key.0, partition = key.1, error = %e,
                    "writing replicated records failed; stopping the broker");
                std::process::exit(70);
            }
            Err(e) => {
                tracing::warn!(topic = %key.0, partition = key.1, error = %e,
                    "cannot append replicated records");
                self.set_phase(key, epoch, self.delay());
            }
        }
    }

    /// The fetch offset is outside the leader's local log: below it, the
    /// log restarts at the leader's first local offset (history stays in
    /// the bucket); above it, the divergence is looked for again.
    async fn reset_start(
        &self,
        client: &mut BrokerClient,
        key: &Key,
        f: &Followed,
        fetch_offset: i64,
        leader_log_start: i64,
    ) -> Result<(), ClientError> {
        let mut q = ListOffsetsPartition::default();
        q.partition_index = key.1;
        q.current_leader_epoch = f.leader_epoch;
        q.timestamp = EARLIEST_LOCAL;
        let mut t = ListOffsetsTopic::default();
        t.name = TopicName(StrBytes::from_string(key.0.clone()));
        t.partitions = vec![q];
        let mut req = ListOffsetsRequest::default();
        req.replica_id = BrokerId(self.settings.me);
        req.topics = vec![t];
        let resp = client
            .send(&req, LIST_OFFSETS_VERSION, self.settings.socket_timeout)
            .await?;
        let local_start = resp
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .filter(|p| p.error_code == 0)
            .map(|p| p.offset)
            .unwrap_or(leader_log_start);
        if fetch_offset >= local_start {
            self.set_phase(key, f.leader_epoch, Phase::Truncating);
            return Ok(());
        }
        // Below the leader's local log: the bucket's end (KIP-1023) is at
        // or past its local start, and what lies below is in the bucket.
        if self.start_at_tiered_end(key, f, local_start).await {
            self.set_phase(key, f.leader_epoch, Phase::Fetching);
            return Ok(());
        }
        let partition = f.partition.clone();
        let epoch = f.leader_epoch;
        let reset = tokio::task::spawn_blocking(move || {
            partition.truncate_fully_and_start_at(local_start, epoch)
        })
        .await;
        match reset {
            Ok(Ok(())) => {
                tracing::info!(topic = %key.0, partition = key.1, offset = local_start,
                    "follower restarts at the leader's local log start");
                self.set_phase(key, f.leader_epoch, Phase::Fetching);
            }
            Ok(Err(e)) => {
                tracing::warn!(topic = %key.0, partition = key.1, error = %e, "cannot reset the log");
                self.set_phase(key, f.leader_epoch, self.delay());
            }
            Err(_) => self.set_phase(key, f.leader_epoch, self.delay()),
        }
        Ok(())
    }
}

impl FetcherTask {
    /// Empties the log to start at the partition's tiered end, if the
    /// partition is tiered and that end is at least `at_least`. False when
    /// it did not (not tiered, nothing in the bucket, the bucket
    /// unreachable: the caller then copies from the leader as without
    /// tiering, which is slower but loses nothing).
    async fn start_at_tiered_end(&self, key: &Key, f: &Followed, at_least: i64) -> bool {
        let Some(source) = &self.tiered else {
            return false;
        };
        let read = tokio::time::timeout(
            self.settings.socket_timeout,
            source.tiered_end(f.partition.log().clone()),
        )
        .await
        .unwrap_or_else(|_| Err("timed out".into()));
        let end = match read {
            Ok(Some(end)) if end.offset >= at_least => end,
            Ok(_) => return false,
            Err(e) => {
                tracing::warn!(topic = %key.0, partition = key.1, error = %e,
                    "cannot read the bucket's end for this partition; copying from the leader instead");
                return false;
            }
        };
        let partition = f.partition.clone();
        let epoch = f.leader_epoch;
        let offset = end.offset;
        let reset = tokio::task::spawn_blocking(move || {
            partition.start_at_tiered_end(
                end.offset,
                end.last_epoch,
                end.producer_snapshot.as_deref(),
                epoch,
            )
        })
        .await;
        match reset {
            Ok(Ok(())) => {
                TIERED_STARTS.fetch_add(1, Ordering::Relaxed);
                tracing::info!(topic = %key.0, partition = key.1, offset,
                    "follower starts at the bucket's end; history below stays in the bucket");
                true
            }
            Ok(Err(e)) => {
                tracing::warn!(topic = %key.0, partition = key.1, error = %e,
                    "cannot start the log at the bucket's end");
                false
            }
            Err(_) => false,
        }
    }
}

/// Where a follower's log must end given the leader's answer for the
/// follower's newest epoch (Kafka's KIP-101/279 rule): the smaller of the
/// leader's end for the epoch it answered with and this log's own end for
/// that epoch (the start of its first newer epoch), never past this log's
/// end. When this log holds nothing at or below that epoch, everything it
/// has is from epochs the leader never had: back to the log start. An
/// unknown epoch truncates to the high watermark. The fetcher asks again
/// if the logs still disagree.
pub(crate) fn divergence_point(log: &PartitionLog, leader_epoch: i32, leader_end: i64) -> i64 {
    let leo = log.log_end_offset();
    if leader_epoch < 0 || leader_end < 0 {
        return log.high_watermark().min(leo);
    }
    let (own_epoch, own_end) = log.end_offset_for_epoch(leader_epoch);
    if own_epoch < 0 || own_end < 0 {
        return log.local_log_start_offset();
    }
    leader_end.min(own_end).min(leo)
}

/// One partition's part of a fetch response, to be written.
pub(super) struct Fetched {
    pub(super) key: Key,
    pub(super) partition: Arc<Partition>,
    pub(super) epoch: i32,
    pub(super) records: bytes::Bytes,
    pub(super) high_watermark: i64,
    /// The leader's log start: what it deleted, this replica deletes too.
    pub(super) log_start_offset: i64,
}

/// Appends every partition's records, then makes each durable and takes
/// the leader's high watermark (blocking: run off the async workers).
/// Whatever went in is durable before the next fetch reports it.
/// `nothing_returned`: the whole response was empty, so every partition
/// without an error is at the leader's log end.
pub(super) fn write_fetched(
    fetched: Vec<Fetched>,
    nothing_returned: bool,
) -> Vec<(Key, i32, Result<(), LogError>)> {
    let appended: Vec<Result<i64, LogError>> = fetched
        .iter()
        .map(|p| {
            if p.records.is_empty() {
                return Ok(0);
            }
            let before = p.partition.log().log_end_offset();
            let r = p.partition.append_as_follower(&p.records, p.epoch);
            if r.as_ref().is_ok_and(|end| *end > before) {
                REPLICATED_BYTES.fetch_add(p.records.len() as u64, Ordering::Relaxed);
            }
            r
        })
        .collect();
    fetched
        .into_iter()
        .zip(appended)
        .map(|(p, appended)| {
            let result = (|| {
                let log = p.partition.log();
                log.flush()?;
                appended?;
                p.partition
                    .set_leader_high_watermark(p.high_watermark, p.epoch);
                if p.log_start_offset > 0 {
                    log.follow_leader_log_start(p.log_start_offset)?;
                }
                if nothing_returned {
                    p.partition.caught_up_with_leader(p.epoch);
                }
                Ok(())
            })();
            (p.key, p.epoch, result)
        })
        .collect()
}
