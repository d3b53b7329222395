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

/// A single broker's appends, for tests of the log alone: at the log's own
/// epoch, with no partition above to check leadership (tests of roles and
/// the ISR build a `crate::partition::Partition`).
impl PartitionLog {
    pub(crate) fn append(
        &self,
        records: &[u8],
        headers: &[super::batch::BatchHeader],
    ) -> Result<super::AppendInfo, super::LogError> {
        self.append_from(records, headers, super::AppendOrigin::Client)
    }

    pub(crate) fn append_from(
        &self,
        records: &[u8],
        headers: &[super::batch::BatchHeader],
        origin: super::AppendOrigin,
    ) -> Result<super::AppendInfo, super::LogError> {
        self.append_as_leader(records, headers, origin, self.leader_epoch())
    }

    pub(crate) fn append_marker(
        &self,
        producer_id: i64,
        producer_epoch: i16,
        marker: super::control::Marker,
    ) -> Result<super::AppendInfo, super::LogError> {
        self.append_marker_as_leader(producer_id, producer_epoch, marker, self.leader_epoch())
    }
}
