//! `.txnindex` entries in Kafka's layout (`TransactionIndex`): the
//! transactions a segment's abort markers ended, 34 bytes each (version 0,
//! producer id, first offset, last offset (the abort marker's), and the
//! last stable offset once it was written). A read committed fetch
//! collects from them the aborted transactions a consumer must skip,
//! locally (the partition log's file) and from the bucket (a segment's
//! `.txnindex` object). Bytes in, bytes out: the file is the log's.

/// Bytes of one entry.
pub const ENTRY_LEN: usize = 34;
const VERSION: i16 = 0;

/// One aborted transaction of one producer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    pub first_offset: i64,
    /// The offset of its abort marker.
    pub last_offset: i64,
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    pub fn encode(&self) -> [u8; ENTRY_LEN] {
        let mut b = [0u8; ENTRY_LEN];
        b[0..2].copy_from_slice(&VERSION.to_be_bytes());
        b[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        b[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        b[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        b[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        b
    }

    fn decode(b: &[u8]) -> Option<Self> {
        let i64_at = |at: usize| b.get(at..at + 8)?.try_into().ok().map(i64::from_be_bytes);
        if i16::from_be_bytes(b.get(0..2)?.try_into().ok()?) != VERSION {
            return None;
        }
        Some(AbortedTxn {
            producer_id: i64_at(2)?,
            first_offset: i64_at(10)?,
            last_offset: i64_at(18)?,
            last_stable_offset: i64_at(26)?,
        })
    }

    /// Overlaps the offsets `[from, upper)` (Kafka's rule for a fetch).
    pub fn overlaps(&self, from: i64, upper: i64) -> bool {
        self.last_offset >= from && self.first_offset < upper
    }
}

/// Entries of a `.txnindex` file's bytes; a torn last entry is ignored.
pub fn decode_entries(bytes: &[u8]) -> Vec<AbortedTxn> {
    bytes
        .chunks_exact(ENTRY_LEN)
        .map_while(AbortedTxn::decode)
        .collect()
}

/// Bytes of a `.txnindex` file holding `entries`.
pub fn encode_entries(entries: &[AbortedTxn]) -> Vec<u8> {
    entries.iter().flat_map(|e| e.encode()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_layout_and_overlap_rule() {
        let e = AbortedTxn {
            producer_id: 0x0102,
            first_offset: 7,
            last_offset: 20,
            last_stable_offset: 21,
        };
        let b = e.encode();
        assert_eq!(&b[0..2], &[0, 0]);
        assert_eq!(i64::from_be_bytes(b[2..10].try_into().unwrap()), 0x0102);
        assert_eq!(i64::from_be_bytes(b[26..34].try_into().unwrap()), 21);
        assert_eq!(decode_entries(&b), vec![e]);
        // A torn entry at the end, and an unknown version, end the list.
        let mut torn = b.to_vec();
        torn.extend_from_slice(&[0, 0, 1, 2, 3]);
        assert_eq!(decode_entries(&torn), vec![e]);
        let mut v1 = e.encode();
        v1[1] = 1;
        assert_eq!(decode_entries(&v1), vec![]);
        assert!(e.overlaps(20, 21));
        assert!(e.overlaps(0, 8));
        assert!(!e.overlaps(21, 100));
        assert!(!e.overlaps(0, 7));
    }
}
