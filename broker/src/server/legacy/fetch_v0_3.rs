//! Fetch v0–v3 read message sets v0/v1: answering them would mean
//! down-converting stored record batches v2, re-encoding what the broker
//! otherwise serves byte for byte, in memory. Strata does not
//! down-convert: every partition of an old Fetch is answered with
//! UNSUPPORTED_VERSION, which is Kafka 3.9's answer with
//! `message.downconversion.enable=false` (and Kafka 4.0's for any such
//! fetch). Consumers need Fetch v4 (Kafka 0.11, 2017) or later.

use kafka_protocol::ResponseError;

use super::codec::{LegacyDecodeError, Reader, Writer};

pub fn handle(version: i16, body: &[u8]) -> Result<Writer, LegacyDecodeError> {
    let mut r = Reader::new(body);
    let _replica_id = r.i32("ReplicaId")?;
    let _max_wait_ms = r.i32("MaxWaitMs")?;
    let _min_bytes = r.i32("MinBytes")?;
    if version >= 3 {
        let _max_bytes = r.i32("MaxBytes")?;
    }
    let topics = r.elements("Topics", 6, |r| {
        let name = r.string("Topic")?;
        let partitions = r.elements("Partitions", 16, |r| {
            let p = r.i32("Partition")?;
            let _fetch_offset = r.i64("FetchOffset")?;
            let _max_bytes = r.i32("PartitionMaxBytes")?;
            Ok(p)
        })?;
        Ok((name, partitions))
    })?;
    r.finish()?;
    let mut w = Writer::default();
    if version >= 1 {
        w.i32(0); // throttle_time_ms
    }
    w.array_len(topics.len());
    for (name, partitions) in topics {
        w.string(&name).array_len(partitions.len());
        for p in partitions {
            w.i32(p)
                .i16(ResponseError::UnsupportedVersion.code())
                .i64(-1)
                .bytes(&[]);
        }
    }
    Ok(w)
}
