//! Broker settings of the cluster layer (membership, controller, and
//! later replication), under Kafka's names. Descriptions only, like
//! `defs.rs`; the cluster module reads the values.

use super::defs::{broker, ConfigDef, ConfigType, Validator};

fn any_rack(v: &str) -> Result<(), String> {
    if v.len() > 255 || v.chars().any(|c| c.is_control()) {
        return Err("a rack id is at most 255 printable characters".to_string());
    }
    Ok(())
}

pub const CLUSTER_BROKER_CONFIGS: &[ConfigDef] = &[
    broker(
        "broker.rack",
        ConfigType::String,
        "",
        Validator::Custom(any_rack),
        "The rack (or zone) of this broker: replicas of a partition are spread across racks, and consumers with client.rack fetch from a replica in theirs.",
    ),
    broker(
        "broker.session.timeout.ms",
        ConfigType::Int,
        "9000",
        Validator::IntAtLeast(1000),
        "How long after its last heartbeat a broker counts as gone (the lifetime of its lease in the metadata store).",
    ),
    broker(
        "unclean.leader.election.enable",
        ConfigType::Boolean,
        "false",
        Validator::Bool,
        "Let a live replica outside the ISR become leader when no in-sync replica is alive (it may lack acknowledged records: availability over durability).",
    ),
    broker(
        "broker.heartbeat.interval.ms",
        ConfigType::Int,
        "2000",
        Validator::IntAtLeast(100),
        "Time between a broker's heartbeats to the metadata store (lease keep-alives).",
    ),
];
