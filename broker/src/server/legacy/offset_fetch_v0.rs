//! OffsetFetch v0 read offsets from ZooKeeper; Kafka 3.9 in KRaft mode
//! answers it with UNSUPPORTED_VERSION for every partition asked for, and
//! so does Strata (v1, which reads the group coordinator's offsets, has the
//! same layout and is served by the regular handler).

use kafka_protocol::ResponseError;

use super::codec::{LegacyDecodeError, Reader, Writer};

pub fn handle(body: &[u8]) -> Result<Writer, LegacyDecodeError> {
    let mut r = Reader::new(body);
    let _group = r.string("GroupId")?;
    let topics = r.elements("Topics", 6, |r| {
        let name = r.string("Name")?;
        let partitions = r.elements("PartitionIndexes", 4, |r| r.i32("PartitionIndex"))?;
        Ok((name, partitions))
    })?;
    r.finish()?;
    let mut w = Writer::default();
    w.topics(&topics, |w, _, p| {
        w.i32(*p)
            .i64(-1)
            .nullable_string(Some(""))
            .i16(ResponseError::UnsupportedVersion.code());
    });
    Ok(w)
}
