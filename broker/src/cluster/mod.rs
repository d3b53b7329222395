//! The cluster layer: membership, controller election and the view of the
//! cluster every broker keeps, over a [`ClusterStore`] — etcd with
//! `--metadata etcd://...`, an in-process store otherwise, through the
//! same code (docs/cluster-metadata.md).
//!
//! It owns what lives in the store; it never touches partition logs.

pub mod controller;
pub mod embedded;
pub mod etcd;
pub mod membership;
pub mod records;
pub mod store;
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
use view::ClusterView;

pub use store::StoreError as ClusterStoreError;

/// Opens the store a `--metadata` value names: `etcd://...`, or the
/// embedded store when there is none.
pub fn open_store(metadata: Option<&str>) -> Result<Arc<dyn ClusterStore>, StoreError> {
    match metadata {
        None | Some("") | Some("embedded") => Ok(embedded::EmbeddedStore::new()),
        Some(url) => Ok(Arc::new(etcd::EtcdStore::from_url(url)?)),
    }
}

/// The cluster id in the store; `proposed` becomes it if there is none.
pub async fn claim_cluster_id(
    store: &dyn ClusterStore,
    proposed: &str,
) -> Result<String, StoreError> {
    let put = Op::put(CLUSTER_ID_KEY, proposed.as_bytes().to_vec());
    store
        .txn(vec![Compare::Absent(CLUSTER_ID_KEY.to_string())], vec![put])
        .await?;
    let kv = store
        .get(CLUSTER_ID_KEY)
        .await?
        .ok_or_else(|| StoreError::Protocol("cluster id vanished".to_string()))?;
    String::from_utf8(kv.value)
        .map_err(|_| StoreError::Protocol("the stored cluster id is not UTF-8".to_string()))
}

/// This broker's membership in the cluster and its view of it.
pub struct Cluster {
    pub store: Arc<dyn ClusterStore>,
    pub view: ClusterView,
    pub role: watch::Receiver<Role>,
    pub node_id: i32,
    membership: Membership,
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
    pub async fn join(
        store: Arc<dyn ClusterStore>,
        host: String,
        port: i32,
        rack: Option<String>,
        node_id: i32,
        times: SessionTimes,
        shutdown: watch::Receiver<bool>,
    ) -> Result<Cluster, RegisterError> {
        let incarnation = Uuid::new_v4();
        let me = BrokerRegistration {
            node_id,
            host,
            port,
            rack,
            incarnation,
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
        Ok(Cluster {
            store,
            view,
            role,
            node_id,
            membership,
        })
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

    pub fn is_controller(&self) -> bool {
        matches!(*self.role.borrow(), Role::Active { .. })
    }

    /// After shutdown was signalled: waits (3 s at most) until the lease
    /// is revoked, so the others see this broker leave at once.
    pub async fn left(&self) {
        let mut registered = self.membership.registered.clone();
        let _ = tokio::time::timeout(Duration::from_secs(3), registered.wait_for(Option::is_none))
            .await;
    }
}
