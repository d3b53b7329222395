//! The `strata` binary. `strata broker` runs a broker; see `--help`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use tokio::net::TcpListener;
use tokio::sync::watch;

use strata_broker::cli;
use strata_broker::config::dynamic::DynamicConfigs;
use strata_broker::config::BrokerConfig;
use strata_broker::group::GroupCoordinator;
use strata_broker::log_manager::LogManager;
use strata_broker::remote::recovery::restore_topics;
use strata_broker::remote::TieredStorage;
use strata_broker::server::{self, Broker};

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

    /// Address the Kafka protocol listener binds to (port 0 picks a free port).
    #[arg(long, env = "STRATA_LISTEN", default_value = "127.0.0.1:9092")]
    listen: String,

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
    /// In STRATA_SET, separate several with ';'.
    #[arg(
        long = "set",
        env = "STRATA_SET",
        value_name = "NAME=VALUE",
        value_delimiter = ';'
    )]
    set: Vec<String>,

    /// Log output format.
    #[arg(long, env = "STRATA_LOG_FORMAT", value_enum, default_value = "text")]
    log_format: LogFormat,

    /// Log filter (tracing EnvFilter syntax), e.g. `info` or `strata_broker=debug`.
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

fn parse_host_port(s: &str, what: &str) -> anyhow::Result<(String, u16)> {
    let (host, port) = s
        .rsplit_once(':')
        .with_context(|| format!("{what} must be HOST:PORT, got `{s}`"))?;
    let port: u16 = port
        .parse()
        .with_context(|| format!("{what} has an invalid port in `{s}`"))?;
    Ok((
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port,
    ))
}

async fn run_broker(args: BrokerArgs) -> anyhow::Result<()> {
    let mut sets = args.set.clone();
    if let Some(id) = args.node_id {
        sets.push(format!("node.id={id}"));
    }
    let config = Arc::new(
        BrokerConfig::load(args.config.as_deref(), &sets).context("invalid broker settings")?,
    );
    let settings = config.settings().clone();
    let cluster_store =
        strata_broker::cluster::open_store(args.metadata.as_deref()).map_err(anyhow::Error::msg)?;
    let clustered = cluster_store.describe() != "embedded";
    parse_host_port(&args.http_listen, "--http-listen")?;
    match strata_broker::fd_limit::raise_to_hard() {
        Some(n) => {
            let pool = strata_broker::fd_limit::configure_pool(settings.log_segment_open_files_max)
                .map_err(|e| anyhow::anyhow!(e))?;
            tracing::info!(
                open_files = n,
                sealed_segment_files = pool,
                partitions = strata_broker::fd_limit::partition_capacity(),
                "file descriptor limit (ulimit -n), sealed segments kept open, and the partitions it allows"
            )
        }
        None => tracing::warn!("cannot read the file descriptor limit"),
    }
    let object_store = args
        .object_store
        .clone()
        .unwrap_or_else(|| format!("file://{}/bucket", args.data_dir.display()));
    let tiering = settings.remote_log_storage_system_enable;
    // The HTTP API answers from now on: /healthz at once, /readyz with the
    // start-up phase until the logs are recovered.
    let token = http_token(args.http_token_file.as_deref())?;
    let http_listener = TcpListener::bind(&args.http_listen)
        .await
        .with_context(|| format!("cannot listen on {} (--http-listen)", args.http_listen))?;
    let http_addr = http_listener.local_addr()?;
    strata_broker::admin::auth::check_bind(&http_addr, &token).map_err(anyhow::Error::msg)?;
    let (shutdown_tx, shutdown_rx) = watch::channel(false);
    let http_state = strata_broker::http::HttpState::starting("checking the object store", token);
    let http = tokio::spawn(strata_broker::http::serve(
        http_listener,
        http_state.clone(),
        shutdown_rx.clone(),
    ));
    // A wrong URL, endpoint, bucket or credentials is reported now, in one line.
    let bucket = strata_catalog::bucket::open(&object_store).map_err(anyhow::Error::msg)?;
    if tiering {
        strata_catalog::bucket::check(&bucket)
            .await
            .map_err(anyhow::Error::msg)?;
    }
    http_state.set_phase("recovering logs");

    // An empty data dir restores from the bucket. The marker keeps that true
    // until the restore has finished, so a restore cut short (the store
    // failed, the process died) is resumed by the next start.
    let restore_marker = args.data_dir.join(".restore-from-object-store");
    let fresh = LogManager::is_fresh(&args.data_dir) || restore_marker.exists();
    if tiering && fresh {
        std::fs::create_dir_all(&args.data_dir)?;
        std::fs::write(&restore_marker, b"")?;
    }
    let metadata = strata_catalog::MetadataStore::new(bucket.store.clone(), &bucket.prefix);
    if tiering && fresh {
        // An empty data dir joins the cluster the bucket belongs to.
        if let Some(c) = metadata
            .read_cluster()
            .await
            .with_context(|| format!("reading cluster metadata from {object_store}"))?
        {
            LogManager::adopt_cluster_id(&args.data_dir, &c.cluster_id, config.node_id())?;
        }
    }

    if clustered && LogManager::is_fresh(&args.data_dir) {
        // An empty data dir joins the cluster the metadata store holds, or
        // founds it: claiming first, so brokers started together agree.
        let proposed = strata_broker::meta_properties::new_cluster_id();
        let (id, _) = strata_broker::cluster::claim_cluster_id(cluster_store.as_ref(), &proposed)
            .await
            .with_context(|| format!("claiming the cluster id in {}", cluster_store.describe()))?;
        LogManager::adopt_cluster_id(&args.data_dir, &id, config.node_id())?;
    }

    let data_dir = args.data_dir.clone();
    let cfg = config.clone();
    let logs = tokio::task::spawn_blocking(move || LogManager::open(&data_dir, cfg))
        .await
        .context("log loading task failed")?
        .with_context(|| format!("cannot open data directory {}", args.data_dir.display()))?;

    if clustered {
        let (claimed, _first) =
            strata_broker::cluster::claim_cluster_id(cluster_store.as_ref(), logs.cluster_id())
                .await
                .with_context(|| {
                    format!("writing the cluster id to {}", cluster_store.describe())
                })?;
        if claimed != logs.cluster_id() {
            anyhow::bail!(
                "metadata store {} belongs to cluster {claimed}, but data directory {} belongs to cluster {}; use another prefix or data directory",
                cluster_store.describe(),
                args.data_dir.display(),
                logs.cluster_id()
            );
        }
    }

    let dynamic = Arc::new(
        DynamicConfigs::load(&args.data_dir, config.clone())
            .context("reading dynamic broker settings")?,
    );
    let remote = if tiering {
        let bucket_cluster = metadata
            .claim_cluster(logs.cluster_id())
            .await
            .with_context(|| format!("writing cluster metadata to {object_store}"))?;
        if bucket_cluster.cluster_id != logs.cluster_id() {
            anyhow::bail!(
                "object store {object_store} belongs to cluster {}, but data directory {} belongs to cluster {}; use another bucket or prefix",
                bucket_cluster.cluster_id,
                args.data_dir.display(),
                logs.cluster_id()
            );
        }
        let owner = format!(
            "node {} (pid {}, data dir {})",
            config.node_id(),
            std::process::id(),
            args.data_dir.display()
        );
        let remote = TieredStorage::new(&bucket, config.clone(), &dynamic, &args.data_dir, &owner)
            .await
            .context("starting the historical read path")?;
        if fresh {
            // In a cluster the store's topics come back through
            // replication (a replica starts at the bucket's end); only
            // topics the store lost are restored from the bucket.
            let known: std::collections::HashSet<String> = if clustered {
                let prefix = strata_broker::cluster::records::TOPICS_PREFIX;
                let (kvs, _) = cluster_store
                    .list(prefix)
                    .await
                    .with_context(|| format!("listing topics in {}", cluster_store.describe()))?;
                kvs.into_iter()
                    .filter_map(|kv| kv.key.strip_prefix(prefix).map(str::to_string))
                    .collect()
            } else {
                Default::default()
            };
            http_state.set_phase("restoring topics from the object store");
            let restored = restore_topics(&remote, &logs, &known)
                .await
                .context("restoring topics from the object store")?;
            if !restored.is_empty() {
                tracing::info!(
                    topics = restored.len(),
                    "empty data directory: restored topics from the object store"
                );
            }
            std::fs::remove_file(&restore_marker)?;
        }
        if cluster_store.describe() != "embedded" {
            // Before tiering starts: a replicated log may not claim its
            // catalog until the store says this broker leads it.
            logs.await_assignments();
        }
        logs.enable_tiering();
        remote.sync_once(&logs).await;
        remote.start(logs.clone());
        remote.start_adaptive_rate(logs.clone(), dynamic.subscribe());
        Some(remote)
    } else {
        None
    };

    let l = logs.clone();
    let cfg = config.clone();
    http_state.set_phase("loading coordinators");
    let groups = tokio::task::spawn_blocking(move || {
        GroupCoordinator::open(l, &cfg, clustered, strata_broker::clock::system())
    })
    .await
    .context("group coordinator loading task failed")??;

    let listener = TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let local: SocketAddr = listener.local_addr()?;
    let (host, port) = match &args.advertised_listener {
        Some(a) => parse_host_port(a, "--advertised-listener")?,
        None => {
            let ip = local.ip();
            if ip.is_unspecified() {
                tracing::warn!("listening on all interfaces without --advertised-listener; advertising 127.0.0.1");
                ("127.0.0.1".to_string(), local.port())
            } else {
                (ip.to_string(), local.port())
            }
        }
    };
    let producer_ids = Arc::new(
        strata_broker::producer_ids::ProducerIdManager::open(&args.data_dir, config.node_id())
            .context("cannot open the producer id block")?,
    );
    // Partitions restored from the bucket carry producer ids this data dir
    // never issued: never hand them out again.
    if let Some(max) = logs
        .topics()
        .iter()
        .flat_map(|t| t.partitions())
        .filter_map(|l| l.max_producer_id())
        .max()
    {
        producer_ids
            .reserve_above(max)
            .context("cannot write the producer id block")?;
    }
    let (l, g, p, cfg) = (
        logs.clone(),
        groups.clone(),
        producer_ids.clone(),
        config.clone(),
    );
    let txns = tokio::task::spawn_blocking(move || {
        strata_broker::txn::TransactionCoordinator::open(
            l,
            g,
            p,
            &cfg,
            clustered,
            strata_broker::clock::system(),
        )
    })
    .await
    .context("transaction coordinator loading task failed")??;
    let rack = settings.rack.clone();
    // In a cluster, producer ids come in blocks from the metadata store
    // (a replaced disk must not issue its ids again).
    if clustered {
        strata_broker::cluster::producer_id_blocks::start(
            cluster_store.clone(),
            producer_ids.clone(),
            shutdown_rx.clone(),
        );
    }
    let cluster = Arc::new(
        strata_broker::cluster::Cluster::join(
            cluster_store,
            logs.clone(),
            host.clone(),
            port as i32,
            rack,
            config.node_id(),
            strata_broker::cluster::membership::SessionTimes {
                session_timeout: settings.cluster.session_timeout,
                heartbeat_interval: settings.cluster.heartbeat_interval,
            },
            shutdown_rx.clone(),
        )
        .await
        .context("joining the cluster")?,
    );
    // In a cluster, followers copy their leaders' logs and leaders keep
    // the ISR (a single broker leads everything alone).
    if let Some(applied) = cluster.applied_revisions() {
        strata_broker::replication::manager::start(
            cluster.store.clone(),
            cluster.view.clone(),
            logs.clone(),
            strata_broker::replication::manager::ReplicationSettings::from_config(
                config.node_id(),
                &config,
            ),
            // Tiered partitions: an empty replica starts at the bucket's end.
            remote.clone().map(|remote| {
                Arc::new(strata_broker::remote::tiered_end::BucketTieredEnd {
                    remote,
                    logs: logs.clone(),
                })
                    as Arc<dyn strata_broker::replication::tiered_start::TieredEndSource>
            }),
            cluster.incarnation,
            applied,
            shutdown_rx.clone(),
        );
    }
    // Coordinators follow the leaders of their internal partitions; a
    // single broker loads all of them before it serves.
    if clustered {
        txns.route_markers(strata_broker::txn::marker_channel::TxnMarkerChannel::new(
            cluster.view.clone(),
            config.node_id(),
            settings.offsets_commit_timeout,
        ));
    }
    strata_broker::coordinators::follow_once(&groups, &txns).await;
    strata_broker::coordinators::start(
        groups.clone(),
        txns.clone(),
        logs.subscribe_roles(),
        shutdown_rx.clone(),
    );
    let broker = Arc::new(Broker {
        cluster: cluster.clone(),
        logs: logs.clone(),
        groups: groups.clone(),
        producer_ids,
        txns: txns.clone(),
        config: config.clone(),
        node_id: config.node_id(),
        advertised_host: host.clone(),
        advertised_port: port as i32,
        max_request_bytes: settings.socket_request_max_bytes,
        remote: remote.clone(),
        dynamic,
        replicas: Arc::new(strata_broker::partition::ReplicaManager::new(
            strata_broker::partition::ReplicaManagerParts {
                node_id: config.node_id(),
                logs: logs.clone(),
                cluster: cluster.clone(),
                txns: txns.clone(),
                groups: groups.clone(),
                remote: remote.clone(),
                config: config.clone(),
                verifier: strata_broker::txn::verification::TxnVerifier::new(
                    config.node_id(),
                    settings.transaction_partition_verification_enable,
                    settings.offsets_commit_timeout,
                ),
            },
        )),
    });
    logs.start_background();
    txns.start_background();
    groups.start_background(settings.group.offsets_retention_check_interval);
    // Offsets may be committed for partitions hosted elsewhere.
    let view = cluster.view.clone();
    groups.set_cluster_partitions(std::sync::Arc::new(move |topic: &str, partition: i32| {
        view.snapshot().partition(topic, partition).is_some()
    }));
    // Lag of partitions led elsewhere: their leaders' high watermarks.
    let view = cluster.view.clone();
    groups.start_remote_lag(std::sync::Arc::new(move |topic: &str, partition: i32| {
        let snap = view.snapshot();
        let leader = snap.partition(topic, partition)?.state.leader;
        let b = snap.brokers.get(&leader)?;
        Some((leader, b.registration.host.clone(), b.registration.port))
    }));
    let dlq = strata_broker::dlq::monitor::DlqMonitor::new(
        logs.clone(),
        groups.clone(),
        settings.dlq.reason_headers.clone(),
        settings.dlq.unconsumed_warn_ms,
    );
    dlq.start_background(settings.dlq.check_interval);
    let server = tokio::spawn(server::serve(listener, broker.clone(), shutdown_rx.clone()));
    http_state.ready(strata_broker::http::BrokerParts {
        logs: logs.clone(),
        remote,
        txns: Some(txns.clone()),
        groups: Some(groups.clone()),
        cluster: Some(cluster.clone()),
        broker: Some(broker.clone()),
        dlq: Some(dlq),
    });
    tracing::info!(
        listen = %local,
        advertised = %format!("{host}:{port}"),
        data_dir = %args.data_dir.display(),
        object_store = %object_store,
        tiering,
        http = %http_addr,
        cluster_id = logs.cluster_id(),
        node_id = config.node_id(),
        metadata = %cluster.store.describe(),
        controller = cluster.controller_id().unwrap_or(-1),
        "strata broker ready"
    );

    wait_for_signal().await?;
    tracing::info!("shutting down");
    if settings.cluster.controlled_shutdown_enable {
        // Leaderships move before the listener closes: in-flight requests
        // end with NOT_LEADER_OR_FOLLOWER and clients retry elsewhere.
        cluster
            .controlled_shutdown(settings.cluster.controlled_shutdown_wait)
            .await;
    }
    let _ = shutdown_tx.send(true);
    let _ = server.await;
    let _ = http.await;
    cluster.left().await;
    tokio::task::spawn_blocking(move || logs.shutdown())
        .await
        .context("shutdown task failed")?
        .context("flushing logs at shutdown failed")?;
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
