//! The table of settings Strata understands, under Kafka's names: each
//! setting's type, default, validation and documentation. Topic settings
//! name the broker setting that supplies their default (Kafka's synonyms).
//!
//! This module only describes settings; it holds no values. The value
//! checks the table names live in `checks.rs`.

use super::checks::{
    check_compression_type, check_gzip_level, check_header_list, check_message_format_version,
    check_nice, check_priority_groups, check_priority_shares, check_topic_list,
};

/// Kafka's `ConfigType` as reported by DescribeConfigs v3+.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean = 1,
    String = 2,
    Int = 3,
    Long = 5,
    Double = 6,
    List = 7,
    /// A secret: DescribeConfigs answers it as sensitive, with no value.
    Password = 9,
}

/// How a value is checked.
#[derive(Debug, Clone, Copy)]
pub enum Validator {
    /// A 64-bit integer at least this large.
    LongAtLeast(i64),
    /// A 32-bit integer at least this large.
    IntAtLeast(i32),
    /// A 32-bit integer in this inclusive range.
    IntBetween(i32, i32),
    /// A number in this inclusive range.
    DoubleBetween(f64, f64),
    Bool,
    /// One of these values (case-sensitive, as Kafka's).
    OneOf(&'static [&'static str]),
    /// A comma-separated list of these values.
    ListOf(&'static [&'static str]),
    /// Checked by a function returning why the value is wrong.
    Custom(fn(&str) -> Result<(), String>),
}

#[derive(Debug, Clone, Copy)]
pub struct ConfigDef {
    pub name: &'static str,
    pub kind: ConfigType,
    pub default: &'static str,
    pub validator: Validator,
    /// For topic settings: the broker setting that provides the default.
    pub broker_synonym: Option<&'static str>,
    pub doc: &'static str,
}

impl ConfigDef {
    /// A number of Kafka type `kind` within `[min, max]`, in Kafka's words.
    fn check_range<T>(&self, value: &str, min: T, max: T, kind: &str) -> Result<(), String>
    where
        T: PartialOrd + std::fmt::Display + std::str::FromStr,
    {
        let invalid = |why: String| {
            Err(format!(
                "Invalid value {value} for configuration {}: {why}",
                self.name
            ))
        };
        match value.trim().parse::<T>() {
            Ok(n) if n < min => invalid(format!("Value must be at least {min}")),
            Ok(n) if n > max => invalid(format!("Value must be no more than {max}")),
            Ok(_) => Ok(()),
            Err(_) => invalid(format!("Not a number of type {kind}")),
        }
    }

    /// Checks `value`, returning Kafka's style of message on failure.
    pub fn validate(&self, value: &str) -> Result<(), String> {
        let v = value.trim();
        match self.validator {
            Validator::LongAtLeast(min) => match v.parse::<i64>() {
                Ok(n) if n >= min => Ok(()),
                Ok(_) => Err(format!(
                    "Invalid value {value} for configuration {}: Value must be at least {min}",
                    self.name
                )),
                Err(_) => Err(format!(
                    "Invalid value {value} for configuration {}: Not a number of type LONG",
                    self.name
                )),
            },
            Validator::IntAtLeast(min) => match v.parse::<i32>() {
                Ok(n) if n >= min => Ok(()),
                Ok(_) => Err(format!(
                    "Invalid value {value} for configuration {}: Value must be at least {min}",
                    self.name
                )),
                Err(_) => Err(format!(
                    "Invalid value {value} for configuration {}: Not a number of type INT",
                    self.name
                )),
            },
            Validator::IntBetween(min, max) => self.check_range(value, min, max, "INT"),
            Validator::DoubleBetween(min, max) => {
                if v.parse::<f64>().is_ok_and(f64::is_nan) {
                    return Err(format!(
                        "Invalid value {value} for configuration {}: Value must be at least {min}",
                        self.name
                    ));
                }
                self.check_range(value, min, max, "DOUBLE")
            }
            Validator::Bool => match v.to_ascii_lowercase().as_str() {
                "true" | "false" => Ok(()),
                _ => Err(format!(
                    "Invalid value {value} for configuration {}: Expected value to be either true or false",
                    self.name
                )),
            },
            Validator::OneOf(allowed) => {
                if allowed.contains(&v) {
                    Ok(())
                } else {
                    Err(format!(
                        "Invalid value {value} for configuration {}: String must be one of: {}",
                        self.name,
                        allowed.join(", ")
                    ))
                }
            }
            Validator::Custom(check) => check(v).map_err(|why| {
                format!("Invalid value {value} for configuration {}: {why}", self.name)
            }),
            Validator::ListOf(allowed) => {
                let items: Vec<&str> = v.split(',').map(str::trim).collect();
                match items.iter().find(|i| !allowed.contains(i)) {
                    None if !v.is_empty() => Ok(()),
                    _ => Err(format!(
                        "Invalid value {value} for configuration {}: supported values are {}",
                        self.name,
                        allowed.join(", ")
                    )),
                }
            }
        }
    }
}

const DAY_7_MS: &str = "604800000";

/// Topic-level settings (DescribeConfigs on a topic lists exactly these).
pub const TOPIC_CONFIGS: &[ConfigDef] = &[
    ConfigDef {
        name: "cleanup.policy",
        kind: ConfigType::List,
        default: "delete",
        validator: Validator::ListOf(&["delete", "compact"]),
        broker_synonym: Some("log.cleanup.policy"),
        doc: "\"delete\" removes old segments by retention.ms / retention.bytes; \"compact\" keeps the latest record of each key (docs/compaction.md); \"compact,delete\" both. A compacted topic is tiered like any other; a segment goes to the bucket once the cleaner has cleaned it, and passes clean the bucket's part too.",
    },
    ConfigDef {
        name: "compression.type",
        kind: ConfigType::String,
        default: "producer",
        validator: Validator::Custom(check_compression_type),
        broker_synonym: Some("compression.type"),
        doc: "The codec batches are stored with: \"producer\" keeps the producer's bytes; uncompressed, gzip, snappy, lz4 or zstd re-encodes batches sent with another codec on append (docs/batch-validation.md).",
    },
    ConfigDef {
        name: "index.interval.bytes",
        kind: ConfigType::Int,
        default: "4096",
        validator: Validator::IntAtLeast(0),
        broker_synonym: Some("log.index.interval.bytes"),
        doc: "Bytes of log between two entries of the offset index.",
    },
    ConfigDef {
        name: "max.message.bytes",
        kind: ConfigType::Int,
        default: "1048588",
        validator: Validator::IntAtLeast(0),
        broker_synonym: Some("message.max.bytes"),
        doc: "Largest record batch size allowed, in bytes.",
    },
    ConfigDef {
        name: "message.timestamp.type",
        kind: ConfigType::String,
        default: "CreateTime",
        validator: Validator::OneOf(&["CreateTime", "LogAppendTime"]),
        broker_synonym: Some("log.message.timestamp.type"),
        doc: "Whether record timestamps are the producer's (CreateTime) or the broker's (LogAppendTime).",
    },
    ConfigDef {
        name: "min.insync.replicas",
        kind: ConfigType::Int,
        default: "1",
        validator: Validator::IntAtLeast(1),
        broker_synonym: Some("min.insync.replicas"),
        doc: "Replicas that must acknowledge an acks=all write; a single broker has one.",
    },
    ConfigDef {
        name: "retention.bytes",
        kind: ConfigType::Long,
        default: "-1",
        validator: Validator::LongAtLeast(-1),
        broker_synonym: Some("log.retention.bytes"),
        doc: "Maximum size of a partition before old segments are deleted (-1: no limit).",
    },
    ConfigDef {
        name: "retention.ms",
        kind: ConfigType::Long,
        default: DAY_7_MS,
        validator: Validator::LongAtLeast(-1),
        broker_synonym: Some("log.retention.ms"),
        doc: "Maximum age of a segment's newest record before the segment is deleted (-1: no limit).",
    },
    ConfigDef {
        name: "segment.bytes",
        kind: ConfigType::Int,
        default: "1073741824",
        validator: Validator::IntAtLeast(14),
        broker_synonym: Some("log.segment.bytes"),
        doc: "Size at which the active segment is rolled.",
    },
    ConfigDef {
        name: "segment.index.bytes",
        kind: ConfigType::Int,
        default: "10485760",
        validator: Validator::IntAtLeast(4),
        broker_synonym: Some("log.index.size.max.bytes"),
        doc: "Maximum size of a segment's offset index; a full index rolls the segment.",
    },
    ConfigDef {
        name: "segment.ms",
        kind: ConfigType::Long,
        default: DAY_7_MS,
        validator: Validator::LongAtLeast(1),
        broker_synonym: Some("log.roll.ms"),
        doc: "Age after which the active segment is rolled even if not full; with tiered storage, also the bound on how long a record may wait before its segment is sealed and uploaded.",
    },
    ConfigDef {
        name: "remote.storage.enable",
        kind: ConfigType::Boolean,
        default: "true",
        validator: Validator::Bool,
        broker_synonym: None,
        doc: "Upload sealed segments to the object store (when the broker's remote.log.storage.system.enable is on). Turning it off stops new uploads; what is already remote stays readable.",
    },
    ConfigDef {
        name: "local.retention.ms",
        kind: ConfigType::Long,
        default: "-2",
        validator: Validator::LongAtLeast(-2),
        broker_synonym: Some("log.local.retention.ms"),
        doc: "Hot window: how long uploaded segments stay on local disk (-2: as long as retention.ms; -1: forever). Must not exceed retention.ms.",
    },
    ConfigDef {
        name: "local.retention.bytes",
        kind: ConfigType::Long,
        default: "-2",
        validator: Validator::LongAtLeast(-2),
        broker_synonym: Some("log.local.retention.bytes"),
        doc: "Hot window by size: local bytes kept per partition before uploaded segments are deleted locally (-2: as retention.bytes; -1: no limit). Must not exceed retention.bytes.",
    },
    ConfigDef {
        name: "message.timestamp.before.max.ms",
        kind: ConfigType::Long,
        default: LONG_MAX,
        validator: Validator::LongAtLeast(0),
        broker_synonym: Some("log.message.timestamp.before.max.ms"),
        doc: "With CreateTime, how far in the past a record's timestamp may be, relative to the broker's clock, before the batch is refused (INVALID_TIMESTAMP).",
    },
    ConfigDef {
        name: "message.timestamp.after.max.ms",
        kind: ConfigType::Long,
        // Kafka 4's default (KIP-937): one hour (3.9: Long.MAX_VALUE).
        default: "3600000",
        validator: Validator::LongAtLeast(0),
        broker_synonym: Some("log.message.timestamp.after.max.ms"),
        doc: "With CreateTime, how far in the future a record's timestamp may be, relative to the broker's clock, before the batch is refused (INVALID_TIMESTAMP). Default one hour, as in Kafka 4 (KIP-937; Kafka 3.9: Long.MAX_VALUE).",
    },
    ConfigDef {
        name: "message.timestamp.difference.max.ms",
        kind: ConfigType::Long,
        default: LONG_MAX,
        validator: Validator::LongAtLeast(0),
        broker_synonym: Some("log.message.timestamp.difference.max.ms"),
        doc: "[DEPRECATED in Kafka 3.9, removed in 4.0] Bound on a record timestamp's distance from the broker's clock in both directions, used for message.timestamp.before.max.ms and message.timestamp.after.max.ms where those are left at their default.",
    },
    ConfigDef {
        name: "message.format.version",
        kind: ConfigType::String,
        default: "3.0-IV1",
        validator: Validator::Custom(check_message_format_version),
        broker_synonym: Some("log.message.format.version"),
        doc: "[DEPRECATED, ignored, as in Kafka 3.9 from inter-broker protocol 3.0] Batches are always stored as record batch v2.",
    },
    ConfigDef {
        name: "message.downconversion.enable",
        kind: ConfigType::Boolean,
        default: "false",
        validator: Validator::OneOf(&["false"]),
        broker_synonym: Some("log.message.downconversion.enable"),
        doc: "[DEPRECATED, as in Kafka 3.9] Whether Fetch v0-v3 may get stored batches down-converted to message sets v0/v1. Strata never down-converts (Kafka 3.9's behaviour with false: those fetches get UNSUPPORTED_VERSION), so only false is accepted.",
    },
    ConfigDef {
        name: "min.cleanable.dirty.ratio",
        kind: ConfigType::Double,
        default: "0.5",
        validator: Validator::DoubleBetween(0.0, 1.0),
        broker_synonym: Some("log.cleaner.min.cleanable.ratio"),
        doc: "A compacted partition is cleaned once the share of its log not yet cleaned reaches this (or a record is older than max.compaction.lag.ms).",
    },
    ConfigDef {
        name: "min.compaction.lag.ms",
        kind: ConfigType::Long,
        default: "0",
        validator: Validator::LongAtLeast(0),
        broker_synonym: Some("log.cleaner.min.compaction.lag.ms"),
        doc: "A record stays uncompacted at least this long after it was written (by the segment's newest timestamp).",
    },
    ConfigDef {
        name: "max.compaction.lag.ms",
        kind: ConfigType::Long,
        default: LONG_MAX,
        validator: Validator::LongAtLeast(1),
        broker_synonym: Some("log.cleaner.max.compaction.lag.ms"),
        doc: "A record is compacted at most this long after it was written, whatever the dirty ratio (segments are rolled for it).",
    },
    ConfigDef {
        name: "delete.retention.ms",
        kind: ConfigType::Long,
        default: "86400000",
        validator: Validator::LongAtLeast(0),
        broker_synonym: Some("log.cleaner.delete.retention.ms"),
        doc: "How long a tombstone (a record with a null value) of a compacted topic is kept after the first cleaning pass that saw it, so consumers can see the delete.",
    },
    ConfigDef {
        name: "file.delete.delay.ms",
        kind: ConfigType::Long,
        default: "60000",
        validator: Validator::LongAtLeast(0),
        broker_synonym: Some("log.segment.delete.delay.ms"),
        doc: "How long the bucket keeps the objects of a remote segment that log compaction replaced, for reads planned from the previous manifest. Local files are unlinked at once, since a reader that has one open keeps reading it.",
    },
    ConfigDef {
        name: "compression.gzip.level",
        kind: ConfigType::Int,
        default: "-1",
        validator: Validator::Custom(check_gzip_level),
        broker_synonym: Some("compression.gzip.level"),
        doc: "The level batches re-encoded as gzip are written with (compression.type=gzip): 1 to 9, or -1 for zlib's default (6).",
    },
    ConfigDef {
        name: "compression.lz4.level",
        kind: ConfigType::Int,
        default: "9",
        validator: Validator::IntBetween(1, 17),
        broker_synonym: Some("compression.lz4.level"),
        doc: "The level batches re-encoded as lz4 are written with (compression.type=lz4): 9, the default, is LZ4's fast mode, as Kafka's; any other level its high-compression mode.",
    },
    ConfigDef {
        name: "compression.zstd.level",
        kind: ConfigType::Int,
        default: "3",
        validator: Validator::IntBetween(-131072, 22),
        broker_synonym: Some("compression.zstd.level"),
        doc: "The level batches re-encoded as zstd are written with (compression.type=zstd).",
    },
    ConfigDef {
        name: "quorum.ack.enable",
        kind: ConfigType::Boolean,
        default: "false",
        validator: Validator::Bool,
        broker_synonym: None,
        doc: "Complete acks=all writes once min.insync.replicas replicas (the leader among them) hold them, not the whole ISR, so one slow follower stops setting produce latency; leaders are then elected only among replicas proven to hold every acknowledged record (docs/quorum-acks.md). Set when the topic is created; in a cluster only.",
    },
    ConfigDef {
        name: "dlq.enable",
        kind: ConfigType::Boolean,
        default: "false",
        validator: Validator::Bool,
        broker_synonym: None,
        doc: "Marks the topic as a dead-letter queue (so does a name ending in .dlq): its records are counted per reason header (strata_dlq_records_total), and the broker warns when its retention is shorter than a source topic's or when records older than dlq.unconsumed.warn.ms were consumed by no group (Strata's; docs/dlq.md).",
    },
    ConfigDef {
        name: "dlq.source.topics",
        kind: ConfigType::List,
        default: "",
        validator: Validator::Custom(check_topic_list),
        broker_synonym: None,
        doc: "For a dead-letter topic: the topics its records come from, comma-separated, whose retention it must not undercut. Also found from the .dlq naming convention (orders.dlq for orders) and from the records' dlq.source_topic headers.",
    },
];

const LONG_MAX: &str = "9223372036854775807";

/// Broker-level settings (`--set`, the TOML file, DescribeConfigs on the broker).
pub const BROKER_CONFIGS: &[ConfigDef] = &[
    broker(
        "node.id",
        ConfigType::Int,
        "0",
        Validator::IntAtLeast(0),
        "This broker's id.",
    ),
    broker(
        "num.partitions",
        ConfigType::Int,
        "1",
        Validator::IntAtLeast(1),
        "Partitions of an auto-created topic or one created with -1 partitions.",
    ),
    broker(
        "default.replication.factor",
        ConfigType::Int,
        "1",
        Validator::IntAtLeast(1),
        "Replication factor of auto-created topics; a single broker supports 1.",
    ),
    broker(
        "auto.create.topics.enable",
        ConfigType::Boolean,
        "true",
        Validator::Bool,
        "Create a topic when a client asks for its metadata.",
    ),
    broker(
        "delete.topic.enable",
        ConfigType::Boolean,
        "true",
        Validator::Bool,
        "Allow DeleteTopics.",
    ),
    broker(
        "socket.request.max.bytes",
        ConfigType::Int,
        "104857600",
        Validator::IntAtLeast(1024),
        "Largest request frame accepted; a larger one closes the connection.",
    ),
    broker(
        "log.segment.open.files.max",
        ConfigType::Int,
        "0",
        Validator::IntAtLeast(0),
        "File handles of sealed segments kept open at once (least recently read ones are closed and reopened on demand); 0: the smaller of 4096 and an eighth of the open-file limit. Active segments keep one each besides.",
    ),
    broker(
        "log.retention.check.interval.ms",
        ConfigType::Long,
        "300000",
        Validator::LongAtLeast(1),
        "How often retention is enforced.",
    ),
    broker(
        "log.flush.offset.checkpoint.interval.ms",
        ConfigType::Int,
        "60000",
        Validator::IntAtLeast(1),
        "How often the recovery-point checkpoint is written.",
    ),
    broker(
        "log.retention.hours",
        ConfigType::Int,
        "168",
        Validator::IntAtLeast(-1),
        "Retention in hours (used when log.retention.ms and log.retention.minutes are unset).",
    ),
    broker(
        "log.retention.minutes",
        ConfigType::Int,
        "",
        Validator::IntAtLeast(-1),
        "Retention in minutes (used when log.retention.ms is unset).",
    ),
    broker(
        "log.roll.hours",
        ConfigType::Int,
        "168",
        Validator::IntAtLeast(1),
        "Segment roll age in hours (used when log.roll.ms is unset).",
    ),
    broker(
        "offsets.topic.num.partitions",
        ConfigType::Int,
        "50",
        Validator::IntAtLeast(1),
        "Partitions of the internal __consumer_offsets topic (fixed once created).",
    ),
    broker(
        "offsets.topic.segment.bytes",
        ConfigType::Int,
        "104857600",
        Validator::IntAtLeast(1024),
        "Segment size of __consumer_offsets (a compacted topic: the log cleaner cleans its sealed segments).",
    ),
    broker(
        "offsets.retention.minutes",
        ConfigType::Int,
        "10080",
        Validator::IntAtLeast(1),
        "How long committed offsets of an empty group are kept.",
    ),
    broker(
        "offsets.retention.check.interval.ms",
        ConfigType::Long,
        "600000",
        Validator::LongAtLeast(1),
        "How often expired offsets are removed.",
    ),
    broker(
        "offsets.commit.timeout.ms",
        ConfigType::Int,
        "5000",
        Validator::IntAtLeast(1),
        "How long an offset commit may wait to become durable.",
    ),
    broker(
        "transaction.state.log.num.partitions",
        ConfigType::Int,
        "50",
        Validator::IntAtLeast(1),
        "Partitions of the internal __transaction_state topic (fixed once created).",
    ),
    broker(
        "transaction.state.log.segment.bytes",
        ConfigType::Int,
        "104857600",
        Validator::IntAtLeast(1024),
        "Segment size of __transaction_state (compacted by the log cleaner).",
    ),
    broker(
        "transaction.max.timeout.ms",
        ConfigType::Int,
        "900000",
        Validator::IntAtLeast(1),
        "Largest transaction.timeout.ms a producer may ask for (InitProducerId fails with INVALID_TRANSACTION_TIMEOUT above it).",
    ),
    broker(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        ConfigType::Int,
        "10000",
        Validator::IntAtLeast(1),
        "How often transactions open longer than their timeout are aborted (the producer is fenced).",
    ),
    broker(
        "transaction.partition.verification.enable",
        ConfigType::Boolean,
        "true",
        Validator::Bool,
        "KIP-890: before a producer's first transactional write to a partition, its leader asks the transaction coordinator whether the partition was added to the transaction (else INVALID_TXN_STATE).",
    ),
    broker(
        "transactional.id.expiration.ms",
        ConfigType::Int,
        "604800000",
        Validator::IntAtLeast(1),
        "How long a transactional id with no open transaction and no activity is kept.",
    ),
    broker(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        ConfigType::Int,
        "3600000",
        Validator::IntAtLeast(1),
        "How often expired transactional ids are removed.",
    ),
    broker(
        "offset.metadata.max.bytes",
        ConfigType::Int,
        "4096",
        Validator::IntAtLeast(0),
        "Largest metadata string accepted with a committed offset.",
    ),
    broker(
        "group.min.session.timeout.ms",
        ConfigType::Int,
        "6000",
        Validator::IntAtLeast(0),
        "Smallest session timeout a group member may ask for.",
    ),
    broker(
        "group.max.session.timeout.ms",
        ConfigType::Int,
        "1800000",
        Validator::IntAtLeast(0),
        "Largest session timeout a group member may ask for.",
    ),
    broker(
        "group.lag.sample.interval.ms",
        ConfigType::Long,
        "5000",
        Validator::LongAtLeast(100),
        "How often the group coordinator samples each group's committed offsets and the high watermarks of partitions on this broker, for lag, lag age, consume and produce rates and the catch-up estimate (Strata's; Kafka has none).",
    ),
    broker(
        "group.lag.window.ms",
        ConfigType::Long,
        "60000",
        Validator::LongAtLeast(1000),
        "The window over which consume and produce rates are measured for the catch-up estimate; a rate needs samples over a quarter of it (Strata's).",
    ),
    broker(
        "dlq.reason.headers",
        ConfigType::List,
        "dlq.reason,error.reason,error.class,error.type,error.code,error.message,error.*,__connect.errors.exception.class.name,kafka_dlt-exception-fqcn",
        Validator::Custom(check_header_list),
        "The headers a dead-letter record's reason is read from, in order; the first present names the reason (strata_dlq_records_total{reason}, strata dlq inspect).",
    ),
    broker(
        "dlq.unconsumed.warn.ms",
        ConfigType::Long,
        "86400000",
        Validator::LongAtLeast(1000),
        "Warn when a dead-letter topic holds a record this old that no consumer group has consumed: a dead-letter queue nobody reads is a slower way to lose data.",
    ),
    broker(
        "dlq.check.interval.ms",
        ConfigType::Long,
        "10000",
        Validator::LongAtLeast(100),
        "How often dead-letter topics' new records are counted per reason and their warnings checked.",
    ),
    broker(
        "group.initial.rebalance.delay.ms",
        ConfigType::Int,
        "3000",
        Validator::IntAtLeast(0),
        "How long the first rebalance of an empty group waits for more members.",
    ),
    synonym("log.cleanup.policy", 0),
    synonym("compression.type", 1),
    synonym("log.index.interval.bytes", 2),
    synonym("message.max.bytes", 3),
    synonym("log.message.timestamp.type", 4),
    synonym("min.insync.replicas", 5),
    synonym("log.retention.bytes", 6),
    synonym("log.retention.ms", 7),
    synonym("log.segment.bytes", 8),
    synonym("log.index.size.max.bytes", 9),
    synonym("log.roll.ms", 10),
    synonym("log.local.retention.ms", 12),
    synonym("log.local.retention.bytes", 13),
    synonym("log.message.timestamp.before.max.ms", 14),
    synonym("log.message.timestamp.after.max.ms", 15),
    synonym("log.message.timestamp.difference.max.ms", 16),
    synonym("log.message.format.version", 17),
    synonym("log.message.downconversion.enable", 18),
    synonym("log.cleaner.min.cleanable.ratio", 19),
    synonym("log.cleaner.min.compaction.lag.ms", 20),
    synonym("log.cleaner.max.compaction.lag.ms", 21),
    synonym("log.cleaner.delete.retention.ms", 22),
    synonym("log.segment.delete.delay.ms", 23),
    synonym("compression.gzip.level", 24),
    synonym("compression.lz4.level", 25),
    synonym("compression.zstd.level", 26),
    broker(
        "log.cleaner.enable",
        ConfigType::Boolean,
        "true",
        Validator::Bool,
        "Whether the log cleaner runs: compacted topics keep every record while it is off.",
    ),
    broker(
        "log.cleaner.threads",
        ConfigType::Int,
        "1",
        Validator::IntAtLeast(1),
        "Partitions cleaned at once.",
    ),
    broker(
        "log.cleaner.threads.nice",
        ConfigType::Int,
        "10",
        Validator::Custom(check_nice),
        "Scheduling niceness of the log cleaner's threads (Linux): when CPU runs short, request threads serving producers and tail readers run first. 0: same priority.",
    ),
    broker(
        "log.cleaner.io.max.bytes.per.second",
        ConfigType::Double,
        "1.7976931348623157E308",
        Validator::DoubleBetween(1.0, f64::MAX),
        "The most bytes per second the cleaners read and write together, so compaction does not take the disk from producers and readers.",
    ),
    broker(
        "log.cleaner.dedupe.buffer.size",
        ConfigType::Long,
        "134217728",
        Validator::LongAtLeast(1 << 20),
        "Memory for the key → latest offset maps of all cleaner threads (about 32 bytes per key): a pass covers as many keys as fit, the rest waits for the next.",
    ),
    broker(
        "log.cleaner.backoff.ms",
        ConfigType::Long,
        "15000",
        Validator::LongAtLeast(0),
        "How long a cleaner sleeps when no partition needs cleaning.",
    ),
    broker(
        "remote.log.storage.system.enable",
        ConfigType::Boolean,
        "true",
        Validator::Bool,
        "Tiered storage on this broker: sealed segments of topics with remote.storage.enable go to --object-store, and reads below the local log start are served from it.",
    ),
    broker(
        "remote.log.manager.task.interval.ms",
        ConfigType::Long,
        "30000",
        Validator::LongAtLeast(10),
        "How often each partition is checked for segments to seal (segment.ms), upload, and delete locally or remotely.",
    ),
    broker(
        "remote.log.manager.copier.thread.pool.size",
        ConfigType::Int,
        "4",
        Validator::IntAtLeast(1),
        "Segment uploads in flight at once, across all partitions.",
    ),
    broker(
        "remote.log.upload.multipart.threshold.bytes",
        ConfigType::Long,
        "16777216",
        Validator::LongAtLeast(5242880),
        "Segment files larger than this are uploaded in parts (multipart upload); smaller ones in one PUT.",
    ),
    broker(
        "remote.log.upload.part.bytes",
        ConfigType::Long,
        "8388608",
        Validator::LongAtLeast(5242880),
        "Part size of multipart uploads (S3 requires at least 5 MiB for every part but the last).",
    ),
    broker(
        "remote.fetch.chunk.bytes",
        ConfigType::Int,
        "4194304",
        Validator::IntAtLeast(4096),
        "Size of one ranged GET (and one cache entry) of the historical read path.",
    ),
    broker(
        "remote.fetch.max.concurrent.gets",
        ConfigType::Int,
        "32",
        Validator::IntAtLeast(1),
        "GETs of the historical read path in flight at once, all readers together.",
    ),
    broker(
        "remote.fetch.max.bytes.in.flight",
        ConfigType::Long,
        "268435456",
        Validator::LongAtLeast(4096),
        "Bytes of GETs of the historical read path in flight at once.",
    ),
    broker(
        "remote.fetch.readahead.max.chunks",
        ConfigType::Int,
        "16",
        Validator::IntAtLeast(0),
        "Largest read-ahead window of one reading stream, in chunks; 0: no read-ahead (each read fetches the chunks it needs, one at a time).",
    ),
    broker(
        "remote.fetch.cache.memory.bytes",
        ConfigType::Long,
        "268435456",
        Validator::LongAtLeast(0),
        "Memory for cached chunks of remote segments.",
    ),
    broker(
        "remote.fetch.cache.disk.bytes",
        ConfigType::Long,
        "0",
        Validator::LongAtLeast(0),
        "Local disk (in remote.fetch.cache.dir) for cached chunks of remote segments; 0: memory only.",
    ),
    broker(
        "remote.fetch.cache.dir",
        ConfigType::String,
        "",
        Validator::Custom(|_| Ok(())),
        "Directory of the disk cache of remote chunks; empty: <data-dir>/remote-cache. Best on a disk the log does not use: the cache's writes slow the log's fsyncs.",
    ),
    broker(
        "remote.fetch.cache.disk.write.bytes.per.second",
        ConfigType::Long,
        "33554432",
        Validator::LongAtLeast(0),
        "Most bytes per second written into the disk cache of remote chunks; chunks evicted from memory beyond it are dropped, so a catch-up never loads the disk the log's fsyncs need. 0: no limit.",
    ),
    broker(
        "remote.fetch.cache.disk.writeback.ms",
        ConfigType::Long,
        "100",
        Validator::LongAtLeast(0),
        "How often the disk cache's newly written pages are handed to the disk, so they go out in small pieces instead of one burst every 30 s that the log's fsyncs would queue behind. 0: leave them to the kernel's flusher.",
    ),
    broker(
        "remote.fetch.threads",
        ConfigType::Int,
        "2",
        Validator::IntAtLeast(1),
        "Threads of the historical read path's own runtime.",
    ),
    broker(
        "remote.fetch.threads.nice",
        ConfigType::Int,
        "10",
        Validator::Custom(check_nice),
        "Scheduling niceness of the historical read path's threads (Linux): when CPU runs short, request threads serving producers and tail readers run first. 0: same priority.",
    ),
    broker(
        "remote.fetch.priority.groups",
        ConfigType::String,
        "",
        Validator::Custom(check_priority_groups),
        "Priority class of consumer groups (or client ids) reading history: GROUP=CLASS,... with CLASS critical, standard or bulk; others are standard. Dynamic.",
    ),
    broker(
        "remote.fetch.priority.shares",
        ConfigType::String,
        "critical=50,standard=35,bulk=15",
        Validator::Custom(check_priority_shares),
        "Reserved share of the historical read path's GET slots per priority class. Dynamic.",
    ),
    broker(
        "remote.fetch.bulk.paused",
        ConfigType::Boolean,
        "false",
        Validator::Bool,
        "Pause historical reads of the bulk class (fetches of bulk readers wait and return empty). Dynamic.",
    ),
    broker(
        "remote.log.manager.fetch.max.bytes.per.second",
        ConfigType::Long,
        "9223372036854775807",
        Validator::LongAtLeast(1),
        "Most bytes per second served from remote segments to all fetches together (KIP-956); a fetch that finds it used up waits for it within its max wait, or returns its local partitions only. The default means no limit. Dynamic.",
    ),
    broker(
        "remote.fetch.adaptive.enable",
        ConfigType::Boolean,
        "true",
        Validator::Bool,
        "Whether the broker limits the rate at which history is served while producers are writing, lowering it when appends take longer to become durable than they do without history reads and raising it when they do not (docs/adaptive-history-rate.md). remote.log.manager.fetch.max.bytes.per.second still caps it. Dynamic.",
    ),
    broker(
        "remote.fetch.adaptive.min.bytes.per.second",
        ConfigType::Long,
        "8388608",
        Validator::LongAtLeast(1),
        "The lowest rate the adaptive limit sets: a catch-up always progresses at least this fast, however busy the hot path is. Dynamic.",
    ),
    broker(
        "remote.fetch.adaptive.headroom.percent",
        ConfigType::Int,
        "50",
        Validator::IntAtLeast(0),
        "How much slower than their quiet p99 (and at least 1 ms) appends may become durable before the adaptive limit slows history. Dynamic.",
    ),
    broker(
        "remote.log.index.cache.total.size.bytes",
        ConfigType::Long,
        "67108864",
        Validator::LongAtLeast(0),
        "Memory for cached offset and time indexes of remote segments.",
    ),
];

pub(super) const fn broker(
    name: &'static str,
    kind: ConfigType,
    default: &'static str,
    validator: Validator,
    doc: &'static str,
) -> ConfigDef {
    ConfigDef {
        name,
        kind,
        default,
        validator,
        broker_synonym: None,
        doc,
    }
}

/// The broker-level default of a topic setting, with the topic setting's
/// type, default and validation.
const fn synonym(name: &'static str, topic_index: usize) -> ConfigDef {
    let t = TOPIC_CONFIGS[topic_index];
    ConfigDef {
        name,
        kind: t.kind,
        default: t.default,
        validator: t.validator,
        broker_synonym: None,
        doc: t.doc,
    }
}

/// Broker settings that IncrementalAlterConfigs / AlterConfigs may change
/// at run time (persisted in the data dir).
pub const DYNAMIC_BROKER_CONFIGS: &[&str] = &[
    "remote.fetch.priority.groups",
    "remote.fetch.priority.shares",
    "remote.fetch.bulk.paused",
    "remote.log.manager.fetch.max.bytes.per.second",
    "remote.fetch.adaptive.enable",
    "remote.fetch.adaptive.min.bytes.per.second",
    "remote.fetch.adaptive.headroom.percent",
];

pub fn topic_def(name: &str) -> Option<&'static ConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synonyms_point_at_matching_topic_settings() {
        for t in TOPIC_CONFIGS {
            let Some(syn) = t.broker_synonym else {
                assert!(
                    [
                        "remote.storage.enable",
                        "quorum.ack.enable",
                        "dlq.enable",
                        "dlq.source.topics"
                    ]
                    .contains(&t.name),
                    "{} has no broker default",
                    t.name
                );
                continue;
            };
            let b = BROKER_CONFIGS.iter().find(|d| d.name == syn).unwrap();
            assert_eq!(b.default, t.default, "{}", t.name);
        }
    }

    #[test]
    fn validation_messages() {
        let d = topic_def("retention.ms").unwrap();
        assert!(d.validate("1000").is_ok());
        assert!(d.validate("-1").is_ok());
        assert!(d.validate("-5").unwrap_err().contains("at least -1"));
        assert!(d.validate("abc").unwrap_err().contains("LONG"));
        let p = topic_def("cleanup.policy").unwrap();
        assert!(p.validate("delete").is_ok());
        assert!(p.validate("compact").is_ok());
        assert!(p.validate("compact,delete").is_ok());
        assert!(p.validate("compact,archive").is_err());
        let r = topic_def("min.cleanable.dirty.ratio").unwrap();
        assert!(r.validate("0.01").is_ok());
        assert!(r.validate("1.5").unwrap_err().contains("no more than 1"));
        let c = topic_def("compression.type").unwrap();
        assert!(c.validate("ZSTD").is_ok());
        assert!(c
            .validate("brotli")
            .unwrap_err()
            .contains("case insensitive"));
        let f = topic_def("message.format.version").unwrap();
        assert!(f.validate("3.0-IV1").is_ok());
        let refused = f.validate("4.0").unwrap_err();
        assert!(refused.contains("not a valid version"), "{refused}");
        let t = topic_def("message.timestamp.type").unwrap();
        assert!(t.validate("LogAppendTime").is_ok());
        assert!(t.validate("Whenever").is_err());
    }
}
