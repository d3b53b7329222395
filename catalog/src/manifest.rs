//! `PartitionManifest`: one version of a partition's list of remote
//! segments, with O(log n) lookups by offset and by timestamp. Pure data;
//! persistence is in [`crate::store`].

use serde::{Deserialize, Serialize};

use crate::error::CatalogError;

/// One tiered segment and the objects that hold it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RemoteSegment {
    pub base_offset: i64,
    pub last_offset: i64,
    /// Largest record timestamp in the segment.
    pub max_timestamp: i64,
    pub size_bytes: u64,
    /// CRC32C of the `.log` object.
    pub crc32c: u32,
    pub leader_epoch: i32,
    /// Writer epoch that uploaded it (part of the object keys).
    pub writer_epoch: u64,
    pub log_key: String,
    pub index_key: String,
    pub time_index_key: String,
    #[serde(default)]
    pub producer_snapshot_key: Option<String>,
    /// The segment's `.txnindex` (aborted transactions), if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn_index_key: Option<String>,
}

impl RemoteSegment {
    pub fn next_offset(&self) -> i64 {
        self.last_offset + 1
    }
}

/// A partition's catalog as of one version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionManifest {
    pub version: u64,
    /// Epoch of the writer that owns the partition; bumped by each claim.
    pub writer_epoch: u64,
    /// Who holds that epoch (broker id and process), for operators.
    pub owner: String,
    /// In a cluster, the partition leader epoch the writer claimed at: a
    /// broker leading at an older epoch can no longer claim (a deposed
    /// leader is fenced in the bucket as on the wire). None when only
    /// single brokers ever wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_epoch: Option<i32>,
    /// Offsets below this are gone from remote storage (total retention).
    pub log_start_offset: i64,
    /// Sorted by base offset, non-overlapping; contiguous except where
    /// compaction emptied a segment (its offsets have no records left).
    pub segments: Vec<RemoteSegment>,
    /// The offset after the last one ever tiered, when compaction removed
    /// the segment that ended there (otherwise the last segment says it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_offset: Option<i64>,
}

impl PartitionManifest {
    pub fn empty() -> Self {
        PartitionManifest {
            version: 0,
            writer_epoch: 0,
            owner: String::new(),
            leader_epoch: None,
            log_start_offset: 0,
            segments: Vec::new(),
            end_offset: None,
        }
    }

    /// The offset after the last remote segment (where the next upload must start), if any.
    pub fn next_offset(&self) -> Option<i64> {
        let last = self.segments.last().map(|s| s.next_offset());
        match (last, self.end_offset) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// The earliest offset still readable remotely.
    pub fn earliest_offset(&self) -> Option<i64> {
        self.segments
            .first()
            .map(|s| s.base_offset.max(self.log_start_offset))
    }

    /// The segment holding `offset`, or the first one after it (offsets can
    /// be missing from a compacted log), if `offset` is below the remote end.
    pub fn segment_for_offset(&self, offset: i64) -> Option<&RemoteSegment> {
        let i = self.segments.partition_point(|s| s.last_offset < offset);
        self.segments.get(i)
    }

    /// The first segment whose max timestamp is `>= timestamp` — where the
    /// first record at or after that time is.
    pub fn segment_for_timestamp(&self, timestamp: i64) -> Option<&RemoteSegment> {
        // Segments' max timestamps are not guaranteed monotonic (CreateTime),
        // so keep a running maximum for the binary search.
        let running: Vec<i64> = self
            .segments
            .iter()
            .scan(i64::MIN, |m, s| {
                *m = (*m).max(s.max_timestamp);
                Some(*m)
            })
            .collect();
        let i = running.partition_point(|m| *m < timestamp);
        self.segments.get(i)
    }

    /// Appends a segment; it must start where the catalog ends (or anywhere,
    /// for the first one).
    pub fn push(&mut self, seg: RemoteSegment) -> Result<(), CatalogError> {
        if let Some(next) = self.next_offset() {
            if seg.base_offset < next {
                return Err(CatalogError::NotContiguous {
                    base_offset: seg.base_offset,
                    last_offset: next - 1,
                });
            }
        }
        self.segments.push(seg);
        Ok(())
    }

    /// Replaces segments by their compacted versions (`None`: compaction
    /// left no record, the entry goes). A replacement applies only if the
    /// manifest still holds the very segment it was made from (same base
    /// offset and object); returns the segments replaced or removed.
    pub fn replace_segments(
        &mut self,
        replacements: &[(RemoteSegment, Option<RemoteSegment>)],
    ) -> Vec<RemoteSegment> {
        let end = self.next_offset();
        let mut replaced = Vec::new();
        for (old, new) in replacements {
            let Ok(i) = self
                .segments
                .binary_search_by_key(&old.base_offset, |s| s.base_offset)
            else {
                continue;
            };
            if self.segments[i].log_key != old.log_key {
                continue;
            }
            match new {
                Some(n) => replaced.push(std::mem::replace(&mut self.segments[i], n.clone())),
                None => replaced.push(self.segments.remove(i)),
            }
        }
        if self.segments.last().map(|s| s.next_offset()) != end {
            self.end_offset = end;
        }
        replaced
    }

    /// Removes segments entirely below `offset`, raising the log start
    /// offset; returns the removed segments (their objects can go).
    pub fn truncate_before(&mut self, offset: i64) -> Vec<RemoteSegment> {
        let n = self.segments.partition_point(|s| s.last_offset < offset);
        let removed: Vec<RemoteSegment> = self.segments.drain(..n).collect();
        if let Some(last) = removed.last() {
            self.log_start_offset = self.log_start_offset.max(last.next_offset());
        }
        removed
    }

    /// Raises the log start offset to `offset` for a client's DeleteRecords
    /// (Kafka's `ClientRecordDeletion`): segments entirely below it go, a
    /// segment holding it stays with its head unreadable (`earliest_offset`
    /// starts at `offset`). The log start never goes back, and the end stays
    /// where uploads continue even when every segment went. Returns the
    /// removed segments (their objects can go after the commit).
    pub fn advance_log_start(&mut self, offset: i64) -> Vec<RemoteSegment> {
        if offset <= self.log_start_offset {
            return Vec::new();
        }
        let end = self.next_offset();
        let n = self.segments.partition_point(|s| s.last_offset < offset);
        let removed: Vec<RemoteSegment> = self.segments.drain(..n).collect();
        self.log_start_offset = offset;
        if self.segments.is_empty() && end.is_some() {
            self.end_offset = end;
        }
        removed
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub fn seg(base: i64, last: i64, max_ts: i64) -> RemoteSegment {
        RemoteSegment {
            base_offset: base,
            last_offset: last,
            max_timestamp: max_ts,
            size_bytes: 100,
            crc32c: 0,
            leader_epoch: 0,
            writer_epoch: 1,
            log_key: format!("{base}.log"),
            index_key: format!("{base}.index"),
            time_index_key: format!("{base}.timeindex"),
            producer_snapshot_key: None,
            txn_index_key: None,
        }
    }

    #[test]
    fn lookups() {
        let mut m = PartitionManifest::empty();
        m.push(seg(0, 99, 1_000)).unwrap();
        m.push(seg(100, 199, 900)).unwrap(); // out-of-order timestamps
        m.push(seg(200, 299, 3_000)).unwrap();
        assert!(m.push(seg(250, 400, 0)).is_err());
        assert_eq!(m.segment_for_offset(0).unwrap().base_offset, 0);
        assert_eq!(m.segment_for_offset(150).unwrap().base_offset, 100);
        assert_eq!(m.segment_for_offset(299).unwrap().base_offset, 200);
        assert!(m.segment_for_offset(300).is_none());
        assert_eq!(m.segment_for_timestamp(0).unwrap().base_offset, 0);
        assert_eq!(m.segment_for_timestamp(950).unwrap().base_offset, 0);
        assert_eq!(m.segment_for_timestamp(1_001).unwrap().base_offset, 200);
        assert!(m.segment_for_timestamp(3_001).is_none());
        let removed = m.truncate_before(150);
        assert_eq!(removed.len(), 1);
        assert_eq!(m.log_start_offset, 100);
        assert_eq!(m.earliest_offset(), Some(100));
        assert_eq!(m.next_offset(), Some(300));
    }

    #[test]
    fn deleted_records_raise_the_log_start_inside_a_segment() {
        let mut m = PartitionManifest::empty();
        for b in [0, 100, 200] {
            m.push(seg(b, b + 99, b)).unwrap();
        }
        let removed = m.advance_log_start(150);
        assert_eq!(removed, vec![seg(0, 99, 0)]);
        assert_eq!(m.log_start_offset, 150);
        assert_eq!(
            m.earliest_offset(),
            Some(150),
            "the head of segment 100 is gone"
        );
        assert!(m.advance_log_start(120).is_empty(), "never backwards");
        assert_eq!(m.earliest_offset(), Some(150));
        let removed = m.advance_log_start(400);
        assert_eq!(removed.len(), 2);
        assert_eq!(m.earliest_offset(), None, "nothing remote is readable");
        assert_eq!(
            m.next_offset(),
            Some(300),
            "uploads go on where they stopped"
        );
        m.push(seg(300, 399, 0)).unwrap();
        assert_eq!(m.earliest_offset(), Some(400));
    }

    #[test]
    fn compacted_segments_replace_the_originals_and_the_end_stays() {
        let mut m = PartitionManifest::empty();
        for b in [0, 100, 200] {
            m.push(seg(b, b + 99, b)).unwrap();
        }
        let mut cleaned = seg(0, 99, 0);
        cleaned.log_key = "0-cleaned.log".into();
        cleaned.size_bytes = 10;
        let mut stale = seg(100, 199, 100);
        stale.log_key = "not-the-current-object.log".into();
        let replaced = m.replace_segments(&[
            (seg(0, 99, 0), Some(cleaned.clone())),
            (stale, None),
            (seg(200, 299, 200), None),
        ]);
        assert_eq!(
            replaced.len(),
            2,
            "a replacement made from another object is skipped"
        );
        assert_eq!(m.segments, vec![cleaned, seg(100, 199, 100)]);
        assert_eq!(
            m.next_offset(),
            Some(300),
            "uploads go on where they stopped"
        );
        assert!(m.push(seg(250, 260, 0)).is_err());
        m.push(seg(300, 399, 0)).unwrap();
        assert_eq!(m.segment_for_offset(250).unwrap().base_offset, 300);
        let json = serde_json::to_string(&PartitionManifest::empty()).unwrap();
        assert!(
            !json.contains("end_offset"),
            "old readers see the same manifest"
        );
    }
}
