//! A control frame's body, every message type: decoding must never panic, and what decodes must survive
//! encoding and decoding again unchanged (both ends read what the other wrote).
#![no_main]

use libfuzzer_sys::fuzz_target;
use linkperf_proto::frame::{decode_body, encode_frame};

fuzz_target!(|data: &[u8]| {
    if let Ok(message) = decode_body(data) {
        let frame = encode_frame(&message);
        let again = decode_body(&frame[4..]).expect("an encoded message decodes");
        assert_eq!(format!("{again:?}"), format!("{message:?}"));
    }
});
