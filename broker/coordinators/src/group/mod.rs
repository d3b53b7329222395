//! The group coordinator: consumer groups (classic protocol) and committed
//! offsets, persisted in the internal `__consumer_offsets` topic.

pub mod coordinator;
pub mod group;
pub mod join;
pub mod lag;
pub mod loading;
pub mod metrics;
pub mod offsets;
pub(crate) mod pending_txn;
pub mod records;
pub(crate) mod remote_lag;
pub mod store;
/// The consumer protocol's embedded messages, which the coordinator
/// otherwise treats as opaque bytes.
pub use strata_protocol::consumer_protocol as subscription;
pub mod timers;
pub mod txn_offsets;

pub use coordinator::{CoordinatorConfig, GroupCoordinator, JoinRequest};
pub use offsets::{CommittedOffset, OffsetCommit};
pub use store::OFFSETS_TOPIC;
