//! `strata topic list|describe|create|alter|delete`, over the Kafka
//! protocol (Metadata, ListOffsets, DescribeConfigs, CreateTopics,
//! IncrementalAlterConfigs, DeleteTopics): what kafka-topics.sh and
//! kafka-configs.sh do for topics.

use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use serde::Serialize;

use super::kafka::{max_version, ClientError, KafkaClient};
use super::output::{self, Format, Table};
use super::{parse_pairs, CliError, CliResult, Target};

const RESOURCE_TOPIC: i8 = 2;

#[derive(Debug, clap::Subcommand)]
pub enum TopicCommand {
    /// Every topic with its partition count and replication factor.
    List {
        /// Include internal topics (__consumer_offsets, ...).
        #[arg(long)]
        all: bool,
    },
    /// A topic's partitions (leader, replicas, ISR, offsets) and configs.
    Describe {
        topic: String,
        /// Every config, not only the topic's overrides.
        #[arg(long)]
        all_configs: bool,
    },
    /// Create a topic.
    Create {
        topic: String,
        /// Partitions (default: the broker's num.partitions).
        #[arg(long)]
        partitions: Option<i32>,
        /// Replicas per partition (default: default.replication.factor).
        #[arg(long)]
        replication_factor: Option<i16>,
        /// A topic config NAME=VALUE (repeat), e.g. local.retention.ms=3600000.
        #[arg(long = "config", value_name = "NAME=VALUE")]
        configs: Vec<String>,
    },
    /// Change a topic's configs (the hot window among them).
    Alter {
        topic: String,
        /// Set NAME=VALUE (repeat).
        #[arg(long = "set", value_name = "NAME=VALUE")]
        set: Vec<String>,
        /// Remove an override, back to the default (repeat).
        #[arg(long = "delete", value_name = "NAME")]
        delete: Vec<String>,
    },
    /// Delete a topic and its records.
    Delete { topic: String },
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

#[derive(Debug, Serialize)]
struct TopicRow {
    name: String,
    partitions: usize,
    replication_factor: usize,
    internal: bool,
}

#[derive(Debug, Serialize)]
struct PartitionRow {
    partition: i32,
    leader: i32,
    replicas: Vec<i32>,
    isr: Vec<i32>,
    log_start_offset: i64,
    log_end_offset: i64,
}

#[derive(Debug, Serialize)]
struct ConfigRow {
    name: String,
    value: Option<String>,
    source: &'static str,
}

#[derive(Debug, Serialize)]
struct TopicDescription {
    name: String,
    topic_id: String,
    partitions: Vec<PartitionRow>,
    configs: Vec<ConfigRow>,
}

fn ids(v: &[BrokerId]) -> String {
    v.iter()
        .map(|b| b.0.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

pub async fn run(cmd: TopicCommand, target: &Target) -> CliResult<()> {
    let mut k = KafkaClient::connect(&target.bootstrap_server).await?;
    match cmd {
        TopicCommand::List { all } => list(&mut k, all, target.output).await,
        TopicCommand::Describe { topic, all_configs } => {
            describe(&mut k, &topic, all_configs, target.output).await
        }
        TopicCommand::Create {
            topic,
            partitions,
            replication_factor,
            configs,
        } => {
            create(
                &mut k,
                &topic,
                partitions,
                replication_factor,
                &configs,
                target.output,
            )
            .await
        }
        TopicCommand::Alter { topic, set, delete } => {
            alter(&mut k, &topic, &set, &delete, target.output).await
        }
        TopicCommand::Delete { topic } => delete_topic(&mut k, &topic, target.output).await,
    }
}

async fn list(k: &mut KafkaClient, all: bool, format: Format) -> CliResult<()> {
    let md = k.metadata(None).await?;
    let mut rows: Vec<TopicRow> = md
        .topics
        .iter()
        .filter(|t| t.error_code == 0 && (all || !t.is_internal))
        .map(|t| TopicRow {
            name: t.name.as_ref().map(|n| n.0.to_string()).unwrap_or_default(),
            partitions: t.partitions.len(),
            replication_factor: strata_protocol::tools::replication_factor(t),
            internal: t.is_internal,
        })
        .collect();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    if format == Format::Json {
        return Ok(output::json(&rows)?);
    }
    let mut t = Table::new(&["TOPIC", "PARTITIONS", "REPLICATION-FACTOR"]);
    for r in &rows {
        t.row(vec![
            r.name.clone(),
            r.partitions.to_string(),
            r.replication_factor.to_string(),
        ]);
    }
    Ok(output::print(&t.render())?)
}

async fn describe(
    k: &mut KafkaClient,
    topic: &str,
    all_configs: bool,
    format: Format,
) -> CliResult<()> {
    let md = k.metadata(Some(&[topic.to_string()])).await?;
    let Some(t) = md.topics.first() else {
        return Err(ClientError::Other(format!("no metadata for topic {topic}")).into());
    };
    if t.error_code != 0 {
        return Err(ClientError::kafka(format!("topic {topic}"), t.error_code, None).into());
    }
    let leaders = k.leaders(&[topic.to_string()]).await?;
    let earliest = k.list_offsets(&leaders, -2).await?;
    let latest = k.list_offsets(&leaders, -1).await?;
    let mut partitions: Vec<PartitionRow> = t
        .partitions
        .iter()
        .map(|p| PartitionRow {
            partition: p.partition_index,
            leader: p.leader_id.0,
            replicas: p.replica_nodes.iter().map(|b| b.0).collect(),
            isr: p.isr_nodes.iter().map(|b| b.0).collect(),
            log_start_offset: *earliest
                .get(&(topic.to_string(), p.partition_index))
                .unwrap_or(&-1),
            log_end_offset: *latest
                .get(&(topic.to_string(), p.partition_index))
                .unwrap_or(&-1),
        })
        .collect();
    partitions.sort_by_key(|p| p.partition);
    let (cr, _) = k
        .send(
            None,
            "DescribeConfigs",
            max_version::DESCRIBE_CONFIGS,
            |_| {
                let mut req = DescribeConfigsRequest::default();
                let mut res = DescribeConfigsResource::default();
                res.resource_type = RESOURCE_TOPIC;
                res.resource_name = s(topic);
                res.configuration_keys = None;
                req.resources.push(res);
                req
            },
        )
        .await?;
    let mut configs = Vec::new();
    for r in cr.results {
        if r.error_code != 0 {
            return Err(ClientError::kafka(
                format!("configs of topic {topic}"),
                r.error_code,
                r.error_message.as_deref(),
            )
            .into());
        }
        for c in r.configs {
            if all_configs || c.config_source == 1 {
                configs.push(ConfigRow {
                    name: c.name.to_string(),
                    value: if c.is_sensitive {
                        None
                    } else {
                        c.value.map(|v| v.to_string())
                    },
                    source: strata_protocol::tools::source_name(c.config_source),
                });
            }
        }
    }
    configs.sort_by(|a, b| a.name.cmp(&b.name));
    let d = TopicDescription {
        name: topic.to_string(),
        topic_id: t.topic_id.to_string(),
        partitions,
        configs,
    };
    if format == Format::Json {
        return Ok(output::json(&d)?);
    }
    let mut text = format!(
        "Topic: {}  TopicId: {}  Partitions: {}  ReplicationFactor: {}\n\n",
        d.name,
        d.topic_id,
        d.partitions.len(),
        d.partitions
            .iter()
            .map(|p| p.replicas.len())
            .max()
            .unwrap_or(0)
    );
    let mut pt = Table::new(&[
        "PARTITION",
        "LEADER",
        "REPLICAS",
        "ISR",
        "LOG-START-OFFSET",
        "LOG-END-OFFSET",
    ]);
    for p in &t.partitions {
        let row = d
            .partitions
            .iter()
            .find(|r| r.partition == p.partition_index);
        pt.row(vec![
            p.partition_index.to_string(),
            p.leader_id.0.to_string(),
            ids(&p.replica_nodes),
            ids(&p.isr_nodes),
            output::opt(row.map(|r| r.log_start_offset)),
            output::opt(row.map(|r| r.log_end_offset)),
        ]);
    }
    text.push_str(&pt.render());
    let mut ct = Table::new(&["CONFIG", "VALUE", "SOURCE"]);
    for c in &d.configs {
        ct.row(vec![
            c.name.clone(),
            c.value.clone().unwrap_or_else(|| "(sensitive)".into()),
            c.source.to_string(),
        ]);
    }
    text.push('\n');
    if ct.is_empty() {
        text.push_str("No config overrides (--all-configs shows every config).\n");
    } else {
        text.push_str(&ct.render());
    }
    Ok(output::print(&text)?)
}

async fn create(
    k: &mut KafkaClient,
    topic: &str,
    partitions: Option<i32>,
    replication_factor: Option<i16>,
    configs: &[String],
    format: Format,
) -> CliResult<()> {
    let configs = parse_pairs(configs, "--config")?;
    let (r, _) = k
        .send(None, "CreateTopics", max_version::CREATE_TOPICS, |_| {
            let mut t = CreatableTopic::default();
            t.name = TopicName(s(topic));
            t.num_partitions = partitions.unwrap_or(-1);
            t.replication_factor = replication_factor.unwrap_or(-1);
            for (name, value) in &configs {
                let mut c = CreatableTopicConfig::default();
                c.name = s(name);
                c.value = Some(s(value));
                t.configs.push(c);
            }
            let mut req = CreateTopicsRequest::default();
            req.topics.push(t);
            req.timeout_ms = 30_000;
            req
        })
        .await?;
    let res = r
        .topics
        .first()
        .ok_or_else(|| ClientError::Other("CreateTopics answered nothing".into()))?;
    if res.error_code != 0 {
        return Err(ClientError::kafka(
            format!("creating topic {topic}"),
            res.error_code,
            res.error_message.as_deref(),
        )
        .into());
    }
    Ok(output::done(
        format,
        serde_json::json!({"topic": topic, "created": true, "partitions": res.num_partitions,
                           "replication_factor": res.replication_factor}),
        &format!(
            "Created topic {topic} ({} partitions, replication factor {}).\n",
            res.num_partitions, res.replication_factor
        ),
    )?)
}

async fn alter(
    k: &mut KafkaClient,
    topic: &str,
    set: &[String],
    delete: &[String],
    format: Format,
) -> CliResult<()> {
    let set = parse_pairs(set, "--set")?;
    if set.is_empty() && delete.is_empty() {
        return Err(CliError::Usage(
            "nothing to change: give --set NAME=VALUE and/or --delete NAME".into(),
        ));
    }
    let (r, _) = k
        .send(
            None,
            "IncrementalAlterConfigs",
            max_version::INCREMENTAL_ALTER_CONFIGS,
            |_| {
                let mut res = AlterConfigsResource::default();
                res.resource_type = RESOURCE_TOPIC;
                res.resource_name = s(topic);
                for (name, value) in &set {
                    let mut c = AlterableConfig::default();
                    c.name = s(name);
                    c.config_operation = 0;
                    c.value = Some(s(value));
                    res.configs.push(c);
                }
                for name in delete {
                    let mut c = AlterableConfig::default();
                    c.name = s(name);
                    c.config_operation = 1;
                    res.configs.push(c);
                }
                let mut req = IncrementalAlterConfigsRequest::default();
                req.resources.push(res);
                req
            },
        )
        .await?;
    if let Some(res) = r.responses.first() {
        if res.error_code != 0 {
            return Err(ClientError::kafka(
                format!("changing the configs of topic {topic}"),
                res.error_code,
                res.error_message.as_deref(),
            )
            .into());
        }
    }
    Ok(output::done(
        format,
        serde_json::json!({"topic": topic, "set": set.iter().cloned().collect::<std::collections::BTreeMap<_,_>>(),
                           "deleted": delete}),
        &format!("Changed the configs of topic {topic}.\n"),
    )?)
}

async fn delete_topic(k: &mut KafkaClient, topic: &str, format: Format) -> CliResult<()> {
    let (r, _) = k
        .send(None, "DeleteTopics", max_version::DELETE_TOPICS, |v| {
            let mut req = DeleteTopicsRequest::default();
            if v >= 6 {
                let mut t = DeleteTopicState::default();
                t.name = Some(TopicName(s(topic)));
                req.topics.push(t);
            } else {
                req.topic_names.push(TopicName(s(topic)));
            }
            req.timeout_ms = 30_000;
            req
        })
        .await?;
    if let Some(res) = r.responses.first() {
        if res.error_code != 0 {
            return Err(ClientError::kafka(
                format!("deleting topic {topic}"),
                res.error_code,
                res.error_message.as_deref(),
            )
            .into());
        }
    }
    Ok(output::done(
        format,
        serde_json::json!({"topic": topic, "deleted": true}),
        &format!("Deleted topic {topic}.\n"),
    )?)
}
