//! The families `/metrics` reads from the broker's state at each scrape:
//! every partition log's offsets and sizes, the log cleaner's progress on
//! compacted partitions, tiering progress and errors per partition, the
//! historical read path, the transaction coordinator and the object
//! store's availability (the cluster's own are in
//! `crate::cluster::metrics`).
//!
//! Read-only: it never changes what it reads.

use std::sync::atomic::{AtomicU64, Ordering};

use strata_catalog::PartitionManifest;
use strata_prefetch::Prefetcher;
use strata_tiering::RemotePartition;

use super::family::{partition_labels, Family, HistogramSample, Kind};
use crate::cluster::Cluster;
use crate::group::coordinator::GroupCoordinator;
use crate::log::cleaner::Cleanability;
use crate::log::PartitionLog;
use crate::log_manager::LogManager;
use crate::remote::TieredStorage;
use crate::txn::TransactionCoordinator;

/// A metric family: name, kind, help.
type Def = (&'static str, Kind, &'static str);
/// A family and how to read its value.
type LogFamily = (Def, fn(&PartitionLog) -> f64);
type TieringFamily = (Def, fn(&RemotePartition, &PartitionManifest) -> f64);
type PrefetchFamily = (Def, fn(&Prefetcher) -> f64);
/// A compacted log's family: the log, how dirty it is now (read once per
/// scrape), and the clock.
type CleanerFamily = (Def, fn(&PartitionLog, Option<&Cleanability>, i64) -> f64);

fn family((name, kind, help): Def) -> Family {
    Family::new(kind, name, help)
}

/// A histogram family from a latency histogram, in seconds.
fn histogram((name, _, help): Def, h: &strata_prefetch::latency::LatencyHistogram) -> Family {
    let s = h.snapshot();
    Family::histogram(
        name,
        help,
        HistogramSample::from_cumulative(
            &s.cumulative_octaves(),
            s.sum_micros as f64 / 1e6,
            s.count(),
        ),
    )
}

fn one((name, kind, help): Def, v: f64) -> Family {
    Family::one(kind, name, help, v)
}

fn n(a: &AtomicU64) -> f64 {
    a.load(Ordering::Relaxed) as f64
}

fn flag(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// Per-partition families of every partition log.
const LOG_FAMILIES: &[LogFamily] = &[
    (
        (
            "strata_log_end_offset",
            Kind::Gauge,
            "Next offset to be written.",
        ),
        |l| l.log_end_offset() as f64,
    ),
    (
        (
            "strata_high_watermark",
            Kind::Gauge,
            "Offset below which records are durable and readable.",
        ),
        |l| l.high_watermark() as f64,
    ),
    (
        (
            "strata_log_start_offset",
            Kind::Gauge,
            "First readable offset (remote included).",
        ),
        |l| l.log_start_offset() as f64,
    ),
    (
        (
            "strata_local_log_start_offset",
            Kind::Gauge,
            "First offset on local disk.",
        ),
        |l| l.local_log_start_offset() as f64,
    ),
    (
        (
            "strata_local_log_size_bytes",
            Kind::Gauge,
            "Bytes of the partition on local disk.",
        ),
        |l| l.size_bytes() as f64,
    ),
    (
        (
            "strata_local_log_segments",
            Kind::Gauge,
            "Segments on local disk.",
        ),
        |l| l.segment_count() as f64,
    ),
    (
        (
            "strata_log_last_stable_offset_lag",
            Kind::Gauge,
            "Records between the last stable offset and the high watermark: what an open transaction holds back from read_committed consumers.",
        ),
        |l| (l.high_watermark() - l.last_stable_offset()).max(0) as f64,
    ),
    (
        (
            "strata_log_ongoing_transactions",
            Kind::Gauge,
            "Open transactions with records in the partition.",
        ),
        |l| l.ongoing_transactions() as f64,
    ),
];

/// Per-partition families of compacted partitions (the log cleaner).
const CLEANER_FAMILIES: &[CleanerFamily] = &[
    (
        (
            "strata_log_cleaner_dirty_ratio",
            Kind::Gauge,
            "Share of the cleanable log (remote part included) not yet cleaned; a pass is due at min.cleanable.dirty.ratio.",
        ),
        |_, c, _| c.map_or(0.0, |c| c.dirty_ratio),
    ),
    (
        (
            "strata_log_cleaner_lag_seconds",
            Kind::Gauge,
            "Age of the oldest dirty segment (by its newest record); 0 when nothing is dirty. A pass is forced at max.compaction.lag.ms.",
        ),
        |_, c, now| c.map_or(0.0, |c| (now - c.dirty_since_ms).max(0) as f64 / 1e3),
    ),
    (
        (
            "strata_log_cleaner_passes_total",
            Kind::Counter,
            "Cleaning passes over the partition.",
        ),
        |l, _, _| n(&l.cleaner_stats.passes),
    ),
    (
        (
            "strata_log_cleaner_errors_total",
            Kind::Counter,
            "Cleaning passes that failed (the log was left as it was).",
        ),
        |l, _, _| n(&l.cleaner_stats.errors),
    ),
    (
        (
            "strata_log_cleaner_read_bytes_total",
            Kind::Counter,
            "Bytes the cleaner read: the dirty section for its map, then every segment it rewrote.",
        ),
        |l, _, _| n(&l.cleaner_stats.bytes_read),
    ),
    (
        (
            "strata_log_cleaner_written_bytes_total",
            Kind::Counter,
            "Bytes of cleaned segments the cleaner wrote.",
        ),
        |l, _, _| n(&l.cleaner_stats.bytes_written),
    ),
    (
        (
            "strata_log_cleaner_removed_records_total",
            Kind::Counter,
            "Records compaction removed (superseded values, expired tombstones).",
        ),
        |l, _, _| n(&l.cleaner_stats.records_removed),
    ),
    (
        (
            "strata_log_cleaner_remote_segments_replaced_total",
            Kind::Counter,
            "Segments in the object store replaced by their cleaned version, or removed.",
        ),
        |l, _, _| n(&l.cleaner_stats.remote_segments_replaced),
    ),
];

/// Per-partition families of tiered partitions.
const TIERING_FAMILIES: &[TieringFamily] = &[
    (
        (
            "strata_remote_upload_segments_total",
            Kind::Counter,
            "Segments uploaded and recorded in the catalog by this process.",
        ),
        |p, _| n(&p.stats.uploaded_segments),
    ),
    (
        (
            "strata_remote_upload_bytes_total",
            Kind::Counter,
            "Log bytes uploaded by this process.",
        ),
        |p, _| n(&p.stats.uploaded_bytes),
    ),
    (
        (
            "strata_remote_upload_errors_total",
            Kind::Counter,
            "Failed tiering rounds (after retries).",
        ),
        |p, _| n(&p.stats.upload_errors),
    ),
    (
        (
            "strata_remote_copy_lag_segments",
            Kind::Gauge,
            "Sealed local segments not yet in the object store.",
        ),
        |p, _| n(&p.stats.copy_lag_segments),
    ),
    (
        (
            "strata_remote_copy_lag_bytes",
            Kind::Gauge,
            "Bytes of sealed local segments not yet in the object store.",
        ),
        |p, _| n(&p.stats.copy_lag_bytes),
    ),
    (
        (
            "strata_remote_copy_lag_seconds",
            Kind::Gauge,
            "Age of the oldest sealed local segment not yet in the object store, by its newest record; 0 when none waits. What a lost disk would lose of what the bucket should hold.",
        ),
        |p, _| {
            match p.stats.copy_lag_oldest_timestamp_ms.load(Ordering::Relaxed) {
                0 => 0.0,
                ts => (crate::clock::now_ms() - ts as i64).max(0) as f64 / 1e3,
            }
        },
    ),
    (
        (
            "strata_remote_compaction_read_bytes_total",
            Kind::Counter,
            "Bytes of remote segments the cleaner read from the object store (a local copy costs nothing).",
        ),
        |p, _| n(&p.stats.compaction_bytes_read),
    ),
    (
        (
            "strata_remote_compaction_written_bytes_total",
            Kind::Counter,
            "Bytes of cleaned segments the cleaner uploaded in place of remote ones.",
        ),
        |p, _| n(&p.stats.compaction_bytes_written),
    ),
    (
        (
            "strata_remote_fenced",
            Kind::Gauge,
            "1 if another broker claimed this partition's catalog.",
        ),
        |p, _| flag(p.stats.fenced.load(Ordering::Relaxed)),
    ),
    (
        (
            "strata_remote_log_size_bytes",
            Kind::Gauge,
            "Bytes of the partition in the object store.",
        ),
        |_, m| m.segments.iter().map(|s| s.size_bytes).sum::<u64>() as f64,
    ),
    (
        (
            "strata_remote_log_segments",
            Kind::Gauge,
            "Segments of the partition in the object store.",
        ),
        |_, m| m.segments.len() as f64,
    ),
    (
        (
            "strata_remote_log_start_offset",
            Kind::Gauge,
            "First offset in the object store (-1: none).",
        ),
        |_, m| m.earliest_offset().unwrap_or(-1) as f64,
    ),
    (
        (
            "strata_remote_log_end_offset",
            Kind::Gauge,
            "Offset after the last tiered segment (-1: none).",
        ),
        |_, m| m.next_offset().unwrap_or(-1) as f64,
    ),
    (
        (
            "strata_local_segments_deleted_total",
            Kind::Counter,
            "Local segments deleted after upload (hot window).",
        ),
        |p, _| n(&p.stats.deleted_local_segments),
    ),
    (
        (
            "strata_remote_segments_deleted_total",
            Kind::Counter,
            "Remote segments deleted by total retention.",
        ),
        |p, _| n(&p.stats.deleted_remote_segments),
    ),
];

/// Broker-wide families of the historical read path.
const PREFETCH_FAMILIES: &[PrefetchFamily] = &[
    (
        (
            "strata_remote_fetch_bytes_total",
            Kind::Counter,
            "Record bytes served to fetches from remote segments.",
        ),
        |p| n(&p.stats.bytes_read),
    ),
    (
        (
            "strata_remote_fetch_reads_total",
            Kind::Counter,
            "Partition reads served by the historical read path.",
        ),
        |p| n(&p.stats.reads),
    ),
    (
        (
            "strata_remote_fetch_wait_seconds_total",
            Kind::Counter,
            "Time those reads took (fetches waited for them).",
        ),
        |p| n(&p.stats.read_wait_micros) / 1e6,
    ),
    (
        (
            "strata_remote_get_total",
            Kind::Counter,
            "GETs of segment chunks issued to the object store.",
        ),
        |p| n(&p.stats.gets),
    ),
    (
        (
            "strata_remote_get_bytes_total",
            Kind::Counter,
            "Bytes fetched by those GETs.",
        ),
        |p| n(&p.stats.get_bytes),
    ),
    (
        (
            "strata_remote_get_seconds_total",
            Kind::Counter,
            "Total latency of those GETs.",
        ),
        |p| n(&p.stats.get_micros) / 1e6,
    ),
    (
        ("strata_remote_get_errors_total", Kind::Counter, "Failed GETs."),
        |p| n(&p.stats.get_errors),
    ),
    (
        (
            "strata_remote_cache_hits_total",
            Kind::Counter,
            "Chunk lookups answered by the cache.",
        ),
        |p| n(&p.stats.cache_hits),
    ),
    (
        (
            "strata_remote_cache_misses_total",
            Kind::Counter,
            "Chunk lookups that needed a GET (or joined one in flight).",
        ),
        |p| n(&p.stats.cache_misses),
    ),
    (
        (
            "strata_remote_fetch_memory_reads_total",
            Kind::Counter,
            "Remote reads answered from memory (held read-ahead or the memory cache) without waiting.",
        ),
        |p| n(&p.stats.memory_reads),
    ),
    (
        (
            "strata_remote_readahead_chunks_total",
            Kind::Counter,
            "Chunks requested ahead of readers.",
        ),
        |p| n(&p.stats.readahead_chunks),
    ),
    (
        (
            "strata_remote_readahead_depth_chunks",
            Kind::Gauge,
            "Sum of the read-ahead windows of active readers.",
        ),
        |p| p.readahead_depth() as f64,
    ),
    (
        (
            "strata_remote_fetch_throttled_total",
            Kind::Counter,
            "Fetches whose remote partitions waited for remote.log.manager.fetch.max.bytes.per.second.",
        ),
        |p| n(&p.quota().throttled),
    ),
    (
        (
            "strata_remote_fetch_throttle_seconds_total",
            Kind::Counter,
            "Time those fetches waited for the quota.",
        ),
        |p| n(&p.quota().throttle_micros) / 1e6,
    ),
    (
        (
            "strata_remote_readahead_held_bytes",
            Kind::Gauge,
            "Read-ahead held for its readers or on its way (at most half the memory cache).",
        ),
        |p| p.readahead_held_bytes() as f64,
    ),
    (
        (
            "strata_remote_gets_in_flight",
            Kind::Gauge,
            "GETs in flight now.",
        ),
        |p| p.budget().snapshot().0 as f64,
    ),
    (
        (
            "strata_remote_reads_paused",
            Kind::Gauge,
            "Bulk-class reads waiting while the class is paused.",
        ),
        |p| p.budget().paused_reads() as f64,
    ),
    (
        (
            "strata_remote_bytes_in_flight",
            Kind::Gauge,
            "Bytes of GETs in flight now.",
        ),
        |p| p.budget().snapshot().1 as f64,
    ),
];

/// The transaction coordinator's families.
fn transaction_families(t: &TransactionCoordinator) -> Vec<Family> {
    let (ongoing, oldest_ms) = t.ongoing_summary(crate::clock::now_ms());
    let c = &t.counters;
    let mut aborted = family((
        "strata_transactions_aborted_total",
        Kind::Counter,
        "Transactions aborted, by cause: client (abort_transaction), timeout (open past transaction.timeout.ms; the producer is fenced), fencing (a new producer instance initialised the transactional id).",
    ));
    for (cause, v) in [
        ("client", &c.aborts_client),
        ("timeout", &c.aborts_timeout),
        ("fencing", &c.aborts_fencing),
    ] {
        aborted.push(vec![("cause", cause.to_string())], n(v));
    }
    vec![
        one(
            (
                "strata_transactions_ongoing",
                Kind::Gauge,
                "Open transactions (state Ongoing) on this coordinator.",
            ),
            ongoing as f64,
        ),
        one(
            (
                "strata_transaction_oldest_age_seconds",
                Kind::Gauge,
                "Age of the oldest open transaction; 0 when none is open.",
            ),
            oldest_ms as f64 / 1e3,
        ),
        one(
            (
                "strata_transactions_committed_total",
                Kind::Counter,
                "Transactions committed.",
            ),
            n(&c.commits),
        ),
        aborted,
    ]
}

/// Every family read from the broker's state now.
pub fn families(
    logs: &LogManager,
    commit_latency: &crate::commit_latency::CommitLatency,
    remote: Option<&TieredStorage>,
    txns: Option<&TransactionCoordinator>,
    groups: Option<&GroupCoordinator>,
    cluster: Option<&Cluster>,
) -> Vec<Family> {
    let mut families: Vec<Family> = LOG_FAMILIES.iter().map(|(d, _)| family(*d)).collect();
    let mut cleaner: Vec<Family> = CLEANER_FAMILIES.iter().map(|(d, _)| family(*d)).collect();
    for t in logs.topics() {
        for log in t.partitions() {
            let l = partition_labels(&t.name, log.partition());
            for (f, (_, value)) in families.iter_mut().zip(LOG_FAMILIES) {
                f.samples.push((l.clone(), value(&log)));
            }
            if log.config().compacted {
                let now = crate::clock::now_ms();
                let c = log.cleanability(now);
                for (f, (_, value)) in cleaner.iter_mut().zip(CLEANER_FAMILIES) {
                    f.samples.push((l.clone(), value(&log, c.as_ref(), now)));
                }
            }
        }
    }
    families.extend(cleaner);
    if let Some(t) = txns {
        families.extend(transaction_families(t));
    }
    families.push(histogram(
        (
            "strata_log_commit_seconds",
            Kind::Histogram,
            "Time from an append to the flush round that made it durable (the high watermark covering it), per round, over all partitions of user topics.",
        ),
        commit_latency.histogram(),
    ));
    if let Some(r) = remote {
        families.push(one(
            (
                "strata_object_store_available",
                Kind::Gauge,
                "1 if the last object store operation succeeded.",
            ),
            flag(r.manager.store_available()),
        ));
        let mut tiering: Vec<Family> = TIERING_FAMILIES.iter().map(|(d, _)| family(*d)).collect();
        for p in r.manager.partitions() {
            let l = partition_labels(&p.topic, p.partition);
            let m = p.manifest();
            for (f, (_, value)) in tiering.iter_mut().zip(TIERING_FAMILIES) {
                f.samples.push((l.clone(), value(&p, &m)));
            }
        }
        families.extend(tiering);
        let pf = &r.prefetcher;
        families.extend(
            PREFETCH_FAMILIES
                .iter()
                .map(|(d, value)| one(*d, value(pf))),
        );
        families.push(one(
            (
                "strata_remote_fetch_rate_limit_bytes_per_second",
                Kind::Gauge,
                "The rate history is served at most now: the lower of remote.log.manager.fetch.max.bytes.per.second and the adaptive limit; 0 when there is none.",
            ),
            pf.quota().effective_rate() as f64,
        ));
        {
            let g = r.adaptive.lock().unwrap_or_else(|e| e.into_inner());
            families.push(one(
                (
                    "strata_remote_adaptive_decreases_total",
                    Kind::Counter,
                    "Times the adaptive limit cut the history rate because commits slowed while history was served.",
                ),
                g.decreases as f64,
            ));
            families.push(one(
                (
                    "strata_remote_adaptive_quiet_commit_seconds",
                    Kind::Gauge,
                    "The commit latency (p99 while no history is served) the adaptive limit measures against; 0 until it has one.",
                ),
                g.quiet_latency().map_or(0.0, |d| d.as_secs_f64()),
            ));
        }
        let mut waiting = family((
            "strata_remote_gets_waiting",
            Kind::Gauge,
            "GETs waiting for a slot, per priority class.",
        ));
        let queued = pf.budget().snapshot().2;
        for c in strata_prefetch::PriorityClass::ALL {
            waiting.push(vec![("class", c.to_string())], queued[c as usize] as f64);
        }
        families.push(waiting);
    }
    families.extend(object_store_families());
    if let Some(g) = groups {
        families.extend(super::groups::families(g));
    }
    if let Some(c) = cluster {
        families.extend(crate::cluster::metrics::families(c));
    }
    families
}

/// Requests to the object store by kind, their failures and bytes: what
/// tiering and catch-ups cost, read off as requests and bytes per GiB.
fn object_store_families() -> Vec<Family> {
    use strata_catalog::counting_store::{RequestKind, STORE_REQUESTS};
    let mut requests = Family::counter(
        "strata_object_store_requests_total",
        "Requests made to the object store, by kind (PUT includes each multipart part and completion; LIST counts one per listing).",
    );
    let mut errors = Family::counter(
        "strata_object_store_request_errors_total",
        "Object store requests that failed (after the client's retries), by kind.",
    );
    let mut bytes = Family::counter(
        "strata_object_store_bytes_total",
        "Bytes sent to (PUT) or received from (GET) the object store, by kind.",
    );
    for kind in RequestKind::ALL {
        let (n, failed, b) = STORE_REQUESTS.get(kind);
        let l = vec![("kind", kind.name().to_string())];
        requests.push(l.clone(), n as f64);
        errors.push(l.clone(), failed as f64);
        bytes.push(l, b as f64);
    }
    vec![requests, errors, bytes]
}
