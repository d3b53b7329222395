//! Helpers of the benchmarks in `benches/` (not part of the broker):
//! `strata-delay-proxy` adds latency to every request sent to an object
//! store, `strata-seq-read` reads segment objects one chunk at a time (the
//! sequential baseline the historical read path is compared with).
