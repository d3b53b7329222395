//! WriteTxnMarkers v0 (Kafka 3.9 accepts it; the codec crate starts at v1,
//! the same fields in the flexible encoding): decoded with the bounded
//! reader, handled by the regular handler, answered in v0's layout.

use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::codec::{Reader, Writer};
use super::LegacyError;
use crate::server::handlers::txn_admin;
use crate::server::Broker;

pub async fn handle(body: &[u8], b: &Broker) -> Result<Writer, LegacyError> {
    let mut r = Reader::new(body);
    // producer id, epoch, result, topics (at least a count), coordinator epoch
    let markers = r.elements("Markers", 8 + 2 + 1 + 4 + 4, |r| {
        let mut m = WritableTxnMarker::default();
        m.producer_id = ProducerId(r.i64("ProducerId")?);
        m.producer_epoch = r.i16("ProducerEpoch")?;
        m.transaction_result = r.i8("TransactionResult")? != 0;
        m.topics = r.elements("Topics", 6, |r| {
            let mut t = WritableTxnMarkerTopic::default();
            t.name = TopicName(StrBytes::from_string(r.string("Name")?));
            t.partition_indexes = r.elements("PartitionIndexes", 4, |r| r.i32("PartitionIndex"))?;
            Ok(t)
        })?;
        m.coordinator_epoch = r.i32("CoordinatorEpoch")?;
        Ok(m)
    })?;
    r.finish()?;
    let mut req = WriteTxnMarkersRequest::default();
    req.markers = markers;
    let resp = txn_admin::write_txn_markers(req, 0, b).await;
    let mut w = Writer::default();
    w.array_len(resp.markers.len());
    for m in &resp.markers {
        w.i64(m.producer_id.0).array_len(m.topics.len());
        for t in &m.topics {
            w.string(&t.name.0).array_len(t.partitions.len());
            for p in &t.partitions {
                w.i32(p.partition_index).i16(p.error_code);
            }
        }
    }
    Ok(w)
}
