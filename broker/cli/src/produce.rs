//! `strata produce TOPIC`: one record from the command line, or one per
//! line of standard input, with acks=all through an idempotent producer
//! (InitProducerId, then sequence numbers per partition, so a retried
//! request is never written twice). Keys go to the partition Kafka's
//! Java client would choose (murmur2), so per-key order matches records
//! other clients produce.
//!
//! The producer (`Producer`) is also what `strata dlq replay` uses.

use std::collections::{BTreeMap, HashMap};

use bytes::{Bytes, BytesMut};
use kafka_protocol::indexmap::IndexMap;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use kafka_protocol::ResponseError;

use super::kafka::{max_version, ClientError, KafkaClient, PartitionLeader};
use super::output::{self, Format};
use super::{parse_pairs, CliError, CliResult, Target};

/// Records per Produce request and partition.
const BATCH_RECORDS: usize = 500;
/// Bytes of keys and values per batch.
const BATCH_BYTES: usize = 512 * 1024;

#[derive(Debug, clap::Args)]
pub struct ProduceArgs {
    pub topic: String,
    /// The partition (default: by key as Kafka's clients do, round-robin without a key).
    #[arg(long)]
    pub partition: Option<i32>,
    /// The key of a --value record, or of every line.
    #[arg(long)]
    pub key: Option<String>,
    /// Produce this one value instead of reading lines from standard input.
    #[arg(long)]
    pub value: Option<String>,
    /// Lines are KEY<SEP>VALUE.
    #[arg(long, value_name = "SEP")]
    pub key_separator: Option<String>,
    /// A header NAME=VALUE on every record (repeat).
    #[arg(long = "header", value_name = "NAME=VALUE")]
    pub headers: Vec<String>,
}

/// One record to produce.
#[derive(Debug, Clone)]
pub struct OutRecord {
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
    pub timestamp: i64,
    /// None: by key, or round-robin.
    pub partition: Option<i32>,
}

/// Kafka's murmur2 (the Java client's `Utils.murmur2`).
pub fn murmur2(data: &[u8]) -> i32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    const R: u32 = 24;
    let len = data.len();
    let mut h: u32 = SEED ^ (len as u32);
    let chunks = len / 4;
    for i in 0..chunks {
        let o = i * 4;
        let mut k = u32::from_le_bytes([data[o], data[o + 1], data[o + 2], data[o + 3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = &data[chunks * 4..];
    if rest.len() >= 3 {
        h ^= (rest[2] as u32) << 16;
    }
    if rest.len() >= 2 {
        h ^= (rest[1] as u32) << 8;
    }
    if !rest.is_empty() {
        h ^= rest[0] as u32;
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h as i32
}

/// The partition Kafka's default partitioner gives a key.
pub fn partition_for_key(key: &[u8], partitions: i32) -> i32 {
    ((murmur2(key) & 0x7fff_ffff) % partitions.max(1)) as i32
}

/// An idempotent producer with acks=all.
pub struct Producer<'a> {
    k: &'a mut KafkaClient,
    producer_id: i64,
    producer_epoch: i16,
    sequences: HashMap<(String, i32), i32>,
    leaders: HashMap<String, Vec<PartitionLeader>>,
    pending: BTreeMap<(String, i32), Vec<OutRecord>>,
    pending_bytes: HashMap<(String, i32), usize>,
    round_robin: usize,
    /// Records acknowledged, per partition.
    pub acked: BTreeMap<(String, i32), u64>,
}

impl<'a> Producer<'a> {
    pub async fn new(k: &'a mut KafkaClient) -> Result<Producer<'a>, ClientError> {
        let (r, _) = k
            .send(
                None,
                "InitProducerId",
                max_version::INIT_PRODUCER_ID,
                |_| {
                    let mut req = InitProducerIdRequest::default();
                    req.transactional_id = None;
                    req.transaction_timeout_ms = -1;
                    req.producer_id = ProducerId(-1);
                    req.producer_epoch = -1;
                    req
                },
            )
            .await?;
        if r.error_code != 0 {
            return Err(ClientError::kafka("InitProducerId", r.error_code, None));
        }
        Ok(Producer {
            k,
            producer_id: r.producer_id.0,
            producer_epoch: r.producer_epoch,
            sequences: HashMap::new(),
            leaders: HashMap::new(),
            pending: BTreeMap::new(),
            pending_bytes: HashMap::new(),
            round_robin: 0,
            acked: BTreeMap::new(),
        })
    }

    async fn partitions(&mut self, topic: &str) -> Result<&Vec<PartitionLeader>, ClientError> {
        if !self.leaders.contains_key(topic) {
            let l = self.k.leaders(&[topic.to_string()]).await?;
            if l.is_empty() {
                return Err(ClientError::kafka(
                    format!("topic {topic}"),
                    ResponseError::UnknownTopicOrPartition.code(),
                    None,
                ));
            }
            self.leaders.insert(topic.to_string(), l);
        }
        Ok(&self.leaders[topic])
    }

    /// How many partitions `topic` has.
    pub async fn partition_count(&mut self, topic: &str) -> Result<i32, ClientError> {
        Ok(self.partitions(topic).await?.len() as i32)
    }

    /// Queues a record; sends the partition's batch once it is full.
    pub async fn send(&mut self, topic: &str, r: OutRecord) -> Result<(), ClientError> {
        let count = self.partitions(topic).await?.len() as i32;
        let partition = match (r.partition, &r.key) {
            (Some(p), _) => {
                if p < 0 || p >= count {
                    return Err(ClientError::kafka(
                        format!("topic {topic} has no partition {p} (it has {count})"),
                        ResponseError::UnknownTopicOrPartition.code(),
                        None,
                    ));
                }
                p
            }
            (None, Some(k)) => partition_for_key(k, count),
            (None, None) => {
                self.round_robin += 1;
                (self.round_robin / BATCH_RECORDS) as i32 % count
            }
        };
        let key = (topic.to_string(), partition);
        let size = r.key.as_ref().map_or(0, |k| k.len()) + r.value.as_ref().map_or(0, |v| v.len());
        self.pending.entry(key.clone()).or_default().push(r);
        let bytes = self.pending_bytes.entry(key.clone()).or_default();
        *bytes += size;
        if self.pending[&key].len() >= BATCH_RECORDS || *bytes >= BATCH_BYTES {
            self.flush_one(&key).await?;
        }
        Ok(())
    }

    /// Sends every queued record and waits for the acknowledgements.
    pub async fn flush(&mut self) -> Result<(), ClientError> {
        let keys: Vec<_> = self.pending.keys().cloned().collect();
        for k in keys {
            self.flush_one(&k).await?;
        }
        Ok(())
    }

    async fn flush_one(&mut self, key: &(String, i32)) -> Result<(), ClientError> {
        let Some(records) = self.pending.remove(key) else {
            return Ok(());
        };
        self.pending_bytes.remove(key);
        if records.is_empty() {
            return Ok(());
        }
        let seq = *self.sequences.get(key).unwrap_or(&0);
        let encoded: Vec<Record> = records
            .iter()
            .enumerate()
            .map(|(i, r)| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: self.producer_id,
                producer_epoch: self.producer_epoch,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                sequence: seq.wrapping_add(i as i32),
                timestamp: r.timestamp,
                key: r.key.clone(),
                value: r.value.clone(),
                headers: r
                    .headers
                    .iter()
                    .map(|(k, v)| (StrBytes::from_string(k.clone()), v.clone()))
                    .collect::<IndexMap<_, _>>(),
            })
            .collect();
        let mut buf = BytesMut::new();
        RecordBatchEncoder::encode(
            &mut buf,
            encoded.iter(),
            &RecordEncodeOptions {
                version: 2,
                compression: Compression::None,
            },
        )
        .map_err(|e| ClientError::Other(format!("encoding a record batch: {e}")))?;
        let batch = buf.freeze();
        // Retries resend the same batch (same sequence): the broker
        // deduplicates, so nothing is written twice.
        let mut attempt = 0;
        loop {
            attempt += 1;
            let leader = self
                .partitions(&key.0)
                .await?
                .iter()
                .find(|l| l.partition == key.1)
                .map(|l| l.leader)
                .unwrap_or(-1);
            let result = self.produce_to(leader, key, batch.clone()).await;
            match result {
                Ok(()) => break,
                Err(e) if attempt < 10 && retriable(&e) => {
                    self.leaders.remove(&key.0);
                    tokio::time::sleep(std::time::Duration::from_millis(200 * attempt)).await;
                }
                Err(e) => return Err(e),
            }
        }
        self.sequences
            .insert(key.clone(), seq.wrapping_add(records.len() as i32));
        *self.acked.entry(key.clone()).or_default() += records.len() as u64;
        Ok(())
    }

    async fn produce_to(
        &mut self,
        leader: i32,
        key: &(String, i32),
        batch: Bytes,
    ) -> Result<(), ClientError> {
        if leader < 0 {
            return Err(ClientError::kafka(
                format!("{}-{}", key.0, key.1),
                ResponseError::LeaderNotAvailable.code(),
                None,
            ));
        }
        let (r, _) = self
            .k
            .send(Some(leader), "Produce", max_version::PRODUCE, |_| {
                let mut p = PartitionProduceData::default();
                p.index = key.1;
                p.records = Some(batch);
                let mut t = TopicProduceData::default();
                t.name = TopicName(StrBytes::from_string(key.0.clone()));
                t.partition_data.push(p);
                let mut req = ProduceRequest::default();
                req.acks = -1;
                req.timeout_ms = 30_000;
                req.topic_data.push(t);
                req
            })
            .await?;
        for t in &r.responses {
            for p in &t.partition_responses {
                // A duplicate is a batch the broker already has: acknowledged.
                if p.error_code != 0
                    && p.error_code != ResponseError::DuplicateSequenceNumber.code()
                {
                    return Err(ClientError::kafka(
                        format!("producing to {}-{}", key.0, key.1),
                        p.error_code,
                        p.error_message.as_deref(),
                    ));
                }
            }
        }
        Ok(())
    }
}

fn retriable(e: &ClientError) -> bool {
    match e.code() {
        Some(c) => matches!(
            ResponseError::try_from_code(c),
            Some(
                ResponseError::NotLeaderOrFollower
                    | ResponseError::LeaderNotAvailable
                    | ResponseError::RequestTimedOut
                    | ResponseError::NotEnoughReplicas
                    | ResponseError::NotEnoughReplicasAfterAppend
                    | ResponseError::KafkaStorageError
                    | ResponseError::NetworkException
            )
        ),
        None => matches!(
            e,
            ClientError::Io { .. } | ClientError::Timeout { .. } | ClientError::Connect { .. }
        ),
    }
}

/// The wall clock in milliseconds since the epoch, as a Kafka producer
/// stamps a record's CreateTime.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

pub async fn run(a: ProduceArgs, target: &Target) -> CliResult<()> {
    let headers: Vec<(String, Option<Bytes>)> = parse_pairs(&a.headers, "--header")?
        .into_iter()
        .map(|(k, v)| (k, Some(Bytes::from(v))))
        .collect();
    let mut k = KafkaClient::connect(&target.bootstrap_server).await?;
    let mut p = Producer::new(&mut k).await?;
    let record = |key: Option<String>, value: String| OutRecord {
        key: key.map(Bytes::from),
        value: Some(Bytes::from(value)),
        headers: headers.clone(),
        timestamp: now_ms(),
        partition: a.partition,
    };
    let mut total = 0u64;
    if let Some(v) = a.value.clone() {
        p.send(&a.topic, record(a.key.clone(), v)).await?;
        total = 1;
    } else {
        let bar = (target.output == Format::Table).then(|| output::counter("producing"));
        // Read between sends: the CLI's runtime runs nothing else meanwhile.
        use std::io::BufRead;
        for line in std::io::stdin().lock().lines() {
            let line = line?;
            let (key, value) = match &a.key_separator {
                Some(sep) => match line.split_once(sep.as_str()) {
                    Some((k, v)) => (Some(k.to_string()), v.to_string()),
                    None => {
                        return Err(CliError::Usage(format!(
                            "line {} has no key separator `{sep}`",
                            total + 1
                        )))
                    }
                },
                None => (a.key.clone(), line),
            };
            p.send(&a.topic, record(key, value)).await?;
            total += 1;
            if let Some(b) = &bar {
                b.inc(1);
            }
        }
        if let Some(b) = bar {
            b.finish_and_clear();
        }
    }
    p.flush().await?;
    let per_partition: BTreeMap<i32, u64> =
        p.acked.iter().map(|((_, part), n)| (*part, *n)).collect();
    output::done(
        target.output,
        serde_json::json!({"topic": a.topic, "records": total, "partitions": per_partition}),
        &format!("Produced {total} records to {} (acks=all).\n", a.topic),
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_go_where_kafkas_java_client_sends_them() {
        // Kafka's UtilsTest: murmur2 of these strings.
        assert_eq!(murmur2(b"21"), -973932308);
        assert_eq!(murmur2(b"foobar"), -790332482);
        assert_eq!(murmur2(b"a-little-bit-long-string"), -985981536);
        assert_eq!(murmur2(b"a-little-bit-longer-string"), -1486304829);
        assert_eq!(
            murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8"),
            -58897971
        );
        assert_eq!(murmur2(b"abc"), 479470107);
        assert!((0..6).contains(&partition_for_key(b"customer-1", 6)));
    }
}
