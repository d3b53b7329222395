//! The Kafka protocol server: accepts connections, frames requests, and
//! routes them to handlers. Owns no storage; every handler works through the
//! [`LogManager`](crate::log_manager::LogManager).

pub mod authz;
pub mod config_admin;
pub mod connection;
pub mod dispatch;
pub mod handlers;
pub mod legacy;
pub mod listeners;
pub mod tls;
pub mod topic_admin;
pub mod versions;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use kafka_protocol::protocol::StrBytes;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::cluster::records::BrokerRegistration;
use crate::cluster::Cluster;
use crate::config::dynamic::DynamicConfigs;
use crate::config::BrokerConfig;
use crate::group::GroupCoordinator;
use crate::log_manager::LogManager;
use crate::producer_ids::ProducerIdManager;
use crate::remote::TieredStorage;
use crate::txn::TransactionCoordinator;

/// What every request handler can see.
#[derive(Debug)]
pub struct Broker {
    pub logs: Arc<LogManager>,
    pub groups: Arc<GroupCoordinator>,
    pub producer_ids: Arc<ProducerIdManager>,
    pub txns: Arc<TransactionCoordinator>,
    pub config: Arc<BrokerConfig>,
    pub node_id: i32,
    /// The inter-broker listener's advertised address (what the cluster
    /// registers).
    pub advertised_host: String,
    pub advertised_port: i32,
    /// Every listener's advertised address.
    pub listeners: Vec<listeners::Advertised>,
    /// The cluster's SCRAM users.
    pub scram: Arc<strata_cluster::security_store::SecurityStore>,
    /// The cluster's ACL bindings.
    pub acls: Arc<strata_cluster::acl_store::AclStore>,
    /// The authorizer's settings (None: `authorizer.class.name` is unset
    /// and every client may do everything); `authorizer()` pairs them
    /// with the current bindings.
    pub authorizer: Option<strata_security::authorizer::Authorizer>,
    pub max_request_bytes: usize,
    /// Broker settings changed at run time.
    pub dynamic: Arc<DynamicConfigs>,
    /// Tiered storage (None when `remote.log.storage.system.enable` is off).
    pub remote: Option<Arc<TieredStorage>>,
    /// Membership, the controller, and the view of the other brokers.
    pub cluster: Arc<Cluster>,
    /// The layer between the handlers and the partitions' logs
    /// (`docs/partition-layer.md`): every handler reaches partitions
    /// through it.
    pub replicas: Arc<crate::partition::ReplicaManager>,
}

impl Broker {
    /// The authorizer over the bindings of this moment (None: no
    /// authorizer is configured).
    pub fn authorizer(&self) -> Option<strata_security::authorizer::Authorizer> {
        self.authorizer
            .as_ref()
            .map(|a| a.with_acls(self.acls.current()))
    }

    pub fn host(&self) -> StrBytes {
        StrBytes::from_string(self.advertised_host.clone())
    }
    pub fn cluster_id(&self) -> StrBytes {
        StrBytes::from_string(self.logs.cluster_id().to_string())
    }
    /// Every live broker, by node id, this one always among them (it
    /// serves even while it cannot reach the metadata store).
    pub fn live_brokers(&self) -> Vec<BrokerRegistration> {
        let mut brokers = self.cluster.live_brokers();
        if !brokers.iter().any(|r| r.node_id == self.node_id) {
            brokers.push(BrokerRegistration {
                node_id: self.node_id,
                host: self.advertised_host.clone(),
                port: self.advertised_port,
                rack: self.rack(),
                incarnation: uuid::Uuid::nil(),
                shutting_down: false,
                endpoints: Vec::new(),
            });
            brokers.sort_by_key(|r| r.node_id);
        }
        brokers
    }
    /// A topic's config overrides as the cluster knows them (a single
    /// broker: its data directory's; a cluster: the store's, also for
    /// topics this broker hosts no replica of).
    pub fn topic_overrides(
        &self,
        topic: &str,
    ) -> Option<std::collections::BTreeMap<String, String>> {
        if self.cluster.clustered {
            if let Some(t) = self.cluster.view.snapshot().topic(topic) {
                return Some(t.record.configs.clone());
            }
        }
        self.logs.topic(topic).map(|t| t.overrides())
    }
    /// The broker coordinating `key` in internal topic `topic`
    /// (`__consumer_offsets` for a group, `__transaction_state` for a
    /// transactional id): the leader of the key's partition, as the store
    /// says. Err explains why there is none right now.
    pub fn coordinator_for(&self, topic: &str, key: &str) -> Result<BrokerRegistration, String> {
        self.replicas
            .coordinator_for(topic, key, self.live_brokers())
    }
    /// Every live broker as a client of `listener` reaches it.
    pub fn live_brokers_on(&self, listener: &str) -> Vec<BrokerRegistration> {
        let mut brokers = self.live_brokers();
        for b in &mut brokers {
            (b.host, b.port) = self.address_on(b, listener);
        }
        brokers
    }
    /// Where a client of `listener` reaches broker `reg`.
    pub fn address_on(&self, reg: &BrokerRegistration, listener: &str) -> (String, i32) {
        if reg.node_id == self.node_id {
            if let Some(a) = self.listeners.iter().find(|a| a.name == listener) {
                return (a.host.clone(), a.port);
            }
        }
        let (host, port) = reg.endpoint_for(listener);
        (host.to_string(), port)
    }
    /// The controller's node id, -1 while there is none.
    pub fn controller_id(&self) -> i32 {
        self.cluster.controller_id().unwrap_or(-1)
    }
    /// `broker.rack`, if set.
    pub fn rack(&self) -> Option<String> {
        self.config.settings().rack.clone()
    }
}

/// Accepts connections on every listener until `shutdown` flips to true.
pub async fn serve(
    bound: Vec<listeners::BoundListener>,
    broker: Arc<Broker>,
    shutdown: watch::Receiver<bool>,
) {
    let loops: Vec<_> = bound
        .into_iter()
        .map(|l| tokio::spawn(accept(l.tcp, l.context, broker.clone(), shutdown.clone())))
        .collect();
    for l in loops {
        let _ = l.await;
    }
}

async fn accept(
    listener: TcpListener,
    context: Arc<connection::ListenerContext>,
    broker: Arc<Broker>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let b = broker.clone();
                    let sd = shutdown.clone();
                    let c = context.clone();
                    tokio::spawn(connection::handle_connection(stream, peer, b, c, sd));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.changed() => return,
        }
    }
}
