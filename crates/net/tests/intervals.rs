//! Intervals reach the observer while a throughput test runs: an upload's from the responder, a
//! download's from the client's own streams.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use std::sync::Mutex;

use linkperf_core::ThroughputSpec;
use linkperf_net::observer::Observer;
use linkperf_net::throughput::run_throughput;
use linkperf_net::{Responder, ResponderConfig, Target};

/// Keeps every interval reported, and what they were named.
#[derive(Default)]
struct Intervals(Mutex<Vec<(f64, f64, f64)>>, Mutex<Vec<String>>);

impl Observer for Intervals {
    fn interval(&self, what: &str, start_s: f64, end_s: f64, bps: f64) {
        self.0.lock().unwrap().push((start_s, end_s, bps));
        self.1.lock().unwrap().push(what.to_string());
    }
}

/// A 1 s test of 0.25 s intervals in `direction` against a fresh responder: its first sum's intervals as
/// reported at the end, and what the observer saw meanwhile.
fn run(direction: linkperf_core::Direction) -> (Vec<linkperf_core::throughput::IntervalSample>, Intervals) {
    let config = ResponderConfig { bind: "127.0.0.1:0".parse().unwrap(), ..ResponderConfig::default() };
    let responder = Responder::bind(config).unwrap().spawn().unwrap();
    let spec = ThroughputSpec {
        phases: vec![direction],
        sizes_bytes: vec![128 * 1024],
        duration_s: 1.0,
        interval_s: 0.25,
        ..ThroughputSpec::default()
    };
    let observer = Intervals::default();
    let run = run_throughput(&Target::inet(responder.address()), None, &spec, &observer).unwrap();
    assert!(run.error.is_none());
    (run.series[0].intervals.clone(), observer)
}

#[test]
fn upload_intervals_arrive_during_the_run() {
    let (final_intervals, observer) = run(linkperf_core::Direction::Upload);
    let intervals = observer.0.lock().unwrap().clone();
    // Four intervals in 1 s; the last may still be under way when the report is asked for.
    assert!(intervals.len() >= 3, "{intervals:?}");
    for (i, (start, end, bps)) in intervals.iter().enumerate() {
        assert!((start - i as f64 * 0.25).abs() < 1e-9 && (end - start - 0.25).abs() < 1e-9, "{intervals:?}");
        assert!(*bps > 0.0, "{intervals:?}");
    }
    // They agree with the final report's intervals, which count the same reads.
    let first_live = intervals[0].2;
    let first_final = final_intervals[0].goodput_bps;
    assert!((first_live - first_final).abs() <= first_final * 0.05, "{first_live} vs {first_final}");
}

#[test]
fn download_intervals_are_reported_as_they_end() {
    let (final_intervals, observer) = run(linkperf_core::Direction::Download);
    let intervals = observer.0.lock().unwrap().clone();
    assert!(intervals.len() >= 3, "{intervals:?}");
    assert!(observer.1.lock().unwrap().iter().all(|w| w.contains("download")));
    for (i, (start, end, bps)) in intervals.iter().enumerate() {
        assert!((start - i as f64 * 0.25).abs() < 1e-9 && (end - start - 0.25).abs() < 1e-9, "{intervals:?}");
        assert!(*bps > 0.0, "{intervals:?}");
    }
    let first_final = final_intervals[0].goodput_bps;
    assert!((intervals[0].2 - first_final).abs() <= first_final * 0.05, "{} vs {first_final}", intervals[0].2);
}
