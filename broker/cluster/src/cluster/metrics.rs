//! The cluster layer's Prometheus families: membership and the controller
//! as this broker sees them, and the partitions it leads (Kafka's
//! `ActiveControllerCount`, `OfflinePartitionsCount`, leader counts,
//! `UnderReplicatedPartitions`, `UnderMinIsrPartitionCount`, ISR shrinks
//! and expands, follower lag). Read-only.

use super::Cluster;
use strata_common::metrics_family::{partition_labels, Family, Kind, Labels, MetricSource};

fn family(
    kind: Kind,
    name: &'static str,
    help: &'static str,
    samples: Vec<(Labels, f64)>,
) -> Family {
    let mut f = Family::new(kind, name, help);
    f.samples = samples;
    f
}

fn with_replica(labels: &Labels, replica: i32) -> Labels {
    let mut l = labels.clone();
    l.push(("replica", replica.to_string()));
    l
}

impl MetricSource for Cluster {
    fn families(&self) -> Vec<Family> {
        families(self)
    }
}

fn families(c: &Cluster) -> Vec<Family> {
    let snap = c.view.snapshot();
    let mut out = Vec::new();
    let one = |v: f64| vec![(Vec::new(), v)];
    out.push(family(
        Kind::Gauge,
        "strata_cluster_brokers",
        "Live brokers in this broker's view of the cluster.",
        one(snap.brokers.len() as f64),
    ));
    out.push(family(
        Kind::Gauge,
        "strata_cluster_active_controller",
        "1 if this broker is the controller.",
        one(if c.is_controller() { 1.0 } else { 0.0 }),
    ));
    out.push(family(
        Kind::Gauge,
        "strata_cluster_controller_id",
        "The controller's node id (-1: none).",
        one(c.controller_id().map_or(-1.0, f64::from)),
    ));
    out.push(family(
        Kind::Gauge,
        "strata_cluster_metadata_connected",
        "1 while this broker's watch on the metadata store is healthy.",
        one(if snap.connected { 1.0 } else { 0.0 }),
    ));
    {
        use crate::replication::fetcher::{REPLICATED_BYTES, TIERED_STARTS};
        use crate::replication::read_replica::{FOLLOWER_READ_BYTES, PREFERRED_REPLICA_REDIRECTS};
        use std::sync::atomic::{AtomicU64, Ordering};
        let total = |c: &AtomicU64| one(c.load(Ordering::Relaxed) as f64);
        out.push(family(
            Kind::Counter,
            "strata_replica_fetched_bytes_total",
            "Record bytes this broker appended as a follower.",
            total(&REPLICATED_BYTES),
        ));
        out.push(family(
            Kind::Counter,
            "strata_replica_tiered_starts_total",
            "Partitions this broker began following at the bucket's end (KIP-1023).",
            total(&TIERED_STARTS),
        ));
        out.push(family(
        Kind::Counter,
            "strata_follower_read_bytes_total",
            "Record bytes this broker served to consumers as a follower (KIP-392: reads kept in the consumer's rack).",
            total(&FOLLOWER_READ_BYTES),
        ));
        out.push(family(
            Kind::Counter,
            "strata_preferred_read_replica_redirects_total",
            "Fetch answers in which this leader sent a consumer to a replica in its rack.",
            total(&PREFERRED_REPLICA_REDIRECTS),
        ));
    }
    let mut offline = 0usize;
    let mut led = Vec::new();
    let (mut isr_size, mut shrinks, mut expands, mut lag) = (vec![], vec![], vec![], vec![]);
    let (mut slow, mut ack_p99) = (vec![], vec![]);
    let window = c
        .logs
        .broker_config()
        .settings()
        .replica
        .slow_eviction_window
        .max(std::time::Duration::from_secs(1));
    let (mut under_replicated, mut under_min_isr) = (0usize, 0usize);
    for (topic, parts) in &snap.partitions {
        for (p, e) in parts.iter() {
            if e.state.leader < 0 {
                offline += 1;
            } else if e.state.leader == c.node_id {
                let labels = partition_labels(topic, *p);
                led.push((labels.clone(), f64::from(e.state.leader_epoch)));
                isr_size.push((labels.clone(), e.state.isr.len() as f64));
                if e.state.isr.len() < e.state.replicas.len() {
                    under_replicated += 1;
                }
                let Some(partition) = c.logs.partition(topic, *p) else {
                    continue;
                };
                let log = partition.log();
                if (e.state.isr.len() as i32) < log.config().min_insync_replicas {
                    under_min_isr += 1;
                }
                let (s, x) = partition.isr_changes();
                shrinks.push((labels.clone(), s as f64));
                expands.push((labels.clone(), x as f64));
                slow.push((labels.clone(), partition.slow_evictions() as f64));
                for (replica, p99) in partition.follower_ack_p99s(window) {
                    ack_p99.push((with_replica(&labels, replica), p99.as_secs_f64()));
                }
                let end = log.log_end_offset();
                for (replica, f) in partition.follower_progress() {
                    let behind = if f.end < 0 { end } else { end - f.end };
                    lag.push((with_replica(&labels, replica), behind.max(0) as f64));
                }
            }
        }
    }
    out.push(family(
        Kind::Gauge,
        "strata_cluster_offline_partitions",
        "Partitions without a leader (no live in-sync replica).",
        one(offline as f64),
    ));
    out.push(family(
        Kind::Gauge,
        "strata_cluster_leader_partitions",
        "Partitions this broker leads.",
        one(led.len() as f64),
    ));
    out.push(family(
        Kind::Gauge,
        "strata_cluster_under_replicated_partitions",
        "Partitions this broker leads whose ISR is smaller than their replica set.",
        one(under_replicated as f64),
    ));
    out.push(family(
        Kind::Gauge,
        "strata_cluster_under_min_isr_partitions",
        "Partitions this broker leads whose ISR is below min.insync.replicas (acks=all is refused).",
        one(under_min_isr as f64),
    ));
    out.push(family(
        Kind::Gauge,
        "strata_partition_leader_epoch",
        "The leader epoch of each partition this broker leads.",
        led,
    ));
    out.push(family(
        Kind::Gauge,
        "strata_partition_in_sync_replicas",
        "ISR size of each partition this broker leads.",
        isr_size,
    ));
    out.push(family(
        Kind::Counter,
        "strata_partition_isr_shrinks_total",
        "ISR shrinks this broker wrote as leader (flapping is the first sign of a bad disk or network).",
        shrinks,
    ));
    out.push(family(
        Kind::Counter,
        "strata_partition_isr_expands_total",
        "ISR expansions this broker wrote as leader.",
        expands,
    ));
    out.push(family(
        Kind::Counter,
        "strata_partition_isr_slow_evictions_total",
        "Followers this leader took out of the ISR for their fetch-to-ack latency (replica.slow.eviction.*), not for lag.",
        slow,
    ));
    out.push(family(
        Kind::Gauge,
        "strata_partition_follower_ack_latency_p99_seconds",
        "Each follower's p99 time from the leader's append to the follower's fetch past it (the latency it adds to acks=all), over replica.slow.eviction.window.ms.",
        ack_p99,
    ));
    out.push(family(
        Kind::Gauge,
        "strata_partition_follower_lag_records",
        "Records between this leader's log end and each follower's durable end.",
        lag,
    ));
    out
}
