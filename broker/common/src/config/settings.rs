//! The broker's static settings, typed and parsed once (issue 35, step 4).
//!
//! `BrokerConfig` keeps what the operator wrote, by name, for
//! DescribeConfigs; everything else reads `BrokerSettings`, built from it
//! when it is loaded. A setting is a field here, so a misspelled name is a
//! compile error at the point of use, and a name misspelled *here* fails
//! every config load (and so every test) instead of reading as 0. Ranges
//! the code relies on (a positive interval, a thread count of at least one)
//! are applied here, once. The settings changeable at run time are typed
//! in `dynamic.rs`, behind a watch.

use std::path::PathBuf;
use std::time::Duration;

use super::checks::RACK_AWARE_SELECTOR;
use super::{broker_def, ConfigError, Values};

/// How a partition's leader picks the replica a consumer reads from
/// (`replica.selector.class`, KIP-392).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaSelector {
    /// Always the leader (`LeaderSelector`).
    Leader,
    /// A replica in the client's rack, when one holds the fetch offset.
    RackAware,
}

/// Every static broker setting the broker reads, typed.
#[derive(Debug, Clone, PartialEq)]
pub struct BrokerSettings {
    /// `node.id`.
    pub node_id: i32,
    /// `broker.rack` (`None` when empty).
    pub rack: Option<String>,
    /// `auto.create.topics.enable`.
    pub auto_create_topics_enable: bool,
    /// `delete.topic.enable`.
    pub delete_topic_enable: bool,
    /// `num.partitions`: a new topic's partitions when the request says -1.
    pub num_partitions: i32,
    /// `default.replication.factor`.
    pub default_replication_factor: i32,
    /// `min.insync.replicas` (the broker default of the topic setting).
    pub min_insync_replicas: i32,
    /// `socket.request.max.bytes` (at least 1 KiB).
    pub socket_request_max_bytes: usize,
    /// `remote.log.storage.system.enable`: tiering on for this broker.
    pub remote_log_storage_system_enable: bool,
    /// `log.segment.open.files.max` (the sealed-segment file pool).
    pub log_segment_open_files_max: i64,
    /// `log.retention.check.interval.ms`.
    pub log_retention_check_interval: Duration,
    /// `log.flush.offset.checkpoint.interval.ms`.
    pub log_flush_offset_checkpoint_interval: Duration,
    /// `offsets.commit.timeout.ms`: how long a coordinator write (or a
    /// transaction marker, or a verification) may wait.
    pub offsets_commit_timeout: Duration,
    /// `replica.selector.class`.
    pub replica_selector: ReplicaSelector,
    /// `transaction.partition.verification.enable` (KIP-890).
    pub transaction_partition_verification_enable: bool,
    pub cleaner: CleanerSettings,
    pub group: GroupSettings,
    pub txn: TxnSettings,
    /// `__consumer_offsets`.
    pub offsets_topic: InternalTopicSettings,
    /// `__transaction_state`.
    pub transaction_state_log: InternalTopicSettings,
    pub cluster: ClusterSettings,
    pub replica: ReplicaSettings,
    pub remote: RemoteSettings,
    pub dlq: DlqSettings,
    /// Listeners, TLS and SASL (`security.rs`).
    pub security: super::security::SecuritySettings,
}

/// The log cleaner (`log.cleaner.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct CleanerSettings {
    /// `log.cleaner.enable`.
    pub enable: bool,
    /// `log.cleaner.threads` (at least 1).
    pub threads: u64,
    /// `log.cleaner.dedupe.buffer.size` (at least 1 MiB).
    pub dedupe_buffer_size: u64,
    /// `log.cleaner.io.max.bytes.per.second` (`f64::MAX`: unbounded).
    pub io_max_bytes_per_second: f64,
    /// `log.cleaner.backoff.ms` (at least 10 ms).
    pub backoff: Duration,
    /// `log.cleaner.threads.nice`, 0 to 19.
    pub threads_nice: i32,
}

/// The group coordinator (`group.*`, `offsets.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct GroupSettings {
    /// `group.min.session.timeout.ms`.
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`.
    pub max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms`.
    pub initial_rebalance_delay_ms: i32,
    /// `offsets.retention.minutes`, in milliseconds.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms`.
    pub offsets_retention_check_interval: Duration,
    /// `offset.metadata.max.bytes`.
    pub offset_metadata_max_bytes: usize,
    /// `group.lag.window.ms` (at least 1 s).
    pub lag_window: Duration,
    /// `group.lag.sample.interval.ms` (at least 100 ms).
    pub lag_sample_interval: Duration,
}

/// The transaction coordinator (`transaction.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct TxnSettings {
    /// `transaction.max.timeout.ms`.
    pub max_timeout_ms: i32,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`.
    pub abort_timed_out_cleanup_interval: Duration,
    /// `transactional.id.expiration.ms`.
    pub id_expiration_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`.
    pub remove_expired_cleanup_interval: Duration,
}

/// An internal topic's shape (`offsets.topic.*`,
/// `transaction.state.log.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct InternalTopicSettings {
    /// `*.num.partitions`.
    pub num_partitions: i32,
    /// `*.replication.factor` (at least 1).
    pub replication_factor: i32,
    /// The name of that setting, for operators' messages.
    pub replication_factor_name: &'static str,
    /// `*.segment.bytes`.
    pub segment_bytes: i32,
    /// `transaction.state.log.min.isr` (`None` for `__consumer_offsets`).
    pub min_isr: Option<i32>,
}

/// Membership, the controller's tasks and controlled shutdown.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSettings {
    /// `broker.session.timeout.ms`.
    pub session_timeout: Duration,
    /// `broker.heartbeat.interval.ms`.
    pub heartbeat_interval: Duration,
    /// `unclean.leader.election.enable`.
    pub unclean_leader_election_enable: bool,
    /// `auto.leader.rebalance.enable`.
    pub auto_leader_rebalance_enable: bool,
    /// `leader.imbalance.check.interval.seconds` (at least 1 s).
    pub leader_imbalance_check_interval: Duration,
    /// `leader.imbalance.per.broker.percentage`.
    pub leader_imbalance_per_broker_percentage: i32,
    /// `controlled.shutdown.enable`.
    pub controlled_shutdown_enable: bool,
    /// `controlled.shutdown.retry.backoff.ms` times
    /// `controlled.shutdown.max.retries`: how long a controlled shutdown
    /// waits for its leaderships to move.
    pub controlled_shutdown_wait: Duration,
}

/// Followers and the ISR (`replica.*`).
#[derive(Debug, Clone, PartialEq)]
pub struct ReplicaSettings {
    /// `replica.fetch.max.bytes`.
    pub fetch_max_bytes: i32,
    /// `replica.fetch.response.max.bytes`.
    pub fetch_response_max_bytes: i32,
    /// `replica.fetch.wait.max.ms`.
    pub fetch_wait_max: Duration,
    /// `replica.fetch.backoff.ms`.
    pub fetch_backoff: Duration,
    /// `replica.socket.timeout.ms`.
    pub socket_timeout: Duration,
    /// `replica.lag.time.max.ms`.
    pub lag_time_max: Duration,
    /// `replica.slow.eviction.enable`.
    pub slow_eviction_enable: bool,
    /// `replica.slow.eviction.ratio`.
    pub slow_eviction_ratio: f64,
    /// `replica.slow.eviction.min.ms`.
    pub slow_eviction_min: Duration,
    /// `replica.slow.eviction.window.ms`.
    pub slow_eviction_window: Duration,
}

/// The tiering manager and the historical read path (`remote.*`), static
/// part; the rate, the classes and the adaptive rate are dynamic.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteSettings {
    /// `remote.log.manager.task.interval.ms` (at least 10 ms).
    pub task_interval: Duration,
    /// `remote.log.manager.copier.thread.pool.size` (at least 1).
    pub copier_thread_pool_size: usize,
    /// `remote.log.upload.multipart.threshold.bytes` (5 MiB to 4 GiB).
    pub upload_multipart_threshold_bytes: usize,
    /// `remote.log.upload.part.bytes` (5 MiB to 4 GiB).
    pub upload_part_bytes: usize,
    /// `remote.fetch.chunk.bytes`.
    pub fetch_chunk_bytes: usize,
    /// `remote.fetch.max.concurrent.gets`.
    pub fetch_max_concurrent_gets: usize,
    /// `remote.fetch.max.bytes.in.flight`.
    pub fetch_max_bytes_in_flight: usize,
    /// `remote.fetch.readahead.max.chunks`.
    pub fetch_readahead_max_chunks: usize,
    /// `remote.fetch.cache.memory.bytes`.
    pub fetch_cache_memory_bytes: usize,
    /// `remote.fetch.cache.disk.bytes`.
    pub fetch_cache_disk_bytes: usize,
    /// `remote.fetch.cache.disk.write.bytes.per.second`.
    pub fetch_cache_disk_write_bytes_per_second: usize,
    /// `remote.fetch.cache.disk.writeback.ms` (`None`: write at once).
    pub fetch_cache_disk_writeback: Option<Duration>,
    /// `remote.fetch.cache.dir` (`None`: `<data-dir>/remote-cache`).
    pub fetch_cache_dir: Option<PathBuf>,
    /// `remote.fetch.threads`.
    pub fetch_threads: usize,
    /// `remote.fetch.threads.nice`.
    pub fetch_threads_nice: i32,
    /// `remote.log.index.cache.total.size.bytes`.
    pub index_cache_total_size_bytes: usize,
}

/// Dead-letter topics (`dlq.*`, broker part).
#[derive(Debug, Clone, PartialEq)]
pub struct DlqSettings {
    /// `dlq.reason.headers`, split.
    pub reason_headers: Vec<String>,
    /// `dlq.unconsumed.warn.ms`.
    pub unconsumed_warn_ms: i64,
    /// `dlq.check.interval.ms` (at least 100 ms).
    pub check_interval: Duration,
}

/// Reads settings by name for `BrokerSettings::parse`: only names the
/// tables define, only values of their type.
struct Reader<'a>(&'a Values);

impl Reader<'_> {
    fn raw(&self, name: &str) -> Result<String, ConfigError> {
        if broker_def(name).is_none() {
            return Err(ConfigError::Unknown(name.to_string()));
        }
        Ok(self.0.value(name))
    }

    fn num<T: std::str::FromStr>(&self, name: &str) -> Result<T, ConfigError> {
        let v = self.raw(name)?;
        v.trim().parse().map_err(|_| {
            ConfigError::Invalid(format!("Invalid value {v} for configuration {name}"))
        })
    }

    fn i64(&self, name: &str) -> Result<i64, ConfigError> {
        self.num(name)
    }

    fn i32(&self, name: &str) -> Result<i32, ConfigError> {
        self.num(name)
    }

    fn bool(&self, name: &str) -> Result<bool, ConfigError> {
        Ok(self.raw(name)?.trim().eq_ignore_ascii_case("true"))
    }

    /// Milliseconds, at least `min_ms`.
    fn ms(&self, name: &str, min_ms: i64) -> Result<Duration, ConfigError> {
        Ok(Duration::from_millis(self.i64(name)?.max(min_ms) as u64))
    }

    /// A size, at least 0.
    fn size(&self, name: &str) -> Result<usize, ConfigError> {
        Ok(self.i64(name)?.max(0) as usize)
    }
}

impl BrokerSettings {
    /// Parses every setting the broker reads. Fails on a name the tables
    /// do not define (a bug here) or a value not of its type (the tables'
    /// validators let none through).
    pub(super) fn parse(values: &Values) -> Result<Self, ConfigError> {
        let r = Reader(values);
        let rack = r.raw("broker.rack")?;
        let selector = r.raw("replica.selector.class")?;
        let upload_bytes = |name: &str| -> Result<usize, ConfigError> {
            Ok(r.i64(name)?.clamp(5 << 20, i64::from(u32::MAX)) as usize)
        };
        let cache_dir = r.raw("remote.fetch.cache.dir")?;
        let transaction_state_log_rf = r.i32("transaction.state.log.replication.factor")?;
        Ok(BrokerSettings {
            node_id: r.i32("node.id")?,
            rack: Some(rack).filter(|r| !r.is_empty()),
            auto_create_topics_enable: r.bool("auto.create.topics.enable")?,
            delete_topic_enable: r.bool("delete.topic.enable")?,
            num_partitions: r.i32("num.partitions")?,
            default_replication_factor: r.i32("default.replication.factor")?,
            min_insync_replicas: r.i32("min.insync.replicas")?,
            socket_request_max_bytes: r.i32("socket.request.max.bytes")?.max(1024) as usize,
            remote_log_storage_system_enable: r.bool("remote.log.storage.system.enable")?,
            log_segment_open_files_max: r.i64("log.segment.open.files.max")?,
            log_retention_check_interval: r.ms("log.retention.check.interval.ms", 1)?,
            log_flush_offset_checkpoint_interval: r
                .ms("log.flush.offset.checkpoint.interval.ms", 1)?,
            offsets_commit_timeout: r.ms("offsets.commit.timeout.ms", 1)?,
            replica_selector: match selector.trim() {
                "" | RACK_AWARE_SELECTOR => ReplicaSelector::RackAware,
                _ => ReplicaSelector::Leader,
            },
            transaction_partition_verification_enable: r
                .bool("transaction.partition.verification.enable")?,
            cleaner: CleanerSettings {
                enable: r.bool("log.cleaner.enable")?,
                threads: r.i64("log.cleaner.threads")?.max(1) as u64,
                dedupe_buffer_size: r.i64("log.cleaner.dedupe.buffer.size")?.max(1 << 20) as u64,
                io_max_bytes_per_second: r
                    .raw("log.cleaner.io.max.bytes.per.second")?
                    .trim()
                    .parse()
                    .unwrap_or(f64::MAX),
                backoff: r.ms("log.cleaner.backoff.ms", 10)?,
                threads_nice: r.i32("log.cleaner.threads.nice")?.clamp(0, 19),
            },
            group: GroupSettings {
                min_session_timeout_ms: r.i32("group.min.session.timeout.ms")?,
                max_session_timeout_ms: r.i32("group.max.session.timeout.ms")?,
                initial_rebalance_delay_ms: r.i32("group.initial.rebalance.delay.ms")?,
                offsets_retention_ms: r.i64("offsets.retention.minutes")?.saturating_mul(60_000),
                offsets_retention_check_interval: r.ms("offsets.retention.check.interval.ms", 1)?,
                offset_metadata_max_bytes: r.size("offset.metadata.max.bytes")?,
                lag_window: r.ms("group.lag.window.ms", 1000)?,
                lag_sample_interval: r.ms("group.lag.sample.interval.ms", 100)?,
            },
            txn: TxnSettings {
                max_timeout_ms: r.i32("transaction.max.timeout.ms")?,
                abort_timed_out_cleanup_interval: r.ms(
                    "transaction.abort.timed.out.transaction.cleanup.interval.ms",
                    1,
                )?,
                id_expiration_ms: r.i64("transactional.id.expiration.ms")?,
                remove_expired_cleanup_interval: r.ms(
                    "transaction.remove.expired.transaction.cleanup.interval.ms",
                    1,
                )?,
            },
            offsets_topic: InternalTopicSettings {
                num_partitions: r.i32("offsets.topic.num.partitions")?,
                replication_factor: r.i32("offsets.topic.replication.factor")?.max(1),
                replication_factor_name: "offsets.topic.replication.factor",
                segment_bytes: r.i32("offsets.topic.segment.bytes")?,
                min_isr: None,
            },
            transaction_state_log: InternalTopicSettings {
                num_partitions: r.i32("transaction.state.log.num.partitions")?,
                replication_factor: transaction_state_log_rf.max(1),
                replication_factor_name: "transaction.state.log.replication.factor",
                segment_bytes: r.i32("transaction.state.log.segment.bytes")?,
                min_isr: Some(r.i32("transaction.state.log.min.isr")?),
            },
            cluster: ClusterSettings {
                session_timeout: r.ms("broker.session.timeout.ms", 0)?,
                heartbeat_interval: r.ms("broker.heartbeat.interval.ms", 0)?,
                unclean_leader_election_enable: r.bool("unclean.leader.election.enable")?,
                auto_leader_rebalance_enable: r.bool("auto.leader.rebalance.enable")?,
                leader_imbalance_check_interval: Duration::from_secs(
                    r.i64("leader.imbalance.check.interval.seconds")?.max(1) as u64,
                ),
                leader_imbalance_per_broker_percentage: r
                    .i32("leader.imbalance.per.broker.percentage")?,
                controlled_shutdown_enable: r.bool("controlled.shutdown.enable")?,
                controlled_shutdown_wait: Duration::from_millis(
                    (r.i64("controlled.shutdown.retry.backoff.ms")?.max(0) as u64)
                        .saturating_mul(r.i32("controlled.shutdown.max.retries")?.max(1) as u64),
                ),
            },
            replica: ReplicaSettings {
                fetch_max_bytes: r.i32("replica.fetch.max.bytes")?,
                fetch_response_max_bytes: r.i32("replica.fetch.response.max.bytes")?,
                fetch_wait_max: r.ms("replica.fetch.wait.max.ms", 0)?,
                fetch_backoff: r.ms("replica.fetch.backoff.ms", 0)?,
                socket_timeout: r.ms("replica.socket.timeout.ms", 0)?,
                lag_time_max: r.ms("replica.lag.time.max.ms", 0)?,
                slow_eviction_enable: r.bool("replica.slow.eviction.enable")?,
                slow_eviction_ratio: r.num("replica.slow.eviction.ratio")?,
                slow_eviction_min: r.ms("replica.slow.eviction.min.ms", 0)?,
                slow_eviction_window: r.ms("replica.slow.eviction.window.ms", 0)?,
            },
            remote: RemoteSettings {
                task_interval: r.ms("remote.log.manager.task.interval.ms", 10)?,
                copier_thread_pool_size: r.i32("remote.log.manager.copier.thread.pool.size")?.max(1)
                    as usize,
                upload_multipart_threshold_bytes: upload_bytes(
                    "remote.log.upload.multipart.threshold.bytes",
                )?,
                upload_part_bytes: upload_bytes("remote.log.upload.part.bytes")?,
                fetch_chunk_bytes: r.size("remote.fetch.chunk.bytes")?,
                fetch_max_concurrent_gets: r.size("remote.fetch.max.concurrent.gets")?,
                fetch_max_bytes_in_flight: r.size("remote.fetch.max.bytes.in.flight")?,
                fetch_readahead_max_chunks: r.size("remote.fetch.readahead.max.chunks")?,
                fetch_cache_memory_bytes: r.size("remote.fetch.cache.memory.bytes")?,
                fetch_cache_disk_bytes: r.size("remote.fetch.cache.disk.bytes")?,
                fetch_cache_disk_write_bytes_per_second: r
                    .size("remote.fetch.cache.disk.write.bytes.per.second")?,
                fetch_cache_disk_writeback: match r.i64("remote.fetch.cache.disk.writeback.ms")? {
                    ms if ms > 0 => Some(Duration::from_millis(ms as u64)),
                    _ => None,
                },
                fetch_cache_dir: match cache_dir.trim() {
                    "" => None,
                    dir => Some(PathBuf::from(dir)),
                },
                fetch_threads: r.size("remote.fetch.threads")?,
                fetch_threads_nice: r.i32("remote.fetch.threads.nice")?,
                index_cache_total_size_bytes: r.size("remote.log.index.cache.total.size.bytes")?,
            },
            dlq: DlqSettings {
                reason_headers: super::parse_list(&r.raw("dlq.reason.headers")?),
                unconsumed_warn_ms: r.i64("dlq.unconsumed.warn.ms")?,
                check_interval: r.ms("dlq.check.interval.ms", 100)?,
            },
            security: super::security::SecuritySettings::parse(
                values,
                r.ms("connection.failed.authentication.delay.ms", 0)?,
                super::security::authorizer_config(
                    &r.raw("authorizer.class.name")?,
                    &r.raw("super.users")?,
                    r.bool("allow.everyone.if.no.acl.found")?,
                )?,
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BrokerConfig;

    #[test]
    fn defaults_parse_and_match_kafka() {
        let s = BrokerConfig::load(None, &[]).unwrap().settings().clone();
        assert_eq!(s.num_partitions, 1);
        assert_eq!(s.offsets_topic.num_partitions, 50);
        assert_eq!(s.replica_selector, ReplicaSelector::RackAware);
        assert_eq!(s.rack, None);
        assert_eq!(s.cleaner.io_max_bytes_per_second, f64::MAX);
        assert_eq!(s.offsets_topic.min_isr, None);
        assert!(s.transaction_state_log.min_isr.is_some());
    }

    #[test]
    fn values_set_are_typed_once() {
        let c = BrokerConfig::load(
            None,
            &[
                "num.partitions=6".into(),
                "broker.rack=r1".into(),
                "replica.selector.class=org.apache.kafka.common.replica.LeaderSelector".into(),
                "controlled.shutdown.retry.backoff.ms=200".into(),
                "controlled.shutdown.max.retries=4".into(),
                "remote.fetch.cache.dir=/tmp/x".into(),
                "offsets.retention.minutes=2".into(),
            ],
        )
        .unwrap();
        let s = c.settings();
        assert_eq!(s.num_partitions, 6);
        assert_eq!(s.rack.as_deref(), Some("r1"));
        assert_eq!(s.replica_selector, ReplicaSelector::Leader);
        assert_eq!(
            s.cluster.controlled_shutdown_wait,
            Duration::from_millis(800)
        );
        assert_eq!(s.remote.fetch_cache_dir, Some(PathBuf::from("/tmp/x")));
        assert_eq!(s.group.offsets_retention_ms, 120_000);
    }

    #[test]
    fn an_unknown_name_is_an_error_not_zero() {
        assert!(matches!(
            Reader(&Values::default()).i64("log.retention.msec"),
            Err(ConfigError::Unknown(_))
        ));
    }
}
