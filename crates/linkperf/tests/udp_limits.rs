//! UDP rates too low to measure anything (issue 9, item 9): refused as usage errors before any traffic,
//! where they used to pace one datagram a season and hang the client.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::time::Duration;

#[test]
fn rates_below_the_floor_are_usage_errors_not_hangs() {
    let cases: [&[&str]; 4] = [
        &["throughput", "--proto", "udp", "--rate", "0.001", "--duration", "2s"],
        &["throughput", "--proto", "udp", "--rate", "150", "-P", "2", "--duration", "2s"],
        &["sweep", "--rates", "0.001", "--duration", "1s"],
        &["ratesearch", "--payload", "1472", "--min", "0.001", "--max", "1M"],
    ];
    for args in cases {
        // Refused before any socket is opened: a few seconds is ample, and today's hang would exceed it.
        let output = common::linkperf().args(args).timeout(Duration::from_secs(10)).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("at least 100 bit/s per stream"), "{args:?}: {stderr}");
    }
}
