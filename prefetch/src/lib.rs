//! `strata-prefetch`: the historical read path. Reads below the local log
//! start will be served here, fetching segment chunks from object storage in
//! parallel ahead of the reader into a bounded memory+disk cache, with its
//! own concurrency and byte budgets so catch-up reads never slow tail reads
//! or producers.
//!
//! It must never run on the broker's hot-path tasks. It uses `catalog`
//! only. No code yet.
