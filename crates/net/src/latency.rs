//! The request/response latency driver: one series per message size, over one or more concurrent sessions.
//!
//! Round-trip times are taken with the monotonic clock around each exchange. In open loop (`rate_per_s`)
//! each exchange has an intended start on a fixed schedule and its time is measured from that intended start,
//! so a stall delays the following requests and shows in their times instead of being hidden (no coordinated
//! omission). Figures are defined in docs/metrics.md.

use std::sync::Barrier;
use std::time::{Duration, Instant};

use linkperf_core::run_result::SeriesCounters;
use linkperf_core::{LatencySpec, Proto, RttHistogram, Series, StopCondition};
use linkperf_proto::limits::{MAX_UDP_PAYLOAD_IPV4, MAX_UDP_PAYLOAD_IPV6};
use linkperf_proto::{Preamble, Role, TestRequest, PROBE_HEADER_BYTES};

use crate::observer::{Measurement, Observer, ProgressUnit};
use crate::run::MeasuredRun;
use crate::transport::stream::StreamPingPong;
use crate::transport::udp::UdpPingPong;
use crate::transport::{Exchange, PingPong};
use crate::{Address, ControlClient, NetError, Target};
use std::io::Write;

/// How often a measuring thread reports progress.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// The share of a session's time spent waiting for replies that never came above which its series is
/// marked incomplete. A lost UDP request costs a whole `--timeout` in which no other request is sent, so a
/// lost count alone hides an outage: a path down for 8 s of 10 s with a 2 s timeout shows as 4 lost. A
/// tenth of the time is far above what scattered loss costs (1 % loss at a 100 µs round trip and a 2 s
/// timeout already spends most of the time waiting, and is reported too, rightly: most of the intended
/// exchanges were not made).
const DEGRADED_SHARE: f64 = 0.1;

/// Runs a latency test. Fails outright only if nothing could be measured (connection, refusal); later
/// failures are returned in `MeasuredRun::error` beside what was measured.
pub fn run_latency(
    target: &Target,
    key: Option<&[u8]>,
    spec: &LatencySpec,
    observer: &dyn Observer,
) -> Result<MeasuredRun<Series>, NetError> {
    check_spec(target, spec)?;
    let timeout = Duration::from_secs_f64(spec.timeout_s);
    let mut control = ControlClient::connect(target, key, timeout)?;
    let max_size = spec.sizes_bytes.iter().copied().max().unwrap_or(0);
    let token = control.request(TestRequest::Latency {
        proto: spec.proto,
        max_message_bytes: max_size,
        connections: spec.sessions * spec.sizes_bytes.len() as u32,
        wait: spec.wait,
        planned_duration_s: planned_duration(spec),
    })?;
    let mut run = MeasuredRun::of(&control);
    for &size in &spec.sizes_bytes {
        // Fresh connections per size: a stream connection announces its message size once, up front.
        let mut channels = match open_channels(target, spec, token, size as usize) {
            Ok(channels) => channels,
            Err(error) if run.series.is_empty() => return Err(error),
            Err(error) => {
                run.error = Some(error);
                return Ok(run);
            }
        };
        let mut outcome = measure_size(&mut channels, size as usize, spec, observer);
        if let Some(warning) = outcome.degraded(spec.timeout_s) {
            run.warnings.push(warning);
        }
        if outcome.error.is_none() {
            outcome.series.iter().for_each(|s| observer.measured(Measurement::Series(s)));
        }
        run.series.extend(outcome.series);
        match outcome.error {
            Some(NetError::Interrupted) => {
                let _ = control.done(token);
                run.error = Some(NetError::Interrupted);
                return Ok(run);
            }
            Some(error) => {
                run.error = Some(control.pending_error().unwrap_or(error));
                return Ok(run);
            }
            None => {}
        }
    }
    let _ = control.done(token);
    Ok(run)
}

pub(crate) fn check_spec(target: &Target, spec: &LatencySpec) -> Result<(), NetError> {
    match (spec.proto, &target.address) {
        (Proto::Unix, Address::Inet(_)) => {
            return Err(NetError::Invalid("--proto unix needs a Unix socket path (--unix PATH), not a host".into()))
        }
        (Proto::Tcp | Proto::Udp, Address::Unix(_)) => {
            return Err(NetError::Invalid(format!(
                "--proto {} needs a host, not a Unix socket path",
                spec.proto.name()
            )))
        }
        _ => {}
    }
    if let (Proto::Udp, Some(address)) = (spec.proto, target.inet_address()) {
        let largest = if address.is_ipv4() { MAX_UDP_PAYLOAD_IPV4 } else { MAX_UDP_PAYLOAD_IPV6 };
        if let Some(&big) = spec.sizes_bytes.iter().find(|&&s| s > largest) {
            let family = if address.is_ipv4() { "IPv4" } else { "IPv6" };
            return Err(NetError::Invalid(format!(
                "a UDP message of {big} bytes does not fit in one datagram: at most {largest} bytes over {family}"
            )));
        }
        if let Some(&small) = spec.sizes_bytes.iter().find(|&&s| (s as usize) < PROBE_HEADER_BYTES) {
            return Err(NetError::Invalid(format!(
                "a UDP message of {small} bytes cannot hold the {PROBE_HEADER_BYTES}-byte probe header: use --size {PROBE_HEADER_BYTES} or more"
            )));
        }
    }
    Ok(())
}

/// The planned length in seconds, when the stop condition makes it known.
fn planned_duration(spec: &LatencySpec) -> Option<f64> {
    match spec.stop {
        StopCondition::DurationS(s) => Some(s * spec.sizes_bytes.len() as f64),
        StopCondition::Count(n) => {
            spec.rate_per_s.map(|rate| (n + spec.warmup) as f64 / rate * spec.sizes_bytes.len() as f64)
        }
    }
}

pub(crate) fn open_channels(
    target: &Target,
    spec: &LatencySpec,
    token: u32,
    size: usize,
) -> Result<Vec<Box<dyn PingPong>>, NetError> {
    let timeout = Duration::from_secs_f64(spec.timeout_s);
    (0..spec.sessions)
        .map(|_| -> Result<Box<dyn PingPong>, NetError> {
            match (spec.proto, target.inet_address()) {
                (Proto::Udp, Some(address)) => {
                    let socket = target
                        .connect_udp(address)
                        .map_err(|source| NetError::Connect { address: address.to_string(), source })?;
                    Ok(Box::new(UdpPingPong::new(socket, token, spec.wait, timeout, size)?))
                }
                _ => {
                    let socket = target.connect_stream(timeout)?;
                    let mut opening = Preamble::new(Role::Data, token).encode().to_vec();
                    opening.extend_from_slice(&(size as u32).to_be_bytes());
                    (&socket).write_all(&opening).map_err(|e| NetError::io("opening a data connection", e))?;
                    Ok(Box::new(StreamPingPong::new(socket, spec.wait, timeout, size)?))
                }
            }
        })
        .collect()
}

/// The series of one message size: the aggregate, then each session's when there are several.
struct SizeOutcome {
    series: Vec<Series>,
    error: Option<NetError>,
    /// The session that spent the most time waiting for lost replies: that time, and its series' length.
    unanswered: Unanswered,
}

/// Time a session spent waiting for replies that never came.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Unanswered {
    /// Seconds spent in exchanges that timed out.
    waited_s: f64,
    /// Requests that timed out.
    requests: u64,
    /// The session's timed length in seconds.
    elapsed_s: f64,
}

impl Unanswered {
    fn share(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.waited_s / self.elapsed_s
        } else {
            0.0
        }
    }
}

impl SizeOutcome {
    /// When a session spent more than [`DEGRADED_SHARE`] of its time waiting for lost replies: marks the
    /// size's series incomplete (they did not measure the path for most of their time) and returns the
    /// warning that says so.
    fn degraded(&mut self, timeout_s: f64) -> Option<String> {
        let u = self.unanswered;
        if u.share() <= DEGRADED_SHARE {
            return None;
        }
        self.series.iter_mut().for_each(|s| s.complete = false);
        let size = self.series.first().and_then(|s| s.size_bytes).unwrap_or(0);
        Some(format!(
            "incomplete: the {size} B series spent {:.1} s of its {:.1} s ({:.0} %) waiting for replies that never came ({} requests timed out after {timeout_s} s each, with no other request sent meanwhile), so it measured the path for only {:.0} % of its time; a path that is down or dropping everything shows this way, and the lost count counts requests, not the exchanges a working path would have made in that time",
            u.waited_s,
            u.elapsed_s,
            u.share() * 100.0,
            u.requests,
            (1.0 - u.share()) * 100.0
        ))
    }
}

fn measure_size(
    channels: &mut [Box<dyn PingPong>],
    size: usize,
    spec: &LatencySpec,
    observer: &dyn Observer,
) -> SizeOutcome {
    let (total, unit) = match spec.stop {
        StopCondition::Count(n) => (n * channels.len() as u64, ProgressUnit::Transactions),
        StopCondition::DurationS(s) => ((s * 1000.0) as u64, ProgressUnit::Milliseconds),
    };
    observer.phase(&format!("{} B", size), total, unit);
    let barrier = Barrier::new(channels.len());
    let results: Vec<SessionOutcome> = std::thread::scope(|scope| {
        let handles: Vec<_> = channels
            .iter_mut()
            .enumerate()
            .map(|(index, channel)| {
                let barrier = &barrier;
                scope.spawn(move || measure_session(channel.as_mut(), size, spec, barrier, observer, index == 0))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|_| SessionOutcome::panicked())).collect()
    });
    combine(size as u64, results)
}

fn combine(size: u64, results: Vec<SessionOutcome>) -> SizeOutcome {
    let mut histogram = RttHistogram::new();
    let mut counters = SeriesCounters { complete: true, ..Default::default() };
    let mut error = None;
    let mut unanswered = Unanswered::default();
    for result in &results {
        histogram.merge(&result.histogram);
        counters.merge(&result.counters);
        if result.unanswered.share() >= unanswered.share() {
            unanswered = result.unanswered;
        }
    }
    let mut series = vec![Series::new(Some(size), None, &histogram, counters)];
    let several = results.len() > 1;
    for (index, result) in results.into_iter().enumerate() {
        if several {
            series.push(Series::new(Some(size), Some(index as u32 + 1), &result.histogram, result.counters));
        }
        error = error.or(result.error);
    }
    SizeOutcome { series, error, unanswered }
}

/// One session's measurements of one size.
struct SessionOutcome {
    histogram: RttHistogram,
    counters: SeriesCounters,
    error: Option<NetError>,
    unanswered: Unanswered,
}

impl SessionOutcome {
    fn panicked() -> Self {
        Self {
            histogram: RttHistogram::new(),
            counters: SeriesCounters::default(),
            error: Some(NetError::Invalid("a measuring thread failed unexpectedly".into())),
            unanswered: Unanswered::default(),
        }
    }
}

fn measure_session(
    channel: &mut dyn PingPong,
    size: usize,
    spec: &LatencySpec,
    barrier: &Barrier,
    observer: &dyn Observer,
    reports_time: bool,
) -> SessionOutcome {
    let mut outcome = SessionOutcome {
        histogram: RttHistogram::new(),
        counters: SeriesCounters::default(),
        error: None,
        unanswered: Unanswered::default(),
    };
    let mut sequence = 0u64;
    let warmed = (0..spec.warmup).try_for_each(|_| {
        sequence += 1;
        channel.exchange(size, sequence).map(|_| ())
    });
    // Every session waits here exactly once, even after a failed warm-up, so none is left waiting forever.
    barrier.wait();
    if let Err(error) = warmed {
        outcome.error = Some(error);
        return outcome;
    }
    let late_before = channel.late();
    let mut clock = SeriesClock::start(spec, observer, reports_time);
    let mut lost = 0u64;
    let complete = loop {
        if clock.finished(outcome.histogram.count() + lost) {
            break true;
        }
        if clock.cancelled {
            outcome.error = Some(NetError::Interrupted);
            break false;
        }
        sequence += 1;
        let started = clock.intended_start(outcome.histogram.count() + lost);
        let result = channel.exchange(size, sequence);
        let now = Instant::now();
        match result {
            Ok(Exchange::Replied) => outcome.histogram.record(now.saturating_duration_since(started).as_nanos() as u64),
            Ok(Exchange::Lost) => {
                lost += 1;
                outcome.unanswered.waited_s += now.saturating_duration_since(started).as_secs_f64();
            }
            Err(error) => {
                outcome.error = Some(error);
                break false;
            }
        }
        clock.tick(now);
    };
    outcome.counters =
        SeriesCounters { lost, late: channel.late() - late_before, elapsed_s: clock.elapsed_s(), complete };
    outcome.unanswered.requests = lost;
    outcome.unanswered.elapsed_s = clock.elapsed_s();
    outcome
}

/// The time keeping of one session's series: stop condition, open-loop schedule and progress reports.
struct SeriesClock<'a> {
    start: Instant,
    end: Option<Instant>,
    count: Option<u64>,
    interval: Option<Duration>,
    last: Instant,
    observer: &'a dyn Observer,
    reports_time: bool,
    next_report: Instant,
    reported: u64,
    done: u64,
    /// The observer reported that the user asked to stop.
    cancelled: bool,
}

impl<'a> SeriesClock<'a> {
    fn start(spec: &LatencySpec, observer: &'a dyn Observer, reports_time: bool) -> Self {
        let start = Instant::now();
        Self {
            start,
            end: spec.stop.duration().map(|d| start + d),
            count: match spec.stop {
                StopCondition::Count(n) => Some(n),
                StopCondition::DurationS(_) => None,
            },
            interval: spec.rate_per_s.map(|rate| Duration::from_secs_f64(1.0 / rate)),
            last: start,
            observer,
            reports_time,
            next_report: start + PROGRESS_EVERY,
            reported: 0,
            done: 0,
            cancelled: false,
        }
    }

    /// Whether the series is over after `attempts` exchanges.
    fn finished(&self, attempts: u64) -> bool {
        self.count.is_some_and(|n| attempts >= n) || self.end.is_some_and(|end| self.last >= end)
    }

    /// When exchange number `attempt` starts: now in closed loop; its scheduled time in open loop, after
    /// waiting for it if it is still ahead.
    fn intended_start(&mut self, attempt: u64) -> Instant {
        let Some(interval) = self.interval else { return Instant::now() };
        let due = self.start + interval.mul_f64(attempt as f64);
        crate::clock::wait_until(due);
        due
    }

    /// Notes an exchange (replied or lost) ending at `now`, and reports progress a few times a second.
    fn tick(&mut self, now: Instant) {
        self.last = now;
        self.done += 1;
        if now >= self.next_report {
            self.report(now);
        }
    }

    fn report(&mut self, now: Instant) {
        self.next_report = now + PROGRESS_EVERY;
        self.cancelled = self.observer.cancelled();
        let progress = match (self.count, self.reports_time) {
            (Some(_), _) => self.done,
            (None, true) => now.duration_since(self.start).as_millis() as u64,
            (None, false) => return,
        };
        self.observer.advance(progress - self.reported);
        self.reported = progress;
    }

    fn elapsed_s(&self) -> f64 {
        self.last.duration_since(self.start).as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(waited_s: f64, requests: u64, elapsed_s: f64) -> SizeOutcome {
        let counters = SeriesCounters { lost: requests, late: 0, elapsed_s, complete: true };
        let series = vec![Series::new(Some(64), None, &RttHistogram::new(), counters)];
        SizeOutcome { series, error: None, unanswered: Unanswered { waited_s, requests, elapsed_s } }
    }

    #[test]
    fn a_series_that_mostly_waited_for_lost_replies_is_incomplete_and_says_why() {
        // The path down for 8 s of 10 s, with a 2 s timeout: 4 requests lost, 8 s spent waiting.
        let mut down = outcome(8.0, 4, 10.0);
        let warning = down.degraded(2.0).unwrap();
        assert!(!down.series[0].complete);
        assert!(
            warning.contains("8.0 s of its 10.0 s (80 %)") && warning.contains("4 requests timed out"),
            "{warning}"
        );
    }

    #[test]
    fn scattered_loss_leaves_the_series_complete() {
        let mut scattered = outcome(0.5, 1, 10.0);
        assert_eq!(scattered.degraded(0.5), None);
        assert!(scattered.series[0].complete);
    }
}
