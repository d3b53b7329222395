#![no_main]
//! See strata_broker::fuzz_targets::stored_files.
libfuzzer_sys::fuzz_target!(|data: &[u8]| strata_broker::fuzz_targets::stored_files(data));
