//! Broker membership: a broker registers under a lease (`brokers/<id>`)
//! and keeps the lease alive; other brokers see it leave when the lease
//! expires (`broker.session.timeout.ms` after its last keep-alive) or at
//! once when it shuts down cleanly. A broker that loses its lease (the
//! store was out of reach for longer than the session) registers again
//! with a new broker epoch.
//!
//! This module never decides anything about partitions.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::records::{broker_key, encode, BrokerRegistration};
use super::store::{ClusterStore, Compare, LeaseId, Op, StoreError};

/// How often and how long membership keeps its lease.
#[derive(Debug, Clone, Copy)]
pub struct SessionTimes {
    /// The lease's time to live (`broker.session.timeout.ms`).
    pub session_timeout: Duration,
    /// Time between keep-alives (`broker.heartbeat.interval.ms`).
    pub heartbeat_interval: Duration,
}

/// A registration in force: the lease and the broker epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registered {
    pub lease: LeaseId,
    /// The create revision of this broker's key.
    pub broker_epoch: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum RegisterError {
    #[error(
        "node id {0} is already registered by another live broker ({1}); give each broker its own node.id"
    )]
    NodeIdTaken(i32, String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Registers `me` once: fails if another live process holds the node id.
pub(crate) async fn register_once(
    store: &dyn ClusterStore,
    me: &BrokerRegistration,
    ttl: Duration,
) -> Result<Registered, RegisterError> {
    let key = broker_key(me.node_id);
    let lease = store.grant_lease(ttl).await?;
    let put = Op::put_leased(key.clone(), encode(me), lease);
    let outcome = store
        .txn(vec![Compare::Absent(key.clone())], vec![put])
        .await?;
    if !outcome.succeeded {
        // Our own earlier incarnation (a restart within the session
        // timeout) is not "another broker": take its place.
        let held = store.get(&key).await?;
        let same_process = held.as_ref().is_some_and(|kv| {
            serde_json::from_slice::<BrokerRegistration>(&kv.value)
                .is_ok_and(|r| r.incarnation == me.incarnation)
        });
        let Some(kv) = held else {
            let _ = store.revoke_lease(lease).await;
            return Box::pin(register_once(store, me, ttl)).await;
        };
        if !same_process {
            let other = String::from_utf8_lossy(&kv.value).to_string();
            let _ = store.revoke_lease(lease).await;
            return Err(RegisterError::NodeIdTaken(me.node_id, other));
        }
        let swap = store
            .txn(
                vec![Compare::ModRevision(key.clone(), kv.mod_revision)],
                vec![Op::put_leased(key.clone(), encode(me), lease)],
            )
            .await?;
        if !swap.succeeded {
            let _ = store.revoke_lease(lease).await;
            return Box::pin(register_once(store, me, ttl)).await;
        }
    }
    let epoch = store.get(&key).await?.map_or(0, |kv| kv.create_revision);
    Ok(Registered {
        lease,
        broker_epoch: epoch,
    })
}

/// Keeps a broker registered until `shutdown`, then deregisters it.
/// Publishes the registration in force (None while it has none).
pub struct Membership {
    pub registered: watch::Receiver<Option<Registered>>,
    /// Set to begin a controlled shutdown: the registration says so.
    draining: watch::Sender<bool>,
}

impl Membership {
    /// Registers `me` (waiting until the store answers, for a node id
    /// conflict it fails) and keeps it registered in the background.
    pub async fn start(
        store: Arc<dyn ClusterStore>,
        me: BrokerRegistration,
        times: SessionTimes,
        mut shutdown: watch::Receiver<bool>,
    ) -> Result<Membership, RegisterError> {
        // A broker restarted right after a crash finds its old
        // registration until that lease expires: wait it out. Still taken
        // after two session timeouts, the node id is someone else's.
        let give_up = tokio::time::Instant::now() + times.session_timeout * 2;
        let first = loop {
            match register_once(store.as_ref(), &me, times.session_timeout).await {
                Ok(r) => break r,
                Err(RegisterError::Store(e)) => {
                    tracing::warn!(error = %e, "cannot register with the metadata store yet; retrying");
                }
                Err(e @ RegisterError::NodeIdTaken(..)) => {
                    if tokio::time::Instant::now() >= give_up {
                        return Err(e);
                    }
                    tracing::info!("node id still registered by an earlier process; waiting for its session to expire");
                }
            }
            tokio::time::sleep(times.heartbeat_interval.min(Duration::from_millis(500))).await;
        };
        tracing::info!(
            node_id = me.node_id,
            broker_epoch = first.broker_epoch,
            "registered in the cluster"
        );
        let (tx, rx) = watch::channel(Some(first));
        let (draining, mut drain) = watch::channel(false);
        let mut me = me;
        tokio::spawn(async move {
            let mut current = first;
            let mut drain_open = true;
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(times.heartbeat_interval) => {}
                    _ = shutdown.changed() => {
                        // Leave now rather than a session timeout later.
                        let _ = store.revoke_lease(current.lease).await;
                        let _ = tx.send(None);
                        return;
                    }
                    r = drain.changed(), if drain_open => {
                        // The handle is gone: nothing will ask again.
                        drain_open = r.is_ok();
                    }
                }
                if *drain.borrow() && !me.shutting_down {
                    // The same key and lease: the broker epoch stays. A
                    // failure is retried at the next heartbeat.
                    let mut next = me.clone();
                    next.shutting_down = true;
                    let put =
                        Op::put_leased(broker_key(next.node_id), encode(&next), current.lease);
                    match store.txn(Vec::new(), vec![put]).await {
                        Ok(_) => {
                            me = next;
                            tracing::info!(node_id = me.node_id,
                                "controlled shutdown: asked the controller to move leaderships away");
                        }
                        Err(e) => tracing::warn!(error = %e,
                            "controlled shutdown: cannot update the registration yet; retrying"),
                    }
                }
                match store.keep_alive(current.lease).await {
                    Ok(()) => {}
                    Err(StoreError::LeaseExpired(_)) => {
                        tracing::warn!(
                            node_id = me.node_id,
                            "lost the cluster session (lease expired); registering again"
                        );
                        let _ = tx.send(None);
                        match register_once(store.as_ref(), &me, times.session_timeout).await {
                            Ok(r) => {
                                tracing::info!(broker_epoch = r.broker_epoch, "registered again");
                                current = r;
                                let _ = tx.send(Some(r));
                            }
                            Err(e) => tracing::warn!(error = %e, "cannot register again yet"),
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "cluster session keep-alive failed"),
                }
            }
        });
        Ok(Membership {
            registered: rx,
            draining,
        })
    }

    /// Marks the registration as shutting down (controlled shutdown).
    pub(crate) fn begin_controlled_shutdown(&self) {
        let _ = self.draining.send(true);
    }
}
