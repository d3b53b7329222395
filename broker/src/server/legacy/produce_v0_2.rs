//! Produce v0–v2, whose records are message sets v0/v1 (clients older than
//! Kafka 0.11): each partition's message set is read and checked
//! (`strata_format::legacy`), up-converted to one record batch v2 with the
//! same codec, and appended through the regular Produce path, where the
//! validator checks it like any batch — what Kafka 3.9 does. Reading back
//! needs Fetch v4 or later (fetch_v0_3.rs).

use std::collections::HashMap;

use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{ProduceRequest, TopicName};
use kafka_protocol::ResponseError;
use strata_format::legacy::{self, LegacyError};
use strata_security::acl::{AclOperation, ResourceType};

use super::codec::{LegacyDecodeError, Reader, Writer};
use crate::server::authz::Caller;
use crate::server::handlers::{self, s};
use crate::server::Broker;

/// A legacy message set may inflate to at most this many times the topic's
/// `max.message.bytes` (at least 1 MiB) while it is converted: its records
/// are held in memory to be re-encoded.
const CONVERSION_INFLATION_BOUND: u64 = 16;

struct Outcome {
    code: i16,
    base_offset: i64,
    log_append_time: i64,
}

/// What a partition the handler did not answer gets (never expected).
const MISSING: Outcome = Outcome {
    code: -1, // UNKNOWN_SERVER_ERROR
    base_offset: -1,
    log_append_time: -1,
};

/// Returns None for acks=0 (no response).
pub async fn handle(
    version: i16,
    body: &[u8],
    b: &Broker,
    caller: &Caller,
) -> Result<Option<Writer>, LegacyDecodeError> {
    let mut r = Reader::new(body);
    let acks = r.i16("Acks")?;
    let timeout_ms = r.i32("TimeoutMs")?;
    let topics = r.elements("TopicData", 6, |r| {
        let name = r.string("Name")?;
        let partitions = r.elements("PartitionData", 8, |r| {
            Ok((r.i32("Index")?, r.nullable_bytes("Records")?))
        })?;
        Ok((name, partitions))
    })?;
    r.finish()?;

    let mut outcomes: HashMap<(String, i32), Outcome> = HashMap::new();
    let mut req = ProduceRequest::default();
    req.acks = acks;
    req.timeout_ms = timeout_ms;
    for (name, partitions) in &topics {
        // Authorization comes before the records are read, as in Kafka.
        if !caller.may(AclOperation::Write, ResourceType::Topic, name) {
            for (index, _) in partitions {
                outcomes.insert(
                    (name.clone(), *index),
                    Outcome {
                        code: ResponseError::TopicAuthorizationFailed.code(),
                        base_offset: -1,
                        log_append_time: -1,
                    },
                );
            }
            continue;
        }
        let mut td = TopicProduceData::default();
        td.name = TopicName(s(name.clone()));
        for (index, records) in partitions {
            let limit = b
                .logs
                .log(name, *index)
                .map(|log| {
                    (log.config().max_message_bytes.max(1 << 20) as u64)
                        * CONVERSION_INFLATION_BOUND
                })
                .unwrap_or(1 << 20);
            let converted = match records.map(|rs| legacy::read_message_set(rs, limit)) {
                None => Err(LegacyError::Corrupt(
                    "produce request has no records".into(),
                )),
                Some(Ok(set)) => legacy::to_batch(&set).map_err(LegacyError::Invalid),
                Some(Err(e)) => Err(e),
            };
            match converted {
                Ok(batch) => {
                    let mut pd = PartitionProduceData::default();
                    pd.index = *index;
                    pd.records = Some(batch);
                    td.partition_data.push(pd);
                }
                Err(e) => {
                    tracing::debug!(topic = %name, partition = index, version, error = %e,
                        "legacy message set refused");
                    let code = match e {
                        LegacyError::Corrupt(_) => ResponseError::CorruptMessage,
                        LegacyError::Invalid(_) => ResponseError::InvalidRecord,
                    };
                    outcomes.insert(
                        (name.clone(), *index),
                        Outcome {
                            code: code.code(),
                            base_offset: -1,
                            log_append_time: -1,
                        },
                    );
                }
            }
        }
        req.topic_data.push(td);
    }
    let resp = handlers::produce::handle(req, 3, b, caller).await;
    let Some(resp) = resp else {
        return Ok(None);
    };
    for t in resp.responses {
        for p in t.partition_responses {
            outcomes.insert(
                (t.name.0.to_string(), p.index),
                Outcome {
                    code: p.error_code,
                    base_offset: p.base_offset,
                    log_append_time: p.log_append_time_ms,
                },
            );
        }
    }
    let mut w = Writer::default();
    w.array_len(topics.len());
    for (name, partitions) in &topics {
        w.string(name).array_len(partitions.len());
        for (index, _) in partitions {
            let o = outcomes.get(&(name.clone(), *index)).unwrap_or(&MISSING);
            w.i32(*index).i16(o.code).i64(o.base_offset);
            if version >= 2 {
                w.i64(o.log_append_time);
            }
        }
    }
    if version >= 1 {
        w.i32(0); // throttle_time_ms
    }
    Ok(Some(w))
}
