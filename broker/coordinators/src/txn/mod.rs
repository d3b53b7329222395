//! The transaction coordinator (KIP-98): transactional ids, their producer
//! ids and epochs, and the state machine that ends a transaction with
//! markers in every partition it wrote to. State is made durable in the
//! internal `__transaction_state` topic (Kafka's record format) before it
//! is acted on, and rebuilt from it on start, so a restart completes or
//! aborts every transaction it finds half-way. `docs/transactions.md` has
//! the state machine and what a crash in each state does.
//!
//! - `records.rs`: the topic's key and value formats;
//! - `coordinator.rs`: requests (InitProducerId, AddPartitionsToTxn,
//!   AddOffsetsToTxn, EndTxn, DescribeTransactions, ListTransactions);
//! - `completion.rs`: writing markers, completing transactions, aborting
//!   timed-out ones and expiring idle ids;
//! - `loading.rs`: loading and dropping the ids of a `__transaction_state`
//!   partition as this broker starts and stops leading it;
//! - `marker_channel.rs`: markers for partitions led by other brokers;
//! - `verification.rs`: a partition leader's check with the coordinator
//!   before a producer's first transactional write (KIP-890).

pub mod completion;
pub mod coordinator;
pub mod loading;
pub mod marker_channel;
pub mod metrics;
pub mod records;
pub mod verification;

pub use coordinator::{
    AbortCause, ProducerIdAndEpoch, TransactionCoordinator, TxnConfig, TxnError, TxnMetadata,
};
pub use records::TxnState;

pub use strata_common::topic_name::TRANSACTION_STATE_TOPIC;
