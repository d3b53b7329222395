//! The `strata` binary. `strata broker` runs a broker; see `--help`.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

use strata_broker::config::BrokerConfig;
use strata_broker::node::{Node, NodeOptions};
use strata_cli as cli;

#[derive(Debug, Parser)]
#[command(
    name = "strata",
    version,
    about = "Strata: a Kafka-compatible event streaming broker with tiered storage"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a broker.
    Broker(BrokerArgs),
    /// Topics: list, describe, create, alter configs, delete (Kafka protocol).
    Topic {
        #[command(flatten)]
        target: cli::Target,
        #[command(subcommand)]
        cmd: cli::topic::TopicCommand,
    },
    /// Consumer groups: list, describe with lag and catch-up, reset offsets.
    Group {
        #[command(flatten)]
        target: cli::Target,
        #[command(subcommand)]
        cmd: cli::group::GroupCommand,
    },
    /// Tiering status per partition (Strata's admin API).
    Tiering {
        #[command(flatten)]
        target: cli::Target,
        #[command(subcommand)]
        cmd: TieringCommand,
    },
    /// Produce records from the command line or standard input (acks=all, idempotent).
    Produce {
        #[command(flatten)]
        target: cli::Target,
        #[command(flatten)]
        args: cli::produce::ProduceArgs,
    },
    /// Read records (no group): from the beginning to the end, or on with --follow.
    Consume {
        #[command(flatten)]
        target: cli::Target,
        #[command(flatten)]
        args: cli::consume::ConsumeArgs,
    },
    /// Every broker and topic setting with its default and meaning (Markdown).
    Config {
        #[command(subcommand)]
        cmd: ConfigCommand,
    },
    /// Dead-letter topics: inspect by reason, replay to the source topic.
    Dlq {
        #[command(flatten)]
        target: cli::Target,
        #[command(subcommand)]
        cmd: cli::dlq::DlqCommand,
    },
}

#[derive(Debug, Subcommand)]
enum ConfigCommand {
    /// The settings reference, as in docs/operations.md.
    Reference,
}

#[derive(Debug, Subcommand)]
enum TieringCommand {
    /// Per partition: local and remote offsets and bytes, what awaits upload.
    Status {
        /// One topic (default: every tiered topic).
        topic: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
struct BrokerArgs {
    /// Directory holding the partition logs, checkpoints and topic metadata.
    #[arg(long, env = "STRATA_DATA_DIR", default_value = "./data")]
    data_dir: PathBuf,

    /// Address of the one PLAINTEXT Kafka listener (port 0 picks a free
    /// port); default 127.0.0.1:9092. The `listeners` setting names
    /// several listeners with their protocols instead (docs/security.md).
    #[arg(long, env = "STRATA_LISTEN")]
    listen: Option<String>,

    /// HOST:PORT clients are told to connect to (Metadata). Defaults to the
    /// listen address.
    #[arg(long, env = "STRATA_ADVERTISED_LISTENER")]
    advertised_listener: Option<String>,

    /// Address of the HTTP API: the console page (/), the admin API
    /// (/api/v1, described at /api/v1/openapi.json), /metrics (Prometheus),
    /// /healthz and /readyz. Beyond loopback it needs a token.
    #[arg(long, env = "STRATA_HTTP_LISTEN", default_value = "127.0.0.1:9644")]
    http_listen: String,

    /// File holding the bearer token the admin API and /metrics require
    /// (`Authorization: Bearer <token>`, at least 16 characters). The
    /// environment variable STRATA_HTTP_TOKEN gives it directly. Without a
    /// token the HTTP API binds only to loopback.
    #[arg(long, env = "STRATA_HTTP_TOKEN_FILE")]
    http_token_file: Option<PathBuf>,

    /// Object store for tiered segments: file://DIR, memory://, s3://BUCKET[/PREFIX]
    /// (S3 settings from AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
    /// AWS_ENDPOINT_URL, AWS_ALLOW_HTTP; path-style). Checked at start-up.
    /// Sealed segments of topics with remote.storage.enable go there; a
    /// broker started with an empty data dir restores the topics it holds.
    /// Defaults to file://<data-dir>/bucket.
    #[arg(long, env = "STRATA_OBJECT_STORE")]
    object_store: Option<String>,

    /// Where the cluster's metadata lives: etcd://HOST:PORT[,HOST:PORT...][/PREFIX]
    /// (etcd v3; the prefix defaults to /strata). Brokers given the same
    /// store form one cluster. Without it the broker runs alone, with an
    /// embedded store in the process.
    #[arg(long, env = "STRATA_METADATA")]
    metadata: Option<String>,

    /// This broker's id (the `node.id` setting); unique within a cluster.
    #[arg(long, env = "STRATA_NODE_ID")]
    node_id: Option<i32>,

    /// TOML file of broker settings under Kafka's names, e.g. `num.partitions = 3`.
    #[arg(long, env = "STRATA_CONFIG")]
    config: Option<PathBuf>,

    /// A broker setting under its Kafka name, NAME=VALUE (repeatable; wins
    /// over the config file). Known settings: num.partitions,
    /// default.replication.factor, auto.create.topics.enable,
    /// delete.topic.enable, message.max.bytes, socket.request.max.bytes,
    /// log.segment.bytes, log.roll.ms, log.roll.hours, log.retention.ms,
    /// log.retention.minutes, log.retention.hours, log.retention.bytes,
    /// log.retention.check.interval.ms, log.index.interval.bytes,
    /// log.index.size.max.bytes, log.message.timestamp.type,
    /// log.cleanup.policy, compression.type, min.insync.replicas,
    /// log.flush.offset.checkpoint.interval.ms, node.id,
    /// offsets.topic.num.partitions, offsets.topic.segment.bytes, offsets.retention.minutes,
    /// offsets.retention.check.interval.ms, offsets.commit.timeout.ms,
    /// offset.metadata.max.bytes, group.min.session.timeout.ms,
    /// group.max.session.timeout.ms, group.initial.rebalance.delay.ms.
    /// In STRATA_SET, separate several with ';' (a ';' inside a value,
    /// as a JAAS line ends with, stays part of it unless a NAME= follows).
    /// Flags win over STRATA_SET.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,

    /// A SCRAM user added at start if it has no credential for that
    /// mechanism, as Kafka's `kafka-storage format --add-scram`:
    /// `SCRAM-SHA-512=[name=admin,password=admin-secret]` (repeatable;
    /// `iterations=N` optional, 4096 by default). An existing credential is
    /// never replaced: change passwords with AlterUserScramCredentials.
    #[arg(
        long = "add-scram",
        value_name = "MECHANISM=[name=USER,password=PASSWORD]"
    )]
    add_scram: Vec<String>,

    /// Log output format.
    #[arg(long, env = "STRATA_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: LogFormat,

    /// Log filter (tracing EnvFilter syntax), e.g. `info` or `strata_storage=debug` (each crate of `broker/` is a target).
    #[arg(
        long,
        env = "STRATA_LOG_LEVEL",
        default_value = "info,object_store=warn"
    )]
    log_level: String,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Broker(args) => {
            init_tracing(args.log_format, &args.log_level);
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .thread_name("strata-worker")
                .build()?;
            if let Err(e) = runtime.block_on(run_broker(args)) {
                // One line an operator can act on; no backtrace.
                tracing::error!("{e:#}");
                std::process::exit(1);
            }
            Ok(())
        }
        Command::Topic { target, cmd } => run_cli(cli::topic::run(cmd, &target)),
        Command::Group { target, cmd } => run_cli(cli::group::run(cmd, &target)),
        Command::Tiering {
            target,
            cmd: TieringCommand::Status { topic },
        } => run_cli(cli::tiering::status(topic, &target)),
        Command::Produce { target, args } => run_cli(cli::produce::run(args, &target)),
        Command::Consume { target, args } => run_cli(cli::consume::run(args, &target)),
        Command::Dlq { target, cmd } => run_cli(cli::dlq::run(cmd, &target)),
        Command::Config {
            cmd: ConfigCommand::Reference,
        } => {
            print!("{}", strata_broker::config::reference::markdown());
            Ok(())
        }
    }
}

/// Runs one CLI command; an error is one line on stderr and exit code 1
/// (2 for a usage error, as clap's own).
fn run_cli(f: impl std::future::Future<Output = cli::CliResult<()>>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match runtime.block_on(f) {
        Ok(()) => Ok(()),
        Err(e) => {
            eprintln!("error: {e}");
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                eprintln!("  caused by: {s}");
                source = s.source();
            }
            std::process::exit(if matches!(e, cli::CliError::Usage(_)) {
                2
            } else {
                1
            });
        }
    }
}

fn init_tracing(format: LogFormat, level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_new(level)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

async fn run_broker(args: BrokerArgs) -> anyhow::Result<()> {
    let mut sets = std::env::var("STRATA_SET")
        .map(|v| strata_broker::config::split_env_sets(&v))
        .unwrap_or_default();
    sets.extend(args.set.iter().cloned());
    if let Some(id) = args.node_id {
        sets.push(format!("node.id={id}"));
    }
    let config = Arc::new(
        BrokerConfig::load(args.config.as_deref(), &sets).context("invalid broker settings")?,
    );
    let node = Node::start(NodeOptions {
        data_dir: args.data_dir,
        listen_given: args.listen.is_some(),
        listen: args.listen.unwrap_or_else(|| "127.0.0.1:9092".to_string()),
        advertised_listener: args.advertised_listener,
        add_scram: args
            .add_scram
            .iter()
            .map(|v| strata_broker::parse_add_scram(v))
            .collect::<Result<_, _>>()?,
        http_listen: args.http_listen,
        http_token: http_token(args.http_token_file.as_deref())?,
        object_store: args.object_store,
        metadata: args.metadata,
        config,
        clock: strata_broker::clock::system(),
    })
    .await?;
    wait_for_signal().await?;
    node.stop().await?;
    // The line operators (and the README test) wait for.
    tracing::info!("stopped");
    Ok(())
}

/// The HTTP API's bearer token: STRATA_HTTP_TOKEN, or the file named by
/// --http-token-file. Never logged.
fn http_token(
    file: Option<&std::path::Path>,
) -> anyhow::Result<strata_broker::admin::token::Token> {
    use strata_broker::admin::token::Token;
    let from_env = std::env::var("STRATA_HTTP_TOKEN")
        .ok()
        .filter(|t| !t.is_empty());
    let token = match (from_env, file) {
        (Some(_), Some(_)) => {
            anyhow::bail!(
                "give the HTTP API token once: STRATA_HTTP_TOKEN or --http-token-file, not both"
            )
        }
        (Some(t), None) => t,
        (None, Some(f)) => std::fs::read_to_string(f)
            .with_context(|| format!("cannot read the HTTP API token from {}", f.display()))?,
        (None, None) => return Ok(Token::none()),
    };
    Token::new(&token).map_err(anyhow::Error::msg)
}

async fn wait_for_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    Ok(())
}
