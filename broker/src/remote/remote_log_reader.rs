//! `RemoteLogReader`: the one entry point of the historical read path
//! (Kafka's `RemoteLogReader` under `RemoteLogManager`): a Fetch's remote
//! partitions, and ListOffsets' timestamp lookups below the local log start.
//!
//! The Fetch handler reads local partitions itself and hands this reader
//! the partitions whose offsets lie in the bucket. The reader applies the
//! operator's quota (`remote.log.manager.fetch.max.bytes.per.second`),
//! gives each read the priority class of its reader's consumer group (the
//! caller names the group), runs every
//! read at once on the prefetch runtime (never on the request workers), waits
//! for them at most until the fetch's deadline, and answers with one named
//! outcome per partition. Reads not finished by then go on into the cache
//! for the client's next fetch.
//!
//! It never reads local segments and never builds a Kafka response.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use strata_catalog::ManifestView;
use strata_prefetch::PrefetchError;
use tokio::time::Instant;

use super::reads::{Reader, RemoteRead};
use super::TieredStorage;
use strata_format::txn_index::{decode_entries, AbortedTxn};

/// Remote reads wait for data at least this long, even when the fetch's
/// own wait is shorter, so `fetch.wait.max.ms=0` consumers still progress.
const MIN_REMOTE_WAIT: Duration = Duration::from_millis(100);

/// One partition of a fetch whose offset lies in the bucket.
pub struct RemoteFetchPartition {
    /// The caller's index for this partition, returned with its outcome.
    pub slot: usize,
    pub topic: String,
    pub partition: i32,
    /// The consumer group the client reads for, if known: its priority
    /// class and read-ahead stream.
    pub group: Option<String>,
    /// The catalog's view of the partition.
    pub remote: Arc<ManifestView>,
    pub fetch_offset: i64,
    pub max_bytes: usize,
}

/// The remote part of one fetch.
pub struct RemoteFetch<'a> {
    pub client_id: &'a str,
    pub partitions: Vec<RemoteFetchPartition>,
    /// Response bytes the local partitions left.
    pub bytes_left: usize,
    /// Nothing local was returned: the first remote batch may exceed the
    /// limits (KIP-74), and a fetch throttled by the quota waits for it.
    pub nothing_local: bool,
    /// A read committed fetch: each partition's records come with the
    /// aborted transactions of the remote segments they span.
    pub read_committed: bool,
    pub deadline: Instant,
}

/// What became of one remote partition.
#[derive(Debug)]
pub enum RemoteFetchOutcome {
    /// Whole batches from the bucket (possibly none within the limits),
    /// with, for a read committed fetch, the aborted transactions their
    /// offsets overlap in the remote `.txnindex` objects (in marker order;
    /// the caller adds the local log's).
    Records {
        records: Bytes,
        aborted: Vec<AbortedTxn>,
    },
    /// Not ready by the deadline, or held back by the quota: an empty
    /// answer; the client asks again.
    NotReady,
    /// No remote segment holds the offset (a gap left while remote storage
    /// was off): read on from the local log start.
    NotRemote,
    /// Total retention removed the segment during the fetch.
    SegmentRemoved(String),
    /// The read failed; retriable for the client.
    Failed(PrefetchError),
}

/// Outcomes by slot, and the record bytes read from the bucket (a response
/// with any is encoded on the prefetch runtime too).
pub struct RemoteFetchResult {
    pub outcomes: Vec<(usize, RemoteFetchOutcome)>,
    pub history_bytes: usize,
}

pub struct RemoteLogReader<'a> {
    remote: &'a Arc<TieredStorage>,
}

impl<'a> RemoteLogReader<'a> {
    pub fn new(remote: &'a Arc<TieredStorage>) -> Self {
        Self { remote }
    }

    pub async fn fetch(&self, req: RemoteFetch<'_>) -> RemoteFetchResult {
        let not_ready = |req: RemoteFetch<'_>| RemoteFetchResult {
            outcomes: req
                .partitions
                .iter()
                .map(|p| (p.slot, RemoteFetchOutcome::NotReady))
                .collect(),
            history_bytes: 0,
        };
        if !self.quota_allows(&req).await {
            return not_ready(req);
        }
        let policy = self.remote.prefetcher.budget().policy();
        let mut budget = req.bytes_left;
        let mut reads = Vec::with_capacity(req.partitions.len());
        for (n, p) in req.partitions.iter().enumerate() {
            let limit = p.max_bytes.min(budget);
            budget = budget.saturating_sub(limit);
            let reader = Reader {
                class: policy.class_of(p.group.as_deref(), req.client_id),
                name: p
                    .group
                    .clone()
                    .unwrap_or_else(|| format!("client:{}", req.client_id)),
            };
            let min_one = req.nothing_local && n == 0;
            reads.push((
                p.slot,
                p.remote.clone(),
                reader,
                p.fetch_offset,
                limit,
                min_one,
            ));
        }
        let started = Instant::now();
        let wait_until = req.deadline.max(started + MIN_REMOTE_WAIT);
        // The reads run on the prefetch runtime, never on the request
        // workers: its threads run at a lower priority and share the
        // prefetcher's locks and cache; a request worker waiting on a lock
        // held by a preempted low-priority thread would stall producers and
        // tail readers with it. This task only awaits their results.
        let r = self.remote.clone();
        let ran = self
            .remote
            .prefetcher
            .runtime()
            .spawn(async move {
                let mut running: futures_util::stream::FuturesUnordered<_> = reads
                    .into_iter()
                    .map(|(slot, rp, reader, offset, limit, min_one)| {
                        let r = r.clone();
                        async move { (slot, r.read(&rp, &reader, offset, limit, min_one).await) }
                    })
                    .collect();
                let mut finished = Vec::new();
                while let Ok(Some((slot, res))) =
                    tokio::time::timeout_at(wait_until, running.next()).await
                {
                    finished.push((slot, res, started.elapsed()));
                }
                // Reads still running go on in the prefetcher (parked for
                // the retry).
                finished
            })
            .await;
        let finished = match ran {
            Ok(finished) => finished,
            Err(_) => {
                // The prefetch runtime is shutting down with the broker.
                return RemoteFetchResult {
                    outcomes: req
                        .partitions
                        .iter()
                        .map(|p| (p.slot, RemoteFetchOutcome::Failed(PrefetchError::Stopped)))
                        .collect(),
                    history_bytes: 0,
                };
            }
        };
        let mut history_bytes = 0;
        let mut outcomes: Vec<(usize, RemoteFetchOutcome)> = req
            .partitions
            .iter()
            .map(|p| (p.slot, RemoteFetchOutcome::NotReady))
            .collect();
        for (slot, res, waited) in finished {
            let outcome = match res {
                Ok(RemoteRead::Records(records)) => {
                    self.remote.prefetcher.delivered(records.len(), waited);
                    history_bytes += records.len();
                    match self.aborted_in(&req, slot, &records).await {
                        Ok(aborted) => RemoteFetchOutcome::Records { records, aborted },
                        // Never serve history a read committed consumer
                        // cannot filter: a retriable failure.
                        Err(e) => RemoteFetchOutcome::Failed(e),
                    }
                }
                Ok(RemoteRead::NotRemote) => RemoteFetchOutcome::NotRemote,
                Err(e) => match e.not_found_key() {
                    Some(key) => RemoteFetchOutcome::SegmentRemoved(key.to_string()),
                    None => RemoteFetchOutcome::Failed(e),
                },
            };
            if let Some(o) = outcomes.iter_mut().find(|(s, _)| *s == slot) {
                o.1 = outcome;
            }
        }
        RemoteFetchResult {
            outcomes,
            history_bytes,
        }
    }

    /// For a read committed fetch, the aborted transactions of the remote
    /// segments `records` (of partition `slot`) span; none otherwise.
    async fn aborted_in(
        &self,
        req: &RemoteFetch<'_>,
        slot: usize,
        records: &[u8],
    ) -> Result<Vec<AbortedTxn>, PrefetchError> {
        if !req.read_committed {
            return Ok(Vec::new());
        }
        let (Some(p), Some((from, end))) = (
            req.partitions.iter().find(|p| p.slot == slot),
            strata_format::batch::offset_range(records),
        ) else {
            return Ok(Vec::new());
        };
        self.aborted_transactions(&p.remote, from, end)
            .await
            .inspect_err(|e| {
                tracing::warn!(topic = %p.topic, partition = p.partition, error = %e,
                    "reading a remote .txnindex failed");
            })
    }

    /// The first record at or after `timestamp` in a remote segment below
    /// `local_start`: (offset, timestamp) (ListOffsets by timestamp).
    pub async fn offset_for_timestamp(
        &self,
        rp: &ManifestView,
        timestamp: i64,
        local_start: i64,
    ) -> Result<Option<(i64, i64)>, PrefetchError> {
        self.remote
            .offset_for_timestamp(rp, timestamp, local_start)
            .await
    }

    /// The record with the largest timestamp among remote segments below
    /// `local_start`, if larger than `than` (ListOffsets -3).
    pub async fn max_timestamp_offset(
        &self,
        rp: &ManifestView,
        local_start: i64,
        than: i64,
    ) -> Result<Option<(i64, i64)>, PrefetchError> {
        self.remote
            .max_timestamp_offset(rp, local_start, than)
            .await
    }

    /// The aborted transactions recorded in the remote segments' `.txnindex`
    /// objects that overlap `[from, upper)` (read committed fetches of
    /// history), in marker order, stopping as Kafka does once an entry's
    /// last stable offset reaches `upper` (the caller adds the local
    /// log's entries).
    pub async fn aborted_transactions(
        &self,
        rp: &ManifestView,
        from: i64,
        upper: i64,
    ) -> Result<Vec<AbortedTxn>, PrefetchError> {
        let mut out = Vec::new();
        let manifest = rp.current();
        for seg in manifest.segments.iter().filter(|s| s.next_offset() > from) {
            if seg.txn_index_key.is_none() {
                continue;
            }
            let bytes = self.remote.prefetcher.txn_index(seg).await?;
            for t in decode_entries(&bytes) {
                if t.overlaps(from, upper) {
                    out.push(t);
                }
                if t.last_stable_offset >= upper {
                    return Ok(out);
                }
            }
        }
        Ok(out)
    }

    /// The operator's quota: a fetch that finds it used up waits for it
    /// (within its wait) if it has nothing local to return; one with local
    /// data returns that now, its remote partitions empty.
    async fn quota_allows(&self, req: &RemoteFetch<'_>) -> bool {
        let quota = self.remote.prefetcher.quota();
        let Some(delay) = quota.delay() else {
            return true;
        };
        let t0 = Instant::now();
        let ready = req.nothing_local && {
            let wait_until = req.deadline.max(t0 + MIN_REMOTE_WAIT);
            tokio::time::sleep_until((t0 + delay).min(wait_until)).await;
            quota.delay().is_none()
        };
        quota.throttled(t0.elapsed());
        ready
    }
}
