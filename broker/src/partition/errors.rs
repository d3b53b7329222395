//! The replica manager's one table from what went wrong to the Kafka
//! error a client is answered with (Kafka's `Errors` as `ReplicaManager`
//! and `UnifiedLog` raise them): log errors, producer sequence and epoch
//! errors, and the batch validator's refusals, each with the message an
//! operator reads in the client's log.

use kafka_protocol::ResponseError;
use strata_format::validator::ValidationError;

use crate::log::producer_state::SequenceError;
use crate::log::LogError;

/// A partition's refused append: the Kafka error, its message, the log
/// start offset where Kafka reports it (else -1) and each failing record
/// (batch index, message) of a batch the validator refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppendFailure {
    pub error: ResponseError,
    pub message: String,
    pub log_start_offset: i64,
    pub record_errors: Vec<(i32, String)>,
}

impl AppendFailure {
    pub fn new(error: ResponseError, message: impl Into<String>) -> Self {
        AppendFailure {
            error,
            message: message.into(),
            log_start_offset: -1,
            record_errors: Vec::new(),
        }
    }

    /// Whether Kafka's answer carries the partition's log start offset:
    /// all errors except the ones its ReplicaManager reports with the
    /// unknown append info (corrupt or too large records, not leader,
    /// unknown partition, storage errors).
    pub fn reports_log_start(&self) -> bool {
        !matches!(
            self.error,
            ResponseError::CorruptMessage
                | ResponseError::MessageTooLarge
                | ResponseError::RecordListTooLarge
                | ResponseError::NotLeaderOrFollower
                | ResponseError::UnknownTopicOrPartition
                | ResponseError::KafkaStorageError
        )
    }
}

/// A batch the validator refused, as Kafka answers it: the code, the
/// message and each failing record.
pub fn refused(e: &ValidationError) -> AppendFailure {
    let error = match e {
        ValidationError::Corrupt(_) => ResponseError::CorruptMessage,
        ValidationError::InvalidTimestamps(_) => ResponseError::InvalidTimestamp,
        ValidationError::InvalidBatch(_) | ValidationError::InvalidRecords(_) => {
            ResponseError::InvalidRecord
        }
    };
    let mut f = AppendFailure::new(error, e.to_string());
    f.record_errors = e
        .record_errors()
        .iter()
        .map(|r| (r.index, r.message.clone()))
        .collect();
    f
}

/// A producer's sequence or epoch refused by the partition's producer
/// state.
pub fn sequence(e: SequenceError) -> AppendFailure {
    let (code, message) = match e {
        SequenceError::InvalidProducerEpoch { current, got } => (
            ResponseError::InvalidProducerEpoch,
            format!("producer epoch {got} is older than the current epoch {current}"),
        ),
        SequenceError::OutOfOrder { expected, got } => (
            ResponseError::OutOfOrderSequenceNumber,
            format!("expected sequence {expected}, got {got}"),
        ),
        SequenceError::InvalidTxnState => (
            ResponseError::InvalidTxnState,
            "a non-transactional batch from a producer with an open transaction".to_string(),
        ),
        SequenceError::NotInTransaction => (
            ResponseError::InvalidTxnState,
            "Record was not part of an ongoing transaction (its transaction ended while the partition was verified)"
                .to_string(),
        ),
        SequenceError::CoordinatorFenced { current, got } => (
            ResponseError::TransactionCoordinatorFenced,
            format!("coordinator epoch {got} is older than {current}"),
        ),
        SequenceError::UnknownProducerId => (
            ResponseError::UnknownProducerId,
            "no state for this producer id and the batch does not start at sequence 0".to_string(),
        ),
    };
    AppendFailure::new(code, message)
}

/// A failed append to a partition's log.
pub fn append(e: LogError) -> AppendFailure {
    match e {
        LogError::MessageTooLarge { size, max } => AppendFailure::new(
            ResponseError::MessageTooLarge,
            format!("record batch of {size} bytes exceeds the topic's max.message.bytes ({max})"),
        ),
        LogError::Sequence(e) => sequence(e),
        // Deleted or shutting down: retriable, the client refreshes metadata.
        LogError::NotLeader => AppendFailure::new(
            ResponseError::NotLeaderOrFollower,
            "this broker no longer leads the partition",
        ),
        LogError::Closed => AppendFailure::new(
            ResponseError::NotLeaderOrFollower,
            "the partition is being deleted or the broker is shutting down",
        ),
        e => AppendFailure::new(ResponseError::KafkaStorageError, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_and_sequence_errors_map_to_kafka_codes() {
        let code = |e: LogError| append(e).error;
        assert_eq!(
            code(LogError::NotLeader),
            ResponseError::NotLeaderOrFollower
        );
        assert_eq!(code(LogError::Closed), ResponseError::NotLeaderOrFollower);
        assert_eq!(
            code(LogError::Sequence(SequenceError::OutOfOrder {
                expected: 1,
                got: 3
            })),
            ResponseError::OutOfOrderSequenceNumber
        );
        assert_eq!(
            code(LogError::Sequence(SequenceError::NotInTransaction)),
            ResponseError::InvalidTxnState
        );
        assert!(!AppendFailure::new(ResponseError::NotLeaderOrFollower, "").reports_log_start());
        assert!(AppendFailure::new(ResponseError::InvalidTxnState, "").reports_log_start());
    }
}
