//! Every write of a partition's state key (`partitions/<topic>/<p>`) goes
//! through here: a compare-and-swap on the key's revision (the state the
//! writer acted on), and for the controller also on its controller epoch,
//! so two writers acting on one state never both win and a deposed
//! controller writes nothing. Operator requests (ElectLeaders,
//! AlterPartitionReassignments) that lose such a race decide again on a
//! newer view, a few times.
//!
//! It writes the store; it never decides what a partition's state should
//! be (the callers do).

use std::time::Duration;

use super::records::{encode, partition_key, PartitionState, CONTROLLER_KEY};
use super::store::{ClusterStore, Compare, Op, StoreError};
use super::view::{ClusterSnapshot, ClusterView};

/// Writes `next` as the state of `topic`-`partition` if the key is still
/// at `mod_revision` and, with `controller_epoch`, the writer still is
/// that controller. Ok(Some(store revision)) when written, Ok(None) when
/// something changed first.
pub(crate) async fn write_partition_state(
    store: &dyn ClusterStore,
    topic: &str,
    partition: i32,
    mod_revision: i64,
    controller_epoch: Option<i64>,
    next: &PartitionState,
) -> Result<Option<i64>, StoreError> {
    write_partition_state_and(
        store,
        topic,
        partition,
        mod_revision,
        controller_epoch,
        next,
        Vec::new(),
    )
    .await
}

/// [`write_partition_state`], with `also` in the same transaction.
pub(crate) async fn write_partition_state_and(
    store: &dyn ClusterStore,
    topic: &str,
    partition: i32,
    mod_revision: i64,
    controller_epoch: Option<i64>,
    next: &PartitionState,
    also: Vec<Op>,
) -> Result<Option<i64>, StoreError> {
    let key = partition_key(topic, partition);
    let mut guards = Vec::with_capacity(2);
    if let Some(epoch) = controller_epoch {
        guards.push(Compare::CreateRevision(CONTROLLER_KEY.to_string(), epoch));
    }
    guards.push(Compare::ModRevision(key.clone(), mod_revision));
    let mut ops = vec![Op::put(key, encode(next))];
    ops.extend(also);
    let outcome = store.txn(guards, ops).await?;
    Ok(outcome.succeeded.then_some(outcome.revision))
}

/// How an operator's change of one partition ended.
#[derive(Debug)]
pub enum Retried<E> {
    /// Written at this store revision, as this state.
    Written(i64, PartitionState),
    /// The decision found nothing to change.
    Unchanged,
    /// The decision refused the change.
    Refused(E),
    /// The store did not answer.
    StoreFailed(StoreError),
    /// The partition changed under every attempt.
    KeptChanging,
}

/// Attempts at one partition's change when its state changed under it.
const ATTEMPTS: usize = 3;

/// Decides on the newest view (`decide` returns the key's revision it
/// read and the state to write, None for nothing to do, or a refusal) and
/// writes guarded by that revision; a lost race waits for the view to move
/// past the snapshot decided on, and decides again.
pub async fn change_with_retries<E>(
    store: &dyn ClusterStore,
    view: &ClusterView,
    topic: &str,
    partition: i32,
    mut decide: impl FnMut(&ClusterSnapshot) -> Result<Option<(i64, PartitionState)>, E>,
) -> Retried<E> {
    for _ in 0..ATTEMPTS {
        let snap = view.snapshot();
        let (mod_revision, next) = match decide(&snap) {
            Ok(Some(change)) => change,
            Ok(None) => return Retried::Unchanged,
            Err(e) => return Retried::Refused(e),
        };
        match write_partition_state(store, topic, partition, mod_revision, None, &next).await {
            Ok(Some(revision)) => return Retried::Written(revision, next),
            Ok(None) => {
                view.caught_up_to(snap.revision + 1, Duration::from_secs(1))
                    .await;
            }
            Err(e) => return Retried::StoreFailed(e),
        }
    }
    Retried::KeptChanging
}
