//! The replica manager's one table from what went wrong to the Kafka
//! error a client is answered with (Kafka's `Errors` as `ReplicaManager`
//! and `UnifiedLog` raise them): log errors on an append, a read, a
//! DeleteRecords and a transaction marker, producer sequence and epoch
//! errors, and the batch validator's refusals, each append refusal with
//! the message an operator reads in the client's log. The partition
//! layer's files name no Kafka error for a `LogError` themselves.

use kafka_protocol::ResponseError;
use strata_format::validator::ValidationError;

use crate::log::producer_state::SequenceError;
use crate::log::LogError;
use crate::txn::completion::MarkerWriteError;

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

/// A failed read of a partition's log: a consumer's or a follower's
/// fetch. An offset outside the log is the client's
/// to correct; anything else is the disk's. (A fetch first serves a
/// corrupt or lost local batch from the bucket's copy where there is one,
/// and an offset below the local log from the bucket: `fetch.rs`.) Unlike
/// an append, a read of a partition being deleted answers a storage
/// error, as it did before this table.
pub fn read(e: &LogError) -> ResponseError {
    match e {
        LogError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange,
        _ => ResponseError::KafkaStorageError,
    }
}

/// A read from the bucket that failed (the object store is down or
/// refused): retriable, the client fetches again.
pub fn remote_read() -> ResponseError {
    ResponseError::KafkaStorageError
}

/// A ListOffsets lookup by timestamp that failed, in the local log or in
/// the bucket's indexes: the disk's or the store's fault, never the
/// client's.
pub fn offset_lookup() -> ResponseError {
    ResponseError::KafkaStorageError
}

/// A failed DeleteRecords on a partition's log.
pub fn delete_records(e: &LogError) -> ResponseError {
    match e {
        LogError::OffsetOutOfRange { .. } => ResponseError::OffsetOutOfRange,
        LogError::Closed => ResponseError::NotLeaderOrFollower,
        _ => ResponseError::KafkaStorageError,
    }
}

/// A transaction marker not written (WriteTxnMarkers): a fenced
/// coordinator, an older producer epoch, a partition this broker no
/// longer leads, an offsets partition still loading.
pub fn marker(e: &MarkerWriteError) -> ResponseError {
    match e {
        MarkerWriteError::GroupsLoading(_) => ResponseError::CoordinatorLoadInProgress,
        MarkerWriteError::Log(LogError::Marker(SequenceError::CoordinatorFenced { .. })) => {
            ResponseError::TransactionCoordinatorFenced
        }
        MarkerWriteError::Log(LogError::Marker(_)) => ResponseError::InvalidProducerEpoch,
        MarkerWriteError::Log(LogError::Closed | LogError::NotLeader) => {
            ResponseError::NotLeaderOrFollower
        }
        MarkerWriteError::Log(_) => ResponseError::KafkaStorageError,
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
        // Reads, DeleteRecords and markers, as they were answered before
        // the table held them.
        let out_of_range = || LogError::OffsetOutOfRange {
            offset: 9,
            log_start_offset: 0,
            log_end_offset: 5,
        };
        assert_eq!(read(&out_of_range()), ResponseError::OffsetOutOfRange);
        assert_eq!(read(&LogError::Closed), ResponseError::KafkaStorageError);
        assert_eq!(
            delete_records(&out_of_range()),
            ResponseError::OffsetOutOfRange
        );
        assert_eq!(
            delete_records(&LogError::Closed),
            ResponseError::NotLeaderOrFollower
        );
        let m = |e: LogError| marker(&MarkerWriteError::Log(e));
        assert_eq!(
            m(LogError::Marker(SequenceError::CoordinatorFenced {
                current: 2,
                got: 1
            })),
            ResponseError::TransactionCoordinatorFenced
        );
        assert_eq!(
            m(LogError::Marker(SequenceError::InvalidProducerEpoch {
                current: 2,
                got: 1
            })),
            ResponseError::InvalidProducerEpoch
        );
        assert_eq!(m(LogError::NotLeader), ResponseError::NotLeaderOrFollower);
        assert_eq!(
            marker(&MarkerWriteError::GroupsLoading(3)),
            ResponseError::CoordinatorLoadInProgress
        );
        assert!(AppendFailure::new(ResponseError::InvalidTxnState, "").reports_log_start());
    }
}
