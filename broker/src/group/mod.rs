//! The group coordinator: consumer groups (classic protocol) and committed
//! offsets, persisted in the internal `__consumer_offsets` topic.

pub mod coordinator;
pub mod group;
pub mod records;
pub mod store;
pub mod subscription;

pub use coordinator::{
    CommittedOffset, CoordinatorConfig, GroupCoordinator, JoinRequest, OffsetCommit,
};
pub use store::OFFSETS_TOPIC;
