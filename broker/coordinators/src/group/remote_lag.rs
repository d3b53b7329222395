//! Lag of partitions whose log is on another broker. In a cluster a
//! group's coordinator is the leader of its `__consumer_offsets`
//! partition, which need not hold the partitions the group reads. For
//! those, a task asks each partition's leader, every
//! `group.lag.sample.interval.ms`, for its high watermark (ListOffsets,
//! latest) and, where a group is behind, for the batch at the group's
//! committed offset (Fetch of one batch: its timestamp is the lag age).
//! The sampler (`coordinator.rs`) then measures them like local ones.
//!
//! Reads only; a broker that does not answer leaves its partitions out of
//! the lag until it does. Bounded: at most `MAX_TIMESTAMP_FETCHES`
//! batch reads a pass, responses at most `MAX_RESPONSE_BYTES`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::{BrokerId, FetchRequest, ListOffsetsRequest, TopicName};
use kafka_protocol::protocol::StrBytes;

use strata_cluster::replication::client::BrokerClient;

/// Where a partition's leader is: (node id, host, port), from the cluster view.
pub(crate) type LeaderOf = Arc<dyn Fn(&str, i32) -> Option<(i32, String, i32)> + Send + Sync>;

const MAX_TIMESTAMP_FETCHES: usize = 200;
const MAX_RESPONSE_BYTES: usize = 16 << 20;
const TIMEOUT: Duration = Duration::from_secs(5);
const LIST_OFFSETS_VERSION: i16 = 7;
const FETCH_VERSION: i16 = 11;

#[derive(Debug, Clone)]
struct Remote {
    high_watermark: i64,
    at: Instant,
    /// Batch timestamps at offsets groups committed.
    timestamps: HashMap<i64, Option<i64>>,
}

/// What the leaders of non-local partitions last said.
#[derive(Debug, Default)]
pub struct RemoteWatermarks {
    inner: Mutex<HashMap<(String, i32), Remote>>,
}

impl RemoteWatermarks {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, i32), Remote>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The leader's high watermark, if it answered within `max_age`.
    pub fn high_watermark(&self, topic: &str, partition: i32, max_age: Duration) -> Option<i64> {
        self.lock()
            .get(&(topic.to_string(), partition))
            .filter(|r| r.at.elapsed() <= max_age)
            .map(|r| r.high_watermark)
    }

    /// The timestamp of the batch holding `offset`, if fetched.
    pub(crate) fn timestamp_at(&self, topic: &str, partition: i32, offset: i64) -> Option<i64> {
        self.lock()
            .get(&(topic.to_string(), partition))
            .and_then(|r| r.timestamps.get(&offset).copied().flatten())
    }

    /// Forgets partitions no group here commits to any more.
    fn retain(&self, wanted: &BTreeSet<(String, i32)>) {
        self.lock().retain(|k, _| wanted.contains(k));
    }
}

/// The committed offsets of partitions this broker does not host, by
/// partition: the offsets groups committed there.
pub(crate) type Wanted = BTreeMap<(String, i32), BTreeSet<i64>>;

/// One pass: asks each leader for its partitions' high watermarks and the
/// batch timestamps at the offsets groups committed.
pub async fn refresh(
    wanted: Wanted,
    marks: &RemoteWatermarks,
    leader_of: &LeaderOf,
    clients: &mut HashMap<i32, BrokerClient>,
) {
    marks.retain(&wanted.keys().cloned().collect());
    let mut by_leader: HashMap<i32, (String, i32, Vec<(String, i32)>)> = HashMap::new();
    for key in wanted.keys() {
        if let Some((node, host, port)) = leader_of(&key.0, key.1) {
            by_leader
                .entry(node)
                .or_insert_with(|| (host, port, Vec::new()))
                .2
                .push(key.clone());
        }
    }
    let mut budget = MAX_TIMESTAMP_FETCHES;
    for (node, (host, port, parts)) in by_leader {
        if let Err(e) = refresh_leader(
            node,
            &host,
            port,
            &parts,
            &wanted,
            marks,
            clients,
            &mut budget,
        )
        .await
        {
            tracing::debug!(node, error = %e, "lag: asking a leader for its high watermarks failed");
            clients.remove(&node);
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn refresh_leader(
    node: i32,
    host: &str,
    port: i32,
    parts: &[(String, i32)],
    wanted: &Wanted,
    marks: &RemoteWatermarks,
    clients: &mut HashMap<i32, BrokerClient>,
    budget: &mut usize,
) -> Result<(), strata_cluster::replication::client::ClientError> {
    if !clients.contains_key(&node) {
        let c = BrokerClient::connect(
            node,
            host,
            port,
            "strata-lag".into(),
            MAX_RESPONSE_BYTES,
            TIMEOUT,
        )
        .await?;
        clients.insert(node, c);
    }
    let Some(client) = clients.get_mut(&node) else {
        return Ok(());
    };
    let mut req = ListOffsetsRequest::default();
    req.replica_id = BrokerId(-1);
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for (t, p) in parts {
        topics.entry(t.as_str()).or_default().push(*p);
    }
    for (t, ps) in &topics {
        let mut lt = ListOffsetsTopic::default();
        lt.name = TopicName(StrBytes::from_string(t.to_string()));
        for p in ps {
            let mut lp = ListOffsetsPartition::default();
            lp.partition_index = *p;
            lp.current_leader_epoch = -1;
            lp.timestamp = -1;
            lt.partitions.push(lp);
        }
        req.topics.push(lt);
    }
    let r = client.send(&req, LIST_OFFSETS_VERSION, TIMEOUT).await?;
    let now = Instant::now();
    let mut hws: Vec<((String, i32), i64)> = Vec::new();
    for t in &r.topics {
        for p in &t.partitions {
            if p.error_code == 0 {
                hws.push(((t.name.0.to_string(), p.partition_index), p.offset));
            }
        }
    }
    for (key, hw) in hws {
        let mut timestamps = HashMap::new();
        for offset in wanted.get(&key).into_iter().flatten() {
            if *offset >= hw {
                continue;
            }
            let known = marks
                .lock()
                .get(&key)
                .and_then(|r| r.timestamps.get(offset).copied());
            let ts = match known {
                Some(ts) => ts,
                None if *budget > 0 => {
                    *budget -= 1;
                    batch_timestamp(client, &key.0, key.1, *offset).await?
                }
                None => continue,
            };
            timestamps.insert(*offset, ts);
        }
        marks.lock().insert(
            key,
            Remote {
                high_watermark: hw,
                at: now,
                timestamps,
            },
        );
    }
    Ok(())
}

/// The timestamp of the batch holding `offset` (its max timestamp under
/// LogAppendTime, else its base timestamp, as the local log's
/// `batch_timestamp_at`).
async fn batch_timestamp(
    client: &mut BrokerClient,
    topic: &str,
    partition: i32,
    offset: i64,
) -> Result<Option<i64>, strata_cluster::replication::client::ClientError> {
    let mut req = FetchRequest::default();
    req.replica_id = BrokerId(-1);
    req.max_wait_ms = 0;
    req.min_bytes = 0;
    req.max_bytes = 1;
    req.isolation_level = 0;
    req.session_id = 0;
    req.session_epoch = -1;
    let mut t = FetchTopic::default();
    t.topic = TopicName(StrBytes::from_string(topic.to_string()));
    let mut fp = FetchPartition::default();
    fp.partition = partition;
    fp.current_leader_epoch = -1;
    fp.fetch_offset = offset;
    fp.log_start_offset = -1;
    fp.partition_max_bytes = 1;
    t.partitions.push(fp);
    req.topics.push(t);
    let r = client.send(&req, FETCH_VERSION, TIMEOUT).await?;
    let records = r
        .responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .find(|p| p.partition_index == partition && p.error_code == 0)
        .and_then(|p| p.records.clone());
    Ok(records.and_then(|b| {
        strata_format::batch::BatchHeader::parse_header_only(&b)
            .ok()
            .map(|h| {
                if h.is_log_append_time() {
                    h.max_timestamp
                } else {
                    h.base_timestamp
                }
            })
    }))
}
