//! `strata-catalog`: the map from offsets and timestamps to objects in the
//! bucket. Per partition it will hold the list of remote segments (base and
//! last offset, max timestamp, size, object keys, checksum, leader epoch),
//! stored in the bucket as versioned manifests written with conditional
//! PUTs so that a stale broker is fenced.
//!
//! This crate knows no other Strata crate: tiering, prefetch and the broker
//! depend on it, never the other way round. No code yet — tiering is the
//! next milestone (see the issue tracker).
