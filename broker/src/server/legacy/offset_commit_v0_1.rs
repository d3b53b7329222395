//! OffsetCommit v0 and v1. v0 stored offsets in ZooKeeper; Kafka 3.9 in
//! KRaft mode answers it with UNSUPPORTED_VERSION for every partition, and
//! so does Strata. v1 (Kafka 0.8.2, consumer-group libraries still default
//! to it) commits to the group coordinator like v2: its per-partition
//! commit timestamp is ignored, as Kafka ignores it since offsets expire by
//! `offsets.retention.minutes`.

use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{GroupId, OffsetCommitRequest, TopicName};
use kafka_protocol::ResponseError;

use super::codec::{LegacyDecodeError, Reader, Writer};
use crate::server::handlers::{self, s};
use crate::server::Broker;

struct Partition {
    index: i32,
    offset: i64,
    metadata: Option<String>,
}

pub async fn handle(
    version: i16,
    body: &[u8],
    b: &Broker,
    caller: &crate::server::authz::Caller,
) -> Result<Writer, LegacyDecodeError> {
    let mut r = Reader::new(body);
    let group = r.string("GroupId")?;
    let (generation, member) = if version >= 1 {
        (r.i32("GenerationId")?, r.string("MemberId")?)
    } else {
        (-1, String::new())
    };
    let topics = r.elements("Topics", 6, |r| {
        let name = r.string("Name")?;
        let min = if version >= 1 { 22 } else { 14 };
        let partitions = r.elements("Partitions", min, |r| {
            let index = r.i32("PartitionIndex")?;
            let offset = r.i64("CommittedOffset")?;
            if version >= 1 {
                let _commit_timestamp = r.i64("CommitTimestamp")?;
            }
            Ok(Partition {
                index,
                offset,
                metadata: r.nullable_string("CommittedMetadata")?,
            })
        })?;
        Ok((name, partitions))
    })?;
    r.finish()?;

    let codes: Vec<(String, Vec<(i32, i16)>)> = if version == 0 {
        let unsupported = ResponseError::UnsupportedVersion.code();
        topics
            .into_iter()
            .map(|(n, ps)| (n, ps.iter().map(|p| (p.index, unsupported)).collect()))
            .collect()
    } else {
        let mut req = OffsetCommitRequest::default();
        req.group_id = GroupId(s(group));
        req.generation_id_or_member_epoch = generation;
        req.member_id = s(member);
        req.retention_time_ms = -1;
        req.topics = topics
            .into_iter()
            .map(|(name, ps)| {
                let mut t = OffsetCommitRequestTopic::default();
                t.name = TopicName(s(name));
                t.partitions = ps
                    .into_iter()
                    .map(|p| {
                        let mut q = OffsetCommitRequestPartition::default();
                        q.partition_index = p.index;
                        q.committed_offset = p.offset;
                        q.committed_leader_epoch = -1;
                        q.committed_metadata = p.metadata.map(s);
                        q
                    })
                    .collect();
                t
            })
            .collect();
        let resp = handlers::groups::offset_commit(req, 2, b, caller).await;
        resp.topics
            .into_iter()
            .map(|t| {
                let ps = t
                    .partitions
                    .iter()
                    .map(|p| (p.partition_index, p.error_code))
                    .collect();
                (t.name.0.to_string(), ps)
            })
            .collect()
    };
    let mut w = Writer::default();
    w.topics(&codes, |w, _, (index, code)| {
        w.i32(*index).i16(*code);
    });
    Ok(w)
}
