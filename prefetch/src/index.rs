//! Lookups in a segment's uploaded Kafka index files: `.index` (8-byte
//! entries: relative offset, position) and `.timeindex` (12-byte entries:
//! timestamp, relative offset). Both are sorted; lookups are binary
//! searches over the raw bytes.

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Position of the last indexed batch at or below `relative_offset` (0 if none).
pub fn position_for_offset(index: &[u8], relative_offset: i64) -> u64 {
    let n = index.len() / 8;
    let i = partition_point(n, |i| (u32_at(index, i * 8) as i64) <= relative_offset);
    if i == 0 {
        0
    } else {
        u32_at(index, (i - 1) * 8 + 4) as u64
    }
}

/// Relative offset of the batch where the last time index entry below
/// `timestamp` was recorded (0 if none): scanning from there finds the first
/// batch with a timestamp at or after `timestamp`.
pub fn offset_for_timestamp(time_index: &[u8], timestamp: i64) -> i64 {
    let n = time_index.len() / 12;
    let ts_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&time_index[i * 12..i * 12 + 8]);
        i64::from_be_bytes(b)
    };
    let i = partition_point(n, |i| ts_at(i) < timestamp);
    if i == 0 {
        0
    } else {
        u32_at(time_index, (i - 1) * 12 + 8) as i64
    }
}

/// First index in `0..n` for which `pred` is false (`pred` must be monotone).
fn partition_point(n: usize, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lookups() {
        let mut idx = Vec::new();
        for (rel, pos) in [(0u32, 0u32), (10, 4096), (20, 8192)] {
            idx.extend_from_slice(&rel.to_be_bytes());
            idx.extend_from_slice(&pos.to_be_bytes());
        }
        assert_eq!(position_for_offset(&idx, 0), 0);
        assert_eq!(position_for_offset(&idx, 15), 4096);
        assert_eq!(position_for_offset(&idx, 99), 8192);
        assert_eq!(position_for_offset(&[], 5), 0);
        let mut tidx = Vec::new();
        for (ts, rel) in [(1_000i64, 0u32), (2_000, 10), (3_000, 20)] {
            tidx.extend_from_slice(&ts.to_be_bytes());
            tidx.extend_from_slice(&rel.to_be_bytes());
        }
        assert_eq!(offset_for_timestamp(&tidx, 500), 0);
        assert_eq!(offset_for_timestamp(&tidx, 2_000), 0);
        assert_eq!(offset_for_timestamp(&tidx, 2_001), 10);
        assert_eq!(offset_for_timestamp(&tidx, 9_999), 20);
    }
}
