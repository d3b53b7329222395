//! The broker's commit-latency histogram: how long appends to user topics
//! took to become durable, per flush round. The log manager's flush rounds
//! report into it (the storage crate's `CommitLatencySink`); the adaptive
//! history rate (`remote/adaptive_rate.rs`) and `/metrics`
//! (`strata_log_commit_seconds`) read it. The histogram is the history
//! rate governor's (`strata_prefetch::latency`).

use std::time::Duration;

use strata_common::metrics_family::{Family, HistogramSample, MetricSource};
use strata_prefetch::latency::LatencyHistogram;

use crate::log::group_commit::CommitLatencySink;

#[derive(Debug, Default)]
pub struct CommitLatency(LatencyHistogram);

impl CommitLatency {
    pub fn histogram(&self) -> &LatencyHistogram {
        &self.0
    }
}

impl CommitLatencySink for CommitLatency {
    fn record(&self, latency: Duration) {
        self.0.record(latency);
    }
}

impl MetricSource for CommitLatency {
    fn families(&self) -> Vec<Family> {
        let s = self.0.snapshot();
        vec![Family::histogram(
            "strata_log_commit_seconds",
            "Time from an append to the flush round that made it durable (the high watermark covering it), per round, over all partitions of user topics.",
            HistogramSample::from_cumulative(
                &s.cumulative_octaves(),
                s.sum_micros as f64 / 1e6,
                s.count(),
            ),
        )]
    }
}
