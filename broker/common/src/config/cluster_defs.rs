//! Broker settings of the cluster layer (membership, controller and
//! replication), under Kafka's names. Descriptions only, like
//! `defs.rs`; the cluster module reads the values.

use super::defs::{broker, ConfigDef, ConfigType, Validator};

fn any_rack(v: &str) -> Result<(), String> {
    if v.len() > 255 || v.chars().any(|c| c.is_control()) {
        return Err("a rack id is at most 255 printable characters".to_string());
    }
    Ok(())
}

pub(crate) const CLUSTER_BROKER_CONFIGS: &[ConfigDef] = &[
    broker(
        "broker.rack",
        ConfigType::String,
        "",
        Validator::Custom(any_rack),
        "The rack (or zone) of this broker: replicas of a partition are spread across racks, and consumers with client.rack fetch from a replica in theirs.",
    ),
    broker(
        "replica.selector.class",
        ConfigType::String,
        super::checks::RACK_AWARE_SELECTOR,
        Validator::Custom(super::checks::check_replica_selector),
        "How a partition's leader picks the replica a consumer reads from (KIP-392): the rack-aware selector sends a consumer that sets client.rack to an in-sync replica in its rack; LeaderSelector keeps every consumer on the leader.",
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
        "controlled.shutdown.enable",
        ConfigType::Boolean,
        "true",
        Validator::Bool,
        "On SIGTERM, have the controller move this broker's leaderships to other in-sync replicas (and take it out of ISRs) before it stops, so a rolling restart fails no request.",
    ),
    broker(
        "controlled.shutdown.max.retries",
        ConfigType::Int,
        "3",
        Validator::IntAtLeast(1),
        "With controlled.shutdown.retry.backoff.ms, how long a controlled shutdown waits for its leaderships to move (retries times backoff) before stopping anyway.",
    ),
    broker(
        "controlled.shutdown.retry.backoff.ms",
        ConfigType::Long,
        "5000",
        Validator::LongAtLeast(0),
        "See controlled.shutdown.max.retries.",
    ),
    broker(
        "auto.leader.rebalance.enable",
        ConfigType::Boolean,
        "true",
        Validator::Bool,
        "Have the controller move leaderships back to each partition's preferred replica (its first) when a broker leads too few of the partitions that prefer it (after failovers and restarts).",
    ),
    broker(
        "leader.imbalance.check.interval.seconds",
        ConfigType::Long,
        "300",
        Validator::LongAtLeast(1),
        "How often the controller checks the leader balance (auto.leader.rebalance.enable).",
    ),
    broker(
        "leader.imbalance.per.broker.percentage",
        ConfigType::Int,
        "10",
        Validator::IntAtLeast(0),
        "The share of a broker's preferred partitions that may be led elsewhere (percent) before the controller moves them back.",
    ),
    broker(
        "broker.heartbeat.interval.ms",
        ConfigType::Int,
        "2000",
        Validator::IntAtLeast(100),
        "Time between a broker's heartbeats to the metadata store (lease keep-alives).",
    ),
    broker(
        "replica.lag.time.max.ms",
        ConfigType::Long,
        "30000",
        Validator::LongAtLeast(100),
        "A follower that has not caught up with the leader's log end for this long leaves the ISR (it rejoins once it holds everything up to the high watermark).",
    ),
    broker(
        "replica.slow.eviction.enable",
        ConfigType::Boolean,
        "true",
        Validator::Bool,
        "Take an in-sync follower out of the ISR when its fetch-to-ack p99 is far above its peers' (replica.slow.eviction.ratio), not only when it lags: one slow follower otherwise sets every acks=all write's latency. Never below min.insync.replicas; it rejoins after a healthy window.",
    ),
    broker(
        "replica.slow.eviction.ratio",
        ConfigType::Double,
        "3.0",
        Validator::DoubleBetween(1.5, 1000.0),
        "A follower is slow when its fetch-to-ack p99 exceeds this many times the median p99 of the other in-sync followers.",
    ),
    broker(
        "replica.slow.eviction.min.ms",
        ConfigType::Long,
        "100",
        Validator::LongAtLeast(1),
        "A follower whose fetch-to-ack p99 is below this is never slow, however fast its peers are.",
    ),
    broker(
        "replica.slow.eviction.window.ms",
        ConfigType::Long,
        "10000",
        Validator::LongAtLeast(1000),
        "The p99 is taken over this window; a follower taken out for latency rejoins after a whole window of healthy samples.",
    ),
    broker(
        "replica.fetch.max.bytes",
        ConfigType::Int,
        "1048576",
        Validator::IntAtLeast(1024),
        "Record bytes a follower asks for per partition in one fetch (a larger first batch is still sent whole).",
    ),
    broker(
        "replica.fetch.response.max.bytes",
        ConfigType::Int,
        "10485760",
        Validator::IntAtLeast(0),
        "Record bytes a follower asks for in one fetch across its partitions.",
    ),
    broker(
        "replica.fetch.wait.max.ms",
        ConfigType::Int,
        "500",
        Validator::IntAtLeast(0),
        "How long a leader holds a follower's fetch that finds nothing new (keep it below replica.lag.time.max.ms).",
    ),
    broker(
        "replica.fetch.backoff.ms",
        ConfigType::Int,
        "1000",
        Validator::IntAtLeast(0),
        "How long a follower waits before fetching again from a leader that failed or refused it.",
    ),
    broker(
        "replica.socket.timeout.ms",
        ConfigType::Int,
        "30000",
        Validator::IntAtLeast(1000),
        "How long a follower waits for a leader's answer beyond the fetch's own wait before it reconnects.",
    ),
    broker(
        "offsets.topic.replication.factor",
        ConfigType::Int,
        "3",
        Validator::IntAtLeast(1),
        "Replication factor of __consumer_offsets in a cluster; the controller creates the topic once this many brokers are live (a single broker keeps one copy).",
    ),
    broker(
        "transaction.state.log.replication.factor",
        ConfigType::Int,
        "3",
        Validator::IntAtLeast(1),
        "Replication factor of __transaction_state in a cluster; the controller creates the topic once this many brokers are live (a single broker keeps one copy).",
    ),
    broker(
        "transaction.state.log.min.isr",
        ConfigType::Int,
        "2",
        Validator::IntAtLeast(1),
        "min.insync.replicas of __transaction_state (capped at its replication factor).",
    ),
];
