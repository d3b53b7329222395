//! Tiered storage's `/metrics` families: upload progress, copy lag,
//! errors and fencing per tiered partition, the historical read path
//! (bytes, GETs, the cache, the budget and its classes, the rate limit and
//! the adaptive limit), the object store's availability, and the requests
//! made to the object store by kind.
//!
//! Read-only: it never changes what it reads.

use std::sync::atomic::Ordering;

use strata_catalog::PartitionManifest;
use strata_common::metrics_family::{partition_labels, value_of, Def, Family, Kind, MetricSource};
use strata_prefetch::Prefetcher;
use strata_tiering::RemotePartition;

use super::TieredStorage;

type TieringFamily = (Def, fn(&RemotePartition, &PartitionManifest) -> f64);
type PrefetchFamily = (Def, fn(&Prefetcher) -> f64);

fn flag(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}

/// Per-partition families of tiered partitions.
const TIERING_FAMILIES: &[TieringFamily] = &[
    (
        (
            "strata_remote_upload_segments_total",
            Kind::Counter,
            "Segments uploaded and recorded in the catalog by this process.",
        ),
        |p, _| value_of(&p.stats.uploaded_segments),
    ),
    (
        (
            "strata_remote_upload_bytes_total",
            Kind::Counter,
            "Log bytes uploaded by this process.",
        ),
        |p, _| value_of(&p.stats.uploaded_bytes),
    ),
    (
        (
            "strata_remote_upload_errors_total",
            Kind::Counter,
            "Failed tiering rounds (after retries).",
        ),
        |p, _| value_of(&p.stats.upload_errors),
    ),
    (
        (
            "strata_remote_copy_lag_segments",
            Kind::Gauge,
            "Sealed local segments not yet in the object store.",
        ),
        |p, _| value_of(&p.stats.copy_lag_segments),
    ),
    (
        (
            "strata_remote_copy_lag_bytes",
            Kind::Gauge,
            "Bytes of sealed local segments not yet in the object store.",
        ),
        |p, _| value_of(&p.stats.copy_lag_bytes),
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
        |p, _| value_of(&p.stats.compaction_bytes_read),
    ),
    (
        (
            "strata_remote_compaction_written_bytes_total",
            Kind::Counter,
            "Bytes of cleaned segments the cleaner uploaded in place of remote ones.",
        ),
        |p, _| value_of(&p.stats.compaction_bytes_written),
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
        |p, _| value_of(&p.stats.deleted_local_segments),
    ),
    (
        (
            "strata_remote_segments_deleted_total",
            Kind::Counter,
            "Remote segments deleted by total retention.",
        ),
        |p, _| value_of(&p.stats.deleted_remote_segments),
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
        |p| value_of(&p.stats.bytes_read),
    ),
    (
        (
            "strata_remote_fetch_reads_total",
            Kind::Counter,
            "Partition reads served by the historical read path.",
        ),
        |p| value_of(&p.stats.reads),
    ),
    (
        (
            "strata_remote_fetch_wait_seconds_total",
            Kind::Counter,
            "Time those reads took (fetches waited for them).",
        ),
        |p| value_of(&p.stats.read_wait_micros) / 1e6,
    ),
    (
        (
            "strata_remote_get_total",
            Kind::Counter,
            "GETs of segment chunks issued to the object store.",
        ),
        |p| value_of(&p.stats.gets),
    ),
    (
        (
            "strata_remote_get_bytes_total",
            Kind::Counter,
            "Bytes fetched by those GETs.",
        ),
        |p| value_of(&p.stats.get_bytes),
    ),
    (
        (
            "strata_remote_get_seconds_total",
            Kind::Counter,
            "Total latency of those GETs.",
        ),
        |p| value_of(&p.stats.get_micros) / 1e6,
    ),
    (
        ("strata_remote_get_errors_total", Kind::Counter, "Failed GETs."),
        |p| value_of(&p.stats.get_errors),
    ),
    (
        (
            "strata_remote_cache_hits_total",
            Kind::Counter,
            "Chunk lookups answered by the cache.",
        ),
        |p| value_of(&p.stats.cache_hits),
    ),
    (
        (
            "strata_remote_cache_misses_total",
            Kind::Counter,
            "Chunk lookups that needed a GET (or joined one in flight).",
        ),
        |p| value_of(&p.stats.cache_misses),
    ),
    (
        (
            "strata_remote_fetch_memory_reads_total",
            Kind::Counter,
            "Remote reads answered from memory (held read-ahead or the memory cache) without waiting.",
        ),
        |p| value_of(&p.stats.memory_reads),
    ),
    (
        (
            "strata_remote_readahead_chunks_total",
            Kind::Counter,
            "Chunks requested ahead of readers.",
        ),
        |p| value_of(&p.stats.readahead_chunks),
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
        |p| value_of(&p.quota().throttled),
    ),
    (
        (
            "strata_remote_fetch_throttle_seconds_total",
            Kind::Counter,
            "Time those fetches waited for the quota.",
        ),
        |p| value_of(&p.quota().throttle_micros) / 1e6,
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

impl MetricSource for TieredStorage {
    fn families(&self) -> Vec<Family> {
        let mut families = Vec::new();
        families.push(Family::one_of(
            &(
                "strata_object_store_available",
                Kind::Gauge,
                "1 if the last object store operation succeeded.",
            ),
            flag(self.manager.store_available()),
        ));
        let mut tiering: Vec<Family> = TIERING_FAMILIES
            .iter()
            .map(|(d, _)| Family::of(d))
            .collect();
        for p in self.manager.partitions() {
            let l = partition_labels(&p.topic, p.partition);
            let m = p.manifest();
            for (f, (_, value)) in tiering.iter_mut().zip(TIERING_FAMILIES) {
                f.samples.push((l.clone(), value(&p, &m)));
            }
        }
        families.extend(tiering);
        let pf = &self.prefetcher;
        families.extend(
            PREFETCH_FAMILIES
                .iter()
                .map(|(d, value)| Family::one_of(d, value(pf))),
        );
        families.push(Family::one_of(
            &(
                "strata_remote_fetch_rate_limit_bytes_per_second",
                Kind::Gauge,
                "The rate history is served at most now: the lower of remote.log.manager.fetch.max.bytes.per.second and the adaptive limit; 0 when there is none.",
            ),
            pf.quota().effective_rate() as f64,
        ));
        {
            let g = self.adaptive.lock().unwrap_or_else(|e| e.into_inner());
            families.push(Family::one_of(
                &(
                    "strata_remote_adaptive_decreases_total",
                    Kind::Counter,
                    "Times the adaptive limit cut the history rate because commits slowed while history was served.",
                ),
                g.decreases as f64,
            ));
            families.push(Family::one_of(
                &(
                    "strata_remote_adaptive_quiet_commit_seconds",
                    Kind::Gauge,
                    "The commit latency (p99 while no history is served) the adaptive limit measures against; 0 until it has one.",
                ),
                g.quiet_latency().map_or(0.0, |d| d.as_secs_f64()),
            ));
        }
        let mut waiting = Family::of(&(
            "strata_remote_gets_waiting",
            Kind::Gauge,
            "GETs waiting for a slot, per priority class.",
        ));
        let queued = pf.budget().snapshot().2;
        for c in strata_prefetch::PriorityClass::ALL {
            waiting.push(vec![("class", c.to_string())], queued[c as usize] as f64);
        }
        families.push(waiting);
        families
    }
}

/// Requests to the object store by kind, their failures and bytes: what
/// tiering and catch-ups cost, read off as requests and bytes per GiB.
/// Process-wide (tiering, catch-ups and recovery all count there), so
/// registered whether or not tiering is on.
#[derive(Debug, Default)]
pub struct ObjectStoreRequests;

impl MetricSource for ObjectStoreRequests {
    fn families(&self) -> Vec<Family> {
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
}
