//! Keeps the group and transaction coordinators on the leaders of their
//! internal partitions: each loads the partitions this broker leads and
//! drops those it stopped leading, once before the broker serves (a
//! single broker leads every partition, so it loads everything first, as
//! it always did), after every role change the replica manager applies,
//! and every second as a safety net (docs/coordinators.md).
//!
//! It schedules; loading and dropping are the coordinators' own.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::group::GroupCoordinator;
use crate::txn::TransactionCoordinator;

const RECHECK: Duration = Duration::from_secs(1);

/// One round: both coordinators follow the current roles.
pub async fn follow_once(groups: &Arc<GroupCoordinator>, txns: &Arc<TransactionCoordinator>) {
    groups.follow_leadership().await;
    txns.follow_leadership().await;
}

/// Follows role changes (`roles`) until `shutdown`.
pub fn start(
    groups: Arc<GroupCoordinator>,
    txns: Arc<TransactionCoordinator>,
    mut roles: watch::Receiver<u64>,
    mut shutdown: watch::Receiver<bool>,
) {
    tokio::spawn(async move {
        loop {
            roles.borrow_and_update();
            follow_once(&groups, &txns).await;
            tokio::select! {
                r = roles.changed() => if r.is_err() { return },
                _ = tokio::time::sleep(RECHECK) => {}
                _ = shutdown.changed() => return,
            }
        }
    });
}
