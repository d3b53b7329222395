//! The cluster layer: membership, controller election and the view of the
//! cluster every broker keeps, over a [`ClusterStore`] — etcd with
//! `--metadata etcd://...`, an in-process store otherwise, through the
//! same code (docs/cluster-metadata.md).
//!
//! It owns what lives in the store; it never touches partition logs.

pub mod assignment;
pub mod controller;
pub mod elections;
pub mod embedded;
pub mod etcd;
pub(crate) mod internal_topics;
pub(crate) mod leader_balance;
pub mod membership;
pub mod metrics;
pub mod partition_writes;
pub mod producer_id_blocks;
pub(crate) mod publisher;
pub mod quorum;
pub mod reassignment;
pub mod reconciler;
pub mod records;
pub mod store;
pub mod topics;
pub mod view;

#[cfg(test)]
mod etcd_fixture;
#[cfg(test)]
mod tests;

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use uuid::Uuid;

use controller::Role;
use membership::{Membership, RegisterError, SessionTimes};
use records::{BrokerRegistration, ControllerRecord, CLUSTER_ID_KEY};
use store::{ClusterStore, Compare, Op, StoreError};
use strata_storage::log_manager::LogManager;
use view::{ClusterSnapshot, ClusterView};

pub use store::StoreError as ClusterStoreError;

/// Opens the store a `--metadata` value names: `etcd://...`, or the
/// embedded store when there is none.
pub fn open_store(metadata: Option<&str>) -> Result<Arc<dyn ClusterStore>, StoreError> {
    match metadata {
        None | Some("") | Some("embedded") => Ok(embedded::EmbeddedStore::new()),
        Some(url) => Ok(Arc::new(etcd::EtcdStore::from_url(url)?)),
    }
}

/// The cluster id in the store; `proposed` becomes it if there is none
/// (then `founded` is true: this broker's data directory founds the
/// cluster and its topics become the cluster's).
pub async fn claim_cluster_id(
    store: &dyn ClusterStore,
    proposed: &str,
) -> Result<(String, bool), StoreError> {
    let put = Op::put(CLUSTER_ID_KEY, proposed.as_bytes().to_vec());
    let founded = store
        .txn(vec![Compare::Absent(CLUSTER_ID_KEY.to_string())], vec![put])
        .await?
        .succeeded;
    let kv = store
        .get(CLUSTER_ID_KEY)
        .await?
        .ok_or_else(|| StoreError::Protocol("cluster id vanished".to_string()))?;
    let id = String::from_utf8(kv.value)
        .map_err(|_| StoreError::Protocol("the stored cluster id is not UTF-8".to_string()))?;
    Ok((id, founded))
}

/// This broker's membership in the cluster and its view of it.
pub struct Cluster {
    pub store: Arc<dyn ClusterStore>,
    pub view: ClusterView,
    pub role: watch::Receiver<Role>,
    pub node_id: i32,
    /// Brokers share an etcd store (false: a single broker, embedded store).
    pub clustered: bool,
    /// This process's registration id: a registration with another one in
    /// the view is an earlier process's.
    pub incarnation: Uuid,
    membership: Membership,
    /// Embedded store: the LogManager change count mirrored into it.
    published: Option<watch::Receiver<Option<u64>>>,
    /// Cluster: the store revision the data directory follows.
    applied: Option<watch::Receiver<i64>>,
    logs: Arc<LogManager>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("store", &self.store.describe())
            .field("node_id", &self.node_id)
            .finish()
    }
}

impl Cluster {
    /// Registers this broker, starts the view and the election, and waits
    /// until the view shows this broker (so Metadata lists it).
    #[allow(clippy::too_many_arguments)]
    pub async fn join(
        store: Arc<dyn ClusterStore>,
        logs: Arc<LogManager>,
        host: String,
        port: i32,
        rack: Option<String>,
        endpoints: Vec<records::ListenerEndpoint>,
        node_id: i32,
        times: SessionTimes,
        shutdown: watch::Receiver<bool>,
    ) -> Result<Cluster, RegisterError> {
        let shutdown_for_tasks = shutdown.clone();
        let incarnation = Uuid::new_v4();
        let me = BrokerRegistration {
            node_id,
            host,
            port,
            rack,
            incarnation,
            shutting_down: false,
            endpoints,
        };
        let view = ClusterView::start(store.clone(), shutdown.clone());
        let membership = Membership::start(store.clone(), me, times, shutdown.clone()).await?;
        let role = controller::start_election(
            store.clone(),
            view.clone(),
            ControllerRecord {
                node_id,
                incarnation,
            },
            membership.registered.clone(),
            shutdown,
        );
        let mut snapshots = view.subscribe();
        let _ = tokio::time::timeout(
            times.session_timeout,
            snapshots.wait_for(|s| {
                s.brokers
                    .get(&node_id)
                    .is_some_and(|b| b.registration.incarnation == incarnation)
                    && s.controller.is_some()
            }),
        )
        .await;
        let fence_backoff = elections::FenceBackoff::default();
        elections::start(
            store.clone(),
            view.clone(),
            role.clone(),
            elections::ElectionSettings {
                unclean: logs
                    .broker_config()
                    .settings()
                    .cluster
                    .unclean_leader_election_enable,
                min_insync_default: logs.broker_config().settings().min_insync_replicas,
            },
            fence_backoff.clone(),
            shutdown_for_tasks.clone(),
        );
        let settings = &logs.broker_config().settings().cluster;
        if settings.auto_leader_rebalance_enable {
            leader_balance::start(
                store.clone(),
                view.clone(),
                role.clone(),
                leader_balance::BalanceSettings {
                    interval: settings.leader_imbalance_check_interval,
                    max_imbalance_pct: settings.leader_imbalance_per_broker_percentage,
                },
                fence_backoff,
                shutdown_for_tasks.clone(),
            );
        }
        let clustered = store.describe() != "embedded";
        let (mut published, mut applied) = (None, None);
        if clustered {
            // Replicated logs lead or follow only once the store's state is
            // applied (the replica manager); until then they refuse appends.
            logs.await_assignments();
            // A data directory that founded the cluster publishes its
            // topics as the cluster's first (again after a start cut short).
            let min_revision =
                publisher::publish_all(store.as_ref(), &view, &logs, node_id, false).await?;
            internal_topics::start(
                store.clone(),
                view.clone(),
                logs.clone(),
                role.clone(),
                shutdown_for_tasks.clone(),
            );
            let rx = reconciler::start(
                view.clone(),
                logs.clone(),
                node_id,
                incarnation,
                min_revision,
                shutdown_for_tasks.clone(),
            );
            applied = Some(rx);
        } else {
            published = Some(publisher::start(
                store.clone(),
                view.clone(),
                logs.clone(),
                node_id,
                shutdown_for_tasks.clone(),
            ));
        }
        let cluster = Cluster {
            store,
            view,
            role,
            node_id,
            clustered,
            incarnation,
            membership,
            published,
            applied,
            logs,
        };
        // Serve only once the store and the data directory agree (a data
        // directory of 100,000 partitions takes seconds to publish).
        cluster.topics_synced_within(Duration::from_secs(300)).await;
        if let Some(rx) = &cluster.applied {
            let target = cluster.view.snapshot().revision;
            let mut rx = rx.clone();
            let _ =
                tokio::time::timeout(times.session_timeout, rx.wait_for(|r| *r >= target)).await;
        }
        Ok(cluster)
    }

    /// Waits (5 s at most) until the embedded store mirrors every topic
    /// change the data directory has made so far. At once in a cluster.
    pub async fn topics_synced(&self) {
        self.topics_synced_within(Duration::from_secs(5)).await
    }

    async fn topics_synced_within(&self, limit: Duration) {
        if let Some(rx) = &self.published {
            let target = *self.logs.subscribe_changes().borrow();
            let mut rx = rx.clone();
            let _ =
                tokio::time::timeout(limit, rx.wait_for(|v| v.is_some_and(|v| v >= target))).await;
        }
    }

    /// Waits (5 s at most) until this broker's data directory follows the
    /// store at `revision` (its view included).
    pub async fn applied(&self, revision: i64) {
        match &self.applied {
            Some(rx) => {
                let mut rx = rx.clone();
                let _ =
                    tokio::time::timeout(Duration::from_secs(5), rx.wait_for(|r| *r >= revision))
                        .await;
            }
            None => {
                self.view
                    .caught_up_to(revision, Duration::from_secs(5))
                    .await;
            }
        }
    }

    /// In a cluster: the store revisions the data directory has applied
    /// (the replica manager acts on each).
    pub fn applied_revisions(&self) -> Option<watch::Receiver<i64>> {
        self.applied.clone()
    }

    /// The controller's node id, if there is one now.
    pub fn controller_id(&self) -> Option<i32> {
        self.view
            .snapshot()
            .controller
            .as_ref()
            .map(|c| c.record.node_id)
    }

    /// Every live broker, by node id.
    pub fn live_brokers(&self) -> Vec<BrokerRegistration> {
        self.view
            .snapshot()
            .brokers
            .values()
            .map(|b| b.registration.clone())
            .collect()
    }

    /// This broker holds a registration now (its lease is alive).
    pub fn is_registered(&self) -> bool {
        self.membership.registered.borrow().is_some()
    }

    pub(crate) fn is_controller(&self) -> bool {
        matches!(*self.role.borrow(), Role::Active { .. })
    }

    /// Controlled shutdown (before shutdown is signalled): marks this
    /// broker as shutting down, so that the controller moves its
    /// leaderships to other in-sync replicas and takes it out of ISRs, and
    /// waits until the view shows it leads nothing another replica could
    /// take (a live, in-sync one not shutting down), or `max_wait` passed.
    /// Clients re-route on NOT_LEADER_OR_FOLLOWER and retry what was in
    /// flight; the broker keeps replicating meanwhile. Returns the
    /// partitions it still leads.
    pub async fn controlled_shutdown(&self, max_wait: Duration) -> usize {
        if !self.clustered {
            return 0;
        }
        let me = self.node_id;
        let led = |s: &ClusterSnapshot| {
            s.partitions
                .values()
                .flat_map(|parts| parts.values())
                .filter(|e| e.state.leader == me)
                .count()
        };
        let movable = |s: &ClusterSnapshot| {
            s.partitions
                .values()
                .flat_map(|parts| parts.values())
                .filter(|e| e.state.leader == me)
                .filter(|e| {
                    e.state.isr.iter().any(|id| {
                        *id != me
                            && s.brokers
                                .get(id)
                                .is_some_and(|b| !b.registration.shutting_down)
                    })
                })
                .count()
        };
        let before = led(&self.view.snapshot());
        self.membership.begin_controlled_shutdown();
        let started = tokio::time::Instant::now();
        let mut snapshots = self.view.subscribe();
        let _ = tokio::time::timeout(max_wait, async {
            loop {
                if movable(&snapshots.borrow_and_update()) == 0 {
                    return;
                }
                if snapshots.changed().await.is_err() {
                    return;
                }
            }
        })
        .await;
        let left = led(&self.view.snapshot());
        tracing::info!(
            led_before = before,
            still_led = left,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "controlled shutdown: leaderships moved away"
        );
        left
    }

    /// After shutdown was signalled: waits (3 s at most) until the lease
    /// is revoked, so the others see this broker leave at once.
    pub async fn left(&self) {
        let mut registered = self.membership.registered.clone();
        let _ = tokio::time::timeout(Duration::from_secs(3), registered.wait_for(Option::is_none))
            .await;
    }
}
