//! Transaction markers: the control batches (attributes: transactional and
//! control) a transaction coordinator writes to end a producer's
//! transaction in a partition. One record, key `(version 0, type)` with
//! type 0 = abort and 1 = commit, value `(version 0, coordinator epoch)`:
//! Kafka's `EndTransactionMarker`. This module owns that encoding only.

use super::batch::{compute_crc, BatchHeader, ATTRIBUTES, CRC, HEADER_LEN};

const CONTROL_ATTRIBUTES: i16 = 0x10 | 0x20;

/// What a marker ends the transaction with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MarkerType {
    Abort,
    Commit,
}

/// A decoded transaction marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Marker {
    pub kind: MarkerType,
    pub coordinator_epoch: i32,
}

impl Marker {
    /// The marker that ends a transaction: commit or abort, written at
    /// the coordinator's epoch.
    pub fn ending(commit: bool, coordinator_epoch: i32) -> Self {
        Marker {
            kind: if commit {
                MarkerType::Commit
            } else {
                MarkerType::Abort
            },
            coordinator_epoch,
        }
    }
}

fn put_varint(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    loop {
        let byte = (z & 0x7f) as u8;
        z >>= 7;
        if z == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn get_varint(b: &[u8], pos: &mut usize) -> Option<i64> {
    let mut z: u64 = 0;
    for shift in (0..64).step_by(7) {
        let byte = *b.get(*pos)?;
        *pos += 1;
        z |= ((byte & 0x7f) as u64) << shift;
        if byte & 0x80 == 0 {
            return Some(((z >> 1) as i64) ^ -((z & 1) as i64));
        }
    }
    None
}

/// A marker batch for `producer_id`/`producer_epoch` (offset 0; the log
/// assigns the real one).
pub(crate) fn encode_marker(
    producer_id: i64,
    producer_epoch: i16,
    marker: Marker,
    timestamp: i64,
) -> Vec<u8> {
    let kind: i16 = match marker.kind {
        MarkerType::Abort => 0,
        MarkerType::Commit => 1,
    };
    let mut key = Vec::with_capacity(4);
    key.extend_from_slice(&0i16.to_be_bytes());
    key.extend_from_slice(&kind.to_be_bytes());
    let mut value = Vec::with_capacity(6);
    value.extend_from_slice(&0i16.to_be_bytes());
    value.extend_from_slice(&marker.coordinator_epoch.to_be_bytes());
    let mut record = Vec::with_capacity(24);
    record.push(0); // attributes
    put_varint(&mut record, 0); // timestamp delta
    put_varint(&mut record, 0); // offset delta
    put_varint(&mut record, key.len() as i64);
    record.extend_from_slice(&key);
    put_varint(&mut record, value.len() as i64);
    record.extend_from_slice(&value);
    put_varint(&mut record, 0); // headers
    let mut b = Vec::with_capacity(HEADER_LEN + record.len() + 2);
    b.extend_from_slice(&0i64.to_be_bytes()); // base offset
    b.extend_from_slice(&0i32.to_be_bytes()); // batch length, below
    b.extend_from_slice(&0i32.to_be_bytes()); // partition leader epoch
    b.push(2); // magic
    b.extend_from_slice(&0u32.to_be_bytes()); // crc, below
    b.extend_from_slice(&CONTROL_ATTRIBUTES.to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes()); // last offset delta
    b.extend_from_slice(&timestamp.to_be_bytes());
    b.extend_from_slice(&timestamp.to_be_bytes());
    b.extend_from_slice(&producer_id.to_be_bytes());
    b.extend_from_slice(&producer_epoch.to_be_bytes());
    b.extend_from_slice(&(-1i32).to_be_bytes()); // base sequence
    b.extend_from_slice(&1i32.to_be_bytes()); // record count
    put_varint(&mut b, record.len() as i64);
    b.extend_from_slice(&record);
    let len = (b.len() - 12) as i32;
    b[8..12].copy_from_slice(&len.to_be_bytes());
    let crc = compute_crc(&b);
    b[CRC..ATTRIBUTES].copy_from_slice(&crc.to_be_bytes());
    b
}

/// The marker a control batch holds (`None`: not a control batch, or a
/// control record of another kind).
pub fn decode_marker(h: &BatchHeader, batch: &[u8]) -> Option<Marker> {
    if !h.is_control() || h.attributes & 0x07 != 0 {
        return None;
    }
    let b = batch.get(HEADER_LEN..h.size.min(batch.len()))?;
    let mut pos = 0;
    let _len = get_varint(b, &mut pos)?;
    pos += 1; // attributes
    get_varint(b, &mut pos)?; // timestamp delta
    get_varint(b, &mut pos)?; // offset delta
    let key_len = usize::try_from(get_varint(b, &mut pos)?).ok()?;
    let key = b.get(pos..pos + key_len)?;
    pos += key_len;
    let kind = match i16::from_be_bytes(key.get(2..4)?.try_into().ok()?) {
        0 => MarkerType::Abort,
        1 => MarkerType::Commit,
        _ => return None,
    };
    let value_len = get_varint(b, &mut pos)?;
    let coordinator_epoch = if value_len >= 6 {
        let v = b.get(pos..pos + 6)?;
        i32::from_be_bytes(v[2..6].try_into().ok()?)
    } else {
        -1
    };
    Some(Marker {
        kind,
        coordinator_epoch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::batch::validate;

    #[test]
    fn marker_roundtrip_is_a_valid_control_batch() {
        for kind in [MarkerType::Abort, MarkerType::Commit] {
            let m = Marker {
                kind,
                coordinator_epoch: 7,
            };
            let b = encode_marker(42, 3, m, 1_700_000_000_000);
            let h = validate(&b).expect("valid batch");
            assert!(h.is_control() && h.is_transactional());
            assert_eq!((h.producer_id, h.producer_epoch), (42, 3));
            assert_eq!((h.record_count, h.last_offset_delta), (1, 0));
            assert_eq!(decode_marker(&h, &b), Some(m));
        }
        // kafka-protocol's decoder reads it as Kafka's marker.
        let b = encode_marker(
            5,
            0,
            Marker {
                kind: MarkerType::Commit,
                coordinator_epoch: 0,
            },
            1,
        );
        let mut bytes = bytes::Bytes::from(b);
        let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut bytes).unwrap();
        let r = &set.records[0];
        assert!(r.control && r.transactional);
        assert_eq!(r.key.as_deref(), Some(&[0u8, 0, 0, 1][..]));
    }
}
