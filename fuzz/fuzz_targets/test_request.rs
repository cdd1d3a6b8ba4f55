//! A test request as the responder takes it: decoded, checked against its limits, and, when accepted, turned
//! into what the responder's stream meters are built from (the interval, its fine bins, and a few bytes
//! counted into them). None of it may panic, loop for long, or allocate without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linkperf_core::throughput::{resolution_ns, End, Flow, StreamMeter};
use linkperf_proto::{Limits, TestRequest};

fuzz_target!(|data: &[u8]| {
    let Ok(request) = serde_json::from_slice::<TestRequest>(data) else { return };
    let limited = Limits { max_udp_rate_bps: Some(100e6), ..Limits::default() };
    let _ = limited.check(&request);
    if Limits::default().check(&request).is_err() {
        return;
    }
    if let TestRequest::Throughput { duration_s, interval_s, .. } = request {
        // As the responder's throughput state does (crates/net/src/responder/bulk.rs).
        let duration = std::time::Duration::from_secs_f64(duration_s);
        let interval_ns = (interval_s * 1e9) as u64;
        let resolution = resolution_ns(interval_ns, duration.as_nanos() as u64);
        let mut meter = StreamMeter::new(0, Flow::Upload, End::Receiver, interval_ns, resolution);
        // A byte at the start and one a second later, as any stream of the test would count.
        meter.record(1, 0);
        meter.record(1, 1_000_000_000);
        let _ = meter.finish(None);
    }
});
