//! Partition logs for the log's unit tests: topic `t`, partition 0, on
//! the machine's clock (tests that move time build theirs with a
//! `ManualClock`).

use std::path::Path;
use std::sync::Arc;

use super::partition_log::{PartitionLog, SharedConfig};

/// A new partition `t-0` under `dir`.
pub(crate) fn create(dir: &Path, cfg: Arc<SharedConfig>) -> Arc<PartitionLog> {
    PartitionLog::create(dir, "t", 0, cfg, strata_common::clock::system()).unwrap()
}

/// `t-0` under `dir` opened again, as `PartitionLog::open` takes it.
pub(crate) fn open(
    dir: &Path,
    cfg: Arc<SharedConfig>,
    recovery_point: Option<i64>,
    log_start: Option<i64>,
    clean_shutdown: bool,
) -> Arc<PartitionLog> {
    PartitionLog::open(
        dir,
        "t",
        0,
        cfg,
        recovery_point,
        log_start,
        clean_shutdown,
        strata_common::clock::system(),
    )
    .unwrap()
}
