//! `TestPlan`: a test request parsed into typed, bounded values at the protocol boundary.
//!
//! A `TestRequest` is what a peer sent (any `f64`, any `u64`); a `TestPlan` is what the responder will
//! serve, built only by [`crate::Limits::admit`], so every value in it is within the ranges of
//! docs/protocol.md ("Ranges"). Nothing after the boundary divides by a peer's number unchecked, and no
//! pacer can be asked to sleep for days. This module holds the typed values; `limits` decides the ranges.

use std::time::Duration;

use linkperf_core::{Proto, WaitMode};

use crate::TestRequest;

/// A reporting interval: a whole number of microseconds, from `MIN_INTERVAL` to `MAX_INTERVAL`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interval(pub(crate) Duration);

impl Interval {
    /// The interval.
    pub fn get(self) -> Duration {
        self.0
    }
}

/// A UDP rate of one stream, bits per second of payload, finite and within `MIN_RATE_BPS..=MAX_RATE_BPS`
/// (and never so low that one datagram takes more than `MAX_DATAGRAM_GAP`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate(pub(crate) f64);

impl Rate {
    /// Bits per second.
    pub fn bps(self) -> f64 {
        self.0
    }
}

/// A test the responder has agreed to serve.
#[derive(Debug, Clone, PartialEq)]
pub struct TestPlan {
    /// The transport of its data.
    pub proto: Proto,
    /// Data connections (or UDP sockets) over the whole test, 1 to `Limits::max_streams_per_test`
    /// (unbounded count of probes for a connect test, which holds no connection open).
    pub connections: u32,
    /// How long the test says it will run, when it says so (at most `max_duration`).
    pub planned: Option<Duration>,
    /// What the test is.
    pub test: PlannedTest,
}

/// The kind of a planned test and its own values.
#[derive(Debug, Clone, PartialEq)]
pub enum PlannedTest {
    /// Echo of messages of at most `message_bytes`.
    Latency {
        /// Largest message, 1 to `max_message_bytes` (UDP: 12 to 65 527).
        message_bytes: u64,
        /// How the responder waits (spin only when the operator allows it).
        wait: WaitMode,
    },
    /// Connection probes.
    Connect,
    /// Bulk transfer.
    Throughput(ThroughputPlan),
}

/// The bounded values of a throughput test.
#[derive(Debug, Clone, PartialEq)]
pub struct ThroughputPlan {
    /// Bytes per write, 1 to `max_message_bytes` (UDP: 16 to 65 527).
    pub write_bytes: u64,
    /// How long the responder sends, at most `max_duration`.
    pub duration: Duration,
    /// Reporting interval.
    pub interval: Interval,
    /// Socket buffer size, `MIN_BUFFER_BYTES..=MAX_BUFFER_BYTES`.
    pub buffer_bytes: Option<u64>,
    /// A congestion-control name of 1 to 15 letters, digits, `-` or `_`.
    pub congestion: Option<String>,
    /// Receivers discard in the kernel.
    pub discard: bool,
    /// UDP: the pacing rate of each stream (`None`: unpaced, only without `--max-rate` or as a burst).
    pub rate: Option<Rate>,
    /// UDP: GSO and GRO.
    pub gso: bool,
    /// UDP: datagrams per send call, 0 to `MAX_BATCH` (0 counts as 1).
    pub batch: u32,
    /// The directions take turns.
    pub alternating: bool,
    /// UDP: a burst of 1 to `MAX_DATAGRAMS` datagrams per stream.
    pub datagrams: Option<u64>,
}

impl TestPlan {
    /// The test's name, as in `TestRequest::name`.
    pub fn name(&self) -> &'static str {
        match self.test {
            PlannedTest::Latency { .. } => "latency",
            PlannedTest::Connect => "connect",
            PlannedTest::Throughput(_) => "throughput",
        }
    }

    /// The wait mode of the test's data path.
    pub fn wait(&self) -> WaitMode {
        match self.test {
            PlannedTest::Latency { wait, .. } => wait,
            _ => WaitMode::Block,
        }
    }

    /// The longest message or write of the test, in bytes (0 for connect).
    pub fn message_bytes(&self) -> u64 {
        match &self.test {
            PlannedTest::Latency { message_bytes, .. } => *message_bytes,
            PlannedTest::Connect => 0,
            PlannedTest::Throughput(plan) => plan.write_bytes,
        }
    }

    /// The plan in the request's wire form, with its bounded values: the hand-over to data paths that
    /// still take a request (the responder's throughput streams).
    pub fn to_request(&self) -> TestRequest {
        let planned_duration_s = self.planned.map(|d| d.as_secs_f64());
        match &self.test {
            PlannedTest::Latency { message_bytes, wait } => TestRequest::Latency {
                proto: self.proto,
                max_message_bytes: *message_bytes,
                connections: self.connections,
                wait: *wait,
                planned_duration_s,
            },
            PlannedTest::Connect => TestRequest::Connect { proto: self.proto, planned_duration_s },
            PlannedTest::Throughput(plan) => TestRequest::Throughput {
                proto: self.proto,
                connections: self.connections,
                write_bytes: plan.write_bytes,
                duration_s: plan.duration.as_secs_f64(),
                interval_s: plan.interval.get().as_secs_f64(),
                buffer_bytes: plan.buffer_bytes,
                congestion: plan.congestion.clone(),
                discard: plan.discard,
                rate_bps: plan.rate.map(Rate::bps),
                gso: plan.gso,
                batch: plan.batch,
                alternating: plan.alternating,
                datagrams: plan.datagrams,
            },
        }
    }
}
