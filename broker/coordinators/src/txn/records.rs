//! The records of `__transaction_state`, in Kafka's formats
//! (`TransactionLogKey` v0, `TransactionLogValue` v0), so the log reads
//! the same to Kafka tooling: key = (version, transactional id); value =
//! producer id and epoch, timeout, state, partitions, last update and start
//! times. A null value is a tombstone (the id expired).
//!
//! Pure encoding and decoding; no I/O.

use std::collections::BTreeSet;

use bytes::{BufMut, Bytes, BytesMut};

use crate::group::records::{get_i16, get_i32, get_i64, get_str, need, put_str, RecordError};

const KEY_VERSION: i16 = 0;
const VALUE_VERSION: i16 = 0;

/// Kafka's `TransactionState`, with its ids as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TxnState {
    Empty,
    Ongoing,
    PrepareCommit,
    PrepareAbort,
    CompleteCommit,
    CompleteAbort,
    Dead,
    PrepareEpochFence,
}

impl TxnState {
    pub fn id(self) -> i8 {
        match self {
            TxnState::Empty => 0,
            TxnState::Ongoing => 1,
            TxnState::PrepareCommit => 2,
            TxnState::PrepareAbort => 3,
            TxnState::CompleteCommit => 4,
            TxnState::CompleteAbort => 5,
            TxnState::Dead => 6,
            TxnState::PrepareEpochFence => 7,
        }
    }

    pub fn from_id(id: i8) -> Option<Self> {
        Some(match id {
            0 => TxnState::Empty,
            1 => TxnState::Ongoing,
            2 => TxnState::PrepareCommit,
            3 => TxnState::PrepareAbort,
            4 => TxnState::CompleteCommit,
            5 => TxnState::CompleteAbort,
            6 => TxnState::Dead,
            7 => TxnState::PrepareEpochFence,
            _ => return None,
        })
    }

    /// The name DescribeTransactions and ListTransactions use.
    pub fn name(self) -> &'static str {
        match self {
            TxnState::Empty => "Empty",
            TxnState::Ongoing => "Ongoing",
            TxnState::PrepareCommit => "PrepareCommit",
            TxnState::PrepareAbort => "PrepareAbort",
            TxnState::CompleteCommit => "CompleteCommit",
            TxnState::CompleteAbort => "CompleteAbort",
            TxnState::Dead => "Dead",
            TxnState::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// Markers are being written (or must be, after a restart).
    pub(crate) fn is_prepared(self) -> bool {
        matches!(
            self,
            TxnState::PrepareCommit | TxnState::PrepareAbort | TxnState::PrepareEpochFence
        )
    }
}

/// One transactional id's state as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TxnValue {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    pub partitions: BTreeSet<(String, i32)>,
    pub last_update_ms: i64,
    pub start_ms: i64,
}

pub(crate) fn encode_key(transactional_id: &str) -> Bytes {
    let mut b = BytesMut::with_capacity(4 + transactional_id.len());
    b.put_i16(KEY_VERSION);
    put_str(&mut b, transactional_id);
    b.freeze()
}

pub(crate) fn decode_key(mut b: Bytes) -> Result<String, RecordError> {
    let version = get_i16(&mut b)?;
    if version != KEY_VERSION {
        return Err(RecordError::Version {
            what: "TransactionLogKey",
            version,
        });
    }
    get_str(&mut b)
}

impl TxnValue {
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::with_capacity(64);
        b.put_i16(VALUE_VERSION);
        b.put_i64(self.producer_id);
        b.put_i16(self.producer_epoch);
        b.put_i32(self.timeout_ms);
        b.put_i8(self.state.id());
        if self.partitions.is_empty() {
            // Kafka writes null for an empty partition set.
            b.put_i32(-1);
        } else {
            let mut by_topic: Vec<(&str, Vec<i32>)> = Vec::new();
            for (t, p) in &self.partitions {
                match by_topic.last_mut() {
                    Some((last, ps)) if *last == t.as_str() => ps.push(*p),
                    _ => by_topic.push((t, vec![*p])),
                }
            }
            b.put_i32(by_topic.len() as i32);
            for (t, ps) in by_topic {
                put_str(&mut b, t);
                b.put_i32(ps.len() as i32);
                for p in ps {
                    b.put_i32(p);
                }
            }
        }
        b.put_i64(self.last_update_ms);
        b.put_i64(self.start_ms);
        b.freeze()
    }

    pub fn decode(mut b: Bytes) -> Result<Self, RecordError> {
        let version = get_i16(&mut b)?;
        if version != VALUE_VERSION {
            return Err(RecordError::Version {
                what: "TransactionLogValue",
                version,
            });
        }
        let producer_id = get_i64(&mut b)?;
        let producer_epoch = get_i16(&mut b)?;
        let timeout_ms = get_i32(&mut b)?;
        need(&b, 1)?;
        let state_id = b[0] as i8;
        b = b.slice(1..);
        let state = TxnState::from_id(state_id).ok_or(RecordError::Version {
            what: "TransactionState",
            version: state_id as i16,
        })?;
        let mut partitions = BTreeSet::new();
        let topics = get_i32(&mut b)?;
        for _ in 0..topics.max(0) {
            let topic = get_str(&mut b)?;
            let n = get_i32(&mut b)?;
            // Every partition id takes 4 bytes: a count the record cannot
            // hold is corruption, not a reason to loop.
            need(&b, (n.max(0) as usize).saturating_mul(4))?;
            for _ in 0..n.max(0) {
                partitions.insert((topic.clone(), get_i32(&mut b)?));
            }
        }
        Ok(TxnValue {
            producer_id,
            producer_epoch,
            timeout_ms,
            state,
            partitions,
            last_update_ms: get_i64(&mut b)?,
            start_ms: get_i64(&mut b)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrip_and_kafka_layout() {
        let v = TxnValue {
            producer_id: 7,
            producer_epoch: 2,
            timeout_ms: 60_000,
            state: TxnState::PrepareCommit,
            partitions: [
                ("a".to_string(), 0),
                ("a".to_string(), 3),
                ("b".to_string(), 1),
            ]
            .into_iter()
            .collect(),
            last_update_ms: 11,
            start_ms: 10,
        };
        let b = v.encode();
        // version, pid, epoch, timeout, state
        assert_eq!(&b[0..2], &[0, 0]);
        assert_eq!(b[16], 2);
        // two topics
        assert_eq!(&b[17..21], &[0, 0, 0, 2]);
        assert_eq!(TxnValue::decode(b).unwrap(), v);
        let empty = TxnValue {
            partitions: BTreeSet::new(),
            state: TxnState::Empty,
            ..v
        };
        let b = empty.encode();
        assert_eq!(&b[17..21], &[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(TxnValue::decode(b).unwrap(), empty);
        assert_eq!(decode_key(encode_key("tx-1")).unwrap(), "tx-1");
        // A partition count larger than the record is refused, not looped on.
        let mut bad = BytesMut::new();
        bad.put_slice(&empty.encode()[..17]);
        bad.put_i32(1);
        put_str(&mut bad, "t");
        bad.put_i32(i32::MAX);
        assert!(TxnValue::decode(bad.freeze()).is_err());
    }
}
