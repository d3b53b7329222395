//! The controller creates the coordinators' internal topics in the store
//! (`__consumer_offsets` at `offsets.topic.replication.factor`,
//! `__transaction_state` at `transaction.state.log.replication.factor`)
//! as soon as enough brokers are live, rack-aware like any topic; their
//! partitions are then replicated and led like any other, and the
//! coordinators follow the leaders (docs/coordinators.md). Until then
//! FindCoordinator answers COORDINATOR_NOT_AVAILABLE with the reason, as
//! Kafka does.
//!
//! A broker that holds a copy of such a topic with records from before the
//! cluster knew it publishes that copy instead, when it joins
//! (`publisher.rs`), so no committed offset or transaction is lost.
//!
//! It writes topic and partition keys only if absent; never anything else.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use uuid::Uuid;

use super::assignment::{assign, Candidate};
use super::controller::Role;
use super::store::ClusterStore;
use super::topics;
use super::view::{ClusterSnapshot, ClusterView};
use crate::coordinator_log::{internal_topic_configs, internal_topic_settings};
use strata_common::topic_name::{OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC};
use strata_storage::log_manager::LogManager;

/// The internal topics the controller creates.
const INTERNAL: [&str; 2] = [OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC];

/// Creates what is missing. Returns the names written.
pub(crate) async fn ensure(
    store: &dyn ClusterStore,
    snap: &ClusterSnapshot,
    logs: &LogManager,
    warned: &mut BTreeMap<&'static str, usize>,
) -> Vec<&'static str> {
    let mut written = Vec::new();
    for name in INTERNAL {
        if snap.topic(name).is_some() {
            continue;
        }
        let cfg = logs.broker_config();
        let internal = internal_topic_settings(name, cfg.settings());
        let rf = internal.replication_factor;
        let rf_setting = internal.replication_factor_name;
        let live: Vec<Candidate> = snap
            .brokers
            .values()
            .map(|b| Candidate {
                node_id: b.registration.node_id,
                rack: b.registration.rack.clone(),
            })
            .collect();
        if (live.len() as i32) < rf {
            if warned.get(name) != Some(&live.len()) {
                tracing::warn!(topic = name, live = live.len(), replication_factor = rf,
                    "not creating {name} yet: fewer live brokers than its replication factor ({rf_setting}); groups or transactions wait for it");
                warned.insert(name, live.len());
            }
            continue;
        }
        let seed = {
            let (a, b) = Uuid::new_v4().as_u64_pair();
            a ^ b
        };
        let assignment = match assign(&live, 0, internal.num_partitions.max(1), rf, seed) {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(topic = name, error = %e, "cannot assign an internal topic");
                continue;
            }
        };
        let configs = internal_topic_configs(name, cfg, rf);
        match topics::create_topic(store, name, Uuid::new_v4(), configs, &assignment).await {
            Ok(Some(_)) => {
                tracing::info!(
                    topic = name,
                    partitions = assignment.len(),
                    replication_factor = rf,
                    "created internal topic in the cluster"
                );
                written.push(name);
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(topic = name, error = %e, "cannot create internal topic"),
        }
    }
    written
}

/// While this broker is the controller, creates the internal topics once
/// they can be (at every change of the view, and every second).
pub fn start(
    store: Arc<dyn ClusterStore>,
    view: ClusterView,
    logs: Arc<LogManager>,
    mut role: watch::Receiver<Role>,
    mut shutdown: watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        let mut snapshots = view.subscribe();
        let mut warned = BTreeMap::new();
        loop {
            let active = matches!(*role.borrow_and_update(), Role::Active { .. });
            let snap = snapshots.borrow_and_update().clone();
            if active && snap.connected {
                ensure(store.as_ref(), &snap, &logs, &mut warned).await;
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                r = snapshots.changed() => if r.is_err() { return },
                r = role.changed() => if r.is_err() { return },
                _ = shutdown.changed() => return,
            }
        }
    });
}
