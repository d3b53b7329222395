//! Record batch v2 headers: the format lives in `strata_format::batch`
//! (shared with the tiering uploader and the prefetcher); re-exported here
//! for the log's modules.

pub use strata_format::batch::*;
