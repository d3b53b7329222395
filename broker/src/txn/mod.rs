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
//!   timed-out ones and expiring idle ids.

pub mod completion;
pub mod coordinator;
pub mod records;

pub use coordinator::{
    AbortCause, ProducerIdAndEpoch, TransactionCoordinator, TxnConfig, TxnError, TxnMetadata,
};
pub use records::TxnState;

pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";
