//! A run result as `linkperf import` reads it from a file (a test's --json output or an export): decoding
//! must never panic, and a decoded result must encode and decode again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linkperf_core::RunResult;

fuzz_target!(|data: &[u8]| {
    if let Ok(result) = serde_json::from_slice::<RunResult>(data) {
        let text = serde_json::to_string(&result).expect("a result encodes");
        let _: RunResult = serde_json::from_str(&text).expect("an encoded result decodes");
    }
});
