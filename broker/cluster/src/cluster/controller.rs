//! Controller election. Every registered broker campaigns when the view
//! shows no controller: a transaction creates the `controller` key, on the
//! campaigner's broker lease, only if it is absent — so exactly one wins.
//! The key's create revision is the controller epoch; every write the
//! controller makes is guarded by it (`Compare::CreateRevision`), so a
//! controller that lost its lease cannot write even if it has not noticed
//! yet. The key goes with the broker's lease (crash: after
//! `broker.session.timeout.ms`; clean shutdown: at once) and the others
//! campaign again.
//!
//! This module elects; what the controller does lives beside it.

use std::sync::Arc;

use tokio::sync::watch;

use super::membership::Registered;
use super::records::{encode, ControllerRecord, CONTROLLER_KEY};
use super::store::{ClusterStore, Compare, Op};
use super::view::ClusterView;

/// This broker's part in controller elections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Another broker (or nobody yet) is the controller.
    Follower,
    /// This broker is the controller, at this epoch.
    Active { epoch: i64 },
}

/// Campaigns whenever there is no controller; publishes this broker's role.
pub(crate) fn start_election(
    store: Arc<dyn ClusterStore>,
    view: ClusterView,
    me: ControllerRecord,
    mut registered: watch::Receiver<Option<Registered>>,
    mut shutdown: watch::Receiver<bool>,
) -> watch::Receiver<Role> {
    let (tx, rx) = watch::channel(Role::Follower);
    tokio::spawn(async move {
        let mut snapshots = view.subscribe();
        loop {
            let snap = snapshots.borrow_and_update().clone();
            let reg = *registered.borrow_and_update();
            let role = match (&snap.controller, reg) {
                (Some(c), _) if c.record == me => Role::Active { epoch: c.epoch },
                (None, Some(r)) if snap.connected => {
                    campaign(store.as_ref(), &me, r).await;
                    // The outcome arrives through the view.
                    Role::Follower
                }
                _ => Role::Follower,
            };
            tx.send_if_modified(|old| {
                if *old != role {
                    match role {
                        Role::Active { epoch } => {
                            tracing::info!(
                                node_id = me.node_id,
                                epoch,
                                "this broker is the controller"
                            )
                        }
                        Role::Follower => tracing::info!(
                            node_id = me.node_id,
                            "this broker is not the controller"
                        ),
                    }
                    *old = role;
                    true
                } else {
                    false
                }
            });
            tokio::select! {
                // A failed campaign is tried again even if nothing changes.
                _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
                r = snapshots.changed() => if r.is_err() { return },
                r = registered.changed() => if r.is_err() { return },
                _ = shutdown.changed() => {
                    // Hand the role over now instead of a session later.
                    let current = *tx.borrow();
                    if let Role::Active { epoch } = current {
                        let _ = store
                            .txn(
                                vec![Compare::CreateRevision(CONTROLLER_KEY.to_string(), epoch)],
                                vec![Op::delete(CONTROLLER_KEY)],
                            )
                            .await;
                    }
                    let _ = tx.send(Role::Follower);
                    return;
                }
            }
        }
    });
    rx
}

async fn campaign(store: &dyn ClusterStore, me: &ControllerRecord, reg: Registered) {
    let put = Op::put_leased(CONTROLLER_KEY, encode(me), reg.lease);
    match store
        .txn(vec![Compare::Absent(CONTROLLER_KEY.to_string())], vec![put])
        .await
    {
        Ok(o) if o.succeeded => {
            tracing::debug!(revision = o.revision, "won the controller election")
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "controller campaign failed"),
    }
}
