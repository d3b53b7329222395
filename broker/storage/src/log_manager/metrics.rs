//! The log manager's `/metrics` families, read from its partitions at
//! each scrape: every partition log's offsets and sizes, and the log
//! cleaner's progress on compacted partitions.
//!
//! Read-only: it never changes what it reads.

use strata_common::metrics_family::{partition_labels, value_of, Def, Family, Kind, MetricSource};

use super::LogManager;
use crate::log::cleaner::Cleanability;
use crate::log::cleaner_state::CleanerState;
use crate::log::PartitionLog;

/// A family and how to read its value.
type LogFamily = (Def, fn(&PartitionLog) -> f64);
/// A compacted log's family: the cleaner's state for the log, how dirty
/// the log is now (read once per scrape), and the wall clock.
type CleanerFamily = (Def, fn(&CleanerState, Option<&Cleanability>, i64) -> f64);

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
        |l, _, _| value_of(&l.stats.passes),
    ),
    (
        (
            "strata_log_cleaner_errors_total",
            Kind::Counter,
            "Cleaning passes that failed (the log was left as it was).",
        ),
        |l, _, _| value_of(&l.stats.errors),
    ),
    (
        (
            "strata_log_cleaner_read_bytes_total",
            Kind::Counter,
            "Bytes the cleaner read: the dirty section for its map, then every segment it rewrote.",
        ),
        |l, _, _| value_of(&l.stats.bytes_read),
    ),
    (
        (
            "strata_log_cleaner_written_bytes_total",
            Kind::Counter,
            "Bytes of cleaned segments the cleaner wrote.",
        ),
        |l, _, _| value_of(&l.stats.bytes_written),
    ),
    (
        (
            "strata_log_cleaner_removed_records_total",
            Kind::Counter,
            "Records compaction removed (superseded values, expired tombstones).",
        ),
        |l, _, _| value_of(&l.stats.records_removed),
    ),
    (
        (
            "strata_log_cleaner_remote_segments_replaced_total",
            Kind::Counter,
            "Segments in the object store replaced by their cleaned version, or removed.",
        ),
        |l, _, _| value_of(&l.stats.remote_segments_replaced),
    ),
];

impl MetricSource for LogManager {
    fn families(&self) -> Vec<Family> {
        let mut families: Vec<Family> = LOG_FAMILIES.iter().map(|(d, _)| Family::of(d)).collect();
        let mut cleaner: Vec<Family> = CLEANER_FAMILIES
            .iter()
            .map(|(d, _)| Family::of(d))
            .collect();
        for t in self.topics() {
            for hosted in t.hosted() {
                let log = hosted.log();
                let l = partition_labels(&t.name, log.partition());
                for (f, (_, value)) in families.iter_mut().zip(LOG_FAMILIES) {
                    f.samples.push((l.clone(), value(log)));
                }
                if log.config().compacted {
                    let now = log.clock().now_ms();
                    let c = log.cleanability(hosted.cleaner.tiered_part().as_deref(), now);
                    for (f, (_, value)) in cleaner.iter_mut().zip(CLEANER_FAMILIES) {
                        f.samples
                            .push((l.clone(), value(&hosted.cleaner, c.as_ref(), now)));
                    }
                }
            }
        }
        families.extend(cleaner);
        families
    }
}
