//! DeleteRecords (`kafka-delete-records.sh`, `Admin.deleteRecords`):
//! decodes, asks the replica manager (`partition/delete_records.rs`: the
//! leader raises the log start offset and waits for the replicas and the
//! catalog) and encodes its answers.

use std::time::Duration;

use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::*;

use crate::partition::delete_records::DeleteRecordsPartition;
use crate::server::Broker;

pub async fn handle(req: DeleteRecordsRequest, _version: i16, b: &Broker) -> DeleteRecordsResponse {
    let mut asked = Vec::new();
    for t in &req.topics {
        for p in &t.partitions {
            asked.push(DeleteRecordsPartition {
                topic: t.name.0.to_string(),
                partition: p.partition_index,
                offset: p.offset,
            });
        }
    }
    let timeout = Duration::from_millis(req.timeout_ms.max(0) as u64);
    let mut answers = b.replicas.delete_records(asked, timeout).await.into_iter();
    let mut r = DeleteRecordsResponse::default();
    for t in req.topics {
        let mut out = DeleteRecordsTopicResult::default();
        out.name = t.name;
        for (p, a) in t.partitions.into_iter().zip(answers.by_ref()) {
            let mut pr = DeleteRecordsPartitionResult::default();
            pr.partition_index = p.partition_index;
            pr.low_watermark = a.low_watermark;
            pr.error_code = a.error.map_or(0, |e| e.code());
            out.partitions.push(pr);
        }
        r.topics.push(out);
    }
    r
}
