//! A follower's fetch (`replica_id` >= 0, Kafka's replica fetch): only the
//! leader answers, only for an assigned replica at the current leader
//! epoch. The fetch offset is the follower's durable end: it is recorded
//! (and may advance the high watermark) before anything is read. Records
//! are served up to the log end, not the high watermark, from local
//! segments only; below the local log start the answer is
//! OFFSET_MOVED_TO_TIERED_STORAGE (the follower starts at the leader's
//! local start, history stays in the bucket). The long poll waits for
//! appends, not for the high watermark.
//!
//! Without authentication between brokers (not built yet), a fetch is
//! taken as a replica's only from a live broker's registered address, at
//! an explicit leader epoch: a consumer that sets `replica_id` cannot move
//! the high watermark or read past it.
//!
//! It never reads the bucket and never serves a client.

use std::sync::Arc;

use futures_util::future::select_all;
use kafka_protocol::ResponseError;
use tokio::time::Instant;

use super::fetch::{FetchParams, FetchPartitionData, FetchTopic, TopicRef};
use super::ReplicaManager;
use crate::cluster::view::ClusterSnapshot;
use crate::log::{Isolation, LogError, PartitionLog};
use strata_storage::partition::Partition;

struct Target {
    partition: i32,
    log: Result<Arc<PartitionLog>, ResponseError>,
    fetch_offset: i64,
    max_bytes: usize,
}

impl ReplicaManager {
    /// Answers follower `replica`'s fetch (`peer` is the connection's
    /// `/<ip>`); of `params` only the wait and the byte limits apply.
    /// Every partition asked for, in request order.
    pub async fn replica_fetch(
        &self,
        replica: i32,
        peer: &str,
        params: FetchParams<'_>,
        topics: Vec<FetchTopic<'_>>,
    ) -> Vec<FetchPartitionData> {
        let deadline = Instant::now() + params.max_wait;
        let snap = self.cluster.view.snapshot();
        let from_broker = is_broker(&snap, replica, peer);
        let mut targets = Vec::new();
        for t in topics {
            let name = match t.topic {
                TopicRef::Id(id) => snap.topic_by_id(id).map(|(n, _)| n.to_string()),
                TopicRef::Name(n) => Some(n.to_string()),
            };
            for p in t.partitions {
                let log = match &name {
                    None => Err(ResponseError::UnknownTopicId),
                    Some(_) if !from_broker => Err(ResponseError::NotLeaderOrFollower),
                    // Followers always name the epoch they follow.
                    Some(_) if p.current_leader_epoch < 0 => Err(ResponseError::UnknownLeaderEpoch),
                    Some(n) => self.led_for(&snap, n, p.partition, replica, p.current_leader_epoch),
                };
                if let Ok(led) = &log {
                    let l = led.log();
                    let in_range = p.fetch_offset >= l.local_log_start_offset()
                        && p.fetch_offset <= l.log_end_offset();
                    if in_range {
                        led.record_follower_fetch_from(replica, p.fetch_offset, p.log_start_offset);
                    }
                }
                targets.push(Target {
                    partition: p.partition,
                    log: log.map(|led| led.log().clone()),
                    fetch_offset: p.fetch_offset,
                    max_bytes: p.max_bytes,
                });
            }
        }
        loop {
            // Subscribe before reading so an append in between is not missed.
            let mut watchers: Vec<_> = targets
                .iter()
                .filter_map(|t| t.log.as_ref().ok().map(|l| l.subscribe_log_end()))
                .collect();
            let (partitions, total, any_error) = read_all(&targets, params.max_bytes);
            if total >= params.min_bytes
                || any_error
                || Instant::now() >= deadline
                || watchers.is_empty()
            {
                return partitions;
            }
            let changes = watchers.iter_mut().map(|w| Box::pin(w.changed()));
            if tokio::time::timeout_at(deadline, select_all(changes))
                .await
                .is_err()
            {
                return read_all(&targets, params.max_bytes).0;
            }
        }
    }

    /// The partition if this broker leads it for `replica` at
    /// `current_epoch`.
    fn led_for(
        &self,
        snap: &ClusterSnapshot,
        topic: &str,
        partition: i32,
        replica: i32,
        current_epoch: i32,
    ) -> Result<Arc<Partition>, ResponseError> {
        if let Some(code) = self.not_leader(topic, partition) {
            return Err(code);
        }
        let assigned = snap
            .partition(topic, partition)
            .is_some_and(|e| e.state.replicas.contains(&replica));
        if !assigned {
            return Err(ResponseError::NotLeaderOrFollower);
        }
        let led = self
            .logs
            .partition(topic, partition)
            .ok_or(ResponseError::UnknownTopicOrPartition)?;
        super::check_current_epoch(led.log(), current_epoch)?;
        Ok(led)
    }
}

/// `replica` is a live broker and the connection comes from its
/// registered address (when that is an IP address; a host name is taken
/// as given).
fn is_broker(snap: &ClusterSnapshot, replica: i32, peer: &str) -> bool {
    let Some(b) = snap.brokers.get(&replica) else {
        return false;
    };
    let peer = peer.trim_start_matches('/');
    match (
        b.registration.host.parse::<std::net::IpAddr>(),
        peer.parse::<std::net::IpAddr>(),
    ) {
        (Ok(registered), Ok(peer)) => {
            registered == peer || (registered.is_loopback() && peer.is_loopback())
        }
        _ => true,
    }
}

fn read_all(targets: &[Target], response_max: usize) -> (Vec<FetchPartitionData>, usize, bool) {
    let mut total = 0usize;
    let mut any_error = false;
    let mut out = Vec::with_capacity(targets.len());
    for t in targets {
        let mut pd = FetchPartitionData::new(t.partition, Some(Vec::new()));
        let log = match &t.log {
            Ok(l) => l,
            Err(e) => {
                pd.error = Some(*e);
                any_error = true;
                out.push(pd);
                continue;
            }
        };
        pd.high_watermark = log.high_watermark();
        pd.last_stable_offset = log.last_stable_offset();
        // Followers delete below it: -1 while the bucket's part is unknown.
        pd.log_start_offset = log.log_start_offset_if_known().unwrap_or(-1);
        let local_start = log.local_log_start_offset();
        if t.fetch_offset < local_start {
            pd.log_start_offset = log.log_start_offset();
            pd.error = Some(if log.remote_log_start_offset().is_some() {
                ResponseError::OffsetMovedToTieredStorage
            } else {
                ResponseError::OffsetOutOfRange
            });
            any_error = true;
            out.push(pd);
            continue;
        }
        let limit = t.max_bytes.min(response_max.saturating_sub(total));
        match log.read_below(t.fetch_offset, limit, total == 0, Isolation::LogEnd) {
            Ok(read) => {
                total += read.records.len();
                pd.high_watermark = read.high_watermark;
                pd.records = read.records;
            }
            Err(e) => {
                if !matches!(e, LogError::OffsetOutOfRange { .. }) {
                    tracing::warn!(topic = %log.topic(), partition = t.partition, error = %e,
                        "reading for a follower failed");
                }
                pd.error = Some(super::errors::read(&e));
                any_error = true;
            }
        }
        out.push(pd);
    }
    (out, total, any_error)
}
