//! The connection-establishment driver: how long from opening a connection until the responder's first byte
//! is back (connect, request, response; netperf calls the same pattern TCP_CRR), as a distribution, and
//! connections per second.
//!
//! Each timed connection covers creating the socket, the handshake, sending the 12-byte probe preamble and
//! receiving the responder's one-byte answer; a bare connect (`ConnectSpec::bare`) times the socket and the
//! handshake only, and completes the probe untimed (the responder expects it). Closing is not timed. The responder closes first, so its side
//! keeps the TIME_WAIT state and the client does not run out of ports on long runs.

use std::io::Read;
use std::time::{Duration, Instant};

use linkperf_core::run_result::SeriesCounters;
use linkperf_core::{ConnectSpec, RttHistogram, Series, StopCondition};
use linkperf_proto::{Preamble, Role, TestRequest};

use crate::control::WritePreamble;
use crate::observer::{Measurement, Observer, ProgressUnit};
use crate::run::MeasuredRun;
use crate::{ControlClient, NetError, Target};

/// How often progress is reported.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);

/// Runs a connect test.
pub fn run_connect(
    target: &Target,
    key: Option<&[u8]>,
    spec: &ConnectSpec,
    observer: &dyn Observer,
) -> Result<MeasuredRun<Series>, NetError> {
    if !spec.proto.is_connection_oriented() {
        return Err(NetError::Invalid(format!("connect needs tcp or unix, not {}", spec.proto.name())));
    }
    let timeout = Duration::from_secs_f64(spec.timeout_s);
    let mut control = ControlClient::connect(target, key, timeout)?;
    let planned_duration_s = match spec.stop {
        StopCondition::DurationS(s) => Some(s),
        StopCondition::Count(_) => None,
    };
    let token = control.request(TestRequest::Connect { proto: spec.proto, planned_duration_s })?;
    for _ in 0..spec.warmup {
        if let Err(error) = probe(target, token, timeout, spec.bare) {
            return Ok(MeasuredRun { error: Some(error), ..MeasuredRun::of(&control) });
        }
    }
    let (series, error) = measure(target, token, spec, observer);
    if error.is_none() {
        observer.measured(Measurement::Series(&series));
    }
    let error = match error {
        Some(NetError::Interrupted) | None => {
            let _ = control.done(token);
            error
        }
        Some(e) => Some(control.pending_error().unwrap_or(e)),
    };
    Ok(MeasuredRun { series: vec![series], error, ..MeasuredRun::of(&control) })
}

fn measure(target: &Target, token: u32, spec: &ConnectSpec, observer: &dyn Observer) -> (Series, Option<NetError>) {
    let timeout = Duration::from_secs_f64(spec.timeout_s);
    let (total, unit, count, end) = match spec.stop {
        StopCondition::Count(n) => (n, ProgressUnit::Transactions, Some(n), None),
        StopCondition::DurationS(s) => {
            ((s * 1000.0) as u64, ProgressUnit::Milliseconds, None, Some(Duration::from_secs_f64(s)))
        }
    };
    observer.phase("connections", total, unit);
    let mut histogram = RttHistogram::new();
    let start = Instant::now();
    let (mut last, mut next_report, mut reported) = (start, start + PROGRESS_EVERY, 0u64);
    let mut error = None;
    while count.is_none_or(|n| histogram.count() < n) && end.is_none_or(|d| last - start < d) {
        if observer.cancelled() {
            error = Some(NetError::Interrupted);
            break;
        }
        let began = Instant::now();
        let timed = match probe(target, token, timeout, spec.bare) {
            Ok(timed) => timed,
            Err(e) => {
                error = Some(e);
                break;
            }
        };
        last = Instant::now();
        histogram.record((timed - began).as_nanos() as u64);
        if last >= next_report {
            next_report = last + PROGRESS_EVERY;
            let progress = if count.is_some() { histogram.count() } else { (last - start).as_millis() as u64 };
            observer.advance(progress - reported);
            reported = progress;
        }
    }
    let counters = SeriesCounters {
        elapsed_s: (last - start).as_secs_f64(),
        complete: error.is_none(),
        ..SeriesCounters::default()
    };
    (Series::new(None, None, &histogram, counters), error)
}

/// One connection: connect, send the probe preamble, read the one-byte answer. Returns when the timed part
/// ended: the answer, or with `bare` the handshake.
fn probe(target: &Target, token: u32, timeout: Duration, bare: bool) -> Result<Instant, NetError> {
    let socket = target.connect_stream(timeout)?;
    let connected = Instant::now();
    (&socket)
        .write_all_preamble(&Preamble::new(Role::ConnectProbe, token))
        .map_err(|e| NetError::io("sending a connection probe", e))?;
    socket.set_read_timeout(Some(timeout)).map_err(|e| NetError::io("setting a read timeout", e))?;
    let mut answer = [0u8; 1];
    // read_exact retries a read that a signal (Ctrl-C) interrupted; the driver then sees the stop request.
    match (&socket).read_exact(&mut answer) {
        Ok(()) if bare => Ok(connected),
        Ok(()) => Ok(Instant::now()),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            Err(NetError::PeerClosed(" without answering a connection probe".into()))
        }
        Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
            Err(NetError::Timeout { what: "connection probe answer".into(), timeout_s: timeout.as_secs_f64() })
        }
        Err(e) => Err(NetError::io("reading a connection probe answer", e)),
    }
}
