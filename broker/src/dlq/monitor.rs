//! The dead-letter monitor: every `dlq.check.interval.ms` it reads the
//! records appended since its last pass to the dead-letter topics'
//! partitions this broker leads, counts them per reason (a spike in one
//! reason means an upstream change), notes the source topics they name,
//! and checks the two ways a dead-letter queue loses data: retention
//! shorter than a source topic's, and records older than
//! `dlq.unconsumed.warn.ms` that no consumer group has consumed. Each new
//! warning is logged once; all are in `/metrics`, the admin API and the
//! console.
//!
//! Reads only, off the request path (a blocking task): it never slows a
//! producer, never writes a log. Reads at most `MAX_BYTES_PER_PASS` per
//! partition per pass; batches were validated (and their inflation
//! bounded) when they were appended.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_protocol::records::RecordBatchDecoder;
use serde::Serialize;

use super::reasons;
use crate::group::coordinator::GroupCoordinator;
use crate::log_manager::LogManager;
use crate::metrics::family::{partition_labels, Family, MetricSource};

/// Bytes read per partition per pass; the rest waits for the next pass.
const MAX_BYTES_PER_PASS: usize = 4 << 20;
/// Distinct reasons counted per topic; later ones count as "other".
const MAX_REASONS_PER_TOPIC: usize = 50;
const OTHER_REASONS: &str = "(other reasons)";

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct DlqWarning {
    pub topic: String,
    /// `retention_shorter_than_source` or `unconsumed`.
    pub kind: &'static str,
    pub message: String,
    pub source: Option<String>,
    pub partition: Option<i32>,
    /// For `unconsumed`: the age of the oldest record no group consumed.
    pub seconds: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct DlqTopicStatus {
    pub topic: String,
    pub records_by_reason: BTreeMap<String, u64>,
    pub sources: Vec<String>,
    pub retention_ms: i64,
    pub warnings: Vec<DlqWarning>,
}

#[derive(Debug, Default)]
struct State {
    /// Next offset to read, per partition.
    positions: HashMap<(String, i32), i64>,
    first_pass_done: bool,
    counts: BTreeMap<(String, String), u64>,
    /// Source topics named by records' headers.
    sources_seen: BTreeMap<String, BTreeSet<String>>,
    /// Per partition: age of the oldest record no group consumed (0: none).
    unconsumed_seconds: BTreeMap<(String, i32), f64>,
    warnings: Vec<DlqWarning>,
    dlq_topics: BTreeSet<String>,
}

pub struct DlqMonitor {
    logs: Arc<LogManager>,
    groups: Arc<GroupCoordinator>,
    reason_headers: Vec<String>,
    unconsumed_warn_ms: i64,
    state: Mutex<State>,
}

impl std::fmt::Debug for DlqMonitor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DlqMonitor")
            .field("reason_headers", &self.reason_headers)
            .field("unconsumed_warn_ms", &self.unconsumed_warn_ms)
            .finish()
    }
}

impl DlqMonitor {
    pub fn new(
        logs: Arc<LogManager>,
        groups: Arc<GroupCoordinator>,
        reason_headers: Vec<String>,
        unconsumed_warn_ms: i64,
    ) -> Arc<Self> {
        Arc::new(DlqMonitor {
            logs,
            groups,
            reason_headers,
            unconsumed_warn_ms,
            state: Mutex::new(State::default()),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs a pass every `interval` on a blocking thread.
    pub fn start_background(self: &Arc<Self>, interval: Duration) {
        let m = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let pass = m.clone();
                if let Err(e) = tokio::task::spawn_blocking(move || pass.scan_once()).await {
                    tracing::error!(error = %e, "dead-letter monitor pass failed");
                }
            }
        });
    }

    /// One pass: count new records, then check the warnings.
    pub fn scan_once(&self) {
        let now = self.logs.clock().now_ms();
        let topics: Vec<_> = self
            .logs
            .topics()
            .into_iter()
            .filter(|t| {
                !crate::topic_name::is_internal(&t.name)
                    && reasons::is_dlq(
                        &t.name,
                        t.overrides()
                            .get("dlq.enable")
                            .is_some_and(|v| v.eq_ignore_ascii_case("true")),
                    )
            })
            .collect();
        let first_pass = !self.lock().first_pass_done;
        for t in &topics {
            for partition in t.partitions() {
                if !partition.is_leader() {
                    continue;
                }
                self.count_new(&t.name, partition.log(), first_pass);
            }
        }
        // Committed offsets of every group this broker coordinates.
        let mut consumed: HashMap<(String, i32), i64> = HashMap::new();
        for o in self.groups.lag_observations() {
            let e = consumed
                .entry((o.topic, o.partition))
                .or_insert(o.committed);
            *e = (*e).max(o.committed);
        }
        let mut warnings = Vec::new();
        let mut unconsumed = BTreeMap::new();
        for t in &topics {
            let cfg = t.config.get();
            for source in self.sources_of(&t.name) {
                let Some(src) = self.logs.topic(&source) else {
                    continue;
                };
                let src_ms = src.config.get().retention_ms;
                let shorter = cfg.retention_ms >= 0 && (src_ms < 0 || cfg.retention_ms < src_ms);
                if shorter {
                    warnings.push(DlqWarning {
                        topic: t.name.clone(),
                        kind: "retention_shorter_than_source",
                        message: format!(
                            "dead-letter topic {} keeps records for {} but its source {} keeps them for {}: dead letters can be deleted before anyone looks at them (raise retention.ms)",
                            t.name,
                            retention_text(cfg.retention_ms),
                            source,
                            retention_text(src_ms)
                        ),
                        source: Some(source.clone()),
                        partition: None,
                        seconds: None,
                    });
                }
            }
            for partition in t.partitions() {
                if !partition.is_leader() {
                    continue;
                }
                let log = partition.log();
                let p = log.partition();
                let hw = log.high_watermark();
                let start = log.log_start_offset();
                let pos = consumed
                    .get(&(t.name.clone(), p))
                    .copied()
                    .unwrap_or(start)
                    .max(start);
                let age = if pos < hw {
                    log.batch_timestamp_at(pos)
                        .ok()
                        .flatten()
                        .map(|ts| (now - ts).max(0) as f64 / 1e3)
                        .unwrap_or(0.0)
                } else {
                    0.0
                };
                unconsumed.insert((t.name.clone(), p), age);
                if age * 1e3 >= self.unconsumed_warn_ms as f64 {
                    warnings.push(DlqWarning {
                        topic: t.name.clone(),
                        kind: "unconsumed",
                        message: format!(
                            "dead-letter topic {} partition {p}: {} records, the oldest {} old, were consumed by no group: a dead-letter queue nobody reads is a slower way to lose data",
                            t.name,
                            hw - pos,
                            retention_text((age * 1e3) as i64)
                        ),
                        source: None,
                        partition: Some(p),
                        seconds: Some(age),
                    });
                }
            }
        }
        let mut s = self.lock();
        for w in &warnings {
            let known = s.warnings.iter().any(|o| {
                o.topic == w.topic
                    && o.kind == w.kind
                    && o.partition == w.partition
                    && o.source == w.source
            });
            if !known {
                tracing::warn!(topic = %w.topic, kind = w.kind, "{}", w.message);
            }
        }
        s.warnings = warnings;
        s.unconsumed_seconds = unconsumed;
        s.dlq_topics = topics.iter().map(|t| t.name.clone()).collect();
        s.first_pass_done = true;
        // Forget partitions of topics that are gone.
        let live: BTreeSet<String> = s.dlq_topics.clone();
        s.positions.retain(|(t, _), _| live.contains(t));
        s.counts.retain(|(t, _), _| live.contains(t));
        s.sources_seen.retain(|t, _| live.contains(t));
    }

    /// Source topics: `dlq.source.topics`, the `.dlq` convention, and the
    /// records' `dlq.source_topic` headers.
    fn sources_of(&self, topic: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        if let Some(t) = self.logs.topic(topic) {
            if let Some(list) = t.overrides().get("dlq.source.topics") {
                out.extend(crate::config::parse_list(list));
            }
        }
        if let Some(s) = reasons::conventional_source(topic) {
            out.insert(s.to_string());
        }
        if let Some(seen) = self.lock().sources_seen.get(topic) {
            out.extend(seen.iter().cloned());
        }
        out.remove(topic);
        out
    }

    /// Counts the records appended since the last pass. On the monitor's
    /// first pass it starts at the high watermark (what was there before
    /// this process started was counted by an earlier one); a partition
    /// first seen later (a new topic) starts at its log start.
    fn count_new(
        &self,
        topic: &str,
        log: &Arc<crate::log::partition_log::PartitionLog>,
        first_pass: bool,
    ) {
        let key = (topic.to_string(), log.partition());
        let hw = log.high_watermark();
        let start = log.log_start_offset();
        let pos = {
            let s = self.lock();
            s.positions.get(&key).copied()
        };
        let mut pos = match pos {
            Some(p) => p.max(start),
            None if first_pass => hw,
            None => start,
        };
        let mut counted: BTreeMap<String, u64> = BTreeMap::new();
        let mut sources: BTreeSet<String> = BTreeSet::new();
        let mut read = 0usize;
        while pos < hw && read < MAX_BYTES_PER_PASS {
            let r = match log.read(pos, MAX_BYTES_PER_PASS - read, true) {
                Ok(r) => r,
                Err(e) => {
                    tracing::debug!(topic, partition = key.1, error = %e, "dead-letter monitor: read failed");
                    break;
                }
            };
            if r.records.is_empty() {
                break;
            }
            read += r.records.len();
            let mut buf = r.records.clone();
            let sets = match RecordBatchDecoder::decode_all(&mut buf) {
                Ok(s) => s,
                Err(e) => {
                    tracing::debug!(topic, partition = key.1, error = %e, "dead-letter monitor: a batch did not decode");
                    break;
                }
            };
            let before = pos;
            for set in sets {
                for rec in set.records {
                    pos = pos.max(rec.offset + 1);
                    if rec.control || rec.offset < before || rec.offset >= hw {
                        continue;
                    }
                    let headers: Vec<(&str, Option<&[u8]>)> = rec
                        .headers
                        .iter()
                        .map(|(k, v)| (k.as_str(), v.as_deref()))
                        .collect();
                    *counted
                        .entry(reasons::reason(&headers, &self.reason_headers))
                        .or_default() += 1;
                    if let Some(src) = reasons::text(&headers, reasons::SOURCE_TOPIC) {
                        if sources.len() < 16
                            && crate::topic_name::validate_topic_name(&src).is_ok()
                        {
                            sources.insert(src);
                        }
                    }
                }
            }
            if pos == before {
                break;
            }
        }
        let mut s = self.lock();
        s.positions.insert(key, pos.min(hw.max(pos)));
        for (reason, n) in counted {
            let distinct = s.counts.keys().filter(|(t, _)| t == topic).count();
            let label = if s.counts.contains_key(&(topic.to_string(), reason.clone()))
                || distinct < MAX_REASONS_PER_TOPIC
            {
                reason
            } else {
                OTHER_REASONS.to_string()
            };
            *s.counts.entry((topic.to_string(), label)).or_default() += n;
        }
        if !sources.is_empty() {
            s.sources_seen
                .entry(topic.to_string())
                .or_default()
                .extend(sources);
        }
    }

    /// The dead-letter topics this broker watches, with counts and warnings.
    pub fn status(&self) -> Vec<DlqTopicStatus> {
        let topics: Vec<String> = self.lock().dlq_topics.iter().cloned().collect();
        topics
            .into_iter()
            .map(|t| {
                let sources: Vec<String> = self.sources_of(&t).into_iter().collect();
                let s = self.lock();
                DlqTopicStatus {
                    records_by_reason: s
                        .counts
                        .iter()
                        .filter(|((topic, _), _)| *topic == t)
                        .map(|((_, r), n)| (r.clone(), *n))
                        .collect(),
                    warnings: s
                        .warnings
                        .iter()
                        .filter(|w| w.topic == t)
                        .cloned()
                        .collect(),
                    retention_ms: self
                        .logs
                        .topic(&t)
                        .map(|x| x.config.get().retention_ms)
                        .unwrap_or(-1),
                    sources,
                    topic: t,
                }
            })
            .collect()
    }
}

fn retention_text(ms: i64) -> String {
    if ms < 0 {
        return "ever".into();
    }
    let s = ms / 1000;
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        7200..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} days", s / 86_400),
    }
}

/// `/metrics` families: dead letters per topic and reason, and the warnings.
impl MetricSource for DlqMonitor {
    fn families(&self) -> Vec<Family> {
        let s = self.lock();
        let mut records = Family::counter(
            "strata_dlq_records_total",
            "Records appended to a dead-letter topic since this broker started watching it, by reason header (dlq.reason.headers); alert on its rate per reason.",
        );
        for ((topic, reason), n) in &s.counts {
            records.push(
                vec![("topic", topic.clone()), ("reason", reason.clone())],
                *n as f64,
            );
        }
        let mut age = Family::gauge(
            "strata_dlq_unconsumed_seconds",
            "Age of the oldest record of a dead-letter partition that no consumer group has consumed (0: none).",
        );
        for ((topic, p), a) in &s.unconsumed_seconds {
            age.push(partition_labels(topic, *p), *a);
        }
        let mut short = Family::gauge(
            "strata_dlq_retention_shorter_than_source",
            "1 when a dead-letter topic's retention.ms is shorter than a source topic's.",
        );
        for w in s
            .warnings
            .iter()
            .filter(|w| w.kind == "retention_shorter_than_source")
        {
            short.push(
                vec![
                    ("topic", w.topic.clone()),
                    ("source", w.source.clone().unwrap_or_default()),
                ],
                1.0,
            );
        }
        vec![records, age, short]
    }
}
