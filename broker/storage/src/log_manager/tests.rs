//! Log manager tests: `segment.ms` and `retention.ms` as the retention
//! pass applies them, on an injected clock the test moves instead of
//! sleeping; the background loops end when stopped.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use strata_common::clock::{Clock, ManualClock};
use strata_common::config::BrokerConfig;

use super::LogManager;
use crate::log::batch::{self, testing};

/// (A runtime: a new partition's flusher is a task.)
#[tokio::test]
async fn segment_ms_and_retention_ms_are_read_on_the_log_managers_clock() {
    let dir = tempfile::tempdir().unwrap();
    let clock = ManualClock::new();
    let broker = Arc::new(BrokerConfig::load(None, &[]).unwrap());
    let logs = LogManager::open(dir.path(), broker, None, clock.clone()).unwrap();
    let configs: BTreeMap<String, String> = [("retention.ms", "60000"), ("segment.ms", "10000")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    logs.create_topic("t", 1, 1, configs, false).unwrap();
    let log = logs.log("t", 0).unwrap();
    // Five records stamped `written_at` + 0..=4 (CreateTime).
    let written_at = clock.now_ms();
    let b = testing::batch(5, 10, written_at);
    log.append(&b, &batch::validate_all(&b).unwrap()).unwrap();
    log.flush().unwrap();

    // Nothing is due: the segment is young and its records are new.
    logs.enforce_retention();
    assert_eq!((log.segment_count(), log.log_start_offset()), (1, 0));
    // `segment.ms` after its first append the idle segment is sealed; its
    // records are kept.
    clock.advance(Duration::from_millis(9_999));
    logs.enforce_retention();
    assert_eq!(log.segment_count(), 1, "one millisecond early");
    clock.advance(Duration::from_millis(1));
    logs.enforce_retention();
    assert_eq!((log.segment_count(), log.log_start_offset()), (2, 0));
    // Once its newest record is older than `retention.ms`, it goes.
    clock.advance(Duration::from_millis(50_004));
    logs.enforce_retention();
    assert_eq!(
        log.log_start_offset(),
        0,
        "exactly retention.ms old is kept"
    );
    clock.advance(Duration::from_millis(1));
    logs.enforce_retention();
    assert_eq!((log.segment_count(), log.log_start_offset()), (1, 5));
    assert_eq!(clock.now_ms() - (written_at + 4), 60_001);
}

/// `stop_background` joins the retention and checkpoint loops: each holds
/// the manager, so once they are joined the test holds the only handle.
#[tokio::test]
async fn stopping_the_background_loops_joins_them() {
    let dir = tempfile::tempdir().unwrap();
    let broker = Arc::new(
        BrokerConfig::load(
            None,
            &[
                "log.cleaner.enable=false".into(),
                "log.retention.check.interval.ms=1".into(),
                "log.flush.offset.checkpoint.interval.ms=1".into(),
            ],
        )
        .unwrap(),
    );
    let logs = LogManager::open(dir.path(), broker, None, strata_common::clock::system()).unwrap();
    logs.start_background(|_| {});
    assert_eq!(Arc::strong_count(&logs), 3, "the two loops hold it");
    logs.stop_background().await;
    assert_eq!(Arc::strong_count(&logs), 1);
    logs.shutdown().unwrap();
}
