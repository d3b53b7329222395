//! `strata-prefetch`: the historical read path. Reads below the local log
//! start are served here from the segment objects the catalog lists
//! (`docs/prefetch.md`).
//!
//! [`Prefetcher`] fetches segment objects in chunks with ranged GETs into a
//! shared, bounded memory+disk cache (`foyer`), several in parallel, and
//! keeps a read-ahead window per reading stream that grows while the
//! stream reads sequentially. A [`budget::GetBudget`] bounds GETs and bytes
//! in flight and shares them between priority classes ([`classes`]). It
//! runs on its own runtime, so catch-up reads never occupy the broker's
//! request tasks.
//!
//! It must never touch local segments. It uses `catalog` and `format` only
//! (batch headers and index lookups come from `strata-format`).

pub mod budget;
pub mod cache_writeback;
pub mod chunk_cache;
pub mod classes;
pub mod config;
mod cursor;
pub mod error;
pub mod governor;
pub mod index_cache;
pub mod latency;
pub mod prefetcher;
pub mod quota;
pub mod stats;
mod stream_key;
pub mod threads;

pub use classes::{ClassPolicy, PriorityClass};
pub use config::PrefetchConfig;
pub use error::PrefetchError;
pub use prefetcher::{Prefetcher, ReadRequest, StreamKey};
pub use quota::FetchQuota;
pub use stats::PrefetchStats;
