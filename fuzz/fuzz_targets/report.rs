//! A responder's report of a throughput test's streams, as a client reads it from a possibly hostile
//! responder: decoded, then summed over the bins in which every stream was transferring. Neither may panic
//! whatever the bins, intervals and times claim.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linkperf_core::throughput::sum_streams;
use linkperf_proto::frame::decode_body;
use linkperf_proto::Message;

fuzz_target!(|data: &[u8]| {
    let Some((&omit, body)) = data.split_first() else { return };
    if let Ok(Message::Report { streams, .. }) = decode_body(body) {
        let _ = sum_streams(&streams, usize::from(omit));
    }
});
