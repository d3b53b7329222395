//! `strata-format`: Kafka's log formats, in one place and without I/O.
//!
//! - [`batch`]: the record batch v2 header (parse, validate, CRC, the
//!   in-place rewrites a broker may make) and a scanner over consecutive
//!   batches.
//! - [`index`]: `.index` and `.timeindex` entries and lookups over an index
//!   file's bytes.
//! - [`records`]: the offset and timestamp of each record inside a batch,
//!   streamed through its codec, never inflated in memory; the first record
//!   at or after a time.
//! - [`legacy`]: message sets v0 and v1 (Produce v0–v2), read and checked
//!   for up-conversion to record batch v2.
//! - [`validator`]: what Kafka's `LogValidator` checks of a produced batch
//!   and its records (count, offsets, timestamps and their bounds, keys of
//!   compacted topics), and the max timestamp the records really carry.
//! - [`compaction`]: the cleaner's rewrite of one batch: the latest record
//!   per key kept, tombstones until their delete horizon, producer state.
//! - [`transcode`]: a validated batch re-encoded with the topic's codec
//!   (`compression.type` other than `producer`), streamed, bounded.
//! - [`txn_index`]: `.txnindex` entries (aborted transactions), encoded and
//!   decoded.
//!
//! Used by the partition log (`strata-broker`), the historical read path
//! (`strata-prefetch`) and, for what they will parse, the cleaner and the
//! transaction index. It sits at the bottom of the workspace with
//! `strata-catalog` and depends on no other crate of it. It never opens a
//! file or a socket: callers hand it bytes.

pub mod batch;
pub mod compaction;
pub mod index;
pub mod legacy;
pub mod records;
pub mod transcode;
pub mod txn_index;
pub mod validator;
