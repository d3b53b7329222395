//! `strata dlq inspect|replay`: the dead-letter tools. `inspect` groups a
//! dead-letter topic's records by their reason header, with counts, first
//! and last offsets and a sample, and shows the broker's warnings for the
//! topic; `replay` re-produces records (key, value, headers) to their
//! source topic or `--to`, through an idempotent acks=all producer, adding
//! `dlq.replayed_from` (TOPIC/PARTITION/OFFSET of the dead letter) so a
//! second replay of the same range is visible downstream and to
//! `inspect`. Reads and writes over the Kafka protocol only, so they work
//! against any Kafka broker; the warnings come from Strata's admin API.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use serde::Serialize;

use super::admin_http::AdminClient;
use super::consume::{text_or_base64, InRecord, Isolation, Reader, Start};
use super::kafka::KafkaClient;
use super::output::{self, Format, Table};
use super::produce::{OutRecord, Producer};
use super::{CliResult, Target};
use strata_protocol::dlq_reasons as reasons;

#[derive(Debug, clap::Subcommand)]
pub enum DlqCommand {
    /// Group a dead-letter topic's records by reason: counts, first and
    /// last offsets, a sample; and the broker's warnings for it.
    Inspect {
        topic: String,
        #[command(flatten)]
        range: Range,
    },
    /// Re-produce dead letters (key, value, headers) to their source topic
    /// (the dlq.source_topic header) or --to.
    Replay {
        topic: String,
        /// Target topic (default: each record's dlq.source_topic header).
        #[arg(long)]
        to: Option<String>,
        /// Only records with this reason (as `inspect` shows it).
        #[arg(long)]
        reason: Option<String>,
        /// Show what would be replayed; produce nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        range: Range,
    },
}

#[derive(Debug, clap::Args)]
pub struct Range {
    /// Only these partitions (repeat; default: all).
    #[arg(long)]
    pub partition: Vec<i32>,
    /// First offset read, in each partition (default: the log start).
    #[arg(long)]
    pub from_offset: Option<i64>,
    /// Stop before this offset, in each partition (default: the end).
    #[arg(long)]
    pub until_offset: Option<i64>,
    /// Header names a reason is read from, in order (repeat; default
    /// dlq.reason, error.*, Kafka Connect's and Spring's).
    #[arg(long = "reason-header", value_name = "NAME")]
    pub reason_headers: Vec<String>,
}

impl Range {
    fn names(&self) -> Vec<String> {
        if self.reason_headers.is_empty() {
            reasons::DEFAULT_REASON_HEADERS
                .iter()
                .map(|s| s.to_string())
                .collect()
        } else {
            self.reason_headers.clone()
        }
    }

    async fn reader<'a>(&self, k: &'a mut KafkaClient, topic: &str) -> CliResult<Reader<'a>> {
        let start = match self.from_offset {
            Some(o) => Start::Offset(o),
            None => Start::Beginning,
        };
        let mut r = Reader::new(
            k,
            topic,
            &self.partition,
            start,
            false,
            Isolation::ReadCommitted,
        )
        .await?;
        if let (Some(until), Some(ends)) = (self.until_offset, r.ends.as_mut()) {
            for e in ends.values_mut() {
                *e = (*e).min(until);
            }
        }
        Ok(r)
    }
}

fn header_view(r: &InRecord) -> Vec<(&str, Option<&[u8]>)> {
    r.headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_deref()))
        .collect()
}

#[derive(Debug, Serialize, Clone)]
struct Position {
    partition: i32,
    offset: i64,
    timestamp: i64,
}

#[derive(Debug, Serialize)]
struct Sample {
    key: Option<String>,
    value: Option<String>,
    headers: BTreeMap<String, Option<String>>,
}

#[derive(Debug, Serialize)]
struct ReasonGroup {
    reason: String,
    count: u64,
    first: Position,
    last: Position,
    source_topics: BTreeMap<String, u64>,
    sample: Sample,
}

fn cut(s: Option<String>, n: usize) -> Option<String> {
    s.map(|s| {
        if s.chars().count() > n {
            format!("{}…", s.chars().take(n).collect::<String>())
        } else {
            s
        }
    })
}

fn sample_of(r: &InRecord) -> Sample {
    let (k, kb) = text_or_base64(&r.key);
    let (v, vb) = text_or_base64(&r.value);
    Sample {
        key: cut(k.or(kb), 200),
        value: cut(v.or(vb), 500),
        headers: r
            .headers
            .iter()
            .map(|(k, v)| {
                let (t, b) = text_or_base64(v);
                (k.clone(), cut(t.or(b), 200))
            })
            .collect(),
    }
}

fn time_text(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| ms.to_string())
}

pub async fn run(cmd: DlqCommand, target: &Target) -> CliResult<()> {
    match cmd {
        DlqCommand::Inspect { topic, range } => inspect(&topic, &range, target).await,
        DlqCommand::Replay {
            topic,
            to,
            reason,
            dry_run,
            range,
        } => replay(&topic, to, reason, dry_run, &range, target).await,
    }
}

/// The broker's warnings about `topic`, or why they are not shown.
async fn warnings(admin_url: &str, topic: &str) -> Result<Vec<String>, String> {
    let api = AdminClient::new(admin_url);
    match api.get("/api/v1/dlq").await {
        Ok(v) => Ok(v["topics"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["topic"].as_str() == Some(topic))
            .flat_map(|t| t["warnings"].as_array().cloned().unwrap_or_default())
            .filter_map(|w| w["message"].as_str().map(str::to_string))
            .collect()),
        Err(e) => Err(format!(
            "the broker's dead-letter warnings are not shown: {e}"
        )),
    }
}

async fn inspect(topic: &str, range: &Range, target: &Target) -> CliResult<()> {
    let names = range.names();
    let mut k = KafkaClient::connect(&target.bootstrap_server).await?;
    let mut reader = range.reader(&mut k, topic).await?;
    let bar = (target.output == Format::Table)
        .then(|| reader.remaining().map(|n| output::progress(n, "reading")))
        .flatten();
    let mut groups: BTreeMap<String, ReasonGroup> = BTreeMap::new();
    let mut replayed: HashMap<String, u64> = HashMap::new();
    let mut total = 0u64;
    while let Some(batch) = reader.poll().await? {
        for r in batch {
            total += 1;
            let h = header_view(&r);
            let reason = reasons::reason(&h, &names);
            let at = Position {
                partition: r.partition,
                offset: r.offset,
                timestamp: r.timestamp,
            };
            let source = reasons::text(&h, reasons::SOURCE_TOPIC);
            if let Some(from) = reasons::text(&h, reasons::REPLAYED_FROM) {
                *replayed.entry(from).or_default() += 1;
            }
            let g = groups.entry(reason.clone()).or_insert_with(|| ReasonGroup {
                reason,
                count: 0,
                first: at.clone(),
                last: at.clone(),
                source_topics: BTreeMap::new(),
                sample: sample_of(&r),
            });
            g.count += 1;
            if (at.timestamp, at.offset) < (g.first.timestamp, g.first.offset) {
                g.first = at.clone();
            }
            if (at.timestamp, at.offset) >= (g.last.timestamp, g.last.offset) {
                g.last = at;
            }
            if let Some(s) = source {
                *g.source_topics.entry(s).or_default() += 1;
            }
            if let Some(b) = &bar {
                b.inc(1);
            }
        }
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let mut list: Vec<ReasonGroup> = groups.into_values().collect();
    list.sort_by(|a, b| b.count.cmp(&a.count).then(a.reason.cmp(&b.reason)));
    let replayed_more_than_once = replayed.values().filter(|n| **n > 1).count() as u64;
    let (warns, note) = match warnings(&target.admin_url, topic).await {
        Ok(w) => (w, None),
        Err(n) => (Vec::new(), Some(n)),
    };
    if target.output == Format::Json {
        output::json(&serde_json::json!({
            "topic": topic,
            "records": total,
            "reason_headers": names,
            "reasons": list,
            "replayed_records": replayed.len(),
            "replayed_more_than_once": replayed_more_than_once,
            "warnings": warns,
        }))?;
    } else {
        let mut t = Table::new(&[
            "REASON",
            "COUNT",
            "FIRST",
            "LAST",
            "FIRST-TIME",
            "LAST-TIME",
            "SOURCE",
            "SAMPLE",
        ]);
        for g in &list {
            t.row(vec![
                g.reason.clone(),
                g.count.to_string(),
                format!("{}:{}", g.first.partition, g.first.offset),
                format!("{}:{}", g.last.partition, g.last.offset),
                time_text(g.first.timestamp),
                time_text(g.last.timestamp),
                if g.source_topics.is_empty() {
                    "-".into()
                } else {
                    g.source_topics
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(",")
                },
                cut(g.sample.value.clone(), 60)
                    .unwrap_or_else(|| "null".into())
                    .replace('\n', " "),
            ]);
        }
        output::print(&format!(
            "Topic: {topic}  Records: {total}  Reasons: {}\n\n{}",
            list.len(),
            t.render()
        ))?;
        if replayed_more_than_once > 0 {
            output::note(&format!(
                "{replayed_more_than_once} dead letters were replayed here more than once (same {} header)",
                reasons::REPLAYED_FROM
            ));
        }
    }
    for w in &warns {
        output::note(&format!("warning: {w}"));
    }
    if let Some(n) = note {
        output::note(&n);
    }
    Ok(())
}

#[derive(Debug, Default, Serialize)]
struct ReplaySummary {
    scanned: u64,
    replayed: BTreeMap<String, u64>,
    skipped_other_reason: u64,
    skipped_no_target: u64,
    dry_run: bool,
}

async fn replay(
    topic: &str,
    to: Option<String>,
    only: Option<String>,
    dry_run: bool,
    range: &Range,
    target: &Target,
) -> CliResult<()> {
    let names = range.names();
    let mut rk = KafkaClient::connect(&target.bootstrap_server).await?;
    let mut wk = KafkaClient::connect(&target.bootstrap_server).await?;
    let mut reader = range.reader(&mut rk, topic).await?;
    let mut producer = if dry_run {
        None
    } else {
        Some(Producer::new(&mut wk).await?)
    };
    let bar = (target.output == Format::Table)
        .then(|| reader.remaining().map(|n| output::progress(n, "replaying")))
        .flatten();
    let mut partition_counts: HashMap<String, Option<i32>> = HashMap::new();
    let mut sum = ReplaySummary {
        dry_run,
        ..Default::default()
    };
    while let Some(batch) = reader.poll().await? {
        for r in batch {
            sum.scanned += 1;
            if let Some(b) = &bar {
                b.inc(1);
            }
            let h = header_view(&r);
            if let Some(want) = &only {
                if &reasons::reason(&h, &names) != want {
                    sum.skipped_other_reason += 1;
                    continue;
                }
            }
            let source = reasons::text(&h, reasons::SOURCE_TOPIC);
            let Some(dest) = to.clone().or_else(|| source.clone()) else {
                sum.skipped_no_target += 1;
                continue;
            };
            // Back to its own partition when it returns to its source.
            let partition = match (&source, reasons::text(&h, reasons::SOURCE_PARTITION)) {
                (Some(s), Some(p)) if *s == dest => p.parse::<i32>().ok(),
                _ => None,
            };
            let partition = match partition {
                Some(p) => {
                    let count = match partition_counts.get(&dest) {
                        Some(c) => *c,
                        None => {
                            let c = match &mut producer {
                                Some(pr) => pr.partition_count(&dest).await.ok(),
                                None => None,
                            };
                            partition_counts.insert(dest.clone(), c);
                            c
                        }
                    };
                    count.filter(|c| p >= 0 && p < *c).map(|_| p)
                }
                None => None,
            };
            let mut headers: Vec<(String, Option<Bytes>)> = r
                .headers
                .iter()
                .filter(|(k, _)| k != reasons::REPLAYED_FROM)
                .cloned()
                .collect();
            headers.push((
                reasons::REPLAYED_FROM.to_string(),
                Some(Bytes::from(format!("{topic}/{}/{}", r.partition, r.offset))),
            ));
            if let Some(p) = &mut producer {
                p.send(
                    &dest,
                    OutRecord {
                        key: r.key.clone(),
                        value: r.value.clone(),
                        headers,
                        timestamp: r.timestamp,
                        partition,
                    },
                )
                .await?;
            }
            *sum.replayed.entry(dest).or_default() += 1;
        }
    }
    if let Some(p) = &mut producer {
        p.flush().await?;
    }
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if target.output == Format::Json {
        return Ok(output::json(&sum)?);
    }
    let mut t = Table::new(&["TARGET", "RECORDS"]);
    for (dest, n) in &sum.replayed {
        t.row(vec![dest.clone(), n.to_string()]);
    }
    let replayed: u64 = sum.replayed.values().sum();
    output::print(&format!(
        "{} {replayed} of {} records from {topic}{}.\n{}",
        if dry_run { "Would replay" } else { "Replayed" },
        sum.scanned,
        if dry_run {
            ""
        } else {
            " (acks=all, idempotent)"
        },
        if t.is_empty() {
            String::new()
        } else {
            format!("\n{}", t.render())
        }
    ))?;
    if sum.skipped_other_reason > 0 {
        output::note(&format!(
            "{} records skipped: another reason",
            sum.skipped_other_reason
        ));
    }
    if sum.skipped_no_target > 0 {
        output::note(&format!(
            "{} records skipped: no {} header; give --to",
            sum.skipped_no_target,
            reasons::SOURCE_TOPIC
        ));
    }
    Ok(())
}
