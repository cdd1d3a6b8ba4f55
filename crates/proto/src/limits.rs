//! `Limits`: what a responder is willing to serve, and the parse of a request into a [`TestPlan`] within
//! them (parse, don't validate: the ranges below are checked once, here, and a `TestPlan` carries them).
//!
//! The ranges of every field are listed in docs/protocol.md ("Ranges"); the constants below are the
//! ones that do not depend on the operator's settings.

use std::time::Duration;

use linkperf_core::{Proto, WaitMode};

use crate::refusal::{Field, Refusal};
use crate::test_plan::{Interval, PlannedTest, Rate, TestPlan, ThroughputPlan};
use crate::TestRequest;

/// A responder's limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Most authenticated control sessions served at once.
    pub max_sessions: u32,
    /// Longest test, and longest session (its tests chained); the responder ends a test's data traffic
    /// and a session after this.
    pub max_duration: Duration,
    /// Largest message, in bytes.
    pub max_message_bytes: u64,
    /// Most data connections (or UDP sockets) opened over one test, and open at once in one session.
    pub max_streams_per_test: u32,
    /// Highest UDP rate of one test, all streams together, in bits per second (`None`: no limit).
    pub max_udp_rate_bps: Option<f64>,
    /// Whether a client may ask the responder to spin (`wait: spin`, a core per connection).
    pub allow_spin: bool,
    /// Most tests over one session's life.
    pub max_tests_per_session: u32,
    /// Most tests open at once in one session.
    pub max_open_tests: u32,
}

impl Default for Limits {
    /// The limits of a responder that only its own user reaches (the embedded loopback responder of a
    /// test): spin allowed, no UDP rate limit. `serve` sets its own, safer defaults.
    fn default() -> Self {
        Self {
            max_sessions: 64,
            max_duration: Duration::from_secs(3600),
            max_message_bytes: 16 << 20,
            max_streams_per_test: 1024,
            max_udp_rate_bps: None,
            allow_spin: true,
            max_tests_per_session: 100_000,
            max_open_tests: 8,
        }
    }
}

/// The largest UDP payload over IPv4 (65535 - 20 IP - 8 UDP).
pub const MAX_UDP_PAYLOAD_IPV4: u64 = 65_507;
/// The largest UDP payload over IPv6 without jumbograms (65535 - 8 UDP).
pub const MAX_UDP_PAYLOAD_IPV6: u64 = 65_527;
/// The shortest reporting interval.
pub const MIN_INTERVAL: Duration = Duration::from_millis(1);
/// The longest reporting interval.
pub const MAX_INTERVAL: Duration = Duration::from_secs(3600);
/// Most intervals in one test (duration / interval): bounds every per-interval table.
pub const MAX_INTERVALS: u64 = 100_000;
/// The lowest UDP rate of a stream, in bits per second.
pub const MIN_RATE_BPS: f64 = 1_000.0;
/// The highest UDP rate of a stream (beyond any link), in bits per second.
pub const MAX_RATE_BPS: f64 = 1e13;
/// The longest gap between two datagrams of a paced stream: a rate is at least one datagram per gap.
pub const MAX_DATAGRAM_GAP: Duration = Duration::from_secs(1);
/// The smallest socket buffer a test may ask for, in bytes.
pub const MIN_BUFFER_BYTES: u64 = 1024;
/// The largest socket buffer a test may ask for, in bytes.
pub const MAX_BUFFER_BYTES: u64 = 1 << 30;
/// Most datagrams per send call.
pub const MAX_BATCH: u32 = 1024;
/// Most datagrams in one burst.
pub const MAX_DATAGRAMS: u64 = 100_000_000;

impl Limits {
    /// Parses a request into the plan of a test within these limits, or the reason it is refused.
    pub fn admit(&self, request: &TestRequest) -> Result<TestPlan, Refusal> {
        match request {
            TestRequest::Latency { proto, max_message_bytes, connections, wait, planned_duration_s } => {
                let planned = self.planned(*planned_duration_s)?;
                let min = if *proto == Proto::Udp { crate::PROBE_HEADER_BYTES as u64 } else { 1 };
                let message_bytes = self.message(*proto, *max_message_bytes, min)?;
                let connections = self.connections(*connections)?;
                let wait = self.wait(*wait)?;
                let test = PlannedTest::Latency { message_bytes, wait };
                Ok(TestPlan { proto: *proto, connections, planned, test })
            }
            TestRequest::Connect { proto, planned_duration_s } => {
                let planned = self.planned(*planned_duration_s)?;
                if !proto.is_connection_oriented() {
                    return Err(Refusal::Transport { test: "connect", proto: *proto });
                }
                Ok(TestPlan { proto: *proto, connections: 0, planned, test: PlannedTest::Connect })
            }
            TestRequest::Throughput { .. } => self.throughput(request),
        }
    }

    fn throughput(&self, request: &TestRequest) -> Result<TestPlan, Refusal> {
        let TestRequest::Throughput {
            proto,
            connections,
            write_bytes,
            duration_s,
            interval_s,
            buffer_bytes,
            congestion,
            discard,
            rate_bps,
            gso,
            batch,
            alternating,
            datagrams,
        } = request
        else {
            // Only `admit` calls this, with a throughput request; any other is `admit`'s to parse.
            return self.admit(request);
        };
        let duration = self.duration(*duration_s, Field::Duration)?;
        let interval = interval(*interval_s, duration)?;
        let min = if *proto == Proto::Udp { crate::STREAM_PROBE_BYTES as u64 } else { 1 };
        let write_bytes = self.message(*proto, *write_bytes, min)?;
        let connections = self.connections(*connections)?;
        let mut plan = ThroughputPlan {
            write_bytes,
            duration,
            interval,
            buffer_bytes: buffer_bytes.map(buffer).transpose()?,
            congestion: congestion.as_deref().map(congestion_name).transpose()?,
            discard: *discard,
            rate: rate_bps.map(|r| rate(r, write_bytes)).transpose()?,
            gso: *gso,
            batch: (*batch <= MAX_BATCH).then_some(*batch).ok_or(Refusal::Batch { batch: *batch })?,
            alternating: *alternating,
            datagrams: datagrams.map(burst).transpose()?,
        };
        if *proto == Proto::Udp {
            self.limit_udp_rate(&mut plan, connections)?;
        } else {
            // A stream test has no rate, burst, GSO or batch: its plan carries none of them (a TCP request
            // naming 4 x 100 Mbit/s would otherwise plan a rate past --max-rate, if unused).
            plan.rate = None;
            plan.datagrams = None;
            plan.gso = false;
            plan.batch = 0;
        }
        Ok(TestPlan { proto: *proto, connections, planned: Some(duration), test: PlannedTest::Throughput(plan) })
    }

    /// A planned length: none, or a finite length above zero within `max_duration`.
    fn planned(&self, planned_s: Option<f64>) -> Result<Option<Duration>, Refusal> {
        planned_s.map(|p| self.duration(p, Field::PlannedDuration)).transpose()
    }

    fn duration(&self, seconds: f64, field: Field) -> Result<Duration, Refusal> {
        if !positive(seconds) {
            return Err(Refusal::NotPositive { field });
        }
        let limit_s = self.max_duration.as_secs_f64();
        if seconds > limit_s {
            return Err(Refusal::TooLong { planned_s: seconds, limit_s });
        }
        // Durations count whole nanoseconds: one shorter than 1 ns would be a test of no time at all.
        match Duration::from_secs_f64(seconds) {
            Duration::ZERO => Err(Refusal::NotPositive { field }),
            duration => Ok(duration),
        }
    }

    fn message(&self, proto: Proto, bytes: u64, min: u64) -> Result<u64, Refusal> {
        if bytes == 0 {
            return Err(Refusal::EmptyMessage);
        }
        if bytes > self.max_message_bytes {
            return Err(Refusal::MessageTooLarge { bytes, limit: self.max_message_bytes });
        }
        if proto == Proto::Udp && bytes > MAX_UDP_PAYLOAD_IPV6 {
            return Err(Refusal::DatagramTooLarge { bytes });
        }
        if bytes < min {
            return Err(Refusal::DatagramTooSmall { bytes, min });
        }
        Ok(bytes)
    }

    fn connections(&self, requested: u32) -> Result<u32, Refusal> {
        if requested == 0 || requested > self.max_streams_per_test {
            return Err(Refusal::Connections { requested, limit: self.max_streams_per_test });
        }
        Ok(requested)
    }

    fn wait(&self, wait: WaitMode) -> Result<WaitMode, Refusal> {
        match wait {
            WaitMode::Spin if !self.allow_spin => Err(Refusal::SpinNotAllowed),
            wait => Ok(wait),
        }
    }

    /// With `--max-rate`: a paced test within it; an unpaced one has the responder's own streams paced at
    /// the limit, shared among the test's streams (what the client sends is its own business: the limit
    /// bounds what the responder sends); an unpaced burst is served up to one second's worth of the limit.
    fn limit_udp_rate(&self, plan: &mut ThroughputPlan, connections: u32) -> Result<(), Refusal> {
        let Some(limit_bps) = self.max_udp_rate_bps else { return Ok(()) };
        let streams = f64::from(connections);
        match (plan.rate, plan.datagrams) {
            (Some(rate), _) if rate.bps() * streams > limit_bps => {
                Err(Refusal::RateOverLimit { total_bps: rate.bps() * streams, limit_bps })
            }
            (Some(_), _) => Ok(()),
            (None, Some(count)) => {
                let bits = count as f64 * plan.write_bytes as f64 * 8.0 * streams;
                (bits <= limit_bps).then_some(()).ok_or(Refusal::BurstOverLimit { bits, limit_bps })
            }
            (None, None) => {
                // Each stream's share, rounded down so that the shares add up to no more than the limit:
                // the plan, sent back as a request, passes the check above.
                let mut share = limit_bps / streams;
                while share * streams > limit_bps {
                    share = share.next_down();
                }
                plan.rate = Some(rate(share, plan.write_bytes)?);
                Ok(())
            }
        }
    }
}

/// An interval within `MIN_INTERVAL..=MAX_INTERVAL`, at most `MAX_INTERVALS` of them in `duration`,
/// rounded to whole microseconds.
fn interval(seconds: f64, duration: Duration) -> Result<Interval, Refusal> {
    if !positive(seconds) {
        return Err(Refusal::NotPositive { field: Field::Interval });
    }
    if seconds < MIN_INTERVAL.as_secs_f64() {
        return Err(Refusal::IntervalTooShort { interval_s: seconds });
    }
    if seconds > MAX_INTERVAL.as_secs_f64() {
        return Err(Refusal::IntervalTooLong { interval_s: seconds });
    }
    let intervals = duration.as_secs_f64() / seconds;
    if intervals > MAX_INTERVALS as f64 {
        return Err(Refusal::TooManyIntervals { intervals });
    }
    Ok(Interval(Duration::from_micros((seconds * 1e6).round() as u64)))
}

/// A rate of at least one datagram of `write_bytes` per `MAX_DATAGRAM_GAP`, and at least `MIN_RATE_BPS`.
fn rate(rate_bps: f64, write_bytes: u64) -> Result<Rate, Refusal> {
    if !positive(rate_bps) {
        return Err(Refusal::NotPositive { field: Field::Rate });
    }
    let floor_bps = MIN_RATE_BPS.max(write_bytes as f64 * 8.0 / MAX_DATAGRAM_GAP.as_secs_f64());
    if rate_bps < floor_bps {
        return Err(Refusal::RateTooLow { rate_bps, floor_bps });
    }
    if rate_bps > MAX_RATE_BPS {
        return Err(Refusal::RateTooHigh { rate_bps });
    }
    Ok(Rate(rate_bps))
}

fn buffer(bytes: u64) -> Result<u64, Refusal> {
    (MIN_BUFFER_BYTES..=MAX_BUFFER_BYTES).contains(&bytes).then_some(bytes).ok_or(Refusal::BufferSize { bytes })
}

fn burst(count: u64) -> Result<u64, Refusal> {
    (1..=MAX_DATAGRAMS).contains(&count).then_some(count).ok_or(Refusal::Datagrams { count })
}

/// A Linux congestion-control name (`TCP_CA_NAME_MAX` is 16 with the terminating zero).
fn congestion_name(name: &str) -> Result<String, Refusal> {
    let valid =
        (1..=15).contains(&name.len()) && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    valid.then(|| name.to_string()).ok_or(Refusal::CongestionName)
}

/// Whether a number from a peer is usable as a duration or rate.
fn positive(value: f64) -> bool {
    value.is_finite() && value > 0.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::refusal::Budget;

    fn latency(proto: Proto, size: u64, connections: u32, planned: Option<f64>) -> TestRequest {
        TestRequest::Latency {
            proto,
            max_message_bytes: size,
            connections,
            wait: WaitMode::Block,
            planned_duration_s: planned,
        }
    }

    fn refusal(limits: &Limits, request: &TestRequest) -> Refusal {
        limits.admit(request).expect_err("refused")
    }

    #[test]
    fn requests_within_limits_become_plans() {
        let plan = Limits::default().admit(&latency(Proto::Tcp, 65536, 16, Some(10.0))).unwrap();
        assert_eq!(plan.connections, 16);
        assert_eq!(plan.planned, Some(Duration::from_secs(10)));
        assert_eq!(plan.test, PlannedTest::Latency { message_bytes: 65536, wait: WaitMode::Block });
    }

    #[test]
    fn requests_over_limits_are_refused_with_the_limit() {
        let limits = Limits { max_duration: Duration::from_secs(5), max_message_bytes: 1000, ..Limits::default() };
        let too_long = refusal(&limits, &latency(Proto::Tcp, 64, 1, Some(60.0)));
        assert_eq!(too_long, Refusal::TooLong { planned_s: 60.0, limit_s: 5.0 });
        assert!(too_long.to_string().contains("at most 5 s"), "{too_long}");
        let too_big = refusal(&limits, &latency(Proto::Tcp, 1001, 1, None));
        assert_eq!(too_big, Refusal::MessageTooLarge { bytes: 1001, limit: 1000 });
        assert!(too_big.to_string().contains("limit of 1000 bytes"));
        assert_eq!(
            refusal(&limits, &latency(Proto::Tcp, 64, 0, None)),
            Refusal::Connections { requested: 0, limit: 1024 }
        );
        assert!(matches!(refusal(&limits, &latency(Proto::Tcp, 64, 5000, None)), Refusal::Connections { .. }));
        assert_eq!(refusal(&limits, &latency(Proto::Tcp, 0, 1, None)), Refusal::EmptyMessage);
    }

    #[test]
    fn udp_messages_must_fit_a_datagram_and_hold_its_header() {
        let limits = Limits::default();
        assert_eq!(
            refusal(&limits, &latency(Proto::Udp, 65_528, 1, None)),
            Refusal::DatagramTooLarge { bytes: 65_528 }
        );
        assert_eq!(
            refusal(&limits, &latency(Proto::Udp, 11, 1, None)),
            Refusal::DatagramTooSmall { bytes: 11, min: 12 }
        );
        assert!(limits.admit(&latency(Proto::Udp, 12, 1, None)).is_ok());
    }

    #[test]
    fn planned_durations_must_be_finite_and_positive() {
        for planned in [f64::NAN, f64::INFINITY, 0.0, -1.0, 1e300] {
            assert!(Limits::default().admit(&latency(Proto::Tcp, 64, 1, Some(planned))).is_err(), "{planned}");
        }
    }

    #[test]
    fn spin_is_served_only_where_the_operator_allows_it() {
        let spin = TestRequest::Latency {
            proto: Proto::Udp,
            max_message_bytes: 64,
            connections: 1,
            wait: WaitMode::Spin,
            planned_duration_s: None,
        };
        assert!(Limits::default().admit(&spin).is_ok());
        let strict = Limits { allow_spin: false, ..Limits::default() };
        assert_eq!(refusal(&strict, &spin), Refusal::SpinNotAllowed);
        assert_eq!(Refusal::SpinNotAllowed.code(), crate::ErrorCode::Unsupported);
    }

    fn throughput(proto: Proto, duration_s: f64, rate_bps: Option<f64>, connections: u32) -> TestRequest {
        TestRequest::Throughput {
            proto,
            connections,
            write_bytes: 1472,
            duration_s,
            interval_s: 1.0,
            buffer_bytes: None,
            congestion: None,
            discard: false,
            rate_bps,
            gso: true,
            batch: 1,
            alternating: false,
            datagrams: None,
        }
    }

    fn with(request: TestRequest, change: impl FnOnce(&mut TestRequest)) -> TestRequest {
        let mut request = request;
        change(&mut request);
        request
    }

    #[test]
    fn impossible_throughput_numbers_are_refused() {
        let request = |duration_s, rate_bps| throughput(Proto::Tcp, duration_s, rate_bps, 1);
        assert!(Limits::default().admit(&request(10.0, Some(1e6))).is_ok());
        for (duration, rate) in [
            (f64::NAN, None),
            (0.0, None),
            (-1.0, None),
            (10.0, Some(f64::INFINITY)),
            (10.0, Some(0.0)),
            (10.0, Some(1e-20)),
            (10.0, Some(0.001)),
            (10.0, Some(f64::NAN)),
            (10.0, Some(1e20)),
        ] {
            assert!(Limits::default().admit(&request(duration, rate)).is_err(), "{duration} {rate:?}");
        }
    }

    #[test]
    fn a_rate_is_at_least_one_datagram_a_second() {
        let limits = Limits::default();
        // 1472-byte datagrams: 11 776 bit/s is one a second.
        let slow = throughput(Proto::Udp, 10.0, Some(11_000.0), 1);
        assert_eq!(refusal(&limits, &slow), Refusal::RateTooLow { rate_bps: 11_000.0, floor_bps: 11_776.0 });
        assert!(limits.admit(&throughput(Proto::Udp, 10.0, Some(11_776.0), 1)).is_ok());
    }

    #[test]
    fn a_duration_shorter_than_a_nanosecond_is_no_duration() {
        // Found by the test_request fuzz target: 2.1e-95 s is above zero, yet a test of 0 ns once planned.
        let request = throughput(Proto::Udp, 2.1e-95, None, 5);
        assert_eq!(refusal(&Limits::default(), &request), Refusal::NotPositive { field: Field::Duration });
        let request = TestRequest::Connect { proto: Proto::Tcp, planned_duration_s: Some(1e-10) };
        assert_eq!(refusal(&Limits::default(), &request), Refusal::NotPositive { field: Field::PlannedDuration });
        let shortest = Limits::default().admit(&throughput(Proto::Tcp, 1e-9, None, 1)).unwrap();
        assert_eq!(shortest.planned, Some(Duration::from_nanos(1)), "1 ns is a duration");
    }

    #[test]
    fn absurd_intervals_are_refused_and_others_rounded_to_microseconds() {
        let limits = Limits::default();
        let interval = |interval_s: f64, duration_s: f64| {
            with(throughput(Proto::Tcp, duration_s, None, 1), |r| {
                if let TestRequest::Throughput { interval_s: i, .. } = r {
                    *i = interval_s;
                }
            })
        };
        assert_eq!(refusal(&limits, &interval(1e-9, 10.0)), Refusal::IntervalTooShort { interval_s: 1e-9 });
        assert_eq!(refusal(&limits, &interval(0.0, 10.0)), Refusal::NotPositive { field: Field::Interval });
        assert_eq!(refusal(&limits, &interval(7200.0, 3600.0)), Refusal::IntervalTooLong { interval_s: 7200.0 });
        assert_eq!(refusal(&limits, &interval(0.001, 3600.0)), Refusal::TooManyIntervals { intervals: 3_600_000.0 });
        let plan = limits.admit(&interval(0.100_000_4, 10.0)).unwrap();
        let PlannedTest::Throughput(plan) = plan.test else { panic!("a throughput plan") };
        assert_eq!(plan.interval.get(), Duration::from_millis(100));
    }

    #[test]
    fn buffers_batches_bursts_and_congestion_names_are_bounded() {
        let limits = Limits::default();
        let base = throughput(Proto::Udp, 1.0, Some(1e6), 1);
        let set = |change: fn(&mut TestRequest)| with(base.clone(), change);
        let buffer = set(|r| {
            if let TestRequest::Throughput { buffer_bytes, .. } = r {
                *buffer_bytes = Some(u64::MAX)
            }
        });
        assert_eq!(refusal(&limits, &buffer), Refusal::BufferSize { bytes: u64::MAX });
        let batch = set(|r| {
            if let TestRequest::Throughput { batch, .. } = r {
                *batch = u32::MAX
            }
        });
        assert_eq!(refusal(&limits, &batch), Refusal::Batch { batch: u32::MAX });
        let burst = set(|r| {
            if let TestRequest::Throughput { datagrams, .. } = r {
                *datagrams = Some(0)
            }
        });
        assert_eq!(refusal(&limits, &burst), Refusal::Datagrams { count: 0 });
        for name in ["", "bbr\n2026-01-01 forged", "a-name-longer-than-15"] {
            let request = with(base.clone(), |r| {
                if let TestRequest::Throughput { congestion, .. } = r {
                    *congestion = Some(name.into());
                }
            });
            assert_eq!(refusal(&limits, &request), Refusal::CongestionName, "{name}");
        }
        let cubic = set(|r| {
            if let TestRequest::Throughput { congestion, .. } = r {
                *congestion = Some("cubic".into())
            }
        });
        assert!(limits.admit(&cubic).is_ok());
    }

    #[test]
    fn udp_rates_above_the_limit_are_refused() {
        let limits = Limits { max_udp_rate_bps: Some(100e6), ..Limits::default() };
        let request = |rate_bps, connections| throughput(Proto::Udp, 1.0, rate_bps, connections);
        assert!(limits.admit(&request(Some(50e6), 2)).is_ok());
        let over = refusal(&limits, &request(Some(60e6), 2));
        assert_eq!(over, Refusal::RateOverLimit { total_bps: 120e6, limit_bps: 100e6 });
        assert!(over.to_string().contains("120.0 Mbit/s of UDP exceeds"));
    }

    #[test]
    fn a_stream_test_plans_none_of_the_udp_fields() {
        // Found by the mutation run of the test_request fuzz target: a TCP request with a UDP rate of
        // 4 x 100 Mbit/s was planned with it, past a 100 Mbit/s limit.
        let limits = Limits { max_udp_rate_bps: Some(100e6), ..Limits::default() };
        let plan = limits.admit(&throughput(Proto::Tcp, 1.0, Some(100e6), 4)).unwrap();
        let PlannedTest::Throughput(throughput) = &plan.test else { panic!("a throughput plan") };
        assert_eq!((throughput.rate, throughput.datagrams, throughput.gso, throughput.batch), (None, None, false, 0));
        assert_eq!(limits.admit(&plan.to_request()).as_ref(), Ok(&plan));
    }

    #[test]
    fn an_unpaced_udp_test_has_the_responders_streams_paced_at_the_limit() {
        let limits = Limits { max_udp_rate_bps: Some(100e6), ..Limits::default() };
        let plan = limits.admit(&throughput(Proto::Udp, 1.0, None, 4)).unwrap();
        let PlannedTest::Throughput(plan) = plan.test else { panic!("a throughput plan") };
        assert_eq!(plan.rate.map(Rate::bps), Some(25e6), "100 Mbit/s shared by 4 streams");
        let unlimited = Limits::default().admit(&throughput(Proto::Udp, 1.0, None, 4)).unwrap();
        assert!(matches!(unlimited.test, PlannedTest::Throughput(ThroughputPlan { rate: None, .. })));
        // Found by the test_request fuzz target: 100 Mbit/s / 11 x 11 is 100 000 000.00000001 in floating
        // point; the shares are rounded down so that the plan, sent back, is within the limit.
        let eleven = limits.admit(&throughput(Proto::Udp, 1.0, None, 11)).unwrap();
        assert_eq!(limits.admit(&eleven.to_request()), Ok(eleven));
    }

    #[test]
    fn a_burst_of_at_most_a_second_at_the_limit_is_served_unpaced() {
        let limits = Limits { max_udp_rate_bps: Some(100e6), ..Limits::default() };
        let burst = |count| {
            with(throughput(Proto::Udp, 1.0, None, 1), |r| {
                if let TestRequest::Throughput { datagrams, .. } = r {
                    *datagrams = Some(count);
                }
            })
        };
        // 1000 x 1472 bytes = 11.8 Mbit, within 100 Mbit; 10 000 of them are 117.8 Mbit, beyond.
        assert!(limits.admit(&burst(1000)).is_ok());
        assert!(matches!(refusal(&limits, &burst(10_000)), Refusal::BurstOverLimit { .. }));
    }

    #[test]
    fn connect_needs_a_connection_oriented_transport() {
        let request = TestRequest::Connect { proto: Proto::Udp, planned_duration_s: None };
        assert_eq!(refusal(&Limits::default(), &request), Refusal::Transport { test: "connect", proto: Proto::Udp });
    }

    #[test]
    fn spent_budgets_name_themselves() {
        let sessions = Refusal::BudgetSpent { budget: Budget::Sessions, limit: 64 };
        assert!(sessions.to_string().contains("at most 64 sessions at once"), "{sessions}");
        let memory = Refusal::BudgetSpent { budget: Budget::BufferMemory, limit: 1 << 30 };
        assert!(memory.to_string().contains("buffer memory"), "{memory}");
        let waiters = Refusal::BudgetSpent { budget: Budget::AddressWaiters, limit: 8 };
        assert!(waiters.to_string().contains("places to wait for a session from one address"), "{waiters}");
    }

    #[test]
    fn a_plan_goes_back_to_the_wire_form_with_its_bounded_values() {
        let request = throughput(Proto::Udp, 2.0, Some(5e6), 3);
        let plan = Limits::default().admit(&request).unwrap();
        assert_eq!(plan.to_request(), request);
        assert_eq!(Limits::default().admit(&plan.to_request()), Ok(plan));
    }
}
