//! The `auth` target: its input and the property it checks are in `linkperf_fuzz::auth` (fuzz/src/lib.rs),
//! which the stable test crates/linkperf/tests/fuzz_inputs.rs also replays every committed input through.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| linkperf_fuzz::auth(data));
