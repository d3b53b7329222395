//! A cleaning pass over a tiered log (docs/compaction.md, "Tiered
//! compaction"), end to end inside the broker crate: a real partition log,
//! the real tiering manager on an in-memory object store, the cleaner.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::records::Compression;
use object_store::memory::InMemory;
use object_store::{ObjectStore, ObjectStoreExt};
use strata_format::batch::{encode_records, validate_all, BatchScanner};
use strata_format::compaction::{for_each_record, CleanPolicy};
use strata_tiering::{LocalLog, ManagerOptions, RemoteLogManager, RemotePartition};

use super::compaction_part::BucketPart;
use super::local_log_view::LocalLogView;
use crate::config::{BrokerConfig, TopicConfig};
use crate::log::cleaner::{OffsetMap, Throttle};
use crate::log::tiered_part::TieredPart;
use crate::log::{PartitionLog, SharedConfig};
use strata_storage::partition::Partition;

struct Tiered {
    rt: tokio::runtime::Runtime,
    store: Arc<dyn ObjectStore>,
    broker: Arc<BrokerConfig>,
    partition: Arc<Partition>,
    log: Arc<PartitionLog>,
    rp: Arc<RemotePartition>,
    /// The bucket's part a pass is handed (as the cleaner's state holds it).
    part: Arc<dyn TieredPart>,
    _dir: tempfile::TempDir,
}

impl Tiered {
    /// A tiering manager takes the partition over, as after a restart: its
    /// claim fences the previous one and deletes objects no manifest
    /// references.
    fn restart_tiering(&mut self) {
        let epoch = self.rp.manifest().writer_epoch;
        (self.rp, self.part) = attach(
            &self.rt,
            new_manager(&self.store),
            &self.broker,
            &self.partition,
        );
        // The claim publishes after deleting the orphans.
        wait(
            || {
                let m = self.rp.manifest();
                m.writer_epoch > epoch && m.owner == "test-broker"
            },
            "the catalog claimed again",
        );
    }

    /// Whether the bucket holds exactly the manifest's `.log` objects.
    fn bucket_matches_manifest(&self) -> bool {
        let objects = self.rt.block_on(async {
            use futures_util::TryStreamExt;
            self.store.list(None).try_collect::<Vec<_>>().await.unwrap()
        });
        let logs: Vec<String> = objects
            .iter()
            .map(|o| o.location.to_string())
            .filter(|k| k.ends_with(".log"))
            .collect();
        let m = self.rp.manifest();
        logs.len() == m.segments.len() && m.segments.iter().all(|s| logs.contains(&s.log_key))
    }
}

fn new_manager(store: &Arc<dyn ObjectStore>) -> Arc<RemoteLogManager> {
    let opts = ManagerOptions {
        interval: Duration::from_secs(3600),
        ..ManagerOptions::default()
    };
    RemoteLogManager::new(store.clone(), "", "test-broker", opts)
}

/// Has `manager` take `partition` over; returns its remote partition and
/// the bucket's part a cleaning pass is handed. The manager's first round
/// claims the catalog.
fn attach(
    rt: &tokio::runtime::Runtime,
    manager: Arc<RemoteLogManager>,
    broker: &Arc<BrokerConfig>,
    partition: &Arc<Partition>,
) -> (Arc<RemotePartition>, Arc<dyn TieredPart>) {
    let view: Arc<dyn LocalLog> = Arc::new(LocalLogView {
        partition: partition.clone(),
        broker: broker.clone(),
    });
    let rp = rt.block_on(manager.add_partition("tid", view));
    let part = Arc::new(BucketPart {
        manager,
        remote: rp.clone(),
        runtime: rt.handle().clone(),
    });
    (rp, part)
}

fn tiered_log(file_delete_delay_ms: &str) -> Tiered {
    tiered_log_with(file_delete_delay_ms, |_, store| new_manager(store))
}

/// A tiered log whose manager `manager(runtime, store)` makes.
fn tiered_log_with(
    file_delete_delay_ms: &str,
    manager: impl FnOnce(&tokio::runtime::Runtime, &Arc<dyn ObjectStore>) -> Arc<RemoteLogManager>,
) -> Tiered {
    let dir = tempfile::tempdir().unwrap();
    let broker = Arc::new(BrokerConfig::load(None, &[]).unwrap());
    let overrides: BTreeMap<String, String> = [
        ("cleanup.policy", "compact"),
        ("min.cleanable.dirty.ratio", "0.01"),
        ("local.retention.ms", "0"),
        ("file.delete.delay.ms", file_delete_delay_ms),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let cfg = SharedConfig::new(TopicConfig::resolve(&broker, &overrides));
    let log = PartitionLog::create(dir.path(), "t", 0, cfg, crate::clock::system()).unwrap();
    let partition = Partition::new(log.clone());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let (rp, part) = attach(&rt, manager(&rt, &store), &broker, &partition);
    // The first round claims the catalog.
    wait(|| rp.manifest().writer_epoch > 0, "the catalog claimed");
    Tiered {
        rt,
        store,
        broker,
        partition,
        log,
        rp,
        part,
        _dir: dir,
    }
}

fn wait(mut done: impl FnMut() -> bool, what: &str) {
    for _ in 0..500 {
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("timed out waiting for {what}");
}

/// Every key written `rounds` times, a segment per round.
fn write_rounds(log: &Partition, keys: usize, rounds: std::ops::Range<usize>) {
    for round in rounds {
        let recs: Vec<_> = (0..keys)
            .map(|k| {
                (
                    Some(Bytes::from(format!("key-{k}"))),
                    Some(Bytes::from(format!("v{round}"))),
                    crate::clock::now_ms(),
                )
            })
            .collect();
        let b = encode_records(&recs, Compression::Lz4).unwrap();
        let h = validate_all(&b).unwrap();
        log.append(&b, &h).unwrap();
        log.log().roll().unwrap();
    }
    log.log().flush().unwrap();
}

/// A pass, retried while a tiering round holds the catalog writer.
fn clean(t: &Tiered) -> crate::log::cleaner::CleanStats {
    let mut map = OffsetMap::with_memory(1 << 20);
    for _ in 0..200 {
        let mut throttle = Throttle::new(f64::MAX);
        if let Some(s) = t
            .log
            .clean(
                Some(t.part.clone()),
                crate::clock::now_ms(),
                &mut map,
                &mut throttle,
                true,
            )
            .unwrap()
        {
            return s;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no pass ran");
}

/// One tiering round: uploads what is cleaned, applies the hot window.
fn tier(t: &Tiered, until_remote_end: i64) {
    t.rp.wake();
    wait(
        || t.rp.manifest().next_offset() >= Some(until_remote_end),
        "the upload",
    );
}

/// key -> offsets of its records in the bucket, then on disk.
fn whole_log(t: &Tiered) -> BTreeMap<String, Vec<i64>> {
    let mut out = BTreeMap::new();
    let mut add = |bytes: &[u8], from: i64| {
        let policy = CleanPolicy {
            now_ms: 0,
            delete_retention_ms: 0,
            max_inflated_bytes: 1 << 30,
            max_batch_bytes: 1 << 24,
        };
        for (at, h) in BatchScanner::new(bytes, true) {
            for_each_record(&bytes[at..at + h.size], &policy, |r| {
                if r.offset >= from {
                    let k = String::from_utf8(r.key.unwrap_or_default().to_vec()).unwrap();
                    out.entry(k).or_insert_with(Vec::new).push(r.offset);
                }
                Ok(())
            })
            .unwrap();
        }
    };
    let m = t.rp.manifest();
    for s in &m.segments {
        let key = object_store::path::Path::from(s.log_key.as_str());
        let bytes =
            t.rt.block_on(async { t.store.get(&key).await.unwrap().bytes().await.unwrap() });
        add(&bytes, 0);
    }
    let mut offset = t.log.local_log_start_offset();
    loop {
        let r = t.log.read(offset, 1 << 20, true).unwrap();
        if r.records.is_empty() {
            break;
        }
        add(&r.records, offset);
        offset = BatchScanner::new(&r.records, true)
            .last()
            .map(|(_, h)| h.next_offset())
            .unwrap();
    }
    out
}

#[test]
fn a_pass_compacts_the_buckets_segments_and_swaps_them_in() {
    let t = tiered_log("0");
    write_rounds(&t.partition, 50, 0..4);
    // Nothing is uploaded before it is cleaned.
    t.rp.wake();
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        t.rp.manifest().segments.is_empty(),
        "dirty segments stayed local"
    );

    // The first pass cleans locally; then the segments go up and, with a
    // zero hot window, leave the disk.
    let s = clean(&t);
    assert_eq!(s.remote_segments_replaced, 0);
    assert_eq!(t.log.first_dirty_offset(), 200);
    tier(&t, 200);
    let first = t.rp.manifest();
    assert_eq!(first.segments[0].base_offset, 0, "{first:?}");
    assert!(first.segments.iter().all(|s| s.next_offset() <= 200));
    wait(
        || t.log.local_log_start_offset() == 200,
        "the hot window applied",
    );

    // New updates of half the keys: a pass reads the bucket's segments
    // (one GET each), rewrites those that lose records, swaps them in.
    write_rounds(&t.partition, 25, 4..6);
    let stats =
        t.rp.stats
            .compaction_bytes_read
            .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(stats, 0);
    let s = clean(&t);
    assert!(s.remote_segments_replaced >= 1, "{s:?}");
    let m = t.rp.manifest();
    assert!(m.version > first.version);
    assert_eq!(m.next_offset(), first.next_offset(), "the remote end stays");
    for seg in &m.segments {
        if !first.segments.contains(seg) {
            assert!(
                seg.log_key.contains("-c"),
                "a cleaned segment has new keys: {}",
                seg.log_key
            );
        }
    }
    let read =
        t.rp.stats
            .compaction_bytes_read
            .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        read,
        first.segments.iter().map(|s| s.size_bytes).sum::<u64>()
    );

    // The whole log: every key once, at its latest offset (round 5 for
    // the keys updated again, round 3 for the others).
    let log = whole_log(&t);
    assert_eq!(log.len(), 50);
    for k in 0..50 {
        let want = if k < 25 {
            225 + k as i64
        } else {
            150 + k as i64
        };
        assert_eq!(log[&format!("key-{k}")], vec![want], "key-{k}");
    }
    // The bucket keeps only what the manifest references (delay 0).
    wait(
        || t.bucket_matches_manifest(),
        "the replaced objects deleted",
    );
}

/// 50 keys × 4 rounds, cleaned (one segment, offsets 150..199), tiered and
/// off the disk.
fn cleaned_in_the_bucket(t: &Tiered) {
    write_rounds(&t.partition, 50, 0..4);
    clean(t);
    tier(t, 200);
    wait(
        || t.log.local_log_start_offset() == 200,
        "the hot window applied",
    );
}

/// The last offset of each key in the whole log (bucket, then disk).
fn latest(t: &Tiered) -> BTreeMap<String, i64> {
    whole_log(t)
        .into_iter()
        .map(|(k, offsets)| (k, *offsets.last().unwrap()))
        .collect()
}

#[test]
fn a_pass_cut_short_before_or_after_its_swap_loses_nothing() {
    let mut t = tiered_log("3600000");
    cleaned_in_the_bucket(&t);
    let tiered = t.rp.manifest();
    write_rounds(&t.partition, 25, 4..6);
    let want: BTreeMap<String, i64> = (0..50)
        .map(|k| (format!("key-{k}"), if k < 25 { 225 + k } else { 150 + k }))
        .collect();

    // Another broker claims the catalog: this pass uploads its cleaned
    // segments and then fails at the manifest PUT, which is where a crash
    // between the uploads and the swap leaves the bucket.
    let path = strata_catalog::PartitionPath::new("", "t", "tid", 0);
    t.rt.block_on(strata_catalog::PartitionCatalog::claim(
        t.store.clone(),
        path,
        "other",
    ))
    .unwrap();
    let mut map = OffsetMap::with_memory(1 << 20);
    let mut throttle = Throttle::new(f64::MAX);
    let fenced = t.log.clean(
        Some(t.part.clone()),
        crate::clock::now_ms(),
        &mut map,
        &mut throttle,
        true,
    );
    assert!(fenced.is_err(), "{fenced:?}");
    assert!(
        !t.bucket_matches_manifest(),
        "the cleaned uploads are there, unreferenced"
    );
    assert_eq!(
        latest(&t),
        want,
        "nothing lost: the old remote set still holds the log"
    );

    // The next owner deletes those orphans; the old segments still serve.
    t.restart_tiering();
    assert!(t.bucket_matches_manifest());
    assert_eq!(t.rp.manifest().segments, tiered.segments);
    assert_eq!(latest(&t), want);

    // Now a pass goes through; with file.delete.delay.ms at an hour the
    // replaced objects are still in the bucket when the broker "dies".
    let s = clean(&t);
    assert!(s.remote_segments_replaced >= 1, "{s:?}");
    assert!(
        !t.bucket_matches_manifest(),
        "the replaced objects wait for readers"
    );
    t.restart_tiering();
    assert!(t.bucket_matches_manifest(), "the next claim deleted them");
    let log = whole_log(&t);
    assert_eq!(log.len(), 50);
    for (k, offset) in &want {
        assert_eq!(log[k], vec![*offset], "{k} once, at its latest offset");
    }
}

#[test]
fn a_read_planned_before_a_swap_is_served_after_it() {
    // The broker's own tiered storage, so that the read goes through the
    // historical read path.
    let dir = tempfile::tempdir().unwrap();
    let mut storage = None;
    let t = tiered_log_with("0", |rt, store| {
        let bucket = strata_catalog::bucket::Bucket {
            store: store.clone(),
            prefix: String::new(),
            url: "memory://".into(),
        };
        let broker = Arc::new(BrokerConfig::load(None, &[]).unwrap());
        let dynamic = crate::config::dynamic::DynamicConfigs::in_memory(broker.clone());
        let ts = rt
            .block_on(super::TieredStorage::new(
                &bucket,
                broker,
                &dynamic,
                dir.path(),
                "test-broker",
                crate::clock::system(),
            ))
            .unwrap();
        let manager = ts.manager.clone();
        storage = Some(ts);
        manager
    });
    let ts = storage.unwrap();
    cleaned_in_the_bucket(&t);
    let planned = t.rp.manifest();
    // A pass replaces the remote segment; with file.delete.delay.ms=0 its
    // old objects are gone at once.
    write_rounds(&t.partition, 25, 4..6);
    assert!(clean(&t).remote_segments_replaced >= 1);
    wait(
        || t.bucket_matches_manifest(),
        "the replaced objects deleted",
    );
    let reader = super::reads::Reader {
        name: "slow-reader".into(),
        class: strata_prefetch::PriorityClass::Standard,
    };
    let stale =
        t.rt.block_on(ts.read_in(&planned, t.rp.view(), &reader, 0, 1 << 20, true));
    assert!(
        stale.as_ref().is_err_and(|e| e.not_found_key().is_some()),
        "the planned objects are gone: {stale:?}"
    );
    let read =
        t.rt.block_on(ts.read_planned(planned, t.rp.view(), &reader, 0, 1 << 20, true))
            .unwrap();
    let super::reads::RemoteRead::Records(records) = read else {
        panic!("records expected, got {read:?}");
    };
    let first = BatchScanner::new(&records, true)
        .next()
        .map(|(_, h)| h.base_offset);
    assert!(
        first.is_some_and(|o| o >= 150),
        "read from the cleaned segment: {first:?}"
    );
}
