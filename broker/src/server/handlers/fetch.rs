//! Fetch: whole batches from each requested partition up to the high
//! watermark, within `max_bytes` and each partition's limit, with the long
//! poll (`max_wait_ms` / `min_bytes`) driven by high-watermark changes.
//!
//! As in Kafka (KIP-74), the first batch of the first partition with data is
//! returned even if it exceeds the limits, so a consumer can always progress.
//! Offsets below the local log start are read from the object store
//! (`crate::remote::reads`), so consumers see one continuous log.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::select_all;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::*;
use kafka_protocol::ResponseError;
use tokio::time::Instant;
use uuid::Uuid;

use strata_prefetch::PrefetchError;
use strata_tiering::RemotePartition;

use crate::log::{LogError, PartitionLog, ReadResult};
use crate::remote::reads::RemoteRead;
use crate::server::Broker;

struct Target {
    topic: usize,
    partition: i32,
    log: Option<Arc<PartitionLog>>,
    remote: Option<Arc<RemotePartition>>,
    fetch_offset: i64,
    max_bytes: usize,
}

pub async fn handle(req: FetchRequest, version: i16, b: &Broker) -> FetchResponse {
    let deadline = Instant::now() + Duration::from_millis(req.max_wait_ms.max(0) as u64);
    let response_max = if req.max_bytes <= 0 {
        usize::MAX
    } else {
        req.max_bytes as usize
    };
    let min_bytes = req.min_bytes.max(0) as usize;
    let read_committed = req.isolation_level == 1;
    let mut names: Vec<(TopicName, Uuid)> = Vec::with_capacity(req.topics.len());
    let mut targets = Vec::new();
    for (ti, t) in req.topics.into_iter().enumerate() {
        let topic = b.logs.topic(&t.topic.0);
        names.push((t.topic, topic.as_ref().map(|t| t.id).unwrap_or_default()));
        for p in t.partitions {
            targets.push(Target {
                topic: ti,
                partition: p.partition,
                log: topic.as_ref().and_then(|t| t.partition(p.partition)),
                remote: match (&b.remote, &topic) {
                    (Some(r), Some(t)) => r.partition(t, p.partition),
                    _ => None,
                },
                fetch_offset: p.fetch_offset,
                max_bytes: p.partition_max_bytes.max(0) as usize,
            });
        }
    }
    loop {
        // Subscribe before reading so an append between the read and the
        // wait is not missed.
        let mut watchers: Vec<_> = targets
            .iter()
            .filter_map(|t| t.log.as_ref().map(|l| l.subscribe()))
            .collect();
        let (partitions, total, any_error) =
            read_all(b, &targets, response_max, read_committed).await;
        if total >= min_bytes || any_error || Instant::now() >= deadline || watchers.is_empty() {
            return build(names, &targets, partitions, version);
        }
        let changes = watchers.iter_mut().map(|w| Box::pin(w.changed()));
        if tokio::time::timeout_at(deadline, select_all(changes))
            .await
            .is_err()
        {
            let (partitions, _, _) = read_all(b, &targets, response_max, read_committed).await;
            return build(names, &targets, partitions, version);
        }
    }
}

async fn read_all(
    b: &Broker,
    targets: &[Target],
    response_max: usize,
    read_committed: bool,
) -> (Vec<PartitionData>, usize, bool) {
    let mut out = Vec::with_capacity(targets.len());
    let mut total = 0usize;
    let mut any_error = false;
    for t in targets {
        let mut pd = PartitionData::default();
        pd.partition_index = t.partition;
        pd.high_watermark = -1;
        pd.last_stable_offset = -1;
        pd.log_start_offset = -1;
        pd.preferred_read_replica = BrokerId(-1);
        pd.aborted_transactions = read_committed.then(Vec::new);
        let Some(log) = &t.log else {
            pd.error_code = ResponseError::UnknownTopicOrPartition.code();
            any_error = true;
            out.push(pd);
            continue;
        };
        let remaining = response_max.saturating_sub(total);
        let limit = t.max_bytes.min(remaining);
        match read_partition(b, t, log, limit, total == 0).await {
            Ok(read) => {
                pd.high_watermark = read.high_watermark;
                pd.last_stable_offset = read.high_watermark;
                pd.log_start_offset = read.log_start_offset;
                total += read.records.len();
                pd.records = Some(read.records);
            }
            Err(LogError::OffsetOutOfRange { .. }) => {
                pd.error_code = ResponseError::OffsetOutOfRange.code();
                pd.high_watermark = log.high_watermark();
                pd.last_stable_offset = pd.high_watermark;
                pd.log_start_offset = log.log_start_offset();
                pd.records = Some(Bytes::new());
                any_error = true;
            }
            Err(e) => {
                tracing::error!(topic = %log.topic(), partition = t.partition, error = %e, "fetch read failed");
                pd.error_code = ResponseError::KafkaStorageError.code();
                any_error = true;
            }
        }
        out.push(pd);
    }
    (out, total, any_error)
}

/// Reads one partition: locally, or from the object store below the local
/// log start.
async fn read_partition(
    b: &Broker,
    t: &Target,
    log: &PartitionLog,
    limit: usize,
    min_one: bool,
) -> Result<ReadResult, LogError> {
    let local = log.read(t.fetch_offset, limit, min_one);
    let (Err(LogError::OffsetOutOfRange { .. }), Some(remote), Some(rp)) =
        (&local, &b.remote, &t.remote)
    else {
        return local;
    };
    let local_start = log.local_log_start_offset();
    if t.fetch_offset >= local_start || t.fetch_offset < log.log_start_offset() {
        return local;
    }
    match remote.read(rp, t.fetch_offset, limit, min_one).await {
        Ok(RemoteRead::Records(records)) => Ok(ReadResult {
            records,
            high_watermark: log.high_watermark(),
            log_start_offset: log.log_start_offset(),
        }),
        // A gap no segment covers (left while remote storage was off):
        // continue where the local log starts, as a compacted log would.
        Ok(RemoteRead::NotRemote) => log.read(local_start, limit, min_one),
        Err(PrefetchError::NotFound(key)) => {
            tracing::info!(topic = %log.topic(), partition = t.partition, key = %key,
                "remote segment removed by retention during a fetch");
            local
        }
        Err(e) => {
            tracing::warn!(topic = %log.topic(), partition = t.partition, offset = t.fetch_offset,
                error = %e, "remote read failed");
            Err(LogError::Io(std::io::Error::other(e.to_string())))
        }
    }
}

fn build(
    names: Vec<(TopicName, Uuid)>,
    targets: &[Target],
    partitions: Vec<PartitionData>,
    version: i16,
) -> FetchResponse {
    let mut topics: Vec<FetchableTopicResponse> = names
        .into_iter()
        .map(|(name, id)| {
            let mut t = FetchableTopicResponse::default();
            t.topic = name;
            if version >= 13 {
                t.topic_id = id;
            }
            t
        })
        .collect();
    for (t, pd) in targets.iter().zip(partitions) {
        topics[t.topic].partitions.push(pd);
    }
    let mut r = FetchResponse::default();
    r.responses = topics;
    r
}
