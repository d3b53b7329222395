//! Unit tests of the group coordinator against a real LogManager.

use super::*;
use crate::group::OffsetCommit;
use std::collections::BTreeMap;
use strata_common::clock::{Clock, ManualClock};

fn setup(
    sets: &[&str],
) -> (
    tempfile::TempDir,
    Arc<LogManager>,
    Arc<GroupCoordinator>,
    BrokerConfig,
) {
    setup_with_clock(sets, strata_common::clock::system())
}

/// As `setup`, on a clock the test moves.
fn setup_manual(sets: &[&str]) -> (tempfile::TempDir, Arc<GroupCoordinator>, Arc<ManualClock>) {
    let clock = ManualClock::new();
    let (dir, _, c, _) = setup_with_clock(sets, clock.clone());
    (dir, c, clock)
}

fn setup_with_clock(
    sets: &[&str],
    clock: strata_common::clock::SharedClock,
) -> (
    tempfile::TempDir,
    Arc<LogManager>,
    Arc<GroupCoordinator>,
    BrokerConfig,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec![
        "offsets.topic.num.partitions=3".to_string(),
        "group.initial.rebalance.delay.ms=0".to_string(),
    ];
    all.extend(sets.iter().map(|s| s.to_string()));
    let cfg = BrokerConfig::load(None, &all).unwrap();
    let logs = LogManager::open(dir.path(), Arc::new(cfg.clone()), None, clock.clone()).unwrap();
    logs.create_topic("t", 2, 1, BTreeMap::new(), false)
        .unwrap();
    let c = GroupCoordinator::open(logs.clone(), &cfg, false, clock).unwrap();
    c.follow_leadership_now();
    (dir, logs, c, cfg)
}

fn join_req(member: &str, instance: Option<&str>) -> JoinRequest {
    JoinRequest {
        group_id: "g".into(),
        member_id: member.into(),
        group_instance_id: instance.map(String::from),
        client_id: "c".into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        protocol_type: "consumer".into(),
        protocols: vec![("range".into(), Bytes::from_static(b"m"))],
        require_known_member_id: true,
        supports_skip_assignment: false,
    }
}

/// Waits (with a deadline) until group "g" is in `state`: a join spawned
/// onto this runtime has reached the coordinator once it is.
async fn until_state(c: &GroupCoordinator, state: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while c.describe("g").state != state {
        assert!(
            std::time::Instant::now() < deadline,
            "group g never reached {state}: {}",
            c.describe("g").state
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Opens the data directory in `dir` again, as a restarted broker does,
/// and its group coordinator, leading every offsets partition.
fn restart(dir: &std::path::Path, cfg: &BrokerConfig) -> Arc<GroupCoordinator> {
    let logs = LogManager::open(
        dir,
        Arc::new(cfg.clone()),
        None,
        strata_common::clock::system(),
    )
    .unwrap();
    logs.start_background(|_| {});
    let c = GroupCoordinator::open(logs, cfg, false, strata_common::clock::system()).unwrap();
    c.follow_leadership_now();
    c
}

/// Runs the KIP-394 handshake for a new dynamic member.
async fn join_new(c: &GroupCoordinator) -> JoinResult {
    let first = c.join(join_req("", None)).await;
    assert_eq!(first.error, ResponseError::MemberIdRequired.code());
    c.join(join_req(&first.member_id, None)).await
}

#[tokio::test]
async fn two_members_join_sync_and_commit() {
    let (_d, _l, c, _) = setup(&[]);
    let a = join_new(&c).await;
    assert_eq!(a.error, 0);
    assert_eq!(a.generation, 1);
    assert_eq!(a.leader, a.member_id);
    c.sync(
        "g",
        &a.member_id,
        None,
        1,
        None,
        None,
        vec![(a.member_id.clone(), Bytes::from_static(b"A"))],
    )
    .await;
    // A second member triggers a rebalance; A learns it from its heartbeat.
    let c2 = c.clone();
    let b_task = tokio::spawn(async move { join_new(&c2).await });
    until_state(&c, "PreparingRebalance").await;
    assert_eq!(
        c.heartbeat("g", &a.member_id, None, 1),
        ResponseError::RebalanceInProgress.code()
    );
    let a2 = c.join(join_req(&a.member_id, None)).await;
    let b = b_task.await.unwrap();
    assert_eq!((a2.generation, b.generation), (2, 2));
    assert_eq!(a2.members.len(), 2, "the leader sees every member");
    assert!(b.members.is_empty());
    let c2 = c.clone();
    let bid = b.member_id.clone();
    let b_sync = tokio::spawn(async move { c2.sync("g", &bid, None, 2, None, None, vec![]).await });
    let assignments = vec![
        (a.member_id.clone(), Bytes::from_static(b"A")),
        (b.member_id.clone(), Bytes::from_static(b"B")),
    ];
    let sa = c
        .sync(
            "g",
            &a.member_id,
            None,
            2,
            Some("consumer"),
            Some("range"),
            assignments,
        )
        .await;
    assert_eq!(sa.assignment, Bytes::from_static(b"A"));
    assert_eq!(b_sync.await.unwrap().assignment, Bytes::from_static(b"B"));
    assert_eq!(c.heartbeat("g", &b.member_id, None, 2), 0);
    assert_eq!(
        c.heartbeat("g", &b.member_id, None, 1),
        ResponseError::IllegalGeneration.code()
    );
    let commit = vec![
        OffsetCommit {
            topic: "t".into(),
            partition: 0,
            offset: 5,
            leader_epoch: 0,
            metadata: "m".into(),
        },
        OffsetCommit {
            topic: "nope".into(),
            partition: 0,
            offset: 5,
            leader_epoch: 0,
            metadata: String::new(),
        },
    ];
    let codes = c.commit("g", 2, &a.member_id, None, commit.clone()).await;
    assert_eq!(
        codes,
        vec![0, ResponseError::UnknownTopicOrPartition.code()]
    );
    assert_eq!(
        c.commit("g", 1, &a.member_id, None, commit).await[0],
        ResponseError::IllegalGeneration.code()
    );
    let fetched = c.fetch("g", Some(vec![("t".into(), vec![0, 1])]));
    assert_eq!((fetched[0].offset, fetched[0].metadata.as_str()), (5, "m"));
    assert_eq!(fetched[1].offset, -1);
}

#[tokio::test]
async fn static_member_rejoin_keeps_generation_and_fences_old_id() {
    let (_d, _l, c, _) = setup(&[]);
    let a = c.join(join_req("", Some("i-a"))).await;
    assert_eq!(a.error, 0, "static members skip MEMBER_ID_REQUIRED");
    c.sync(
        "g",
        &a.member_id,
        Some("i-a"),
        a.generation,
        None,
        None,
        vec![(a.member_id.clone(), Bytes::from_static(b"A"))],
    )
    .await;
    let c2 = c.clone();
    let b_task = tokio::spawn(async move { c2.join(join_req("", Some("i-b"))).await });
    until_state(&c, "PreparingRebalance").await;
    let a2 = c.join(join_req(&a.member_id, Some("i-a"))).await;
    let b = b_task.await.unwrap();
    let c2 = c.clone();
    let bid = b.member_id.clone();
    let b_sync =
        tokio::spawn(async move { c2.sync("g", &bid, Some("i-b"), 2, None, None, vec![]).await });
    c.sync(
        "g",
        &a.member_id,
        Some("i-a"),
        a2.generation,
        None,
        None,
        vec![
            (a.member_id.clone(), Bytes::from_static(b"A")),
            (b.member_id.clone(), Bytes::from_static(b"B")),
        ],
    )
    .await;
    b_sync.await.unwrap();
    // b restarts: new member id, same generation, same assignment.
    let b2 = c.join(join_req("", Some("i-b"))).await;
    assert_eq!(b2.error, 0);
    assert_eq!(b2.generation, 2, "no rebalance");
    assert_ne!(b2.member_id, b.member_id);
    let s = c
        .sync("g", &b2.member_id, Some("i-b"), 2, None, None, vec![])
        .await;
    assert_eq!(s.assignment, Bytes::from_static(b"B"));
    assert_eq!(
        c.heartbeat("g", &b.member_id, Some("i-b"), 2),
        ResponseError::FencedInstanceId.code()
    );
    assert_eq!(c.heartbeat("g", &a.member_id, Some("i-a"), 2), 0);
    // The leader restarts too, with different subscription bytes: still
    // no rebalance, and leadership moves to its new member id.
    let mut r = join_req("", Some("i-a"));
    r.protocols = vec![("range".into(), Bytes::from_static(b"other-metadata"))];
    let a2 = c.join(r).await;
    assert_eq!((a2.error, a2.generation), (0, 2));
    assert_eq!(a2.leader, a2.member_id);
    assert_eq!(c.describe("g").members.len(), 2);
    let s = c
        .sync("g", &a2.member_id, Some("i-a"), 2, None, None, vec![])
        .await;
    assert_eq!(
        s.assignment,
        Bytes::from_static(b"A"),
        "a Stable group keeps its assignment"
    );
}

#[tokio::test]
async fn session_expiry_removes_member_and_empties_group() {
    let (_d, c, clock) = setup_manual(&["group.min.session.timeout.ms=0"]);
    let mut r = join_req("", None);
    r.session_timeout_ms = 100;
    r.require_known_member_id = false;
    let a = c.join(r).await;
    c.sync("g", &a.member_id, None, 1, None, None, vec![]).await;
    clock.advance(Duration::from_millis(99));
    c.tick();
    assert_eq!(c.describe("g").state, "Stable", "alive within its session");
    clock.advance(Duration::from_millis(1));
    c.tick();
    assert_eq!(c.describe("g").state, "Empty");
    assert_eq!(
        c.heartbeat("g", &a.member_id, None, 1),
        ResponseError::UnknownMemberId.code()
    );
}

#[tokio::test]
async fn tick_reports_the_session_deadline_and_expires_at_it() {
    let (_d, c, clock) = setup_manual(&["group.min.session.timeout.ms=0"]);
    let mut r = join_req("", None);
    r.session_timeout_ms = 300;
    r.require_known_member_id = false;
    let a = c.join(r).await;
    c.sync("g", &a.member_id, None, 1, None, None, vec![]).await;
    let synced = clock.now();
    let next = c.tick().expect("a live member has a session deadline");
    // The deadline is the member's last heartbeat (its join/sync) plus its
    // session timeout, to the instant: the clock has not moved.
    assert_eq!(next, synced + Duration::from_millis(300));
    // Just before the deadline the member is alive; at it, it is gone.
    clock.advance(Duration::from_millis(299));
    assert_eq!(c.tick(), Some(next));
    assert_eq!(c.describe("g").state, "Stable");
    clock.advance(Duration::from_millis(1));
    assert_eq!(c.tick(), None, "an empty group has no deadline left");
    assert_eq!(c.describe("g").state, "Empty");
}

#[tokio::test]
async fn offsets_and_membership_survive_reopen() {
    let (d, logs, c, cfg) = setup(&[]);
    let a = join_new(&c).await;
    c.sync(
        "g",
        &a.member_id,
        None,
        1,
        None,
        None,
        vec![(a.member_id.clone(), Bytes::from_static(b"A"))],
    )
    .await;
    let commit = vec![OffsetCommit {
        topic: "t".into(),
        partition: 1,
        offset: 42,
        leader_epoch: 0,
        metadata: "meta".into(),
    }];
    assert_eq!(c.commit("g", 1, &a.member_id, None, commit).await, vec![0]);
    c.remove_topic("gone");
    drop(c);
    logs.shutdown().unwrap();
    drop(logs);
    let c = restart(d.path(), &cfg);
    let f = c.fetch("g", None);
    assert_eq!(
        (f[0].partition, f[0].offset, f[0].metadata.as_str()),
        (1, 42, "meta")
    );
    let desc = c.describe("g");
    assert_eq!(desc.state, "Stable");
    assert_eq!(desc.members[0].0, a.member_id);
    assert_eq!(
        c.heartbeat("g", &a.member_id, None, 1),
        0,
        "the member continues without rejoining"
    );
    // Delete the group's topic offsets, then the group.
    c.remove_topic("t");
    assert!(c.fetch("g", None).is_empty());
    assert_eq!(
        c.delete_group("g").await,
        ResponseError::NonEmptyGroup.code()
    );
    c.leave("g", &[(a.member_id.clone(), None)]).unwrap();
    assert_eq!(c.delete_group("g").await, 0);
    assert_eq!(c.describe("g").state, "Dead");
}

#[tokio::test]
async fn offsets_of_empty_groups_expire_durably() {
    let (d, logs, c, cfg) = setup(&["offsets.retention.minutes=1"]);
    let commit = vec![OffsetCommit {
        topic: "t".into(),
        partition: 0,
        offset: 3,
        leader_epoch: 0,
        metadata: String::new(),
    }];
    assert_eq!(c.commit("old", -1, "", None, commit.clone()).await, vec![0]);
    assert_eq!(c.commit("fresh", -1, "", None, commit).await, vec![0]);
    c.expire_offsets();
    assert_eq!(
        c.fetch("old", None).len(),
        1,
        "not expired before the retention"
    );
    {
        let mut groups = c.lock();
        let g = groups.get_mut("old").unwrap();
        for v in g.offsets.values_mut() {
            v.commit_timestamp -= 61_000;
        }
    }
    c.expire_offsets();
    assert!(c.fetch("old", None).is_empty());
    assert_eq!(c.describe("old").state, "Dead");
    assert_eq!(c.fetch("fresh", None).len(), 1);
    drop(c);
    logs.shutdown().unwrap();
    drop(logs);
    let c = restart(d.path(), &cfg);
    assert!(
        c.fetch("old", None).is_empty(),
        "expiry is written as tombstones"
    );
    assert_eq!(c.fetch("fresh", None).len(), 1);
}

#[tokio::test]
async fn the_log_cleaner_keeps_only_live_state() {
    let (d, logs, c, cfg) = setup(&[
        "offsets.topic.segment.bytes=1024",
        "offsets.topic.num.partitions=1",
    ]);
    let a = join_new(&c).await;
    c.sync(
        "g",
        &a.member_id,
        None,
        1,
        None,
        None,
        vec![(a.member_id.clone(), Bytes::from_static(b"A"))],
    )
    .await;
    for i in 0..300 {
        let commit = vec![OffsetCommit {
            topic: "t".into(),
            partition: i % 2,
            offset: i as i64,
            leader_epoch: 0,
            metadata: String::new(),
        }];
        assert_eq!(c.commit("g", 1, &a.member_id, None, commit).await, vec![0]);
    }
    let commit = vec![OffsetCommit {
        topic: "t".into(),
        partition: 0,
        offset: 1,
        leader_epoch: 0,
        metadata: "x".into(),
    }];
    c.commit("gone", -1, "", None, commit).await;
    assert_eq!(c.delete_group("gone").await, 0);
    let log = logs.log(super::super::OFFSETS_TOPIC, 0).unwrap();
    let (segments, size) = (log.segment_count(), log.size_bytes());
    assert!(segments > 5, "{segments} segments");
    assert!(
        log.config().compacted,
        "__consumer_offsets is a compacted topic"
    );
    // The log cleaner (docs/compaction.md) compacts it like any other.
    let mut map = strata_storage::log::cleaner::OffsetMap::with_memory(1 << 20);
    let mut throttle = strata_storage::log::cleaner::Throttle::new(f64::MAX);
    let stats = log
        .clean(
            None,
            strata_common::clock::now_ms(),
            &mut map,
            &mut throttle,
            true,
        )
        .unwrap()
        .expect("a pass ran");
    assert!(stats.records_removed > 250, "{stats:?}");
    assert!(
        log.segment_count() <= 3 && log.size_bytes() < size / 5,
        "{} segments, {} bytes",
        log.segment_count(),
        log.size_bytes()
    );
    drop(c);
    drop(log);
    logs.shutdown().unwrap();
    drop(logs);
    let c = restart(d.path(), &cfg);
    let f = c.fetch("g", Some(vec![("t".into(), vec![0, 1])]));
    assert_eq!((f[0].offset, f[1].offset), (298, 299));
    assert_eq!(c.describe("g").state, "Stable");
    assert_eq!(c.describe("gone").state, "Dead");
    assert_eq!(c.heartbeat("g", &a.member_id, None, 1), 0);
}

#[tokio::test]
async fn groups_follow_the_leadership_of_their_offsets_partition() {
    let (_d, logs, c, _cfg) = setup(&[]);
    logs.start_background(|_| {});
    let commit = |offset| {
        vec![OffsetCommit {
            topic: "t".into(),
            partition: 0,
            offset,
            leader_epoch: 0,
            metadata: String::new(),
        }]
    };
    assert_eq!(c.commit("g", -1, "", None, commit(7)).await, vec![0]);
    let p = c.partition_of("g");
    let partition = logs.partition(crate::group::OFFSETS_TOPIC, p).unwrap();
    assert_eq!(c.check_coordinator("g"), Ok(()));

    // This broker now follows the partition: its groups leave memory and
    // every request is sent to the new coordinator.
    partition.become_follower(1, 1, 2);
    c.follow_leadership_now();
    assert_eq!(c.check_coordinator("g"), Err(ResponseError::NotCoordinator));
    assert!(c.list().iter().all(|(id, _, _)| id != "g"));
    assert_eq!(
        c.commit("g", -1, "", None, commit(8)).await,
        vec![ResponseError::NotCoordinator.code()]
    );

    // Leading again at a newer epoch: the group is loaded from the log,
    // with the offset committed before.
    partition.become_leader(1, 2, &[1], 0);
    c.follow_leadership_now();
    assert_eq!(c.check_coordinator("g"), Ok(()));
    assert_eq!(c.fetch("g", None)[0].offset, 7);
    assert_eq!(c.commit("g", -1, "", None, commit(9)).await, vec![0]);
    assert_eq!(c.fetch("g", None)[0].offset, 9);
}

#[tokio::test]
async fn offsets_only_group_lists_with_empty_protocol_type_for_list_groups() {
    let (_d, _logs, c, _cfg) = setup(&[]);
    let commit = vec![OffsetCommit {
        topic: "t".into(),
        partition: 0,
        offset: 3,
        leader_epoch: 0,
        metadata: String::new(),
    }];
    assert_eq!(c.commit("simple", -1, "", None, commit).await, vec![0]);
    let typed = |t: &str| {
        c.list_typed(t)
            .into_iter()
            .find(|(id, _, _)| id == "simple")
            .map(|(_, p, _)| p)
    };
    // ListGroups answers "" as Kafka; Strata's own tools say "consumer".
    assert_eq!(typed("").as_deref(), Some(""));
    assert_eq!(
        c.list()
            .into_iter()
            .find(|(id, _, _)| id == "simple")
            .map(|(_, p, _)| p)
            .as_deref(),
        Some("consumer")
    );
    // Leaving a group that never existed: UNKNOWN_MEMBER_ID (the handler
    // turns it into a per-member answer from v3).
    assert_eq!(
        c.leave("never", &[("m".into(), None)]),
        Err(ResponseError::UnknownMemberId.code())
    );
}
