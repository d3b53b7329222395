//! What may be deleted, locally and remotely: the hot window
//! (`local.retention.ms` / `local.retention.bytes`) and total retention
//! (`retention.ms` / `retention.bytes`) of a tiered partition, as pure
//! functions of the segments, sizes and the clock.
//!
//! Rules (as Kafka's tiered storage): a local segment may go only once the
//! catalog records it and it is outside the hot window; remote segments go
//! once the whole log (remote plus the local part not yet uploaded) breaches
//! total retention. Deletion is always a prefix: it stops at the first
//! segment that must stay.

use strata_catalog::PartitionManifest;

use crate::upload::SealedSegment;

/// A partition's tiering settings, resolved (no -2 left).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TieringPolicy {
    /// Upload sealed segments (`remote.storage.enable` and the broker switch).
    pub remote_enabled: bool,
    pub retention_ms: i64,
    pub retention_bytes: i64,
    /// `local.retention.ms`, with -2 already replaced by `retention.ms`.
    pub local_retention_ms: i64,
    /// `local.retention.bytes`, with -2 already replaced by `retention.bytes`.
    pub local_retention_bytes: i64,
}

/// A sealed local segment, with what retention needs to know about it.
#[derive(Debug, Clone)]
pub struct LocalSegmentInfo {
    pub segment: SealedSegment,
    pub size_bytes: u64,
    /// The newest record's timestamp (or the file's mtime if it has none).
    pub retention_timestamp: i64,
}

impl TieringPolicy {
    /// The offset below which local segments may be deleted, if any:
    /// uploaded segments (ending at or below `uploaded_end`) outside the hot
    /// window. `sealed` is oldest first; `local_bytes` is every local byte,
    /// active segment included.
    pub fn local_cut(
        &self,
        sealed: &[LocalSegmentInfo],
        local_bytes: u64,
        uploaded_end: i64,
        now_ms: i64,
    ) -> Option<i64> {
        let mut total = local_bytes;
        let mut cut = None;
        for s in sealed {
            let end = s.segment.last_offset + 1;
            if end > uploaded_end {
                break;
            }
            let by_time = self.local_retention_ms >= 0
                && s.retention_timestamp < now_ms.saturating_sub(self.local_retention_ms);
            let by_size = self.local_retention_bytes >= 0
                && total.saturating_sub(s.size_bytes) >= self.local_retention_bytes as u64;
            if !(by_time || by_size) {
                break;
            }
            total = total.saturating_sub(s.size_bytes);
            cut = Some(end);
        }
        cut
    }

    /// The offset below which remote segments breach total retention, if
    /// any. `local_only_bytes` is the size of the local part not in the
    /// bucket (it counts towards `retention.bytes`).
    pub fn remote_cut(
        &self,
        manifest: &PartitionManifest,
        local_only_bytes: u64,
        now_ms: i64,
    ) -> Option<i64> {
        let mut total: u64 =
            manifest.segments.iter().map(|s| s.size_bytes).sum::<u64>() + local_only_bytes;
        let mut cut = None;
        for s in &manifest.segments {
            let by_time = self.retention_ms >= 0
                && s.max_timestamp < now_ms.saturating_sub(self.retention_ms);
            let by_size = self.retention_bytes >= 0
                && total.saturating_sub(s.size_bytes) >= self.retention_bytes as u64;
            if !(by_time || by_size) {
                break;
            }
            total = total.saturating_sub(s.size_bytes);
            cut = Some(s.next_offset());
        }
        cut
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use strata_catalog::RemoteSegment;

    fn local(base: i64, last: i64, size: u64, ts: i64) -> LocalSegmentInfo {
        LocalSegmentInfo {
            segment: SealedSegment {
                base_offset: base,
                last_offset: last,
                max_timestamp: ts,
                leader_epoch: 0,
                log: PathBuf::new(),
                index: PathBuf::new(),
                time_index: PathBuf::new(),
                producer_snapshot: None,
                txn_index: None,
            },
            size_bytes: size,
            retention_timestamp: ts,
        }
    }

    fn policy(local_ms: i64, local_bytes: i64, ms: i64, bytes: i64) -> TieringPolicy {
        TieringPolicy {
            remote_enabled: true,
            retention_ms: ms,
            retention_bytes: bytes,
            local_retention_ms: local_ms,
            local_retention_bytes: local_bytes,
        }
    }

    #[test]
    fn local_deletion_needs_both_upload_and_the_hot_window() {
        let segs = [
            local(0, 9, 100, 1_000),
            local(10, 19, 100, 2_000),
            local(20, 29, 100, 3_000),
        ];
        let p = policy(500, -1, -1, -1);
        // Everything is old, but only what is uploaded may go.
        assert_eq!(p.local_cut(&segs, 350, 20, 10_000), Some(20));
        assert_eq!(p.local_cut(&segs, 350, 0, 10_000), None);
        assert_eq!(
            p.local_cut(&segs, 350, 15, 10_000),
            Some(10),
            "a half-uploaded range keeps its segment"
        );
        // The hot window keeps recent segments even when uploaded.
        assert_eq!(p.local_cut(&segs, 350, 30, 2_200), Some(10));
        // By size: keep at least 150 bytes locally (350 total with the active segment).
        let p = policy(-1, 150, -1, -1);
        assert_eq!(p.local_cut(&segs, 350, 30, 0), Some(20));
        assert_eq!(
            policy(-1, -1, -1, -1).local_cut(&segs, 350, 30, 10_000),
            None
        );
    }

    fn remote(base: i64, last: i64, size: u64, ts: i64) -> RemoteSegment {
        RemoteSegment {
            base_offset: base,
            last_offset: last,
            max_timestamp: ts,
            size_bytes: size,
            crc32c: 0,
            leader_epoch: 0,
            writer_epoch: 1,
            log_key: String::new(),
            index_key: String::new(),
            time_index_key: String::new(),
            producer_snapshot_key: None,
            txn_index_key: None,
        }
    }

    #[test]
    fn total_retention_counts_remote_and_local_only_bytes() {
        let mut m = PartitionManifest::empty();
        for (i, ts) in [1_000, 5_000, 2_000].iter().enumerate() {
            let b = i as i64 * 10;
            m.push(remote(b, b + 9, 100, *ts)).unwrap();
        }
        // By time it stops at the first segment inside retention.
        assert_eq!(policy(-1, -1, 3_000, -1).remote_cut(&m, 0, 6_000), Some(10));
        assert_eq!(policy(-1, -1, -1, -1).remote_cut(&m, 0, 6_000), None);
        // 300 remote + 100 local; keep 250 -> the first segment goes.
        assert_eq!(policy(-1, -1, -1, 250).remote_cut(&m, 100, 0), Some(10));
        assert_eq!(policy(-1, -1, -1, 100).remote_cut(&m, 100, 0), Some(30));
    }
}
