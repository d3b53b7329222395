#![no_main]
//! See strata_broker::fuzz_targets::request.
libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_broker::fuzz_targets::request(data));
