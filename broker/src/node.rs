//! One broker process (Kafka's `KafkaBroker`): its subsystems wired in
//! one place, with an explicit start and stop order. `Node::start` opens
//! and starts them in dependency order; `Node::stop` ends them in reverse,
//! so nothing is stopped while something above it still uses it.
//!
//! Start order: the HTTP API (health and start-up phase at once); the
//! object store check; the data directory (restored from the bucket when
//! empty) and its logs; the cluster id in the metadata store; dynamic
//! settings; tiered storage (restore, sync, uploader, adaptive rate); the
//! group coordinator; the Kafka listener; producer ids; the transaction
//! coordinator; cluster membership; replication; the coordinators
//! following leadership; the replica manager and the request server; the
//! logs' and coordinators' background work; the DLQ monitor; ready.
//!
//! Stop order: controlled shutdown (leaderships move away); the listeners
//! close and in-flight requests end; the broker leaves the cluster; the
//! log cleaner threads stop and are joined; the logs are flushed and
//! checkpointed and the clean-shutdown marker is written.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use thiserror::Error;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::admin::token::Token;
use crate::clock::SharedClock;
use crate::cluster::Cluster;
use crate::config::dynamic::DynamicConfigs;
use crate::config::{BrokerConfig, BrokerSettings};
use crate::group::GroupCoordinator;
use crate::log_manager::LogManager;
use crate::remote::recovery::restore_topics;
use crate::remote::TieredStorage;
use crate::server::{self, Broker};

/// What a node is started with: the command line's addresses and the
/// settings already loaded.
#[derive(Debug)]
pub struct NodeOptions {
    pub data_dir: PathBuf,
    /// The Kafka listener's bind address (port 0: any free port).
    pub listen: String,
    /// `--listen` was given explicitly (refused with `listeners`).
    pub listen_given: bool,
    /// HOST:PORT advertised in Metadata (default: the listen address).
    pub advertised_listener: Option<String>,
    /// `--add-scram`'s users, parsed (`Debug` shows no key).
    pub add_scram: Vec<(String, strata_security::scram::ScramCredential)>,
    /// The HTTP API's bind address.
    pub http_listen: String,
    pub http_token: Token,
    /// The bucket's URL (default: `file://<data-dir>/bucket`).
    pub object_store: Option<String>,
    /// The metadata store's URL (default: embedded, a single broker).
    pub metadata: Option<String>,
    pub config: Arc<BrokerConfig>,
    /// The clock of the logs and the coordinators.
    pub clock: SharedClock,
}

/// Why a node could not start or stop cleanly.
#[derive(Debug, Error)]
pub enum NodeError {
    /// A step failed; `context` says which, the source why (shown by the
    /// error chain, as `main.rs` prints it: `context: source`).
    #[error("{context}")]
    Step {
        context: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A setting, address, store or directory the node refuses, with the
    /// operator's message.
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Start(#[from] crate::start_error::StartError),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

impl From<crate::start_error::OpenError> for NodeError {
    fn from(e: crate::start_error::OpenError) -> Self {
        NodeError::Start(e.into())
    }
}

impl NodeError {
    /// A refusal whose message is the error's own.
    fn msg(e: impl std::fmt::Display) -> Self {
        NodeError::Refused(e.to_string())
    }
}

/// `anyhow`'s `context`, for the node's own error type.
trait Ctx<T> {
    fn ctx(self, context: &str) -> Result<T, NodeError>;
    fn with_ctx(self, context: impl FnOnce() -> String) -> Result<T, NodeError>;
}

impl<T, E: std::error::Error + Send + Sync + 'static> Ctx<T> for Result<T, E> {
    fn ctx(self, context: &str) -> Result<T, NodeError> {
        self.with_ctx(|| context.to_string())
    }

    fn with_ctx(self, context: impl FnOnce() -> String) -> Result<T, NodeError> {
        self.map_err(|e| NodeError::Step {
            context: context(),
            source: Box::new(e),
        })
    }
}

/// A running broker.
#[derive(Debug)]
pub struct Node {
    pub settings: BrokerSettings,
    pub logs: Arc<LogManager>,
    pub cluster: Arc<Cluster>,
    pub broker: Arc<Broker>,
    /// Where the Kafka listener and the HTTP API are bound.
    pub kafka_addr: SocketAddr,
    pub http_addr: SocketAddr,
    shutdown_tx: watch::Sender<bool>,
    server: JoinHandle<()>,
    http: JoinHandle<()>,
}

impl Node {
    /// Opens and starts every subsystem (the order is this file's header).
    pub async fn start(opts: NodeOptions) -> Result<Node, NodeError> {
        let config = opts.config.clone();
        let settings = config.settings().clone();
        let cluster_store =
            crate::cluster::open_store(opts.metadata.as_deref()).map_err(NodeError::msg)?;
        let clustered = cluster_store.describe() != "embedded";
        parse_host_port(&opts.http_listen, "--http-listen")?;
        match crate::fd_limit::raise_to_hard() {
            Some(n) => {
                let pool = crate::fd_limit::configure_pool(settings.log_segment_open_files_max)
                    .map_err(NodeError::msg)?;
                tracing::info!(
                    open_files = n,
                    sealed_segment_files = pool,
                    partitions = crate::fd_limit::partition_capacity(),
                    "file descriptor limit (ulimit -n), sealed segments kept open, and the partitions it allows"
                )
            }
            None => tracing::warn!("cannot read the file descriptor limit"),
        }
        let object_store = opts
            .object_store
            .clone()
            .unwrap_or_else(|| format!("file://{}/bucket", opts.data_dir.display()));
        let tiering = settings.remote_log_storage_system_enable;
        // The HTTP API answers from now on: /healthz at once, /readyz with the
        // start-up phase until the logs are recovered.
        let token = opts.http_token;
        let http_listener = TcpListener::bind(&opts.http_listen)
            .await
            .with_ctx(|| format!("cannot listen on {} (--http-listen)", opts.http_listen))?;
        let http_addr = http_listener.local_addr()?;
        crate::admin::auth::check_bind(&http_addr, &token).map_err(NodeError::msg)?;
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let http_state = crate::http::HttpState::starting("checking the object store", token);
        let http = tokio::spawn(crate::http::serve(
            http_listener,
            http_state.clone(),
            shutdown_rx.clone(),
        ));
        // A wrong URL, endpoint, bucket or credentials is reported now, in one line.
        let bucket = strata_catalog::bucket::open(&object_store).map_err(NodeError::msg)?;
        if tiering {
            strata_catalog::bucket::check(&bucket)
                .await
                .map_err(NodeError::msg)?;
        }
        http_state.set_phase("recovering logs");

        // An empty data dir restores from the bucket. The marker keeps that true
        // until the restore has finished, so a restore cut short (the store
        // failed, the process died) is resumed by the next start.
        let restore_marker = opts.data_dir.join(".restore-from-object-store");
        let fresh = LogManager::is_fresh(&opts.data_dir) || restore_marker.exists();
        if tiering && fresh {
            std::fs::create_dir_all(&opts.data_dir)?;
            std::fs::write(&restore_marker, b"")?;
        }
        let metadata = strata_catalog::MetadataStore::new(bucket.store.clone(), &bucket.prefix);
        if tiering && fresh {
            // An empty data dir joins the cluster the bucket belongs to.
            if let Some(c) = metadata
                .read_cluster()
                .await
                .with_ctx(|| format!("reading cluster metadata from {object_store}"))?
            {
                LogManager::adopt_cluster_id(&opts.data_dir, &c.cluster_id, config.node_id())?;
            }
        }

        if clustered && LogManager::is_fresh(&opts.data_dir) {
            // An empty data dir joins the cluster the metadata store holds, or
            // founds it: claiming first, so brokers started together agree.
            let proposed = crate::meta_properties::new_cluster_id();
            let (id, _) = crate::cluster::claim_cluster_id(cluster_store.as_ref(), &proposed)
                .await
                .with_ctx(|| format!("claiming the cluster id in {}", cluster_store.describe()))?;
            LogManager::adopt_cluster_id(&opts.data_dir, &id, config.node_id())?;
        }

        let data_dir = opts.data_dir.clone();
        let cfg = config.clone();
        let commit_latency = Arc::new(crate::commit_latency::CommitLatency::default());
        let (sink, clock) = (commit_latency.clone(), opts.clock.clone());
        let logs = tokio::task::spawn_blocking(move || {
            LogManager::open(&data_dir, cfg, Some(sink), clock)
        })
        .await
        .ctx("log loading task failed")?
        .with_ctx(|| format!("cannot open data directory {}", opts.data_dir.display()))?;

        if clustered {
            let (claimed, _first) =
                crate::cluster::claim_cluster_id(cluster_store.as_ref(), logs.cluster_id())
                    .await
                    .with_ctx(|| {
                        format!("writing the cluster id to {}", cluster_store.describe())
                    })?;
            if claimed != logs.cluster_id() {
                return Err(NodeError::Refused(format!(
                    "metadata store {} belongs to cluster {claimed}, but data directory {} belongs to cluster {}; use another prefix or data directory",
                    cluster_store.describe(),
                    opts.data_dir.display(),
                    logs.cluster_id()
                )));
            }
        }

        let dynamic = Arc::new(
            DynamicConfigs::load(&opts.data_dir, config.clone())
                .ctx("reading dynamic broker settings")?,
        );
        let remote = if tiering {
            let bucket_cluster = metadata
                .claim_cluster(logs.cluster_id())
                .await
                .with_ctx(|| format!("writing cluster metadata to {object_store}"))?;
            if bucket_cluster.cluster_id != logs.cluster_id() {
                return Err(NodeError::Refused(format!(
                    "object store {object_store} belongs to cluster {}, but data directory {} belongs to cluster {}; use another bucket or prefix",
                    bucket_cluster.cluster_id,
                    opts.data_dir.display(),
                    logs.cluster_id()
                )));
            }
            let owner = format!(
                "node {} (pid {}, data dir {})",
                config.node_id(),
                std::process::id(),
                opts.data_dir.display()
            );
            let remote = TieredStorage::new(
                &bucket,
                config.clone(),
                &dynamic,
                &opts.data_dir,
                &owner,
                opts.clock.clone(),
            )
            .await
            .ctx("starting the historical read path")?;
            if fresh {
                // In a cluster the store's topics come back through
                // replication (a replica starts at the bucket's end); only
                // topics the store lost are restored from the bucket.
                let known: std::collections::HashSet<String> = if clustered {
                    let prefix = crate::cluster::records::TOPICS_PREFIX;
                    let (kvs, _) = cluster_store
                        .list(prefix)
                        .await
                        .with_ctx(|| format!("listing topics in {}", cluster_store.describe()))?;
                    kvs.into_iter()
                        .filter_map(|kv| kv.key.strip_prefix(prefix).map(str::to_string))
                        .collect()
                } else {
                    Default::default()
                };
                http_state.set_phase("restoring topics from the object store");
                let restored = restore_topics(&remote, &logs, &known)
                    .await
                    .ctx("restoring topics from the object store")?;
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
            remote.start_adaptive_rate(commit_latency.clone(), dynamic.subscribe());
            Some(remote)
        } else {
            None
        };

        let (l, cfg, clock) = (logs.clone(), config.clone(), opts.clock.clone());
        http_state.set_phase("loading coordinators");
        let groups =
            tokio::task::spawn_blocking(move || GroupCoordinator::open(l, &cfg, clustered, clock))
                .await
                .ctx("group coordinator loading task failed")??;

        let bootstrap_users = opts.add_scram.clone();
        let scram = strata_cluster::security_store::SecurityStore::open(
            cluster_store.clone(),
            (!clustered).then(|| opts.data_dir.join("security")),
            bootstrap_users,
            shutdown_rx.clone(),
        )
        .await
        .ctx("loading the SCRAM credentials")?;
        let acls = strata_cluster::acl_store::AclStore::open(
            cluster_store.clone(),
            (!clustered).then(|| opts.data_dir.join("security")),
            shutdown_rx.clone(),
        )
        .await
        .ctx("loading the ACL bindings")?;
        let authorizer =
            settings.security.authorizer.clone().map(|config| {
                strata_security::authorizer::Authorizer::new(config, Default::default())
            });
        let bound = server::listeners::bind(
            &settings.security,
            &server::listeners::ListenFlags {
                listen: &opts.listen,
                listen_given: opts.listen_given,
                advertised_listener: opts.advertised_listener.as_deref(),
            },
            Arc::new(scram.view()),
            scram.decoy_key(),
        )
        .await
        .map_err(NodeError::Refused)?;
        let inter_broker = bound
            .listeners
            .iter()
            .find(|l| l.advertised.name == bound.inter_broker)
            .ok_or_else(|| {
                NodeError::Refused(format!(
                    "the inter-broker listener {} is not among the listeners",
                    bound.inter_broker
                ))
            })?;
        if clustered
            && inter_broker.context.protocol
                != strata_security::listeners::SecurityProtocol::Plaintext
        {
            return Err(NodeError::Refused(format!(
                "the inter-broker listener {} is {}: brokers replicate over PLAINTEXT only for now (docs/security-plan.md); add a PLAINTEXT listener for inter.broker.listener.name",
                inter_broker.advertised.name, inter_broker.context.protocol
            )));
        }
        // Brokers reach each other as User:ANONYMOUS (PLAINTEXT): with an
        // authorizer, that principal must be a super user, or followers
        // could not fetch (Kafka's setups name their inter-broker
        // principal in super.users for the same reason).
        if let Some(az) = &authorizer {
            let anonymous = strata_security::principal::KafkaPrincipal::anonymous().to_string();
            if clustered && !az.is_super_user(&anonymous) {
                return Err(NodeError::Refused(format!(
                    "authorizer.class.name is set and brokers replicate over the PLAINTEXT listener {} as {anonymous}: add {anonymous} to super.users",
                    inter_broker.advertised.name
                )));
            }
        }
        let local: SocketAddr = inter_broker.local;
        let (host, port) = (
            inter_broker.advertised.host.clone(),
            inter_broker.advertised.port,
        );
        let advertised: Vec<server::listeners::Advertised> = bound
            .listeners
            .iter()
            .map(|l| l.advertised.clone())
            .collect();
        let producer_ids = Arc::new(
            crate::producer_ids::ProducerIdManager::open(&opts.data_dir, config.node_id())
                .ctx("cannot open the producer id block")?,
        );
        // Partitions restored from the bucket carry producer ids this data dir
        // never issued: never hand them out again.
        if let Some(max) = logs
            .topics()
            .iter()
            .flat_map(|t| t.logs())
            .filter_map(|l| l.max_producer_id())
            .max()
        {
            producer_ids
                .reserve_above(max)
                .ctx("cannot write the producer id block")?;
        }
        let (l, g, p, cfg, clock) = (
            logs.clone(),
            groups.clone(),
            producer_ids.clone(),
            config.clone(),
            opts.clock.clone(),
        );
        let txns = tokio::task::spawn_blocking(move || {
            crate::txn::TransactionCoordinator::open(l, g, p, &cfg, clustered, clock)
        })
        .await
        .ctx("transaction coordinator loading task failed")??;
        let rack = settings.rack.clone();
        // In a cluster, producer ids come in blocks from the metadata store
        // (a replaced disk must not issue its ids again).
        if clustered {
            crate::cluster::producer_id_blocks::start(
                cluster_store.clone(),
                producer_ids.clone(),
                shutdown_rx.clone(),
            );
        }
        let cluster = Arc::new(
            crate::cluster::Cluster::join(
                cluster_store,
                logs.clone(),
                host.clone(),
                port,
                rack,
                if advertised.len() > 1 {
                    advertised
                        .iter()
                        .map(|a| crate::cluster::records::ListenerEndpoint {
                            name: a.name.clone(),
                            host: a.host.clone(),
                            port: a.port,
                        })
                        .collect()
                } else {
                    Vec::new()
                },
                config.node_id(),
                crate::cluster::membership::SessionTimes {
                    session_timeout: settings.cluster.session_timeout,
                    heartbeat_interval: settings.cluster.heartbeat_interval,
                },
                shutdown_rx.clone(),
            )
            .await
            .ctx("joining the cluster")?,
        );
        // In a cluster, followers copy their leaders' logs and leaders keep
        // the ISR (a single broker leads everything alone).
        if let Some(applied) = cluster.applied_revisions() {
            crate::replication::manager::start(
                cluster.store.clone(),
                cluster.view.clone(),
                logs.clone(),
                crate::replication::manager::ReplicationSettings::from_config(
                    config.node_id(),
                    &config,
                ),
                // Tiered partitions: an empty replica starts at the bucket's end.
                remote.clone().map(|remote| {
                    Arc::new(crate::remote::tiered_end::BucketTieredEnd {
                        remote,
                        logs: logs.clone(),
                    })
                        as Arc<dyn crate::replication::tiered_start::TieredEndSource>
                }),
                cluster.incarnation,
                applied,
                shutdown_rx.clone(),
            );
        }
        // Coordinators follow the leaders of their internal partitions; a
        // single broker loads all of them before it serves.
        if clustered {
            txns.route_markers(crate::txn::marker_channel::TxnMarkerChannel::new(
                cluster.view.clone(),
                config.node_id(),
                settings.offsets_commit_timeout,
            ));
        }
        strata_coordinators::leadership::follow_once(&groups, &txns).await;
        strata_coordinators::leadership::start(
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
            advertised_port: port,
            listeners: advertised.clone(),
            scram,
            acls,
            authorizer,
            max_request_bytes: settings.socket_request_max_bytes,
            remote: remote.clone(),
            dynamic,
            replicas: Arc::new(crate::partition::ReplicaManager::new(
                crate::partition::ReplicaManagerParts {
                    node_id: config.node_id(),
                    logs: logs.clone(),
                    cluster: cluster.clone(),
                    txns: txns.clone(),
                    groups: groups.clone(),
                    remote: remote.clone(),
                    config: config.clone(),
                    verifier: crate::txn::verification::TxnVerifier::new(
                        config.node_id(),
                        settings.transaction_partition_verification_enable,
                        settings.offsets_commit_timeout,
                    ),
                },
            )),
        });
        logs.start_background(strata_prefetch::threads::lower_thread_priority);
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
        let dlq = crate::dlq::monitor::DlqMonitor::new(
            logs.clone(),
            groups.clone(),
            settings.dlq.reason_headers.clone(),
            settings.dlq.unconsumed_warn_ms,
        );
        dlq.start_background(settings.dlq.check_interval);
        let server = tokio::spawn(server::serve(
            bound.listeners,
            broker.clone(),
            shutdown_rx.clone(),
        ));
        // What `/metrics` reads: each component's own families.
        let mut metrics = crate::http::MetricSources::default();
        metrics.register(logs.clone());
        metrics.register(txns.clone());
        metrics.register(commit_latency);
        if let Some(r) = &remote {
            metrics.register(r.clone());
        }
        metrics.register(Arc::new(crate::remote::metrics::ObjectStoreRequests));
        metrics.register(groups.clone());
        metrics.register(cluster.clone());
        metrics.register(dlq.clone());
        http_state.ready(crate::http::BrokerParts {
            metrics,
            remote,
            cluster: Some(cluster.clone()),
            broker: Some(broker.clone()),
            dlq: Some(dlq),
        });
        tracing::info!(
            listen = %local,
            advertised = %format!("{host}:{port}"),
            data_dir = %opts.data_dir.display(),
            object_store = %object_store,
            tiering,
            http = %http_addr,
            cluster_id = logs.cluster_id(),
            node_id = config.node_id(),
            metadata = %cluster.store.describe(),
            controller = cluster.controller_id().unwrap_or(-1),
            "strata broker ready"
        );
        Ok(Node {
            settings,
            logs,
            cluster,
            broker,
            kafka_addr: local,
            http_addr,
            shutdown_tx,
            server,
            http,
        })
    }

    /// Stops every subsystem, in the order of this file's header.
    pub async fn stop(self) -> Result<(), NodeError> {
        tracing::info!("shutting down");
        if self.settings.cluster.controlled_shutdown_enable {
            // Leaderships move before the listener closes: in-flight requests
            // end with NOT_LEADER_OR_FOLLOWER and clients retry elsewhere.
            self.cluster
                .controlled_shutdown(self.settings.cluster.controlled_shutdown_wait)
                .await;
        }
        let _ = self.shutdown_tx.send(true);
        let _ = self.server.await;
        let _ = self.http.await;
        self.cluster.left().await;
        self.logs.stop_background().await;
        let logs = self.logs;
        tokio::task::spawn_blocking(move || logs.shutdown())
            .await
            .ctx("shutdown task failed")?
            .ctx("flushing logs at shutdown failed")?;
        Ok(())
    }
}

/// HOST:PORT, with brackets around an IPv6 host dropped.
pub fn parse_host_port(s: &str, what: &str) -> Result<(String, u16), NodeError> {
    let (host, port) = s
        .rsplit_once(':')
        .ok_or_else(|| NodeError::Refused(format!("{what} must be HOST:PORT, got `{s}`")))?;
    let port: u16 = port
        .parse()
        .map_err(|_| NodeError::Refused(format!("{what} has an invalid port in `{s}`")))?;
    Ok((
        host.trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(dir: &std::path::Path) -> NodeOptions {
        NodeOptions {
            data_dir: dir.to_path_buf(),
            listen: "127.0.0.1:0".into(),
            listen_given: false,
            advertised_listener: None,
            add_scram: Vec::new(),
            http_listen: "127.0.0.1:0".into(),
            http_token: Token::none(),
            object_store: None,
            metadata: None,
            config: Arc::new(
                BrokerConfig::load(
                    None,
                    &[
                        "offsets.topic.num.partitions=1".into(),
                        "transaction.state.log.num.partitions=1".into(),
                    ],
                )
                .unwrap(),
            ),
            clock: crate::clock::system(),
        }
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap()
    }

    /// Start, stop, and start again on the same data directory once the
    /// first runtime has ended: the second start finds the clean-shutdown
    /// marker and the directory's lock free, which it only is when nothing
    /// outlives the stop holding the logs (the cleaner threads are joined;
    /// the runtime's tasks end with it).
    #[test]
    fn starts_stops_in_order_and_starts_again_cleanly() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join(".kafka_cleanshutdown");
        let rt = runtime();
        rt.block_on(async {
            let node = Node::start(options(dir.path())).await.unwrap();
            assert_ne!(node.kafka_addr.port(), 0);
            assert_ne!(node.http_addr.port(), 0);
            assert!(
                !marker.exists(),
                "a running broker has no clean-shutdown marker"
            );
            node.stop().await.unwrap();
        });
        assert!(
            marker.exists(),
            "stop flushes the logs and writes the marker"
        );
        drop(rt);
        runtime().block_on(async {
            let node = Node::start(options(dir.path())).await.unwrap();
            node.stop().await.unwrap();
        });
    }
}
