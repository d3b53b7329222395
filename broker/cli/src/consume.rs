//! `strata consume TOPIC`: reads records over the Kafka protocol (Fetch
//! from each partition's leader, without a group), from the beginning, an
//! offset or a time, up to the end the partitions had when it started
//! (or on, with --follow). Values print one per line; `--output json`
//! prints one JSON object per record (JSON Lines), keys, values and
//! headers as UTF-8 text, or base64 when they are not.
//!
//! `Reader` is also what `strata dlq` reads with.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::RecordBatchDecoder;
use kafka_protocol::ResponseError;
use serde::Serialize;

use super::kafka::{complete_batches, max_version, ClientError, KafkaClient, PartitionLeader};
use super::output::{self, Format};
use super::{CliError, CliResult, Target};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Isolation {
    ReadUncommitted,
    ReadCommitted,
}

#[derive(Debug, clap::Args)]
pub struct ConsumeArgs {
    pub topic: String,
    /// Only these partitions (repeat; default: all).
    #[arg(long)]
    pub partition: Vec<i32>,
    /// Start at this offset (default: the beginning).
    #[arg(long, conflicts_with_all = ["from_datetime", "from_end"])]
    pub offset: Option<i64>,
    /// Start at the first record at or after this time (RFC 3339 or epoch ms).
    #[arg(long, value_name = "DATETIME", conflicts_with = "from_end")]
    pub from_datetime: Option<String>,
    /// Start at the end: only records produced from now on (with --follow).
    #[arg(long)]
    pub from_end: bool,
    /// Stop after this many records.
    #[arg(long)]
    pub max_messages: Option<u64>,
    /// Keep reading past the end, waiting for new records (Ctrl-C stops).
    #[arg(long)]
    pub follow: bool,
    /// Print KEY<TAB>VALUE (table output).
    #[arg(long)]
    pub print_key: bool,
    #[arg(long, value_enum, default_value = "read-uncommitted")]
    pub isolation: Isolation,
}

/// A record as read.
#[derive(Debug, Clone)]
pub struct InRecord {
    pub partition: i32,
    pub offset: i64,
    pub timestamp: i64,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<(String, Option<Bytes>)>,
}

/// Reads partitions from positions up to ends (or on, when `ends` is
/// None), in fetch order (offsets ascending per partition).
pub struct Reader<'a> {
    k: &'a mut KafkaClient,
    topic: String,
    leaders: Vec<PartitionLeader>,
    pub positions: BTreeMap<i32, i64>,
    pub ends: Option<BTreeMap<i32, i64>>,
    isolation: Isolation,
}

impl<'a> Reader<'a> {
    pub async fn new(
        k: &'a mut KafkaClient,
        topic: &str,
        partitions: &[i32],
        start: Start,
        follow: bool,
        isolation: Isolation,
    ) -> Result<Reader<'a>, ClientError> {
        let all = k.leaders(&[topic.to_string()]).await?;
        if all.is_empty() {
            return Err(ClientError::kafka(
                format!("topic {topic}"),
                ResponseError::UnknownTopicOrPartition.code(),
                None,
            ));
        }
        let leaders: Vec<PartitionLeader> = if partitions.is_empty() {
            all
        } else {
            let mut v = Vec::new();
            for p in partitions {
                v.push(
                    all.iter()
                        .find(|l| l.partition == *p)
                        .cloned()
                        .ok_or_else(|| {
                            ClientError::kafka(
                                format!(
                                    "topic {topic} has no partition {p} (it has {})",
                                    all.len()
                                ),
                                ResponseError::UnknownTopicOrPartition.code(),
                                None,
                            )
                        })?,
                );
            }
            v
        };
        let earliest = k.list_offsets(&leaders, -2).await?;
        let latest = k.list_offsets(&leaders, -1).await?;
        let at = match start {
            Start::Time(ts) => Some(k.list_offsets(&leaders, ts).await?),
            _ => None,
        };
        let mut positions = BTreeMap::new();
        let mut ends = BTreeMap::new();
        for l in &leaders {
            let key = (l.topic.clone(), l.partition);
            let (lo, hi) = (earliest[&key], latest[&key]);
            let pos = match start {
                Start::Beginning => lo,
                Start::End => hi,
                Start::Offset(o) => o.clamp(lo, hi),
                Start::Time(_) => match at.as_ref().and_then(|a| a.get(&key)) {
                    Some(o) if *o >= 0 => *o,
                    _ => hi,
                },
            };
            positions.insert(l.partition, pos);
            ends.insert(l.partition, hi);
        }
        Ok(Reader {
            k,
            topic: topic.to_string(),
            leaders,
            positions,
            ends: (!follow).then_some(ends),
            isolation,
        })
    }

    /// Records left to read before the ends (None when following).
    pub fn remaining(&self) -> Option<u64> {
        self.ends.as_ref().map(|ends| {
            ends.iter()
                .map(|(p, e)| (e - self.positions.get(p).copied().unwrap_or(*e)).max(0) as u64)
                .sum()
        })
    }

    fn done(&self) -> bool {
        self.remaining() == Some(0)
    }

    /// The next records (possibly none, after a wait), or None at the end.
    pub async fn poll(&mut self) -> Result<Option<Vec<InRecord>>, ClientError> {
        if self.done() {
            return Ok(None);
        }
        let mut by_leader: HashMap<i32, Vec<i32>> = HashMap::new();
        for l in &self.leaders {
            let unfinished = match &self.ends {
                Some(e) => self.positions[&l.partition] < e[&l.partition],
                None => true,
            };
            if unfinished {
                by_leader.entry(l.leader).or_default().push(l.partition);
            }
        }
        let mut out = Vec::new();
        let mut refresh = false;
        for (leader, parts) in by_leader {
            let topic = self.topic.clone();
            let positions = self.positions.clone();
            let isolation = self.isolation;
            let (r, _) = self
                .k
                .send(Some(leader), "Fetch", max_version::FETCH, |_| {
                    let mut req = FetchRequest::default();
                    req.replica_id = BrokerId(-1);
                    req.max_wait_ms = 500;
                    req.min_bytes = 1;
                    req.max_bytes = 8 << 20;
                    req.isolation_level = if isolation == Isolation::ReadCommitted {
                        1
                    } else {
                        0
                    };
                    req.session_id = 0;
                    req.session_epoch = -1;
                    let mut t = FetchTopic::default();
                    t.topic = TopicName(StrBytes::from_string(topic.clone()));
                    for p in &parts {
                        let mut fp = FetchPartition::default();
                        fp.partition = *p;
                        fp.current_leader_epoch = -1;
                        fp.fetch_offset = positions[p];
                        fp.log_start_offset = -1;
                        fp.partition_max_bytes = 1 << 20;
                        t.partitions.push(fp);
                    }
                    req.topics.push(t);
                    req
                })
                .await?;
            if r.error_code != 0 {
                return Err(ClientError::kafka("Fetch", r.error_code, None));
            }
            for t in &r.responses {
                for p in &t.partitions {
                    // Only partitions asked for (a broker's answer is not trusted).
                    let Some(&pos) = self.positions.get(&p.partition_index) else {
                        continue;
                    };
                    let code = p.error_code;
                    if code == ResponseError::NotLeaderOrFollower.code()
                        || code == ResponseError::LeaderNotAvailable.code()
                        || code == ResponseError::FencedLeaderEpoch.code()
                    {
                        refresh = true;
                        continue;
                    }
                    if code != 0 {
                        return Err(ClientError::kafka(
                            format!(
                                "fetching {}-{} at offset {}",
                                self.topic, p.partition_index, pos
                            ),
                            code,
                            None,
                        ));
                    }
                    let aborted: Vec<(i64, i64)> = p
                        .aborted_transactions
                        .as_ref()
                        .map(|a| {
                            a.iter()
                                .map(|t| (t.producer_id.0, t.first_offset))
                                .collect()
                        })
                        .unwrap_or_default();
                    let Some(records) = &p.records else { continue };
                    let part = p.partition_index;
                    let (recs, next) =
                        decode(records, pos, &aborted, self.isolation).map_err(|m| {
                            ClientError::Protocol {
                                addr: format!("broker {leader}"),
                                message: format!("{}-{part}: {m}", self.topic),
                            }
                        })?;
                    let end = self.ends.as_ref().and_then(|e| e.get(&part).copied());
                    for mut r in recs {
                        r.partition = part;
                        if end.is_none_or(|e| r.offset < e) {
                            out.push(r);
                        }
                    }
                    let next = match end {
                        Some(e) => next.min(e),
                        None => next,
                    };
                    self.positions.insert(part, next.max(pos));
                }
            }
        }
        if refresh {
            self.leaders = self
                .k
                .leaders(&[self.topic.clone()])
                .await?
                .into_iter()
                .filter(|l| self.positions.contains_key(&l.partition))
                .collect();
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok(Some(out))
    }
}

/// Where a read starts.
#[derive(Debug, Clone, Copy)]
pub enum Start {
    Beginning,
    End,
    Offset(i64),
    Time(i64),
}

/// The records of a fetched partition at or after `pos`, and the next
/// position (after the last batch read, control batches included).
fn decode(
    records: &Bytes,
    pos: i64,
    aborted: &[(i64, i64)],
    isolation: Isolation,
) -> Result<(Vec<InRecord>, i64), String> {
    let whole = complete_batches(records);
    let mut buf = whole.clone();
    let sets = RecordBatchDecoder::decode_all(&mut buf).map_err(|e| e.to_string())?;
    let mut next = pos;
    let mut out = Vec::new();
    // Producers whose open transaction was aborted, from its first offset.
    let mut aborting: HashSet<i64> = HashSet::new();
    for set in sets {
        for r in set.records {
            next = next.max(r.offset + 1);
            if isolation == Isolation::ReadCommitted {
                for (pid, first) in aborted {
                    if *pid == r.producer_id && *first <= r.offset {
                        aborting.insert(*pid);
                    }
                }
                if r.control {
                    aborting.remove(&r.producer_id);
                    continue;
                }
                if r.transactional && aborting.contains(&r.producer_id) {
                    continue;
                }
            }
            if r.control || r.offset < pos {
                continue;
            }
            out.push(InRecord {
                partition: -1,
                offset: r.offset,
                timestamp: r.timestamp,
                key: r.key,
                value: r.value,
                headers: r
                    .headers
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect(),
            });
        }
    }
    Ok((out, next))
}

/// Text when UTF-8, else base64 under a `_base64` name.
pub fn text_or_base64(v: &Option<Bytes>) -> (Option<String>, Option<String>) {
    match v {
        None => (None, None),
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => (Some(s.to_string()), None),
            Err(_) => (
                None,
                Some(base64::engine::general_purpose::STANDARD.encode(b)),
            ),
        },
    }
}

#[derive(Debug, Serialize)]
struct JsonRecord {
    topic: String,
    partition: i32,
    offset: i64,
    timestamp: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_base64: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_base64: Option<String>,
    headers: BTreeMap<String, Option<String>>,
}

pub async fn run(a: ConsumeArgs, target: &Target) -> CliResult<()> {
    use std::io::Write;
    let start = if a.from_end {
        Start::End
    } else if let Some(o) = a.offset {
        Start::Offset(o)
    } else if let Some(dt) = &a.from_datetime {
        Start::Time(strata_protocol::tools::parse_datetime(dt).map_err(CliError::Usage)?)
    } else {
        Start::Beginning
    };
    let mut k = KafkaClient::connect(&target.bootstrap_server).await?;
    let mut reader =
        Reader::new(&mut k, &a.topic, &a.partition, start, a.follow, a.isolation).await?;
    let total = match (reader.remaining(), a.max_messages) {
        (Some(r), Some(m)) => Some(r.min(m)),
        (r, m) => r.or(m),
    };
    let bar = match (target.output, total) {
        (Format::Table, Some(t)) => Some(output::progress(t, "reading")),
        _ => None,
    };
    let mut seen = 0u64;
    let stdout = std::io::stdout();
    'outer: while let Some(batch) = reader.poll().await? {
        let mut out = stdout.lock();
        for r in batch {
            if a.max_messages.is_some_and(|m| seen >= m) {
                break 'outer;
            }
            seen += 1;
            match target.output {
                Format::Json => {
                    let (key, key_base64) = text_or_base64(&r.key);
                    let (value, value_base64) = text_or_base64(&r.value);
                    let rec = JsonRecord {
                        topic: a.topic.clone(),
                        partition: r.partition,
                        offset: r.offset,
                        timestamp: r.timestamp,
                        key,
                        key_base64,
                        value,
                        value_base64,
                        headers: r
                            .headers
                            .iter()
                            .map(|(k, v)| {
                                let (t, b) = text_or_base64(v);
                                (k.clone(), t.or(b))
                            })
                            .collect(),
                    };
                    serde_json::to_writer(&mut out, &rec).map_err(std::io::Error::other)?;
                    writeln!(out)?;
                }
                Format::Table => {
                    let show = |v: &Option<Bytes>| {
                        v.as_ref()
                            .map(|b| String::from_utf8_lossy(b).into_owned())
                            .unwrap_or_else(|| "null".into())
                    };
                    if a.print_key {
                        writeln!(out, "{}\t{}", show(&r.key), show(&r.value))?;
                    } else {
                        writeln!(out, "{}", show(&r.value))?;
                    }
                }
            }
            if let Some(b) = &bar {
                b.inc(1);
            }
        }
        out.flush()?;
        if a.max_messages.is_some_and(|m| seen >= m) {
            break;
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if target.output == Format::Table {
        output::note(&format!("Read {seen} records from {}.", a.topic));
    }
    Ok(())
}
