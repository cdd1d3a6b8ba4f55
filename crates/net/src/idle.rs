//! The idle wake-up driver: after each idle gap, the round trip of one message, `count` times per gap.
//!
//! Links that save power, and NICs that moderate interrupts, answer the first message after a silence more
//! slowly; this shows by how much, per gap. With a keep-alive, a second connection exchanges a message at a
//! fixed period during the gaps, which shows whether keep-alives remove the penalty.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use linkperf_core::run_result::{Series, SeriesCounters};
use linkperf_core::{IdleSpec, LatencySpec, RttHistogram, StopCondition, WaitMode};
use linkperf_proto::TestRequest;

use crate::latency::{check_spec, open_channels};
use crate::observer::{Measurement, Observer, ProgressUnit};
use crate::run::MeasuredRun;
use crate::transport::{Exchange, PingPong};
use crate::{ControlClient, NetError, Target};

/// Runs an idle test.
pub fn run_idle(
    target: &Target,
    key: Option<&[u8]>,
    spec: &IdleSpec,
    observer: &dyn Observer,
) -> Result<MeasuredRun<Series>, NetError> {
    let sessions = if spec.keepalive_s.is_some() { 2 } else { 1 };
    let latency = LatencySpec {
        proto: spec.proto,
        sizes_bytes: vec![spec.size_bytes],
        stop: StopCondition::Count(spec.count),
        warmup: 1,
        wait: WaitMode::Block,
        sessions,
        rate_per_s: None,
        timeout_s: spec.timeout_s,
        load: None,
    };
    check_spec(target, &latency)?;
    let mut control = ControlClient::connect(target, key, Duration::from_secs_f64(spec.timeout_s))?;
    let planned: f64 = spec.gaps_s.iter().map(|g| (g + spec.timeout_s) * spec.count as f64).sum();
    let token = control.request(TestRequest::Latency {
        proto: spec.proto,
        max_message_bytes: spec.size_bytes,
        connections: sessions,
        wait: WaitMode::Block,
        planned_duration_s: Some(planned),
    })?;
    let mut channels = open_channels(target, &latency, token, spec.size_bytes as usize)?;
    let mut run = MeasuredRun::of(&control);
    let (measured, rest) = channels.split_at_mut(1);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        if let (Some(period), Some(keepalive)) = (spec.keepalive_s, rest.first_mut()) {
            let stop = &stop;
            let size = spec.size_bytes as usize;
            scope.spawn(move || keep_alive(keepalive.as_mut(), size, Duration::from_secs_f64(period), stop));
        }
        observer.phase("gaps", spec.gaps_s.len() as u64 * spec.count, ProgressUnit::Transactions);
        for &gap in &spec.gaps_s {
            let (series, error) = measure_gap(measured[0].as_mut(), spec, gap, observer);
            if error.is_none() {
                observer.measured(Measurement::Series(&series));
            }
            run.series.push(series);
            if error.is_some() {
                run.error = error;
                break;
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    let _ = control.done(token);
    Ok(run)
}

/// `count` round trips, each after `gap` seconds of silence on this connection.
fn measure_gap(
    channel: &mut dyn PingPong,
    spec: &IdleSpec,
    gap: f64,
    observer: &dyn Observer,
) -> (Series, Option<NetError>) {
    let mut histogram = RttHistogram::new();
    let mut counters = SeriesCounters { complete: true, ..SeriesCounters::default() };
    let started = Instant::now();
    let mut error = None;
    for sequence in 0..spec.count {
        if observer.cancelled() {
            error = Some(NetError::Interrupted);
            break;
        }
        std::thread::sleep(Duration::from_secs_f64(gap));
        let sent = Instant::now();
        match channel.exchange(spec.size_bytes as usize, sequence + 1) {
            Ok(Exchange::Replied) => histogram.record(sent.elapsed().as_nanos() as u64),
            Ok(Exchange::Lost) => counters.lost += 1,
            Err(e) => {
                error = Some(e);
                break;
            }
        }
        observer.advance(1);
    }
    counters.complete = error.is_none();
    counters.elapsed_s = started.elapsed().as_secs_f64();
    counters.late = channel.late();
    let mut series = Series::new(Some(spec.size_bytes), None, &histogram, counters);
    series.gap_s = Some(gap);
    // A rate over mostly idle time means nothing here.
    series.transactions_per_s = 0.0;
    (series, error)
}

/// Exchanges one message of `size` bytes every `period` until `stop`, keeping the link awake.
fn keep_alive(channel: &mut dyn PingPong, size: usize, period: Duration, stop: &AtomicBool) {
    let mut sequence = 0u64;
    while !stop.load(Ordering::Relaxed) {
        sequence += 1;
        if channel.exchange(size, sequence).is_err() {
            return;
        }
        std::thread::sleep(period);
    }
}
