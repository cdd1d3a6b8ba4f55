//! The first bytes of every connection: the 12-byte preamble and the 4-byte data header after it.
//! Decoding must never panic, and a preamble that decodes must encode back to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linkperf_proto::{Preamble, StreamHeader, PREAMBLE_BYTES};

fuzz_target!(|data: &[u8]| {
    let _ = Preamble::read_from(&mut &data[..]);
    if let Some(bytes) = data.get(..PREAMBLE_BYTES) {
        let bytes: [u8; PREAMBLE_BYTES] = bytes.try_into().unwrap();
        if let Ok(preamble) = Preamble::decode(&bytes) {
            // The reserved byte is ignored on decode, so compare the rest.
            let again = preamble.encode();
            assert_eq!((&again[..7], &again[8..]), (&bytes[..7], &bytes[8..]));
        }
    }
    if let Some(header) = data.get(PREAMBLE_BYTES..PREAMBLE_BYTES + 4) {
        let header: [u8; 4] = header.try_into().unwrap();
        if let Some(decoded) = StreamHeader::decode(header) {
            assert_eq!(StreamHeader::decode(decoded.encode()), Some(decoded));
        }
    }
});
