//! `strata-catalog`: the map from offsets and timestamps to objects in the
//! bucket. For each partition, a [`PartitionManifest`] lists the remote
//! segments (base and last offset, max timestamp, size, object keys,
//! checksum, leader epoch). Manifests are stored in the bucket itself as
//! numbered versions written with conditional PUTs (create-if-absent of the
//! next version), and every writer carries an epoch, so a stale broker is
//! fenced instead of overwriting a newer view (`docs/catalog.md`).
//!
//! It also opens the bucket from `--object-store` URLs ([`bucket`]), for
//! itself, the tiering manager and the historical read path, and counts
//! every request made to it ([`counting_store`]).
//!
//! Each partition's manifest lives in memory in one [`ManifestView`], which
//! the tiering manager publishes to and the readers of history read.
//!
//! This crate knows no other Strata crate and never reads segment data; it
//! only records where segments are.

pub mod bucket;
pub mod counting_store;
pub mod error;
pub mod layout;
pub mod manifest;
pub mod store;
#[cfg(feature = "testing")]
pub mod testing;
pub mod topics;
pub mod view;

pub use bucket::{Bucket, BucketError};
pub use error::CatalogError;
pub use layout::PartitionPath;
pub use manifest::{PartitionManifest, RemoteSegment};
pub use store::PartitionCatalog;
pub use topics::{ClusterMetadata, MetadataStore, TopicMetadata};
pub use view::ManifestView;
