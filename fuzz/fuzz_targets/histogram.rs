//! The latency histogram text of a stored or imported run (HdrHistogram V2, deflated, base64): decoding
//! must never panic, and what decodes must answer every statistic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linkperf_core::RttHistogram;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(histogram) = RttHistogram::decode(text) {
        let _ = (histogram.count(), histogram.min_ns(), histogram.max_ns());
        let _ = (histogram.mean_ns(), histogram.stddev_ns());
        for q in [0.0, 0.5, 0.9, 0.99, 0.999, 1.0] {
            let _ = histogram.quantile_ns(q);
        }
        let _ = RttHistogram::decode(&histogram.encode()).expect("an encoded histogram decodes");
    }
});
