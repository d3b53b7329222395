//! `strata-prefetch`: the historical read path. Reads below the local log
//! start are served here from the segment objects the catalog lists.
//!
//! Built so far (issue 4): [`RemoteReader`], a simple, correct reader that
//! finds the position of an offset or timestamp through the segment's
//! uploaded indexes and fetches just the byte range it needs, returning
//! whole record batches within `max_bytes`. Still to come (issue 5): chunks
//! fetched in parallel ahead of the reader into a bounded memory+disk cache,
//! with their own concurrency and byte budgets.
//!
//! It must never run on the broker's hot-path tasks' budgets or touch local
//! segments. It uses `catalog` only.

pub mod batch_frame;
pub mod error;
pub mod index;
pub mod remote_reader;

pub use error::PrefetchError;
pub use remote_reader::RemoteReader;
