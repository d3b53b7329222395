//! `strata group list|describe|reset-offsets`: what
//! kafka-consumer-groups.sh does, over the Kafka protocol (ListGroups,
//! FindCoordinator, DescribeGroups, OffsetFetch, ListOffsets,
//! OffsetCommit), plus, per partition, the lag age and catch-up estimate
//! that only Strata's admin API knows.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use bytes::Bytes;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError;
use serde::Serialize;
use serde_json::Value;

use super::admin_http::{segment, AdminClient, AdminError};
use super::kafka::{max_version, ClientError, KafkaClient, PartitionLeader};
use super::output::{self, Format, Table};
use super::{CliError, CliResult, Target};
use strata_protocol::tools::{new_offset, Reset};

#[derive(Debug, clap::Subcommand)]
pub enum GroupCommand {
    /// Every consumer group, on every broker.
    List,
    /// A group's members and, per partition, committed offset, log end,
    /// lag, lag age and catch-up estimate.
    Describe { group: String },
    /// Reset a group's committed offsets (a dry run unless --execute).
    ResetOffsets(ResetArgs),
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("to").required(true).args(
    ["to_earliest", "to_latest", "to_datetime", "to_offset", "shift_by"])))]
#[command(group(clap::ArgGroup::new("scope").required(true).args(["topic", "all_topics"])))]
pub struct ResetArgs {
    pub group: String,
    /// TOPIC or TOPIC:PARTITION[,PARTITION...] (repeat).
    #[arg(long)]
    pub topic: Vec<String>,
    /// Every topic the group has committed offsets for.
    #[arg(long)]
    pub all_topics: bool,
    #[arg(long)]
    pub to_earliest: bool,
    #[arg(long)]
    pub to_latest: bool,
    /// The first offset at or after this time: RFC 3339
    /// (2026-12-05T10:00:00Z; no zone is UTC) or epoch milliseconds.
    #[arg(long, value_name = "DATETIME")]
    pub to_datetime: Option<String>,
    #[arg(long, value_name = "OFFSET")]
    pub to_offset: Option<i64>,
    /// Move each committed offset by N (negative: back).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub shift_by: Option<i64>,
    /// Commit the new offsets (without it, only the plan is shown).
    #[arg(long)]
    pub execute: bool,
}

#[derive(Debug, Serialize)]
struct GroupRow {
    group_id: String,
    state: String,
    protocol_type: String,
    coordinator: i32,
}

#[derive(Debug, Serialize, Clone)]
struct Member {
    member_id: String,
    group_instance_id: Option<String>,
    client_id: String,
    host: String,
    assignment: Vec<(String, Vec<i32>)>,
}

#[derive(Debug, Serialize)]
struct PartitionLag {
    topic: String,
    partition: i32,
    committed_offset: Option<i64>,
    log_end_offset: Option<i64>,
    lag: Option<i64>,
    lag_seconds: Option<f64>,
    catch_up: Option<String>,
    catch_up_seconds: Option<f64>,
    member_id: Option<String>,
}

#[derive(Debug, Serialize)]
struct GroupDescription {
    group_id: String,
    state: String,
    coordinator: i32,
    members: Vec<Member>,
    partitions: Vec<PartitionLag>,
    lag: i64,
    /// Why lag age and catch-up are missing, when they are.
    strata_note: Option<String>,
}

pub async fn run(cmd: GroupCommand, target: &Target) -> CliResult<()> {
    let mut k = KafkaClient::connect(&target.bootstrap_server).await?;
    match cmd {
        GroupCommand::List => list(&mut k, target.output).await,
        GroupCommand::Describe { group } => describe(&mut k, &group, target).await,
        GroupCommand::ResetOffsets(args) => reset(&mut k, args, target.output).await,
    }
}

async fn list(k: &mut KafkaClient, format: Format) -> CliResult<()> {
    let mut rows = Vec::new();
    for b in k.brokers() {
        let (r, _) = k
            .send(
                Some(b.node_id),
                "ListGroups",
                max_version::LIST_GROUPS,
                |_| ListGroupsRequest::default(),
            )
            .await?;
        if r.error_code != 0 {
            return Err(ClientError::kafka(
                format!("listing the groups of broker {}", b.node_id),
                r.error_code,
                None,
            )
            .into());
        }
        for g in r.groups {
            rows.push(GroupRow {
                group_id: g.group_id.0.to_string(),
                state: if g.group_state.is_empty() {
                    "-".into()
                } else {
                    g.group_state.to_string()
                },
                // ListGroups answers "" for a group that only committed
                // offsets (as Kafka); like Kafka's consumer-groups tool,
                // that is a (simple) consumer group.
                protocol_type: if g.protocol_type.is_empty() {
                    "consumer".into()
                } else {
                    g.protocol_type.to_string()
                },
                coordinator: b.node_id,
            });
        }
    }
    rows.sort_by(|a, b| a.group_id.cmp(&b.group_id));
    if format == Format::Json {
        return Ok(output::json(&rows)?);
    }
    let mut t = Table::new(&["GROUP", "STATE", "PROTOCOL-TYPE", "COORDINATOR"]);
    for r in &rows {
        t.row(vec![
            r.group_id.clone(),
            r.state.clone(),
            r.protocol_type.clone(),
            r.coordinator.to_string(),
        ]);
    }
    Ok(output::print(&t.render())?)
}

/// The consumer protocol's assignment bytes: (topic, partitions).
fn assignment(bytes: &Bytes) -> Vec<(String, Vec<i32>)> {
    strata_protocol::consumer_protocol::assignment(bytes).unwrap_or_default()
}

/// DescribeGroups of one group on its coordinator: (state, members).
async fn group_state(
    k: &mut KafkaClient,
    coordinator: i32,
    group: &str,
) -> CliResult<(String, Vec<Member>)> {
    let (r, _) = k
        .send(
            Some(coordinator),
            "DescribeGroups",
            max_version::DESCRIBE_GROUPS,
            |_| {
                let mut req = DescribeGroupsRequest::default();
                req.groups
                    .push(GroupId(StrBytes::from_string(group.to_string())));
                req
            },
        )
        .await?;
    let g = r
        .groups
        .into_iter()
        .next()
        .ok_or_else(|| ClientError::Other("DescribeGroups answered nothing".into()))?;
    if g.error_code != 0 {
        return Err(ClientError::kafka(
            format!("describing group {group}"),
            g.error_code,
            g.error_message.as_deref(),
        )
        .into());
    }
    let members = g
        .members
        .iter()
        .map(|m| Member {
            member_id: m.member_id.to_string(),
            group_instance_id: m.group_instance_id.as_ref().map(|s| s.to_string()),
            client_id: m.client_id.to_string(),
            host: m.client_host.to_string(),
            assignment: assignment(&m.member_assignment),
        })
        .collect();
    Ok((g.group_state.to_string(), members))
}

/// The group's committed offsets (every partition it committed).
async fn committed(
    k: &mut KafkaClient,
    coordinator: i32,
    group: &str,
) -> CliResult<BTreeMap<(String, i32), i64>> {
    let (r, _) = k
        .send(
            Some(coordinator),
            "OffsetFetch",
            max_version::OFFSET_FETCH,
            |_| {
                let mut req = OffsetFetchRequest::default();
                req.group_id = GroupId(StrBytes::from_string(group.to_string()));
                req.topics = None;
                req
            },
        )
        .await?;
    if r.error_code != 0 {
        return Err(ClientError::kafka(
            format!("fetching the offsets of group {group}"),
            r.error_code,
            None,
        )
        .into());
    }
    let mut out = BTreeMap::new();
    for t in r.topics {
        for p in t.partitions {
            if p.error_code != 0 {
                return Err(ClientError::kafka(
                    format!(
                        "offset of group {group} on {}-{}",
                        t.name.0, p.partition_index
                    ),
                    p.error_code,
                    None,
                )
                .into());
            }
            if p.committed_offset >= 0 {
                out.insert(
                    (t.name.0.to_string(), p.partition_index),
                    p.committed_offset,
                );
            }
        }
    }
    Ok(out)
}

/// Strata's view of the group's partitions: lag age and catch-up, by
/// partition; or why it is not available.
async fn strata_lag(admin_url: &str, group: &str) -> Result<HashMap<(String, i32), Value>, String> {
    let api = AdminClient::new(admin_url);
    match api.get(&format!("/api/v1/groups/{}", segment(group))).await {
        Ok(v) => Ok(v["partitions"]
            .as_array()
            .map(|ps| {
                ps.iter()
                    .filter_map(|p| {
                        Some((
                            (
                                p["topic"].as_str()?.to_string(),
                                p["partition"].as_i64()? as i32,
                            ),
                            p.clone(),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default()),
        Err(AdminError::Api {
            status: 421,
            message,
            ..
        }) => Err(format!(
            "lag age and catch-up estimates come from the coordinator's admin API: {message}"
        )),
        Err(e) => Err(format!("lag age and catch-up estimates are not shown: {e}")),
    }
}

async fn describe(k: &mut KafkaClient, group: &str, target: &Target) -> CliResult<()> {
    let coordinator = k.coordinator(group).await?;
    let (state, members) = group_state(k, coordinator, group).await?;
    let committed = committed(k, coordinator, group).await?;
    if state == "Dead" && committed.is_empty() {
        return Err(ClientError::kafka(
            format!("group {group}"),
            ResponseError::GroupIdNotFound.code(),
            Some("no such group"),
        )
        .into());
    }
    // Partitions: committed ones and assigned ones.
    let mut keys: BTreeSet<(String, i32)> = committed.keys().cloned().collect();
    let mut owner: HashMap<(String, i32), String> = HashMap::new();
    for m in &members {
        for (t, ps) in &m.assignment {
            for p in ps {
                keys.insert((t.clone(), *p));
                owner.insert((t.clone(), *p), m.member_id.clone());
            }
        }
    }
    let topics: Vec<String> = keys
        .iter()
        .map(|(t, _)| t.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let ends = if topics.is_empty() {
        HashMap::new()
    } else {
        let leaders: Vec<PartitionLeader> = k
            .leaders(&topics)
            .await?
            .into_iter()
            .filter(|l| keys.contains(&(l.topic.clone(), l.partition)))
            .collect();
        k.list_offsets(&leaders, -1).await?
    };
    let (strata, note) = match strata_lag(&target.admin_url, group).await {
        Ok(m) => (m, None),
        Err(n) => (HashMap::new(), Some(n)),
    };
    let partitions: Vec<PartitionLag> = keys
        .into_iter()
        .map(|key| {
            let c = committed.get(&key).copied();
            let end = ends.get(&key).copied();
            let lag = match (c, end) {
                (Some(c), Some(e)) => Some((e - c).max(0)),
                _ => None,
            };
            let s = strata.get(&key);
            PartitionLag {
                committed_offset: c,
                log_end_offset: end,
                lag,
                lag_seconds: s.and_then(|s| s["lag_seconds"].as_f64()),
                catch_up: s.and_then(|s| s["catch_up"]["state"].as_str().map(str::to_string)),
                catch_up_seconds: s.and_then(|s| s["catch_up"]["seconds"].as_f64()),
                member_id: owner.get(&key).cloned(),
                topic: key.0,
                partition: key.1,
            }
        })
        .collect();
    let d = GroupDescription {
        lag: partitions.iter().filter_map(|p| p.lag).sum(),
        group_id: group.to_string(),
        state,
        coordinator,
        members,
        partitions,
        strata_note: note,
    };
    if target.output == Format::Json {
        return Ok(output::json(&d)?);
    }
    let mut text = format!(
        "Group: {}  State: {}  Coordinator: {}  Members: {}  Lag: {}\n\n",
        d.group_id,
        d.state,
        d.coordinator,
        d.members.len(),
        d.lag
    );
    let mut t = Table::new(&[
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "LAG-AGE",
        "CATCH-UP",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ]);
    for p in &d.partitions {
        let m = p
            .member_id
            .as_ref()
            .and_then(|id| d.members.iter().find(|m| &m.member_id == id));
        t.row(vec![
            p.topic.clone(),
            p.partition.to_string(),
            output::opt(p.committed_offset),
            output::opt(p.log_end_offset),
            output::opt(p.lag),
            p.lag_seconds
                .map(output::seconds)
                .unwrap_or_else(|| "-".into()),
            catch_up_text(p.catch_up.as_deref(), p.catch_up_seconds),
            output::opt(m.map(|m| m.member_id.clone())),
            output::opt(m.map(|m| m.host.clone())),
            output::opt(m.map(|m| m.client_id.clone())),
        ]);
    }
    text.push_str(&t.render());
    output::print(&text)?;
    if let Some(n) = &d.strata_note {
        output::note(n);
    }
    Ok(())
}

fn catch_up_text(state: Option<&str>, seconds: Option<f64>) -> String {
    match (state, seconds) {
        (Some("caught_up"), _) => "caught up".into(),
        (Some("catching_up"), Some(s)) => format!("in {}", output::seconds(s)),
        (Some("not_catching_up"), _) => "NOT CATCHING UP".into(),
        (Some("unknown"), _) => "measuring".into(),
        _ => "-".into(),
    }
}

#[derive(Debug, Serialize)]
struct PlannedReset {
    topic: String,
    partition: i32,
    current_offset: Option<i64>,
    new_offset: i64,
}

/// `--topic` values: a whole topic, or TOPIC:P,P.
fn parse_topic_scope(v: &str) -> CliResult<(String, Option<Vec<i32>>)> {
    match v.rsplit_once(':') {
        None => Ok((v.to_string(), None)),
        Some((t, ps)) => {
            let parts = ps
                .split(',')
                .map(|p| p.trim().parse::<i32>())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|_| CliError::Usage(format!("--topic {v}: partitions are TOPIC:0,1,2")))?;
            Ok((t.to_string(), Some(parts)))
        }
    }
}

async fn reset(k: &mut KafkaClient, a: ResetArgs, format: Format) -> CliResult<()> {
    let group = a.group.as_str();
    let coordinator = k.coordinator(group).await?;
    let (state, members) = group_state(k, coordinator, group).await?;
    if !members.is_empty() || !(state == "Empty" || state == "Dead") {
        return Err(ClientError::kafka(
            format!("resetting the offsets of group {group}"),
            ResponseError::NonEmptyGroup.code(),
            Some(&format!(
                "offsets can only be reset while the group is inactive, but it is {state} with {} member(s): stop its consumers first",
                members.len()
            )),
        )
        .into());
    }
    let committed = committed(k, coordinator, group).await?;
    let mut scope: Vec<(String, Option<Vec<i32>>)> = Vec::new();
    if a.all_topics {
        for t in committed
            .keys()
            .map(|(t, _)| t.clone())
            .collect::<BTreeSet<_>>()
        {
            scope.push((t, None));
        }
        if scope.is_empty() {
            return Err(CliError::Usage(format!(
                "group {group} has no committed offsets: name the topics with --topic"
            )));
        }
    } else {
        for t in &a.topic {
            scope.push(parse_topic_scope(t)?);
        }
    }
    let topics: Vec<String> = scope.iter().map(|(t, _)| t.clone()).collect();
    let all = k.leaders(&topics).await?;
    let mut parts: Vec<PartitionLeader> = Vec::new();
    for (t, wanted) in &scope {
        let of_topic: Vec<&PartitionLeader> = all.iter().filter(|l| &l.topic == t).collect();
        match wanted {
            None => parts.extend(of_topic.into_iter().cloned()),
            Some(ps) => {
                for p in ps {
                    let l = of_topic.iter().find(|l| l.partition == *p).ok_or_else(|| {
                        ClientError::kafka(
                            format!("topic {t} has no partition {p} (it has {})", of_topic.len()),
                            ResponseError::UnknownTopicOrPartition.code(),
                            None,
                        )
                    })?;
                    parts.push((*l).clone());
                }
            }
        }
    }
    let earliest = k.list_offsets(&parts, -2).await?;
    let latest = k.list_offsets(&parts, -1).await?;
    let at = match &a.to_datetime {
        Some(dt) => {
            let ts = strata_protocol::tools::parse_datetime(dt).map_err(CliError::Usage)?;
            Some(k.list_offsets(&parts, ts).await?)
        }
        None => None,
    };
    let mut plan = Vec::with_capacity(parts.len());
    for p in &parts {
        let key = (p.topic.clone(), p.partition);
        let current = committed.get(&key).copied();
        let reset = if a.to_earliest {
            Reset::Earliest
        } else if a.to_latest {
            Reset::Latest
        } else if let Some(at) = &at {
            Reset::Datetime(at.get(&key).copied().unwrap_or(-1))
        } else if let Some(o) = a.to_offset {
            Reset::Offset(o)
        } else {
            Reset::Shift(a.shift_by.unwrap_or(0))
        };
        plan.push(PlannedReset {
            topic: p.topic.clone(),
            partition: p.partition,
            current_offset: current,
            new_offset: new_offset(reset, earliest[&key], latest[&key], current),
        });
    }
    if a.execute {
        let bar = if format == Format::Table {
            Some(output::progress(plan.len() as u64, "committing"))
        } else {
            None
        };
        for chunk in plan.chunks(100) {
            commit(k, coordinator, group, chunk).await?;
            if let Some(b) = &bar {
                b.inc(chunk.len() as u64);
            }
        }
        if let Some(b) = bar {
            b.finish_and_clear();
        }
    }
    if format == Format::Json {
        return Ok(output::json(&serde_json::json!({
            "group_id": group, "executed": a.execute, "partitions": plan}))?);
    }
    let mut t = Table::new(&[
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "NEW-OFFSET",
    ]);
    for p in &plan {
        t.row(vec![
            group.to_string(),
            p.topic.clone(),
            p.partition.to_string(),
            output::opt(p.current_offset),
            p.new_offset.to_string(),
        ]);
    }
    output::print(&t.render())?;
    if a.execute {
        output::note(&format!(
            "Committed {} offsets for group {group}.",
            plan.len()
        ));
    } else {
        output::note("Dry run: nothing committed. Add --execute to commit these offsets.");
    }
    Ok(())
}

async fn commit(
    k: &mut KafkaClient,
    coordinator: i32,
    group: &str,
    plan: &[PlannedReset],
) -> CliResult<()> {
    let (r, _) = k
        .send(
            Some(coordinator),
            "OffsetCommit",
            max_version::OFFSET_COMMIT,
            |_| {
                let mut req = OffsetCommitRequest::default();
                req.group_id = GroupId(StrBytes::from_string(group.to_string()));
                req.generation_id_or_member_epoch = -1;
                req.member_id = StrBytes::from_static_str("");
                req.retention_time_ms = -1;
                let mut topics: Vec<OffsetCommitRequestTopic> = Vec::new();
                for p in plan {
                    let i = match topics.iter().position(|t| t.name.0.as_str() == p.topic) {
                        Some(i) => i,
                        None => {
                            let mut t = OffsetCommitRequestTopic::default();
                            t.name = TopicName(StrBytes::from_string(p.topic.clone()));
                            topics.push(t);
                            topics.len() - 1
                        }
                    };
                    let mut rp = OffsetCommitRequestPartition::default();
                    rp.partition_index = p.partition;
                    rp.committed_offset = p.new_offset;
                    rp.committed_leader_epoch = -1;
                    rp.committed_metadata = Some(StrBytes::from_static_str(""));
                    topics[i].partitions.push(rp);
                }
                req.topics = topics;
                req
            },
        )
        .await?;
    for t in r.topics {
        for p in t.partitions {
            if p.error_code != 0 {
                return Err(ClientError::kafka(
                    format!(
                        "committing {}-{} for group {group}",
                        t.name.0, p.partition_index
                    ),
                    p.error_code,
                    None,
                )
                .into());
            }
        }
    }
    Ok(())
}
