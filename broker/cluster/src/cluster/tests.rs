//! The store contract, run against the embedded store and a real etcd, and
//! membership and controller election on both.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::controller::Role;
use super::etcd_fixture::EtcdServer;
use super::membership::{RegisterError, SessionTimes};
use super::store::{ClusterStore, Compare, Op, StoreError, WatchEvent};
use super::*;

async fn ready(store: &dyn ClusterStore) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while let Err(e) = store.get("probe").await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "store not ready: {e}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn etcd_store(etcd: &EtcdServer, prefix: &str) -> Arc<dyn ClusterStore> {
    let s = open_store(Some(&etcd.url(prefix))).expect("etcd url");
    ready(s.as_ref()).await;
    s
}

async fn next_events(w: &mut store::WatchStream) -> Vec<WatchEvent> {
    tokio::time::timeout(Duration::from_secs(10), w.recv())
        .await
        .expect("watch delivered in time")
        .expect("watch open")
        .expect("watch healthy")
}

/// Everything a `ClusterStore` promises, checked on `s`.
async fn contract(s: Arc<dyn ClusterStore>) {
    // Create-if-absent succeeds once.
    let put = |v: &str| Op::put("a/x", v.as_bytes().to_vec());
    let first = s
        .txn(vec![Compare::Absent("a/x".into())], vec![put("1")])
        .await
        .unwrap();
    assert!(first.succeeded);
    let again = s
        .txn(vec![Compare::Absent("a/x".into())], vec![put("2")])
        .await
        .unwrap();
    assert!(!again.succeeded);
    let kv = s.get("a/x").await.unwrap().expect("written");
    assert_eq!(kv.value, b"1");
    assert_eq!(kv.create_revision, first.revision);
    assert_eq!(kv.mod_revision, first.revision);
    let mut w = s.watch("a/", kv.mod_revision + 1).await.unwrap();

    // Compare-and-swap on the mod revision: the stale writer loses.
    let swap = s
        .txn(
            vec![Compare::ModRevision("a/x".into(), kv.mod_revision)],
            vec![put("3")],
        )
        .await
        .unwrap();
    assert!(swap.succeeded);
    let stale = s
        .txn(
            vec![Compare::ModRevision("a/x".into(), kv.mod_revision)],
            vec![put("4")],
        )
        .await
        .unwrap();
    assert!(!stale.succeeded);
    let kv2 = s.get("a/x").await.unwrap().unwrap();
    assert_eq!(kv2.value, b"3");
    assert_eq!(kv2.create_revision, kv.create_revision);
    assert!(kv2.mod_revision > kv.mod_revision);
    assert!(
        s.txn(
            vec![Compare::CreateRevision("a/x".into(), kv.create_revision)],
            vec![]
        )
        .await
        .unwrap()
        .succeeded
    );

    // Several keys in one transaction; list by prefix, sorted.
    let both = s
        .txn(
            vec![],
            vec![Op::put("a/y", b"y".to_vec()), Op::put("b/z", b"z".to_vec())],
        )
        .await
        .unwrap();
    assert!(both.succeeded);
    let (listed, rev) = s.list("a/").await.unwrap();
    let keys: Vec<&str> = listed.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(keys, ["a/x", "a/y"]);
    assert!(rev >= both.revision);

    // The watch saw the swap and the put under a/, not b/z.
    let e1 = next_events(&mut w).await;
    assert!(matches!(&e1[..], [WatchEvent::Put(kv)] if kv.value == b"3"));
    let e2 = next_events(&mut w).await;
    assert_eq!(e2.len(), 1);
    assert_eq!(e2[0].key(), "a/y");

    // A leased key goes with its lease; keep-alive of a gone lease fails.
    let lease = s.grant_lease(Duration::from_secs(2)).await.unwrap();
    let leased = s
        .txn(
            vec![],
            vec![Op::put_leased("a/leased", b"l".to_vec(), lease)],
        )
        .await
        .unwrap();
    assert!(leased.succeeded);
    s.keep_alive(lease).await.unwrap();
    let e3 = next_events(&mut w).await;
    assert_eq!(e3[0].key(), "a/leased");
    s.revoke_lease(lease).await.unwrap();
    assert!(s.get("a/leased").await.unwrap().is_none());
    assert!(matches!(
        s.keep_alive(lease).await,
        Err(StoreError::LeaseExpired(_))
    ));
    let e4 = next_events(&mut w).await;
    assert!(matches!(&e4[..], [WatchEvent::Delete { key, .. }] if key == "a/leased"));

    // An unrenewed lease expires by itself.
    let short = s.grant_lease(Duration::from_secs(2)).await.unwrap();
    s.txn(vec![], vec![Op::put_leased("a/short", vec![], short)])
        .await
        .unwrap();
    let _ = next_events(&mut w).await;
    let gone = next_events(&mut w).await;
    assert!(matches!(&gone[..], [WatchEvent::Delete { key, .. }] if key == "a/short"));
    // A prefix delete takes every key under it, in one revision.
    s.txn(
        vec![],
        vec![
            Op::put("p/t/0", vec![]),
            Op::put("p/t/1", vec![]),
            Op::put("p/u", vec![]),
        ],
    )
    .await
    .unwrap();
    s.txn(vec![], vec![Op::delete_prefix("p/t/")])
        .await
        .unwrap();
    let (left, _) = s.list("p/").await.unwrap();
    assert_eq!(
        left.iter().map(|kv| kv.key.as_str()).collect::<Vec<_>>(),
        ["p/u"]
    );
    // Putting on an expired lease is refused, not silently unleased.
    assert!(matches!(
        s.txn(vec![], vec![Op::put_leased("a/late", vec![], short)])
            .await,
        Err(StoreError::LeaseExpired(_))
    ));
}

#[tokio::test]
async fn embedded_store_keeps_the_contract() {
    contract(EmbeddedStore::new()).await;
}

#[tokio::test]
async fn etcd_store_keeps_the_contract() {
    let etcd = EtcdServer::start();
    contract(etcd_store(&etcd, "contract").await).await;
}

use super::embedded::EmbeddedStore;

fn times() -> SessionTimes {
    SessionTimes {
        session_timeout: Duration::from_secs(2),
        heartbeat_interval: Duration::from_millis(300),
    }
}

fn data_dir() -> Arc<LogManager> {
    let dir = tempfile::tempdir().unwrap().keep();
    let config = Arc::new(strata_common::config::BrokerConfig::load(None, &[]).unwrap());
    LogManager::open(&dir, config, None, strata_common::clock::system()).unwrap()
}

async fn join(store: &Arc<dyn ClusterStore>, node_id: i32) -> (Cluster, watch::Sender<bool>) {
    let (tx, rx) = watch::channel(false);
    let c = Cluster::join(
        store.clone(),
        data_dir(),
        "127.0.0.1".into(),
        9000 + node_id,
        Some(format!("rack-{node_id}")),
        Vec::new(),
        node_id,
        times(),
        rx,
    )
    .await
    .expect("joined");
    (c, tx)
}

async fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "timed out: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Three brokers: all see each other, exactly one controller; the
/// controller leaves cleanly and another takes over at a higher epoch;
/// a broker whose lease runs out drops out of every view.
async fn election(store: Arc<dyn ClusterStore>) {
    let mut members = Vec::new();
    for id in 1..=3 {
        members.push(join(&store, id).await);
    }
    for (c, _) in &members {
        wait_until("every broker sees three", || c.live_brokers().len() == 3).await;
    }
    // The winner's role follows its win in the store a moment later.
    wait_until("a controller active", || {
        members.iter().any(|(c, _)| c.is_controller())
    })
    .await;
    let active: Vec<i32> = members
        .iter()
        .filter(|(c, _)| c.is_controller())
        .map(|(c, _)| c.node_id)
        .collect();
    assert_eq!(active.len(), 1, "exactly one controller: {active:?}");
    let first = active[0];
    let Role::Active { epoch: first_epoch } = *members[(first - 1) as usize].0.role.borrow() else {
        unreachable!()
    };
    for (c, _) in &members {
        wait_until("all agree on the controller", || {
            c.controller_id() == Some(first)
        })
        .await;
        let rack = c
            .live_brokers()
            .into_iter()
            .find(|b| b.node_id == 2)
            .and_then(|b| b.rack);
        assert_eq!(rack.as_deref(), Some("rack-2"));
    }

    // Clean shutdown of the controller: another is elected at once.
    let (c, tx) = members.remove((first - 1) as usize);
    let _ = tx.send(true);
    c.left().await;
    drop(tx);
    for (c, _) in &members {
        wait_until("two brokers left", || c.live_brokers().len() == 2).await;
        wait_until("a new controller", || {
            c.controller_id().is_some_and(|id| id != first)
        })
        .await;
    }
    // The store names the new controller a moment before its own role
    // says so.
    wait_until("the new controller active", || {
        members
            .iter()
            .any(|(c, _)| matches!(*c.role.borrow(), Role::Active { .. }))
    })
    .await;
    let new_epoch = members
        .iter()
        .find_map(|(c, _)| match *c.role.borrow() {
            Role::Active { epoch } => Some(epoch),
            Role::Follower => None,
        })
        .expect("one is active");
    assert!(new_epoch > first_epoch, "{new_epoch} > {first_epoch}");
}

#[tokio::test]
async fn embedded_store_elects_one_controller() {
    election(EmbeddedStore::new()).await;
}

#[tokio::test]
async fn etcd_store_elects_one_controller() {
    let etcd = EtcdServer::start();
    election(etcd_store(&etcd, "election").await).await;
}

#[tokio::test]
async fn a_node_id_held_by_a_live_broker_is_refused() {
    let store: Arc<dyn ClusterStore> = EmbeddedStore::new();
    let (_a, _tx) = join(&store, 7).await;
    let (_tx2, rx2) = watch::channel(false);
    let second = Cluster::join(
        store.clone(),
        data_dir(),
        "h".into(),
        1,
        None,
        Vec::new(),
        7,
        times(),
        rx2,
    )
    .await;
    assert!(matches!(second, Err(RegisterError::NodeIdTaken(7, _))));
}

#[tokio::test]
async fn cluster_id_is_claimed_once() {
    let etcd = EtcdServer::start();
    let s = etcd_store(&etcd, "ids").await;
    assert_eq!(
        claim_cluster_id(s.as_ref(), "first").await.unwrap(),
        ("first".to_string(), true)
    );
    assert_eq!(
        claim_cluster_id(s.as_ref(), "second").await.unwrap(),
        ("first".to_string(), false)
    );
}

#[test]
fn etcd_urls_are_checked() {
    for bad in [
        "http://x:1",
        "etcd://",
        "etcd://host",
        "etcd://host:notaport",
        "etcd://:1",
    ] {
        assert!(etcd::EtcdStore::from_url(bad).is_err(), "{bad}");
    }
    let s = etcd::EtcdStore::from_url("etcd://a:1,b:2/my/prefix/").unwrap();
    assert_eq!(s.describe(), "etcd://a:1,b:2/my/prefix");
    let d = etcd::EtcdStore::from_url("etcd://a:1").unwrap();
    assert_eq!(d.describe(), "etcd://a:1/strata");
}

/// The reconciler removes only what the cluster once had: a local topic
/// the store never held is kept (found by review: a founding start cut
/// short would otherwise have lost every local topic).
#[tokio::test]
async fn the_reconciler_removes_only_the_clusters_topics() {
    let logs = data_dir();
    logs.create_topic("mine", 1, 1, Default::default(), false)
        .unwrap();
    logs.create_hosted_topic(
        "gone",
        uuid::Uuid::new_v4(),
        2,
        &[1],
        Default::default(),
        &Default::default(),
    )
    .unwrap();
    let snap = super::view::ClusterSnapshot {
        revision: 10,
        connected: true,
        ..Default::default()
    };
    super::reconciler::reconcile(&logs, &snap, 1, uuid::Uuid::nil());
    assert!(logs.topic("mine").is_some(), "never the cluster's: kept");
    assert!(
        logs.topic("gone").is_none(),
        "the cluster's, deleted there: removed"
    );
    // A view that is not connected changes nothing.
    logs.create_hosted_topic(
        "kept",
        uuid::Uuid::new_v4(),
        1,
        &[0],
        Default::default(),
        &Default::default(),
    )
    .unwrap();
    let stale = super::view::ClusterSnapshot::default();
    super::reconciler::reconcile(&logs, &stale, 1, uuid::Uuid::nil());
    assert!(logs.topic("kept").is_some());
}

/// Appends one record to `topic`-`partition`.
fn append_one(logs: &LogManager, topic: &str, partition: i32) {
    let log = logs.partition(topic, partition).unwrap();
    let buf = strata_storage::log::batch::encode_records_for(
        &[(
            Some(bytes::Bytes::from_static(b"k")),
            Some(bytes::Bytes::from_static(b"v")),
            1,
        )],
        kafka_protocol::records::Compression::None,
        None,
    )
    .unwrap();
    let headers = strata_storage::log::batch::validate_all(&buf).unwrap();
    log.append(&buf, &headers).unwrap();
}

/// An internal topic's local copy the cluster does not hold gives way to
/// the cluster's: removed when empty, kept aside under `retired/` when it
/// holds records.
#[tokio::test]
async fn a_local_internal_copy_gives_way_but_records_are_kept_aside() {
    let logs = data_dir();
    logs.create_topic("__consumer_offsets", 1, 1, Default::default(), false)
        .unwrap();
    logs.create_topic("__transaction_state", 1, 1, Default::default(), false)
        .unwrap();
    append_one(&logs, "__transaction_state", 0);
    let mut snap = super::view::ClusterSnapshot {
        revision: 10,
        connected: true,
        ..Default::default()
    };
    for name in ["__consumer_offsets", "__transaction_state"] {
        snap.topics.insert(
            name.to_string(),
            Arc::new(super::view::TopicEntry {
                record: super::records::TopicRecord {
                    id: uuid::Uuid::new_v4(),
                    partitions: 1,
                    configs: Default::default(),
                },
                mod_revision: 5,
                create_revision: 5,
            }),
        );
    }
    super::reconciler::reconcile(&logs, &snap, 1, uuid::Uuid::nil());
    assert!(logs.topic("__consumer_offsets").is_none());
    assert!(logs.topic("__transaction_state").is_none());
    let retired: Vec<_> = std::fs::read_dir(logs.data_dir().join("retired"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    assert_eq!(retired.len(), 1);
    assert!(retired[0].starts_with("__transaction_state-"));
    let kept = logs
        .data_dir()
        .join("retired")
        .join(&retired[0])
        .join("__transaction_state-0");
    assert!(std::fs::read_dir(kept).unwrap().any(|e| e
        .unwrap()
        .path()
        .extension()
        .is_some_and(|x| x == "log")));
}

/// A data directory founding a cluster publishes its user topics and the
/// internal ones that hold records (not an empty one: the controller
/// creates that), marks them as the cluster's, and a second publication
/// changes nothing.
#[tokio::test]
async fn founding_publishes_user_topics_once() {
    let store: Arc<dyn ClusterStore> = EmbeddedStore::new();
    let logs = data_dir();
    logs.create_topic("orders", 3, 1, Default::default(), false)
        .unwrap();
    logs.create_topic("__consumer_offsets", 2, 1, Default::default(), false)
        .unwrap();
    logs.create_topic("__transaction_state", 2, 1, Default::default(), false)
        .unwrap();
    append_one(&logs, "__transaction_state", 1);
    let (_tx, rx) = watch::channel(false);
    let view = super::view::ClusterView::start(store.clone(), rx);
    let rev = super::publisher::publish_all(store.as_ref(), &view, &logs, 4, false)
        .await
        .unwrap();
    assert!(view.caught_up_to(rev, Duration::from_secs(5)).await);
    let snap = view.snapshot();
    assert_eq!(
        snap.topics.keys().collect::<Vec<_>>(),
        ["__transaction_state", "orders"]
    );
    // Led here; only this copy is in sync (nobody else is live to follow).
    assert!(snap.partitions["__transaction_state"]
        .values()
        .all(|e| e.state.leader == 4 && e.state.isr == vec![4]));
    assert_eq!(snap.partitions["orders"].len(), 3);
    assert!(snap.partitions["orders"]
        .values()
        .all(|e| e.state.leader == 4));
    assert!(logs.topic("orders").unwrap().in_cluster());
    assert!(!logs.topic("__consumer_offsets").unwrap().in_cluster());
    assert!(logs.topic("__transaction_state").unwrap().in_cluster());
    let again = super::publisher::publish_all(store.as_ref(), &view, &logs, 4, false)
        .await
        .unwrap();
    assert_eq!(again, view.snapshot().revision);
}

/// Partitions created while this process was registered get logs that
/// lost nothing (hydrated); others, which a replaced disk may have held,
/// start unhydrated, and so does every one while the view shows only an
/// earlier process's registration (log/hydration.rs).
#[tokio::test]
async fn logs_of_partitions_older_than_this_process_start_unhydrated() {
    use super::records::{BrokerRegistration, PartitionState};
    use super::view::{LiveBroker, PartitionEntry, TopicEntry};
    let me = uuid::Uuid::new_v4();
    let snapshot = |incarnation: uuid::Uuid| {
        let mut snap = super::view::ClusterSnapshot {
            revision: 50,
            connected: true,
            ..Default::default()
        };
        snap.brokers.insert(
            1,
            LiveBroker {
                registration: BrokerRegistration {
                    node_id: 1,
                    host: "h".into(),
                    port: 1,
                    rack: None,
                    incarnation,
                    shutting_down: false,
                    endpoints: Vec::new(),
                },
                broker_epoch: 20,
            },
        );
        snap.topics.insert(
            "t".to_string(),
            Arc::new(TopicEntry {
                record: super::records::TopicRecord {
                    id: uuid::Uuid::from_u128(7),
                    partitions: 2,
                    configs: Default::default(),
                },
                mod_revision: 30,
                create_revision: 10,
            }),
        );
        // Partition 0 from the topic's creation, 1 from a CreatePartitions
        // after this broker registered.
        let parts = [(0, 10), (1, 30)]
            .into_iter()
            .map(|(p, created)| {
                let state = PartitionState {
                    replicas: vec![1],
                    leader: 1,
                    leader_epoch: 0,
                    isr: vec![1],
                    partition_epoch: 0,
                    adding_replicas: vec![],
                    removing_replicas: vec![],
                    fencing: None,
                };
                let entry = PartitionEntry {
                    state,
                    mod_revision: created,
                    create_revision: created,
                };
                (p, entry)
            })
            .collect();
        snap.partitions.insert("t".to_string(), Arc::new(parts));
        snap
    };
    let logs = data_dir();
    super::reconciler::reconcile(&logs, &snapshot(me), 1, me);
    let t = logs.topic("t").unwrap();
    let hydrated: Vec<bool> = t.logs().iter().map(|l| l.hydrated()).collect();
    assert_eq!(hydrated, vec![false, true]);
    let logs = data_dir();
    super::reconciler::reconcile(&logs, &snapshot(uuid::Uuid::new_v4()), 1, me);
    let t = logs.topic("t").unwrap();
    assert!(
        t.logs().iter().all(|l| !l.hydrated()),
        "an earlier process's registration"
    );
}

/// A store whose transactions lose their answer: `applied_then` times
/// after applying, `before` times without applying.
#[derive(Debug)]
struct LosesAnswers {
    inner: Arc<dyn ClusterStore>,
    applied_then: std::sync::atomic::AtomicUsize,
    before: std::sync::atomic::AtomicUsize,
}

fn take_one(n: &std::sync::atomic::AtomicUsize) -> bool {
    use std::sync::atomic::Ordering;
    n.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| v.checked_sub(1))
        .is_ok()
}

#[async_trait::async_trait]
impl ClusterStore for LosesAnswers {
    fn describe(&self) -> String {
        "loses answers".to_string()
    }
    async fn get(&self, key: &str) -> Result<Option<store::KeyValue>, StoreError> {
        self.inner.get(key).await
    }
    async fn list(
        &self,
        prefix: &str,
    ) -> Result<(Vec<store::KeyValue>, store::Revision), StoreError> {
        self.inner.list(prefix).await
    }
    async fn txn(
        &self,
        compares: Vec<Compare>,
        ops: Vec<Op>,
    ) -> Result<store::TxnOutcome, StoreError> {
        if take_one(&self.before) {
            return Err(StoreError::OutcomeUnknown("lost before".into()));
        }
        let outcome = self.inner.txn(compares, ops).await?;
        if take_one(&self.applied_then) {
            return Err(StoreError::OutcomeUnknown("lost after".into()));
        }
        Ok(outcome)
    }
    async fn grant_lease(&self, ttl: Duration) -> Result<store::LeaseId, StoreError> {
        self.inner.grant_lease(ttl).await
    }
    async fn keep_alive(&self, lease: store::LeaseId) -> Result<(), StoreError> {
        self.inner.keep_alive(lease).await
    }
    async fn revoke_lease(&self, lease: store::LeaseId) -> Result<(), StoreError> {
        self.inner.revoke_lease(lease).await
    }
    async fn watch(
        &self,
        prefix: &str,
        from: store::Revision,
    ) -> Result<store::WatchStream, StoreError> {
        self.inner.watch(prefix, from).await
    }
}

/// A topic creation whose answer was lost reads the key back: created
/// (its id) is a success, absent is tried again, another id is a loss.
#[tokio::test]
async fn a_topic_creation_whose_answer_is_lost_is_resolved_by_reading_it_back() {
    let store = LosesAnswers {
        inner: EmbeddedStore::new(),
        applied_then: 1.into(),
        before: 0.into(),
    };
    let id = uuid::Uuid::new_v4();
    let created = topics::create_topic(&store, "a", id, Default::default(), &[vec![1]])
        .await
        .unwrap();
    assert!(created.is_some(), "applied, then the answer was lost");
    let store = LosesAnswers {
        inner: EmbeddedStore::new(),
        applied_then: 0.into(),
        before: 1.into(),
    };
    let created = topics::create_topic(&store, "b", id, Default::default(), &[vec![1]])
        .await
        .unwrap();
    assert!(created.is_some(), "lost before it was applied: tried again");
    assert!(store.get("topics/b").await.unwrap().is_some());
    // Someone else's topic of that name: not this creation's.
    let other = topics::create_topic(
        &store,
        "b",
        uuid::Uuid::new_v4(),
        Default::default(),
        &[vec![1]],
    )
    .await
    .unwrap();
    assert!(other.is_none());
}
