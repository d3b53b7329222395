//! OffsetForLeaderEpoch v0 and v1 (Kafka 0.11 and 2.0): per partition a
//! leader epoch, no current epoch; v0's answer lacks the epoch found.
//! Answered by the same rules as v2+ (`handlers::leader_epoch`).

use super::codec::{LegacyDecodeError, Reader, Writer};
use crate::server::handlers::leader_epoch::end_offset;
use crate::server::Broker;

pub fn handle(version: i16, body: &[u8], b: &Broker) -> Result<Writer, LegacyDecodeError> {
    let mut r = Reader::new(body);
    let topics = r.elements("Topics", 6, |r| {
        let name = r.string("Topic")?;
        let partitions = r.elements("Partitions", 8, |r| {
            Ok((r.i32("Partition")?, r.i32("LeaderEpoch")?))
        })?;
        Ok((name, partitions))
    })?;
    r.finish()?;
    let mut w = Writer::default();
    w.topics(&topics, |w, name, (partition, epoch)| {
        let e = end_offset(b, name, *partition, -1, *epoch);
        w.i16(e.error_code).i32(e.partition);
        if version >= 1 {
            w.i32(e.leader_epoch);
        }
        w.i64(e.end_offset);
    });
    Ok(w)
}
