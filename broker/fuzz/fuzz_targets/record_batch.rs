#![no_main]
//! See strata_broker::fuzz_targets::record_batch.
libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_broker::fuzz_targets::record_batch(data));
