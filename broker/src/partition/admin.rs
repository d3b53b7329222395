//! What the admin and transaction tools ask of a broker's partitions:
//! each partition's producers (DescribeProducers, `kafka-transactions.sh
//! describe-producers` and `find-hanging`), transaction markers written on
//! a coordinator's or an operator's request (WriteTxnMarkers, which is how
//! `kafka-transactions.sh abort` ends a hanging transaction), the
//! partitions hosted in the data directory (DescribeLogDirs), and which
//! topics and partitions this broker hosts.

use std::path::PathBuf;
use std::time::Duration;

use kafka_protocol::ResponseError;

use super::ReplicaManager;
use crate::log::control::Marker;
use strata_storage::partition::CommitWait;

/// A producer with state in a partition (DescribeProducers): the
/// producer state's own view, which holds plain values.
pub use crate::log::producer_state::ActiveProducer as ProducerView;

/// A transaction marker to write (WriteTxnMarkers).
#[derive(Debug, Clone, Copy)]
pub struct MarkerRequest {
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// Commit (true) or abort.
    pub commit: bool,
    pub coordinator_epoch: i32,
}

/// The data directory and the local size of each partition in it.
#[derive(Debug, Clone)]
pub struct LogDirView {
    pub dir: PathBuf,
    /// By topic name, sorted; each topic's partitions sorted, with their
    /// local size in bytes.
    pub topics: Vec<(String, Vec<(i32, u64)>)>,
}

impl ReplicaManager {
    /// The producers with state in `topic`-`partition` on this broker.
    pub fn describe_producers(
        &self,
        topic: &str,
        partition: i32,
    ) -> Result<Vec<ProducerView>, (ResponseError, String)> {
        let Some(log) = self.logs.log(topic, partition) else {
            return Err((
                ResponseError::UnknownTopicOrPartition,
                format!("This server does not host this topic-partition: {topic}-{partition}"),
            ));
        };
        Ok(log.active_producers())
    }

    /// Writes a transaction marker to `topic`-`partition`, which this
    /// broker must lead, and waits (at most `timeout`) until it is
    /// committed.
    pub async fn write_txn_marker(
        &self,
        topic: &str,
        partition: i32,
        m: MarkerRequest,
        timeout: Duration,
    ) -> Result<(), ResponseError> {
        // Only the partition's leader writes its marker (a coordinator
        // that asked the wrong broker asks again).
        if let Some(e) = self.not_leader(topic, partition) {
            return Err(e);
        }
        let marker = Marker::ending(m.commit, m.coordinator_epoch);
        let written =
            self.txns
                .write_marker(topic, partition, m.producer_id, m.producer_epoch, marker);
        match written {
            Ok(Some(w)) => match w
                .partition
                .wait_committed(w.end, w.leader_epoch, timeout)
                .await
            {
                CommitWait::Committed => Ok(()),
                CommitWait::TimedOut => Err(ResponseError::RequestTimedOut),
                CommitWait::NotLeader => Err(ResponseError::NotLeaderOrFollower),
            },
            Ok(None) => Err(ResponseError::UnknownTopicOrPartition),
            Err(e) => {
                let code = super::errors::marker(&e);
                if code == ResponseError::KafkaStorageError {
                    tracing::error!(topic, partition, error = %e, "WriteTxnMarkers failed");
                }
                Err(code)
            }
        }
    }

    /// The data directory and the partitions this broker hosts in it,
    /// leader or follower: all, or (`wanted`) those of the named topics'
    /// listed partitions.
    pub fn log_dirs(&self, wanted: Option<&[(String, Vec<i32>)]>) -> LogDirView {
        let mut topics = self.logs.topics();
        topics.sort_by(|a, b| a.name.cmp(&b.name));
        let mut out = Vec::new();
        for topic in topics {
            let only: Option<&Vec<i32>> = match wanted {
                None => None,
                Some(w) => match w.iter().find(|(name, _)| *name == topic.name) {
                    Some((_, parts)) => Some(parts),
                    None => continue,
                },
            };
            let mut logs = topic.logs();
            logs.sort_by_key(|l| l.partition());
            let parts: Vec<(i32, u64)> = logs
                .iter()
                .filter(|l| only.is_none_or(|p| p.contains(&l.partition())))
                .map(|l| (l.partition(), l.size_bytes()))
                .collect();
            if !parts.is_empty() {
                out.push((topic.name.clone(), parts));
            }
        }
        LogDirView {
            dir: self.logs.data_dir().to_path_buf(),
            topics: out,
        }
    }

    /// The names of the topics this broker hosts a replica of.
    pub fn hosted_topics(&self) -> Vec<String> {
        self.logs.topics().iter().map(|t| t.name.clone()).collect()
    }

    /// Whether this broker hosts a replica of `topic`-`partition`.
    pub fn hosts(&self, topic: &str, partition: i32) -> bool {
        self.logs.partition(topic, partition).is_some()
    }

    /// Runs the tiering manager's next round for every partition of
    /// `topic` now (a changed hot window or retention applies at once).
    pub fn wake_tiering(&self, topic: &str) {
        if let (Some(r), Some(t)) = (&self.remote, self.logs.topic(topic)) {
            for p in 0..t.partition_count() as i32 {
                if let Some(rp) = r.partition(&t, p) {
                    rp.wake();
                }
            }
        }
    }
}

/// A hosted partition's local log, as operators see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalLogStatus {
    pub log_start_offset: i64,
    pub local_log_start_offset: i64,
    pub high_watermark: i64,
    pub log_end_offset: i64,
    pub local_bytes: u64,
    pub local_segments: usize,
}

impl ReplicaManager {
    /// `topic`-`partition`'s local log on this broker, if it hosts it.
    pub fn local_log_status(&self, topic: &str, partition: i32) -> Option<LocalLogStatus> {
        self.logs.log(topic, partition).map(|l| LocalLogStatus {
            log_start_offset: l.log_start_offset(),
            local_log_start_offset: l.local_log_start_offset(),
            high_watermark: l.high_watermark(),
            log_end_offset: l.log_end_offset(),
            local_bytes: l.size_bytes(),
            local_segments: l.segment_count(),
        })
    }
}
