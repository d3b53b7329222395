//! Kafka's index file formats: `.index` entries (8 bytes: offset relative
//! to the segment base, file position) and `.timeindex` entries (12 bytes:
//! timestamp, relative offset), big-endian, sorted by their key. Encoding,
//! decoding and the lookups a reader of an index file's bytes needs; the
//! files themselves are the log's (`strata-broker`) and, once uploaded, the
//! prefetcher's. No I/O.

/// One kind of index entry.
pub trait IndexEntry: Copy + std::fmt::Debug {
    const SIZE: usize;
    fn encode(&self, out: &mut Vec<u8>);
    fn decode(b: &[u8]) -> Self;
    /// The lookup key; entries must be strictly increasing in it.
    fn key(&self) -> i64;
}

/// `.index` entry: offset relative to the segment base → byte position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetPosition {
    pub relative_offset: u32,
    pub position: u32,
}

impl IndexEntry for OffsetPosition {
    const SIZE: usize = 8;
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.relative_offset.to_be_bytes());
        out.extend_from_slice(&self.position.to_be_bytes());
    }
    fn decode(b: &[u8]) -> Self {
        OffsetPosition {
            relative_offset: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            position: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
        }
    }
    fn key(&self) -> i64 {
        self.relative_offset as i64
    }
}

/// `.timeindex` entry: max timestamp seen so far → relative offset of the
/// batch where it was seen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimestampOffset {
    pub timestamp: i64,
    pub relative_offset: u32,
}

impl IndexEntry for TimestampOffset {
    const SIZE: usize = 12;
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.timestamp.to_be_bytes());
        out.extend_from_slice(&self.relative_offset.to_be_bytes());
    }
    fn decode(b: &[u8]) -> Self {
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&b[0..8]);
        TimestampOffset {
            timestamp: i64::from_be_bytes(ts),
            relative_offset: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
        }
    }
    fn key(&self) -> i64 {
        self.timestamp
    }
}

/// The last entry whose key is at or below `key` in an index file's bytes
/// (binary search; the entries are sorted).
pub fn floor<E: IndexEntry>(bytes: &[u8], key: i64) -> Option<E> {
    let n = bytes.len() / E::SIZE;
    let at = |i: usize| E::decode(&bytes[i * E::SIZE..(i + 1) * E::SIZE]);
    let (mut lo, mut hi) = (0, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if at(mid).key() <= key {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    (lo > 0).then(|| at(lo - 1))
}

/// Position of the last indexed batch at or below `relative_offset` in an
/// `.index` file's bytes (0 if none): scanning from there finds the batch.
pub fn position_for_offset(index: &[u8], relative_offset: i64) -> u64 {
    floor::<OffsetPosition>(index, relative_offset).map_or(0, |e| e.position as u64)
}

/// Relative offset of the batch where the last `.timeindex` entry below
/// `timestamp` was recorded (0 if none): scanning from there finds the first
/// batch with a timestamp at or after `timestamp`.
pub fn offset_for_timestamp(time_index: &[u8], timestamp: i64) -> i64 {
    floor::<TimestampOffset>(time_index, timestamp.saturating_sub(1))
        .map_or(0, |e| e.relative_offset as i64)
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
