//! The group coordinator's `/metrics` families, per group and partition (an aggregate hides
//! the one stuck partition among hundreds): lag in records and in seconds
//! (the age of the oldest unconsumed record), the consume rate, the
//! catch-up estimate and whether the group is catching up at all, plus
//! each sampled partition's append rate and each group's rebalances. The
//! numbers come from the coordinator's lag sampler (`group/lag.rs`) for
//! groups this broker coordinates and partitions whose log it holds.
//!
//! Read-only.

use strata_common::metrics_family::{Family, Kind, Labels, MetricSource};

use super::coordinator::GroupCoordinator;
use super::lag::CatchUp;

fn labels(group: &str, topic: &str, partition: i32) -> Labels {
    vec![
        ("group", group.to_string()),
        ("topic", topic.to_string()),
        ("partition", partition.to_string()),
    ]
}

impl MetricSource for GroupCoordinator {
    fn families(&self) -> Vec<Family> {
        let mut lag = Family::gauge(
            "strata_consumer_group_lag_records",
            "Records between the group's committed offset and the partition's high watermark.",
        );
        let mut age = Family::gauge(
            "strata_consumer_group_lag_seconds",
            "Age of the oldest record the group has not consumed (by its batch's timestamp); 0 without lag. Absent when that record's batch could not be read (from this broker's disk, or from the partition's leader).",
        );
        let mut rate = Family::gauge(
            "strata_consumer_group_consume_rate_records_per_second",
            "How fast the group's committed offset advances, over group.lag.window.ms.",
        );
        let mut eta = Family::gauge(
            "strata_consumer_group_catch_up_seconds",
            "Time to drain the lag at the measured rates: lag / (consume rate - produce rate); 0 when caught up, +Inf when not catching up. Absent until measured over a quarter of group.lag.window.ms.",
        );
        let mut catching_up = Family::gauge(
            "strata_consumer_group_catching_up",
            "1 if the group is caught up or consumes faster than the partition grows, 0 if it is not catching up (alert on 0 with lag). Absent until measured.",
        );
        let now = self.clock.now_ms();
        for ((group, topic, partition), l) in self.lag.snapshot(now) {
            let ls = labels(&group, &topic, partition);
            lag.push(ls.clone(), l.lag_records as f64);
            if let Some(s) = l.lag_seconds {
                age.push(ls.clone(), s);
            }
            if let Some(r) = l.consume_rate {
                rate.push(ls.clone(), r);
            }
            match l.catch_up {
                CatchUp::CaughtUp => {
                    eta.push(ls.clone(), 0.0);
                    catching_up.push(ls, 1.0);
                }
                CatchUp::Draining { seconds } => {
                    eta.push(ls.clone(), seconds);
                    catching_up.push(ls, 1.0);
                }
                CatchUp::NotCatchingUp => {
                    eta.push(ls.clone(), f64::INFINITY);
                    catching_up.push(ls, 0.0);
                }
                CatchUp::Unknown => {}
            }
        }
        let mut append = Family::gauge(
            "strata_log_append_rate_records_per_second",
            "How fast the partition's high watermark advances, over group.lag.window.ms (partitions some group here has committed offsets on).",
        );
        for ((topic, partition), r) in self.lag.produce_rates() {
            append.push(
                strata_common::metrics_family::partition_labels(&topic, partition),
                r,
            );
        }
        let mut rebalances = Family::new(
            Kind::Counter,
            "strata_consumer_group_rebalances_total",
            "Rebalances completed (generations begun) per group since this coordinator loaded it; a steady climb is a member that keeps leaving (session or poll timeouts).",
        );
        for (group, n) in self.rebalances() {
            rebalances.push(vec![("group", group)], n as f64);
        }
        vec![lag, age, rate, eta, catching_up, append, rebalances]
    }
}
