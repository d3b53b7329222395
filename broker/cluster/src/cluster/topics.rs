//! Topic records and partition state in the cluster store: creating a
//! topic with its partitions, adding partitions, changing configs,
//! deleting. Every write is a transaction guarded by the topic key's
//! state (absent to create, its mod revision to change), so concurrent
//! admin requests on different brokers cannot interleave: one wins, the
//! other sees the outcome. Leadership changes of existing partitions are
//! the controller's, not this module's.
//!
//! etcd bounds a transaction's operations (`--max-txn-ops`, 128 by
//! default): the topic record goes with the first partitions, the rest in
//! further transactions that only create absent keys.

use std::collections::BTreeMap;

use uuid::Uuid;

use super::records::{
    encode, partition_key, topic_key, PartitionState, TopicRecord, PARTITIONS_PREFIX,
    REPORTS_PREFIX,
};
use super::store::{ClusterStore, Compare, Op, Revision, StoreError, TxnOutcome};

/// Operations per transaction, under etcd's default limit of 128.
const OPS_PER_TXN: usize = 100;

/// A new partition's state: its preferred leader leads, every replica is
/// in sync (an empty log is).
pub(crate) fn new_partition(replicas: Vec<i32>) -> PartitionState {
    PartitionState {
        leader: replicas.first().copied().unwrap_or(-1),
        leader_epoch: 0,
        isr: replicas.clone(),
        replicas,
        partition_epoch: 0,
        adding_replicas: Vec::new(),
        removing_replicas: Vec::new(),
        fencing: None,
    }
}

/// Writes partitions `first..` of `topic` from `assignment`, each only if
/// absent and only while the topic is the incarnation created at
/// `topic_created`, in transactions of at most `OPS_PER_TXN`.
async fn put_partitions(
    store: &dyn ClusterStore,
    topic: &str,
    topic_created: Revision,
    first: i32,
    states: &[PartitionState],
) -> Result<Revision, StoreError> {
    let mut revision = 0;
    for (c, chunk) in states.chunks(OPS_PER_TXN).enumerate() {
        let base = first + (c * OPS_PER_TXN) as i32;
        let mut compares = vec![Compare::CreateRevision(topic_key(topic), topic_created)];
        let mut ops = Vec::with_capacity(chunk.len());
        for (i, state) in chunk.iter().enumerate() {
            let key = partition_key(topic, base + i as i32);
            compares.push(Compare::Absent(key.clone()));
            ops.push(Op::put(key, encode(state)));
        }
        let outcome = store.txn(compares, ops).await?;
        if !outcome.succeeded {
            return Err(StoreError::Protocol(format!(
                "topic {topic} changed while its partitions {base}.. were written"
            )));
        }
        revision = outcome.revision;
    }
    Ok(revision)
}

/// Creates `name` with one partition per entry of `assignment`. Ok(None)
/// if the topic exists already; otherwise the revision to wait for.
pub async fn create_topic(
    store: &dyn ClusterStore,
    name: &str,
    id: Uuid,
    configs: BTreeMap<String, String>,
    assignment: &[Vec<i32>],
) -> Result<Option<Revision>, StoreError> {
    let states: Vec<PartitionState> = assignment.iter().cloned().map(new_partition).collect();
    create_topic_with(store, name, id, configs, &states).await
}

/// [`create_topic`] for a topic whose records exist on one broker only
/// (the first replica of each list): only it is in sync, the others join
/// the ISR once they copied it. Each partition leads at its copy's newest
/// leader epoch (`leader_epochs`, 0 where missing).
pub(crate) async fn create_topic_from_copy(
    store: &dyn ClusterStore,
    name: &str,
    id: Uuid,
    configs: BTreeMap<String, String>,
    assignment: &[Vec<i32>],
    leader_epochs: &[i32],
) -> Result<Option<Revision>, StoreError> {
    let states: Vec<PartitionState> = assignment
        .iter()
        .cloned()
        .enumerate()
        .map(|(p, replicas)| {
            let mut s = new_partition(replicas);
            s.isr.truncate(1);
            s.leader_epoch = leader_epochs.get(p).copied().unwrap_or(0).max(0);
            s
        })
        .collect();
    create_topic_with(store, name, id, configs, &states).await
}

async fn create_topic_with(
    store: &dyn ClusterStore,
    name: &str,
    id: Uuid,
    configs: BTreeMap<String, String>,
    states: &[PartitionState],
) -> Result<Option<Revision>, StoreError> {
    let record = TopicRecord {
        id,
        partitions: states.len() as i32,
        configs,
    };
    let (head, rest) = states.split_at(states.len().min(OPS_PER_TXN - 1));
    let mut ops = vec![Op::put(topic_key(name), encode(&record))];
    for (p, state) in head.iter().enumerate() {
        ops.push(Op::put(partition_key(name, p as i32), encode(state)));
    }
    // Leftover partition keys of a topic deleted half-way are overwritten.
    let create = || store.txn(vec![Compare::Absent(topic_key(name))], ops.clone());
    let outcome = match create().await {
        Ok(outcome) => outcome,
        // Sent, unanswered (a member restarting): the key says whether it
        // was applied, since the record carries this creation's id. Absent,
        // it is tried once more (if the first lands later, the second's
        // guard fails and the read after it finds this id).
        Err(StoreError::OutcomeUnknown(why)) => {
            tracing::info!(topic = name, error = %why, "topic creation outcome unknown; reading it back");
            match created_by(store, name, id).await? {
                Some(revision) => TxnOutcome {
                    succeeded: true,
                    revision,
                },
                None => {
                    let again = create().await?;
                    match created_by(store, name, id).await? {
                        Some(revision) if !again.succeeded => TxnOutcome {
                            succeeded: true,
                            revision,
                        },
                        _ => again,
                    }
                }
            }
        }
        Err(e) => return Err(e),
    };
    if !outcome.succeeded {
        return Ok(None);
    }
    if rest.is_empty() {
        return Ok(Some(outcome.revision));
    }
    put_partitions(store, name, outcome.revision, head.len() as i32, rest)
        .await
        .map(Some)
}

/// The creation revision of topic `name` if its record is the one with
/// `id` (this creation's).
async fn created_by(
    store: &dyn ClusterStore,
    name: &str,
    id: Uuid,
) -> Result<Option<Revision>, StoreError> {
    Ok(store.get(&topic_key(name)).await?.and_then(|kv| {
        serde_json::from_slice::<TopicRecord>(&kv.value)
            .ok()
            .filter(|r| r.id == id)
            .map(|_| kv.create_revision)
    }))
}

/// Raises `name`'s partition count to `from + new.len()`, if its record is
/// still at `mod_revision`. Ok(None) if it changed meanwhile.
pub async fn add_partitions(
    store: &dyn ClusterStore,
    name: &str,
    record: &TopicRecord,
    (create_revision, mod_revision): (Revision, Revision),
    new: &[Vec<i32>],
) -> Result<Option<Revision>, StoreError> {
    let mut grown = record.clone();
    grown.partitions = record.partitions + new.len() as i32;
    let (head, rest) = new.split_at(new.len().min(OPS_PER_TXN - 1));
    let mut ops = vec![Op::put(topic_key(name), encode(&grown))];
    for (i, replicas) in head.iter().enumerate() {
        ops.push(Op::put(
            partition_key(name, record.partitions + i as i32),
            encode(&new_partition(replicas.clone())),
        ));
    }
    let outcome = store
        .txn(
            vec![Compare::ModRevision(topic_key(name), mod_revision)],
            ops,
        )
        .await?;
    if !outcome.succeeded {
        return Ok(None);
    }
    if rest.is_empty() {
        return Ok(Some(outcome.revision));
    }
    let rest: Vec<PartitionState> = rest.iter().cloned().map(new_partition).collect();
    put_partitions(
        store,
        name,
        create_revision,
        record.partitions + head.len() as i32,
        &rest,
    )
    .await
    .map(Some)
}

/// Replaces `name`'s config overrides, if its record is still at
/// `mod_revision`.
pub async fn set_configs(
    store: &dyn ClusterStore,
    name: &str,
    record: &TopicRecord,
    mod_revision: Revision,
    configs: BTreeMap<String, String>,
) -> Result<Option<Revision>, StoreError> {
    let mut changed = record.clone();
    changed.configs = configs;
    let outcome = store
        .txn(
            vec![Compare::ModRevision(topic_key(name), mod_revision)],
            vec![Op::put(topic_key(name), encode(&changed))],
        )
        .await?;
    Ok(outcome.succeeded.then_some(outcome.revision))
}

/// Deletes `name` and its partitions' state, if its record is still at
/// `mod_revision`.
pub async fn delete_topic(
    store: &dyn ClusterStore,
    name: &str,
    mod_revision: Revision,
) -> Result<Option<Revision>, StoreError> {
    let outcome = store
        .txn(
            vec![Compare::ModRevision(topic_key(name), mod_revision)],
            vec![
                Op::delete(topic_key(name)),
                Op::delete_prefix(format!("{PARTITIONS_PREFIX}{name}/")),
                // Quorum election reports: never counted for a namesake.
                Op::delete_prefix(format!("{REPORTS_PREFIX}{name}/")),
            ],
        )
        .await?;
    Ok(outcome.succeeded.then_some(outcome.revision))
}
