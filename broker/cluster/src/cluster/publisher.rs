//! A single broker's topics into its cluster store. Without `--metadata`
//! the data directory is the authority on topics (as it always was); this
//! task mirrors every change of it — topics, partition counts, configs,
//! deletions — into the embedded store, with this broker as every
//! partition's only replica and leader, so leadership is read from the
//! store by the same code as in a cluster. Also used once when a broker's
//! data directory founds a cluster: its topics become the cluster's.
//!
//! It writes the store; it never changes the data directory.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::watch;

use super::assignment::led_by;
use super::records::TopicRecord;
use super::store::{ClusterStore, StoreError};
use super::topics;
use super::view::ClusterView;
use crate::coordinator_log::{internal_topic_configs, internal_topic_settings};
use strata_storage::log_manager::{LogManager, Topic};

/// Makes the store hold `logs`' topics with `me` as the only replica.
/// Returns the store revision after the last write. `single_broker`: the
/// embedded store of a broker alone, which mirrors everything and deletes
/// what the data directory no longer has; otherwise (a data directory
/// joining a cluster, founding it or resuming a founding cut short) the
/// topics the cluster never knew are added and nothing is deleted. An
/// internal topic is added only if its copy holds records (committed
/// offsets, transaction state: docs/coordinators.md), led here and
/// followed by other live brokers up to its replication factor, with only
/// this broker in sync until they copied it; an empty one is left to the
/// controller.
pub(crate) async fn publish_all(
    store: &dyn ClusterStore,
    view: &ClusterView,
    logs: &LogManager,
    me: i32,
    single_broker: bool,
) -> Result<i64, StoreError> {
    let delete_others = single_broker;
    let snap = view.snapshot();
    let mut revision = snap.revision;
    let local: BTreeMap<String, TopicRecord> = logs
        .topics()
        .iter()
        // Founding a cluster (or resuming a founding cut short): the
        // topics not published yet.
        .filter(|t| {
            single_broker
                || (!t.in_cluster()
                    && (!strata_common::topic_name::is_internal(&t.name) || holds_records(t)))
        })
        .map(|t| {
            (
                t.name.clone(),
                TopicRecord {
                    id: t.id,
                    partitions: t.partition_count() as i32,
                    configs: t.overrides(),
                },
            )
        })
        .collect();
    for (name, want) in &local {
        let assignment = |from: i32, to: i32| vec![vec![me]; (to - from).max(0) as usize];
        let recreated = snap
            .topic(name)
            .filter(|have| single_broker && have.record.id != want.id);
        if let Some(have) = recreated {
            // Deleted and created again locally: replace it.
            topics::delete_topic(store, name, have.mod_revision).await?;
        }
        let existing = snap.topic(name).filter(|_| recreated.is_none());
        let internal = strata_common::topic_name::is_internal(name);
        // A copy leads at its logs' newest epochs, never below them (a
        // restored log starts at the epoch its catalog was claimed at).
        let epochs: Vec<i32> = logs.topic(name).map_or_else(Vec::new, |t| {
            (0..want.partitions)
                .map(|p| {
                    t.log(p)
                        .and_then(|l| l.latest_epoch_in_log())
                        .unwrap_or(0)
                        .max(0)
                })
                .collect()
        });
        let written = match existing {
            None if internal && !single_broker => {
                let cfg = logs.broker_config();
                let rf = internal_topic_settings(name, cfg.settings()).replication_factor;
                let others: Vec<i32> = snap
                    .brokers
                    .keys()
                    .copied()
                    .filter(|id| *id != me)
                    .collect();
                if (others.len() as i32) + 1 < rf {
                    tracing::warn!(topic = %name, replication_factor = rf, live = others.len() + 1,
                        "publishing this broker's copy of an internal topic with fewer replicas than its replication factor (it holds records)");
                }
                topics::create_topic_from_copy(
                    store,
                    name,
                    want.id,
                    internal_topic_configs(name, cfg, rf),
                    &led_by(me, &others, want.partitions, rf as usize),
                    &epochs,
                )
                .await?
            }
            None => {
                topics::create_topic_from_copy(
                    store,
                    name,
                    want.id,
                    want.configs.clone(),
                    &assignment(0, want.partitions),
                    &epochs,
                )
                .await?
            }
            // A cluster's store is never changed from here, only added to.
            Some(_) if !single_broker => None,
            Some(have) if have.record.partitions < want.partitions => {
                topics::add_partitions(
                    store,
                    name,
                    &have.record,
                    (have.create_revision, have.mod_revision),
                    &assignment(have.record.partitions, want.partitions),
                )
                .await?
            }
            Some(have) if have.record.configs != want.configs => {
                topics::set_configs(
                    store,
                    name,
                    &have.record,
                    have.mod_revision,
                    want.configs.clone(),
                )
                .await?
            }
            Some(_) => None,
        };
        if let Some(r) = written {
            revision = revision.max(r);
        }
    }
    if !single_broker {
        for name in local.keys() {
            if let Err(e) = logs.mark_in_cluster(name) {
                tracing::warn!(topic = %name, error = %e, "cannot record the topic as the cluster's");
            }
        }
    }
    if delete_others {
        for (name, have) in &snap.topics {
            if !local.contains_key(name) {
                if let Some(r) = topics::delete_topic(store, name, have.mod_revision).await? {
                    revision = revision.max(r);
                }
            }
        }
    }
    Ok(revision)
}

/// Any of the topic's partitions holds a record.
fn holds_records(t: &Topic) -> bool {
    t.logs().iter().any(|l| l.log_end_offset() > 0)
}

/// Mirrors `logs` into `store` at every change until `shutdown`.
/// The receiver carries the LogManager change count last mirrored and
/// seen by the view (None before the first mirror).
pub fn start(
    store: Arc<dyn ClusterStore>,
    view: ClusterView,
    logs: Arc<LogManager>,
    me: i32,
    mut shutdown: watch::Receiver<bool>,
) -> watch::Receiver<Option<u64>> {
    let (tx, rx) = watch::channel(None);
    let mut changes = logs.subscribe_changes();
    tokio::spawn(async move {
        loop {
            let version = *changes.borrow_and_update();
            match publish_all(store.as_ref(), &view, &logs, me, true).await {
                Ok(revision) => {
                    // Wait until our own view shows what was written, so a
                    // handler that waited for `published` reads it back.
                    view.caught_up_to(revision, std::time::Duration::from_secs(5))
                        .await;
                    let _ = tx.send(Some(version));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "mirroring topics into the cluster store failed; retrying");
                    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
                    continue;
                }
            }
            tokio::select! {
                r = changes.changed() => if r.is_err() { return },
                _ = shutdown.changed() => return,
            }
        }
    });
    rx
}
