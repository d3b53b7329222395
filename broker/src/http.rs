//! The admin/metrics HTTP API on `--http-listen`: `GET /metrics` in the
//! Prometheus text format (per-partition offsets and sizes, tiering
//! progress and errors, object store availability) and `GET /health`.
//! Read-only; it never changes broker state.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;

use strata_catalog::PartitionManifest;
use strata_prefetch::Prefetcher;
use strata_tiering::RemotePartition;

use crate::log::cleaner::Cleanability;
use crate::log::PartitionLog;
use crate::log_manager::LogManager;
use crate::remote::TieredStorage;
use crate::txn::TransactionCoordinator;

#[derive(Debug, Clone)]
pub struct HttpState {
    pub logs: Arc<LogManager>,
    pub remote: Option<Arc<TieredStorage>>,
    pub txns: Option<Arc<TransactionCoordinator>>,
    pub cluster: Option<Arc<crate::cluster::Cluster>>,
}

/// Serves until `shutdown` flips to true.
pub async fn serve(listener: TcpListener, state: HttpState, mut shutdown: watch::Receiver<bool>) {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/health", get(|| async { "ok\n" }))
        .with_state(state);
    let stop = async move {
        let _ = shutdown.wait_for(|s| *s).await;
    };
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(stop)
        .await
    {
        tracing::error!(error = %e, "HTTP API stopped");
    }
}

async fn metrics(State(s): State<HttpState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        render(&s),
    )
}

/// Escapes a label value.
fn esc(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

struct Family {
    name: &'static str,
    kind: &'static str,
    help: &'static str,
    samples: Vec<(String, f64)>,
    /// Samples whose name is the family's plus a suffix (a histogram's
    /// `_bucket`, `_sum`, `_count`): (suffix, labels, value).
    suffixed: Vec<(&'static str, String, f64)>,
}

/// A metric family: name, type, help.
type Def = (&'static str, &'static str, &'static str);
/// A family and how to read its value.
type LogFamily = (Def, fn(&PartitionLog) -> f64);
type TieringFamily = (Def, fn(&RemotePartition, &PartitionManifest) -> f64);
type PrefetchFamily = (Def, fn(&Prefetcher) -> f64);
/// A compacted log's family: the log, how dirty it is now (read once per
/// scrape), and the clock.
type CleanerFamily = (Def, fn(&PartitionLog, Option<&Cleanability>, i64) -> f64);

fn family((name, kind, help): Def) -> Family {
    Family {
        name,
        kind,
        help,
        samples: Vec::new(),
        suffixed: Vec::new(),
    }
}

/// A histogram family from a latency histogram, in seconds.
fn histogram(def: Def, h: &strata_prefetch::latency::LatencyHistogram) -> Family {
    let mut f = family(def);
    let s = h.snapshot();
    for (le, count) in s.cumulative_octaves() {
        f.suffixed
            .push(("_bucket", format!("le=\"{le}\""), count as f64));
    }
    let total = s.count() as f64;
    f.suffixed.push(("_bucket", "le=\"+Inf\"".into(), total));
    f.suffixed
        .push(("_sum", String::new(), s.sum_micros as f64 / 1e6));
    f.suffixed.push(("_count", String::new(), total));
    f
}

fn one(def: Def, v: f64) -> Family {
    let mut f = family(def);
    f.samples.push((String::new(), v));
    f
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
            "gauge",
            "Next offset to be written.",
        ),
        |l| l.log_end_offset() as f64,
    ),
    (
        (
            "strata_high_watermark",
            "gauge",
            "Offset below which records are durable and readable.",
        ),
        |l| l.high_watermark() as f64,
    ),
    (
        (
            "strata_log_start_offset",
            "gauge",
            "First readable offset (remote included).",
        ),
        |l| l.log_start_offset() as f64,
    ),
    (
        (
            "strata_local_log_start_offset",
            "gauge",
            "First offset on local disk.",
        ),
        |l| l.local_log_start_offset() as f64,
    ),
    (
        (
            "strata_local_log_size_bytes",
            "gauge",
            "Bytes of the partition on local disk.",
        ),
        |l| l.size_bytes() as f64,
    ),
    (
        (
            "strata_local_log_segments",
            "gauge",
            "Segments on local disk.",
        ),
        |l| l.segment_count() as f64,
    ),
    (
        (
            "strata_log_last_stable_offset_lag",
            "gauge",
            "Records between the last stable offset and the high watermark: what an open transaction holds back from read_committed consumers.",
        ),
        |l| (l.high_watermark() - l.last_stable_offset()).max(0) as f64,
    ),
    (
        (
            "strata_log_ongoing_transactions",
            "gauge",
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
            "gauge",
            "Share of the cleanable log (remote part included) not yet cleaned; a pass is due at min.cleanable.dirty.ratio.",
        ),
        |_, c, _| c.map_or(0.0, |c| c.dirty_ratio),
    ),
    (
        (
            "strata_log_cleaner_lag_seconds",
            "gauge",
            "Age of the oldest dirty segment (by its newest record); 0 when nothing is dirty. A pass is forced at max.compaction.lag.ms.",
        ),
        |_, c, now| c.map_or(0.0, |c| (now - c.dirty_since_ms).max(0) as f64 / 1e3),
    ),
    (
        (
            "strata_log_cleaner_passes_total",
            "counter",
            "Cleaning passes over the partition.",
        ),
        |l, _, _| n(&l.cleaner_stats.passes),
    ),
    (
        (
            "strata_log_cleaner_errors_total",
            "counter",
            "Cleaning passes that failed (the log was left as it was).",
        ),
        |l, _, _| n(&l.cleaner_stats.errors),
    ),
    (
        (
            "strata_log_cleaner_read_bytes_total",
            "counter",
            "Bytes the cleaner read: the dirty section for its map, then every segment it rewrote.",
        ),
        |l, _, _| n(&l.cleaner_stats.bytes_read),
    ),
    (
        (
            "strata_log_cleaner_written_bytes_total",
            "counter",
            "Bytes of cleaned segments the cleaner wrote.",
        ),
        |l, _, _| n(&l.cleaner_stats.bytes_written),
    ),
    (
        (
            "strata_log_cleaner_removed_records_total",
            "counter",
            "Records compaction removed (superseded values, expired tombstones).",
        ),
        |l, _, _| n(&l.cleaner_stats.records_removed),
    ),
    (
        (
            "strata_log_cleaner_remote_segments_replaced_total",
            "counter",
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
            "counter",
            "Segments uploaded and recorded in the catalog by this process.",
        ),
        |p, _| n(&p.stats.uploaded_segments),
    ),
    (
        (
            "strata_remote_upload_bytes_total",
            "counter",
            "Log bytes uploaded by this process.",
        ),
        |p, _| n(&p.stats.uploaded_bytes),
    ),
    (
        (
            "strata_remote_upload_errors_total",
            "counter",
            "Failed tiering rounds (after retries).",
        ),
        |p, _| n(&p.stats.upload_errors),
    ),
    (
        (
            "strata_remote_copy_lag_segments",
            "gauge",
            "Sealed local segments not yet in the object store.",
        ),
        |p, _| n(&p.stats.copy_lag_segments),
    ),
    (
        (
            "strata_remote_copy_lag_bytes",
            "gauge",
            "Bytes of sealed local segments not yet in the object store.",
        ),
        |p, _| n(&p.stats.copy_lag_bytes),
    ),
    (
        (
            "strata_remote_compaction_read_bytes_total",
            "counter",
            "Bytes of remote segments the cleaner read from the object store (a local copy costs nothing).",
        ),
        |p, _| n(&p.stats.compaction_bytes_read),
    ),
    (
        (
            "strata_remote_compaction_written_bytes_total",
            "counter",
            "Bytes of cleaned segments the cleaner uploaded in place of remote ones.",
        ),
        |p, _| n(&p.stats.compaction_bytes_written),
    ),
    (
        (
            "strata_remote_fenced",
            "gauge",
            "1 if another broker claimed this partition's catalog.",
        ),
        |p, _| flag(p.stats.fenced.load(Ordering::Relaxed)),
    ),
    (
        (
            "strata_remote_log_size_bytes",
            "gauge",
            "Bytes of the partition in the object store.",
        ),
        |_, m| m.segments.iter().map(|s| s.size_bytes).sum::<u64>() as f64,
    ),
    (
        (
            "strata_remote_log_segments",
            "gauge",
            "Segments of the partition in the object store.",
        ),
        |_, m| m.segments.len() as f64,
    ),
    (
        (
            "strata_remote_log_start_offset",
            "gauge",
            "First offset in the object store (-1: none).",
        ),
        |_, m| m.earliest_offset().unwrap_or(-1) as f64,
    ),
    (
        (
            "strata_remote_log_end_offset",
            "gauge",
            "Offset after the last tiered segment (-1: none).",
        ),
        |_, m| m.next_offset().unwrap_or(-1) as f64,
    ),
    (
        (
            "strata_local_segments_deleted_total",
            "counter",
            "Local segments deleted after upload (hot window).",
        ),
        |p, _| n(&p.stats.deleted_local_segments),
    ),
    (
        (
            "strata_remote_segments_deleted_total",
            "counter",
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
            "counter",
            "Record bytes served to fetches from remote segments.",
        ),
        |p| n(&p.stats.bytes_read),
    ),
    (
        (
            "strata_remote_fetch_reads_total",
            "counter",
            "Partition reads served by the historical read path.",
        ),
        |p| n(&p.stats.reads),
    ),
    (
        (
            "strata_remote_fetch_wait_seconds_total",
            "counter",
            "Time those reads took (fetches waited for them).",
        ),
        |p| n(&p.stats.read_wait_micros) / 1e6,
    ),
    (
        (
            "strata_remote_get_total",
            "counter",
            "GETs of segment chunks issued to the object store.",
        ),
        |p| n(&p.stats.gets),
    ),
    (
        (
            "strata_remote_get_bytes_total",
            "counter",
            "Bytes fetched by those GETs.",
        ),
        |p| n(&p.stats.get_bytes),
    ),
    (
        (
            "strata_remote_get_seconds_total",
            "counter",
            "Total latency of those GETs.",
        ),
        |p| n(&p.stats.get_micros) / 1e6,
    ),
    (
        ("strata_remote_get_errors_total", "counter", "Failed GETs."),
        |p| n(&p.stats.get_errors),
    ),
    (
        (
            "strata_remote_cache_hits_total",
            "counter",
            "Chunk lookups answered by the cache.",
        ),
        |p| n(&p.stats.cache_hits),
    ),
    (
        (
            "strata_remote_cache_misses_total",
            "counter",
            "Chunk lookups that needed a GET (or joined one in flight).",
        ),
        |p| n(&p.stats.cache_misses),
    ),
    (
        (
            "strata_remote_fetch_memory_reads_total",
            "counter",
            "Remote reads answered from memory (held read-ahead or the memory cache) without waiting.",
        ),
        |p| n(&p.stats.memory_reads),
    ),
    (
        (
            "strata_remote_readahead_chunks_total",
            "counter",
            "Chunks requested ahead of readers.",
        ),
        |p| n(&p.stats.readahead_chunks),
    ),
    (
        (
            "strata_remote_readahead_depth_chunks",
            "gauge",
            "Sum of the read-ahead windows of active readers.",
        ),
        |p| p.readahead_depth() as f64,
    ),
    (
        (
            "strata_remote_fetch_throttled_total",
            "counter",
            "Fetches whose remote partitions waited for remote.log.manager.fetch.max.bytes.per.second.",
        ),
        |p| n(&p.quota().throttled),
    ),
    (
        (
            "strata_remote_fetch_throttle_seconds_total",
            "counter",
            "Time those fetches waited for the quota.",
        ),
        |p| n(&p.quota().throttle_micros) / 1e6,
    ),
    (
        (
            "strata_remote_readahead_held_bytes",
            "gauge",
            "Read-ahead held for its readers or on its way (at most half the memory cache).",
        ),
        |p| p.readahead_held_bytes() as f64,
    ),
    (
        (
            "strata_remote_gets_in_flight",
            "gauge",
            "GETs in flight now.",
        ),
        |p| p.budget().snapshot().0 as f64,
    ),
    (
        (
            "strata_remote_reads_paused",
            "gauge",
            "Bulk-class reads waiting while the class is paused.",
        ),
        |p| p.budget().paused_reads() as f64,
    ),
    (
        (
            "strata_remote_bytes_in_flight",
            "gauge",
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
        "counter",
        "Transactions aborted, by cause: client (abort_transaction), timeout (open past transaction.timeout.ms; the producer is fenced), fencing (a new producer instance initialised the transactional id).",
    ));
    for (cause, v) in [
        ("client", &c.aborts_client),
        ("timeout", &c.aborts_timeout),
        ("fencing", &c.aborts_fencing),
    ] {
        aborted.samples.push((format!("cause=\"{cause}\""), n(v)));
    }
    vec![
        one(
            (
                "strata_transactions_ongoing",
                "gauge",
                "Open transactions (state Ongoing) on this coordinator.",
            ),
            ongoing as f64,
        ),
        one(
            (
                "strata_transaction_oldest_age_seconds",
                "gauge",
                "Age of the oldest open transaction; 0 when none is open.",
            ),
            oldest_ms as f64 / 1e3,
        ),
        one(
            (
                "strata_transactions_committed_total",
                "counter",
                "Transactions committed.",
            ),
            n(&c.commits),
        ),
        aborted,
    ]
}

fn labels(topic: &str, partition: i32) -> String {
    format!("topic=\"{}\",partition=\"{partition}\"", esc(topic))
}

pub fn render(s: &HttpState) -> String {
    let mut families: Vec<Family> = LOG_FAMILIES.iter().map(|(d, _)| family(*d)).collect();
    let mut cleaner: Vec<Family> = CLEANER_FAMILIES.iter().map(|(d, _)| family(*d)).collect();
    for t in s.logs.topics() {
        for log in t.partitions() {
            let l = labels(&t.name, log.partition());
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
    if let Some(t) = &s.txns {
        families.extend(transaction_families(t));
    }
    families.push(histogram(
        (
            "strata_log_commit_seconds",
            "histogram",
            "Time from an append to the flush round that made it durable (the high watermark covering it), per round, over all partitions of user topics.",
        ),
        s.logs.commit_latency(),
    ));
    if let Some(r) = &s.remote {
        families.push(one(
            (
                "strata_object_store_available",
                "gauge",
                "1 if the last object store operation succeeded.",
            ),
            flag(r.manager.store_available()),
        ));
        let mut tiering: Vec<Family> = TIERING_FAMILIES.iter().map(|(d, _)| family(*d)).collect();
        for p in r.manager.partitions() {
            let l = labels(&p.topic, p.partition);
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
                "gauge",
                "The rate history is served at most now: the lower of remote.log.manager.fetch.max.bytes.per.second and the adaptive limit; 0 when there is none.",
            ),
            pf.quota().effective_rate() as f64,
        ));
        {
            let g = r.adaptive.lock().unwrap_or_else(|e| e.into_inner());
            families.push(one(
                (
                    "strata_remote_adaptive_decreases_total",
                    "counter",
                    "Times the adaptive limit cut the history rate because commits slowed while history was served.",
                ),
                g.decreases as f64,
            ));
            families.push(one(
                (
                    "strata_remote_adaptive_quiet_commit_seconds",
                    "gauge",
                    "The commit latency (p99 while no history is served) the adaptive limit measures against; 0 until it has one.",
                ),
                g.quiet_latency().map_or(0.0, |d| d.as_secs_f64()),
            ));
        }
        let mut waiting = family((
            "strata_remote_gets_waiting",
            "gauge",
            "GETs waiting for a slot, per priority class.",
        ));
        let queued = pf.budget().snapshot().2;
        for c in strata_prefetch::PriorityClass::ALL {
            waiting
                .samples
                .push((format!("class=\"{c}\""), queued[c as usize] as f64));
        }
        families.push(waiting);
    }
    let mut out = String::new();
    for f in families {
        let _ = writeln!(out, "# HELP {} {}", f.name, f.help);
        let _ = writeln!(out, "# TYPE {} {}", f.name, f.kind);
        for (labels, v) in f.samples {
            if labels.is_empty() {
                let _ = writeln!(out, "{} {v}", f.name);
            } else {
                let _ = writeln!(out, "{}{{{labels}}} {v}", f.name);
            }
        }
        for (suffix, labels, v) in f.suffixed {
            if labels.is_empty() {
                let _ = writeln!(out, "{}{suffix} {v}", f.name);
            } else {
                let _ = writeln!(out, "{}{suffix}{{{labels}}} {v}", f.name);
            }
        }
    }
    if let Some(c) = &s.cluster {
        out.push_str(&crate::cluster::metrics::render(c));
    }
    out
}
