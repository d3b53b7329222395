//! `PendingTxnOffsets`: offsets a transaction committed (TxnOffsetCommit)
//! that its marker has not ended yet, by producer id. Pure state: the group
//! coordinator fills it from requests and from replay, and empties it when
//! the marker lands (`txn_offsets.rs`).

use std::collections::HashMap;

use bytes::Bytes;

use super::records::{OffsetValue, RecordKey};

/// One pending offset: (group, topic, partition, value).
pub(crate) type PendingOffset = (String, String, i32, OffsetValue);

#[derive(Debug, Default)]
pub(crate) struct PendingTxnOffsets {
    pub(super) by_producer: HashMap<i64, Vec<PendingOffset>>,
}

impl PendingTxnOffsets {
    /// A transactional record found by replay.
    pub(crate) fn add_replayed(&mut self, producer_id: i64, key: RecordKey, value: Option<Bytes>) {
        if let (
            RecordKey::Offset {
                group,
                topic,
                partition,
            },
            Some(v),
        ) = (key, value)
        {
            if let Ok(v) = OffsetValue::decode(v) {
                self.by_producer
                    .entry(producer_id)
                    .or_default()
                    .push((group, topic, partition, v));
            }
        }
    }

    /// Removes and returns the producer's pending offsets, in commit order.
    /// One marker ends them all: a transaction commits or aborts as a whole
    /// in every offsets partition it wrote to.
    pub fn take(&mut self, producer_id: i64) -> Vec<PendingOffset> {
        self.by_producer.remove(&producer_id).unwrap_or_default()
    }

    /// Keeps only the pending offsets of groups `keep` accepts (a
    /// partition no longer coordinated here drops its own).
    pub(crate) fn retain_groups(&mut self, keep: impl Fn(&str) -> bool) {
        for offsets in self.by_producer.values_mut() {
            offsets.retain(|(g, _, _, _)| keep(g));
        }
        self.by_producer.retain(|_, o| !o.is_empty());
    }

    /// Adds what loading a partition found.
    pub fn merge(&mut self, other: PendingTxnOffsets) {
        for (producer, offsets) in other.by_producer {
            self.by_producer
                .entry(producer)
                .or_default()
                .extend(offsets);
        }
    }

    pub(super) fn is_pending(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.by_producer
            .values()
            .flatten()
            .any(|(g, t, p, _)| g == group && t == topic && *p == partition)
    }
}
