//! `AbortedRanges`: for the log cleaner, the offsets each producer wrote
//! in transactions that were aborted (from the segments' `.txnindex`
//! entries). Records there are never the latest value of a key and are
//! removed by compaction, as Kafka's cleaner does; markers stay.

use std::collections::HashMap;

use super::batch::BatchHeader;
use super::txn_index::AbortedTxn;

#[derive(Debug, Default, Clone)]
pub(crate) struct AbortedRanges {
    /// producer id -> (first offset, marker offset), sorted.
    by_producer: HashMap<i64, Vec<(i64, i64)>>,
}

impl AbortedRanges {
    pub fn new<'a>(txns: impl IntoIterator<Item = &'a AbortedTxn>) -> Self {
        let mut by_producer: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
        for t in txns {
            by_producer
                .entry(t.producer_id)
                .or_default()
                .push((t.first_offset, t.last_offset));
        }
        for v in by_producer.values_mut() {
            v.sort_unstable();
        }
        AbortedRanges { by_producer }
    }

    /// A transactional data batch whose transaction was aborted.
    pub fn contains(&self, h: &BatchHeader) -> bool {
        if !h.is_transactional() || h.is_control() {
            return false;
        }
        let Some(ranges) = self.by_producer.get(&h.producer_id) else {
            return false;
        };
        let i = ranges.partition_point(|(first, _)| *first <= h.base_offset);
        i > 0 && ranges[i - 1].1 > h.base_offset
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pid: i64, base: i64, transactional: bool) -> BatchHeader {
        BatchHeader {
            base_offset: base,
            size: 70,
            partition_leader_epoch: 0,
            magic: 2,
            crc: 0,
            attributes: if transactional { 0x10 } else { 0 },
            last_offset_delta: 0,
            base_timestamp: 0,
            max_timestamp: 0,
            producer_id: pid,
            producer_epoch: 0,
            base_sequence: 0,
            record_count: 1,
        }
    }

    #[test]
    fn only_the_aborted_transactions_batches() {
        let t = |pid, first, last| AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: last + 1,
        };
        let r = AbortedRanges::new(&[t(1, 10, 20), t(1, 30, 35), t(2, 12, 13)]);
        assert!(r.contains(&h(1, 10, true)));
        assert!(r.contains(&h(1, 19, true)));
        assert!(!r.contains(&h(1, 20, true)), "the marker's own offset");
        assert!(
            !r.contains(&h(1, 25, true)),
            "a committed transaction between"
        );
        assert!(r.contains(&h(1, 31, true)));
        assert!(!r.contains(&h(1, 15, false)), "not transactional");
        assert!(!r.contains(&h(3, 15, true)), "another producer");
        assert!(r.contains(&h(2, 12, true)));
    }
}
