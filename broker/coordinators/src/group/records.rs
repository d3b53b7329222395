//! The records of `__consumer_offsets`, in Kafka's own formats so the log
//! can later travel with the rest of the data and be read by Kafka tooling:
//! `OffsetCommitKey` v1 / `OffsetCommitValue` v3, and `GroupMetadataKey` v2 /
//! `GroupMetadataValue` v3. A null value is a tombstone.
//!
//! Pure encoding and decoding; no I/O.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum RecordError {
    #[error("record truncated")]
    Truncated,
    #[error("unsupported {what} version {version}")]
    Version { what: &'static str, version: i16 },
    #[error("invalid string")]
    InvalidString,
}

const OFFSET_KEY_VERSION: i16 = 1;
const GROUP_KEY_VERSION: i16 = 2;
const OFFSET_VALUE_VERSION: i16 = 3;
const GROUP_VALUE_VERSION: i16 = 3;

/// Key of a `__consumer_offsets` record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum RecordKey {
    Offset {
        group: String,
        topic: String,
        partition: i32,
    },
    Group {
        group: String,
    },
}

impl RecordKey {
    pub fn group(&self) -> &str {
        match self {
            RecordKey::Offset { group, .. } | RecordKey::Group { group } => group,
        }
    }
}

/// A committed offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetValue {
    pub offset: i64,
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
}

/// One member of a group, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MemberRecord {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    pub subscription: Bytes,
    pub assignment: Bytes,
}

/// A group's membership as of its last completed rebalance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GroupValue {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub state_timestamp: i64,
    pub members: Vec<MemberRecord>,
}

pub(crate) fn put_str(b: &mut BytesMut, s: &str) {
    b.put_i16(s.len() as i16);
    b.put_slice(s.as_bytes());
}
fn put_nullable_str(b: &mut BytesMut, s: Option<&str>) {
    match s {
        Some(s) => put_str(b, s),
        None => b.put_i16(-1),
    }
}
fn put_bytes(b: &mut BytesMut, v: &[u8]) {
    b.put_i32(v.len() as i32);
    b.put_slice(v);
}

pub(crate) fn need(b: &Bytes, n: usize) -> Result<(), RecordError> {
    if b.remaining() < n {
        Err(RecordError::Truncated)
    } else {
        Ok(())
    }
}
pub(crate) fn get_i16(b: &mut Bytes) -> Result<i16, RecordError> {
    need(b, 2)?;
    Ok(b.get_i16())
}
pub(crate) fn get_i32(b: &mut Bytes) -> Result<i32, RecordError> {
    need(b, 4)?;
    Ok(b.get_i32())
}
pub(crate) fn get_i64(b: &mut Bytes) -> Result<i64, RecordError> {
    need(b, 8)?;
    Ok(b.get_i64())
}
pub(crate) fn get_nullable_str(b: &mut Bytes) -> Result<Option<String>, RecordError> {
    let len = get_i16(b)?;
    if len < 0 {
        return Ok(None);
    }
    need(b, len as usize)?;
    let raw = b.split_to(len as usize);
    String::from_utf8(raw.to_vec())
        .map(Some)
        .map_err(|_| RecordError::InvalidString)
}
pub(crate) fn get_str(b: &mut Bytes) -> Result<String, RecordError> {
    get_nullable_str(b).map(|s| s.unwrap_or_default())
}
fn get_bytes(b: &mut Bytes) -> Result<Bytes, RecordError> {
    let len = get_i32(b)?;
    if len < 0 {
        return Ok(Bytes::new());
    }
    need(b, len as usize)?;
    Ok(b.split_to(len as usize))
}

impl RecordKey {
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::new();
        match self {
            RecordKey::Offset {
                group,
                topic,
                partition,
            } => {
                b.put_i16(OFFSET_KEY_VERSION);
                put_str(&mut b, group);
                put_str(&mut b, topic);
                b.put_i32(*partition);
            }
            RecordKey::Group { group } => {
                b.put_i16(GROUP_KEY_VERSION);
                put_str(&mut b, group);
            }
        }
        b.freeze()
    }

    pub fn decode(mut b: Bytes) -> Result<Self, RecordError> {
        match get_i16(&mut b)? {
            0 | 1 => Ok(RecordKey::Offset {
                group: get_str(&mut b)?,
                topic: get_str(&mut b)?,
                partition: get_i32(&mut b)?,
            }),
            2 => Ok(RecordKey::Group {
                group: get_str(&mut b)?,
            }),
            v => Err(RecordError::Version {
                what: "key",
                version: v,
            }),
        }
    }
}

impl OffsetValue {
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::new();
        b.put_i16(OFFSET_VALUE_VERSION);
        b.put_i64(self.offset);
        b.put_i32(self.leader_epoch);
        put_str(&mut b, &self.metadata);
        b.put_i64(self.commit_timestamp);
        b.freeze()
    }

    pub fn decode(mut b: Bytes) -> Result<Self, RecordError> {
        let v = get_i16(&mut b)?;
        if v != OFFSET_VALUE_VERSION {
            return Err(RecordError::Version {
                what: "offset value",
                version: v,
            });
        }
        Ok(OffsetValue {
            offset: get_i64(&mut b)?,
            leader_epoch: get_i32(&mut b)?,
            metadata: get_str(&mut b)?,
            commit_timestamp: get_i64(&mut b)?,
        })
    }
}

impl GroupValue {
    pub fn encode(&self) -> Bytes {
        let mut b = BytesMut::new();
        b.put_i16(GROUP_VALUE_VERSION);
        put_str(&mut b, &self.protocol_type);
        b.put_i32(self.generation);
        put_nullable_str(&mut b, self.protocol.as_deref());
        put_nullable_str(&mut b, self.leader.as_deref());
        b.put_i64(self.state_timestamp);
        b.put_i32(self.members.len() as i32);
        for m in &self.members {
            put_str(&mut b, &m.member_id);
            put_nullable_str(&mut b, m.group_instance_id.as_deref());
            put_str(&mut b, &m.client_id);
            put_str(&mut b, &m.client_host);
            b.put_i32(m.rebalance_timeout_ms);
            b.put_i32(m.session_timeout_ms);
            put_bytes(&mut b, &m.subscription);
            put_bytes(&mut b, &m.assignment);
        }
        b.freeze()
    }

    pub fn decode(mut b: Bytes) -> Result<Self, RecordError> {
        let v = get_i16(&mut b)?;
        if v != GROUP_VALUE_VERSION {
            return Err(RecordError::Version {
                what: "group value",
                version: v,
            });
        }
        let protocol_type = get_str(&mut b)?;
        let generation = get_i32(&mut b)?;
        let protocol = get_nullable_str(&mut b)?;
        let leader = get_nullable_str(&mut b)?;
        let state_timestamp = get_i64(&mut b)?;
        let n = get_i32(&mut b)?.max(0) as usize;
        let mut members = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            members.push(MemberRecord {
                member_id: get_str(&mut b)?,
                group_instance_id: get_nullable_str(&mut b)?,
                client_id: get_str(&mut b)?,
                client_host: get_str(&mut b)?,
                rebalance_timeout_ms: get_i32(&mut b)?,
                session_timeout_ms: get_i32(&mut b)?,
                subscription: get_bytes(&mut b)?,
                assignment: get_bytes(&mut b)?,
            });
        }
        Ok(GroupValue {
            protocol_type,
            generation,
            protocol,
            leader,
            state_timestamp,
            members,
        })
    }
}

/// Kafka's partition for a group: `abs(group.hashCode()) % partitions`,
/// with Java's `String.hashCode` over UTF-16 code units.
pub fn partition_for(group: &str, partitions: i32) -> i32 {
    let mut h: i32 = 0;
    for unit in group.encode_utf16() {
        h = h.wrapping_mul(31).wrapping_add(unit as i32);
    }
    // Kafka's Utils.abs maps i32::MIN to 0.
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roundtrips() {
        let k = RecordKey::Offset {
            group: "g".into(),
            topic: "t".into(),
            partition: 3,
        };
        assert_eq!(RecordKey::decode(k.encode()).unwrap(), k);
        let k = RecordKey::Group {
            group: "grp".into(),
        };
        assert_eq!(RecordKey::decode(k.encode()).unwrap(), k);
        let v = OffsetValue {
            offset: 42,
            leader_epoch: -1,
            metadata: "m".into(),
            commit_timestamp: 7,
        };
        assert_eq!(OffsetValue::decode(v.encode()).unwrap(), v);
        let g = GroupValue {
            protocol_type: "consumer".into(),
            generation: 5,
            protocol: Some("range".into()),
            leader: Some("m1".into()),
            state_timestamp: 9,
            members: vec![MemberRecord {
                member_id: "m1".into(),
                group_instance_id: Some("i1".into()),
                client_id: "c".into(),
                client_host: "/127.0.0.1".into(),
                rebalance_timeout_ms: 300_000,
                session_timeout_ms: 45_000,
                subscription: Bytes::from_static(b"sub"),
                assignment: Bytes::from_static(b"asg"),
            }],
        };
        assert_eq!(GroupValue::decode(g.encode()).unwrap(), g);
        assert!(OffsetValue::decode(Bytes::from_static(&[0, 3, 1])).is_err());
    }

    #[test]
    fn java_string_hash_partitioning() {
        // "hello".hashCode() == 99162322 in Java.
        assert_eq!(partition_for("hello", 50), 99162322 % 50);
        assert_eq!(partition_for("", 50), 0);
        for g in ["a", "group-1", "ünïcode"] {
            assert!((0..50).contains(&partition_for(g, 50)));
        }
    }
}
