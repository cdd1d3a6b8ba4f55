//! The authentication fields a peer controls: the client's nonce (in its hello) and its proof (in auth),
//! checked by the responder. Input: nonce, a 0xff byte, then the proof. Checking must never panic and must
//! accept no proof but the right one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linkperf_proto::auth::{proof, verify, Side};

const KEY: &[u8] = b"fuzzing key";
const CHALLENGE: &str = "00112233445566778899aabbccddeeff";

fuzz_target!(|data: &[u8]| {
    let (nonce, claimed) = match data.iter().position(|&b| b == 0xff) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b""[..]),
    };
    let nonce = String::from_utf8_lossy(nonce);
    let claimed = String::from_utf8_lossy(claimed);
    let right = proof(KEY, Side::Client, CHALLENGE, &nonce);
    let accepted = verify(KEY, Side::Client, CHALLENGE, &nonce, &claimed);
    assert_eq!(accepted, claimed.eq_ignore_ascii_case(&right), "proof {claimed:?} for nonce {nonce:?}");
});
