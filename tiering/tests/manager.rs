//! The tiering manager against an in-memory object store that can be
//! switched off (injected outage), with a scripted partition log: what is
//! uploaded, what is deleted locally and when, outage and fencing.

mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use strata_catalog::{PartitionCatalog, PartitionPath};
use strata_tiering::TieringPolicy;

use common::*;

#[tokio::test]
async fn uploads_then_deletes_locally_only_outside_the_hot_window() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let log = FakeLog::new(policy(60_000));
    log.seal(0, 100, 120_000); // old: may go once uploaded
    log.seal(10, 100, 1_000); // inside the one-minute hot window
    let m = manager(store.clone(), "a");
    let rp = m.add_partition("tid", log.clone()).await;
    eventually("both uploaded", || rp.manifest().segments.len() == 2).await;
    eventually("the old one deleted locally", || {
        log.local_bases() == vec![10]
    })
    .await;
    assert_eq!(*log.remote_start.lock().unwrap(), Some(0));
    assert_eq!(remote_bases(&store).await, vec![0, 10]);
    // Shrinking the hot window at run time lets the other one go too.
    *log.policy.lock().unwrap() = policy(500);
    rp.wake();
    eventually("hot window shrunk", || log.local_bases().is_empty()).await;
    // Nothing is uploaded twice.
    assert_eq!(rp.stats.uploaded_segments.load(Ordering::Relaxed), 2);
}

#[tokio::test]
async fn an_outage_keeps_local_segments_and_uploads_resume() {
    let flaky = Arc::new(FlakyStore::default());
    let store: Arc<dyn ObjectStore> = flaky.clone();
    let log = FakeLog::new(policy(0));
    let m = manager(store.clone(), "a");
    let rp = m.add_partition("tid", log.clone()).await;
    flaky.down.store(true, Ordering::SeqCst);
    log.seal(0, 100, 10_000);
    log.seal(10, 100, 10_000);
    eventually("errors counted", || {
        rp.stats.upload_errors.load(Ordering::Relaxed) >= 3 || !m.store_available()
    })
    .await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!m.store_available());
    assert_eq!(
        log.local_bases(),
        vec![0, 10],
        "nothing deleted while the store is down"
    );
    flaky.down.store(false, Ordering::SeqCst);
    eventually("uploaded after the outage", || {
        rp.manifest().segments.len() == 2
    })
    .await;
    eventually("then deleted locally", || log.local_bases().is_empty()).await;
    assert!(m.store_available());
    assert_eq!(remote_bases(&store).await, vec![0, 10]);
}

#[tokio::test]
async fn a_fenced_broker_stops_uploading_and_deleting() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let old_log = FakeLog::new(policy(0));
    old_log.seal(0, 100, 10_000);
    let old = manager(store.clone(), "old");
    let old_rp = old.add_partition("tid", old_log.clone()).await;
    eventually("old broker tiered its segment", || {
        old_log.local_bases().is_empty()
    })
    .await;
    // A second broker claims the partition (e.g. restored from the bucket).
    let new_log = FakeLog::new(policy(3_600_000));
    new_log.seal(10, 100, 0);
    let new = manager(store.clone(), "new");
    let new_rp = new.add_partition("tid", new_log.clone()).await;
    eventually("new broker uploaded", || {
        new_rp.manifest().segments.len() == 2
    })
    .await;
    // The old broker seals a segment the new one also has: it is fenced.
    old_log.seal(10, 100, 10_000);
    eventually("old broker fenced", || {
        old_rp.stats.fenced.load(Ordering::Relaxed)
    })
    .await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        old_log.local_bases(),
        vec![10],
        "a fenced broker keeps its local segments"
    );
    let c = PartitionCatalog::open(store.clone(), PartitionPath::new("", "t", "tid", 0))
        .await
        .unwrap();
    assert_eq!(c.manifest().owner, "new");
    assert_eq!(remote_bases(&store).await, vec![0, 10]);
    // Segment objects of the catalog are all there.
    for s in &c.manifest().segments {
        let b: Bytes = store
            .get(&Path::from(s.log_key.as_str()))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(b.len(), 100);
    }
}

#[tokio::test]
async fn leaders_claim_at_their_epoch_and_followers_keep_the_hot_tail() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let catalog = || PartitionCatalog::open(store.clone(), PartitionPath::new("", "t", "tid", 0));
    let (a_log, b_log) = (FakeLog::new(policy(60_000)), FakeLog::new(policy(60_000)));
    for log in [&a_log, &b_log] {
        log.seal(0, 100, 120_000); // outside the hot window once tiered
        log.seal(10, 100, 1_000); // inside it
    }
    *a_log.role.lock().unwrap() = (true, Some(1));
    *b_log.role.lock().unwrap() = (false, None);
    let (a, b) = (manager(store.clone(), "a"), manager(store.clone(), "b"));
    let a_rp = a.add_partition("tid", a_log.clone()).await;
    let b_rp = b.add_partition("tid", b_log.clone()).await;
    eventually("the leader uploaded both", || {
        a_rp.manifest().segments.len() == 2
    })
    .await;
    eventually(
        "the follower dropped the tiered one outside the hot window",
        || b_log.local_bases() == vec![10],
    )
    .await;
    assert_eq!(*b_log.remote_start.lock().unwrap(), Some(0));
    assert_eq!(b_rp.stats.uploaded_segments.load(Ordering::Relaxed), 0);
    let m = catalog().await.unwrap();
    assert_eq!(
        (m.manifest().owner.as_str(), m.manifest().leader_epoch),
        ("a", Some(1))
    );

    // Leadership moves to b at epoch 2: it claims within about a second.
    *a_log.role.lock().unwrap() = (false, None);
    *b_log.role.lock().unwrap() = (true, Some(2));
    b_log.seal(20, 100, 1_000);
    eventually("b uploads at epoch 2", || {
        b_rp.manifest().segments.len() == 3
    })
    .await;
    let m = catalog().await.unwrap();
    assert_eq!(
        (m.manifest().owner.as_str(), m.manifest().leader_epoch),
        ("b", Some(2))
    );

    // a believes it leads at its old epoch, with a segment to upload:
    // refused, it stays away and keeps its local segments. Whether a saw
    // itself deposed meanwhile (it claims again at epoch 1 and the claim
    // is refused) or not (it still holds its epoch-1 writer, and its
    // commit is refused) depends on when its task last looked at its role
    // (every ROLE_CHECK, 1 s), so the test gives it something to write
    // either way. The seal and the role change happen together for a's
    // task (no await between them on this single-threaded runtime), so no
    // follower round of a sees segment 20 and trims it.
    a_log.seal(20, 100, 120_000);
    *a_log.role.lock().unwrap() = (true, Some(1));
    eventually("a fenced", || a_rp.stats.fenced.load(Ordering::Relaxed)).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        a_log.local_bases(),
        vec![10, 20],
        "a fenced broker deletes nothing"
    );
    let m = catalog().await.unwrap();
    assert_eq!(
        (m.manifest().owner.as_str(), m.manifest().leader_epoch),
        ("b", Some(2))
    );

    // Elected at epoch 3, it claims again.
    *b_log.role.lock().unwrap() = (false, None);
    *a_log.role.lock().unwrap() = (true, Some(3));
    eventually("a claims at epoch 3", || {
        !a_rp.stats.fenced.load(Ordering::Relaxed) && a_rp.manifest().leader_epoch == Some(3)
    })
    .await;
}

#[tokio::test]
async fn a_segment_straddling_the_catalogs_end_is_uploaded_from_there() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let old = FakeLog::new(policy(3_600_000));
    old.seal(0, 100, 0);
    *old.role.lock().unwrap() = (true, Some(1));
    let a = manager(store.clone(), "a");
    let old_rp = a.add_partition("tid", old.clone()).await;
    eventually("the old leader uploaded 0..9", || {
        old_rp.manifest().segments.len() == 1
    })
    .await;
    *old.role.lock().unwrap() = (false, None);
    // The new leader rolled elsewhere: its segment 5..14 straddles 10.
    let new = FakeLog::new(policy(3_600_000));
    new.seal(5, 100, 0);
    *new.role.lock().unwrap() = (true, Some(2));
    let b = manager(store.clone(), "b");
    let rp = b.add_partition("tid", new.clone()).await;
    eventually("10..14 uploaded", || rp.manifest().segments.len() == 2).await;
    let m = rp.manifest();
    let ranges: Vec<_> = m
        .segments
        .iter()
        .map(|s| (s.base_offset, s.last_offset))
        .collect();
    assert_eq!(ranges, [(0, 9), (10, 14)]);
    assert_eq!(m.segments[1].size_bytes, 50);
    let copies: Vec<_> = std::fs::read_dir(new.dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("copy-"))
        .collect();
    assert!(copies.is_empty(), "the copy is removed after the upload");
}

#[tokio::test]
async fn total_retention_deletes_remote_segments_and_their_objects() {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let log = FakeLog::new(TieringPolicy {
        remote_enabled: true,
        retention_ms: 60_000,
        retention_bytes: -1,
        local_retention_ms: 0,
        local_retention_bytes: -1,
    });
    log.seal(0, 100, 120_000); // past total retention
    log.seal(10, 100, 1_000);
    let m = manager(store.clone(), "a");
    let rp = m.add_partition("tid", log.clone()).await;
    eventually("expired segment removed from the catalog", || {
        rp.manifest()
            .segments
            .iter()
            .map(|s| s.base_offset)
            .collect::<Vec<_>>()
            == vec![10]
    })
    .await;
    assert_eq!(rp.manifest().log_start_offset, 10);
    assert_eq!(*log.remote_start.lock().unwrap(), Some(10));
    let path = PartitionPath::new("", "t", "tid", 0);
    // The objects go after the catalog commit, in the same round: poll.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left: Vec<_> = futures_util::TryStreamExt::try_collect::<Vec<_>>(
            store.list(Some(&path.segments_dir())),
        )
        .await
        .unwrap();
        let expired = |o: &ObjectMeta| o.location.as_ref().contains("00000000000000000000-");
        let kept = |o: &ObjectMeta| o.location.as_ref().contains("00000000000000000010-");
        if !left.iter().any(expired) {
            assert!(
                left.iter().any(kept),
                "the live segment's objects stay: {left:?}"
            );
            break;
        }
        assert!(
            Instant::now() < deadline,
            "expired segment's objects still there: {left:?}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
