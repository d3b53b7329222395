//! The cluster layer's Prometheus families, in the text format `/metrics`
//! serves: membership and the controller as this broker sees them, and the
//! partitions it leads (Kafka's `ActiveControllerCount`,
//! `OfflinePartitionsCount`, leader counts). Read-only.

use std::fmt::Write as _;

use super::Cluster;

fn gauge(out: &mut String, name: &str, help: &str, samples: &[(String, f64)]) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} gauge");
    for (labels, v) in samples {
        if labels.is_empty() {
            let _ = writeln!(out, "{name} {v}");
        } else {
            let _ = writeln!(out, "{name}{{{labels}}} {v}");
        }
    }
}

pub fn render(c: &Cluster) -> String {
    let snap = c.view.snapshot();
    let mut out = String::new();
    let one = |v: f64| vec![(String::new(), v)];
    gauge(
        &mut out,
        "strata_cluster_brokers",
        "Live brokers in this broker's view of the cluster.",
        &one(snap.brokers.len() as f64),
    );
    gauge(
        &mut out,
        "strata_cluster_active_controller",
        "1 if this broker is the controller.",
        &one(if c.is_controller() { 1.0 } else { 0.0 }),
    );
    gauge(
        &mut out,
        "strata_cluster_controller_id",
        "The controller's node id (-1: none).",
        &one(c.controller_id().map_or(-1.0, f64::from)),
    );
    gauge(
        &mut out,
        "strata_cluster_metadata_connected",
        "1 while this broker's watch on the metadata store is healthy.",
        &one(if snap.connected { 1.0 } else { 0.0 }),
    );
    let mut offline = 0usize;
    let mut led = Vec::new();
    for (topic, parts) in &snap.partitions {
        for (p, e) in parts.iter() {
            if e.state.leader < 0 {
                offline += 1;
            } else if e.state.leader == c.node_id {
                led.push((
                    format!("topic=\"{}\",partition=\"{p}\"", topic.replace('"', "\\\"")),
                    f64::from(e.state.leader_epoch),
                ));
            }
        }
    }
    gauge(
        &mut out,
        "strata_cluster_offline_partitions",
        "Partitions without a leader (no live in-sync replica).",
        &one(offline as f64),
    );
    gauge(
        &mut out,
        "strata_cluster_leader_partitions",
        "Partitions this broker leads.",
        &one(led.len() as f64),
    );
    gauge(
        &mut out,
        "strata_partition_leader_epoch",
        "The leader epoch of each partition this broker leads.",
        &led,
    );
    out
}
