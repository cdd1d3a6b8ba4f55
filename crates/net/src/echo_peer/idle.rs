//! The idle wake-up test against an echo: after each idle gap, the round trip of one message until its last
//! byte is back (docs/metrics.md, "Idle wake-up"), with every byte checked as in the latency test.
//!
//! With keep-alives, a message is exchanged every keep-alive period during the gap, over the same link (an
//! echo has no second session, and a serial line has one pair of wires): each is echoed and checked like a
//! timed one, but not timed, and the timed message leaves at the gap's end once the last keep-alive is back.

use std::time::{Duration, Instant};

use linkperf_core::run_result::SeriesCounters;
use linkperf_core::{HostFacts, IdleSpec, RttHistogram, Series};

use super::latency::{exchange, stall, Echo, EchoTimeouts};
use super::payload::Payload;
use crate::observer::{Measurement, Observer, ProgressUnit};
use crate::run::MeasuredRun;
use crate::transport::echo_link::EchoLink;
use crate::NetError;

/// Runs one series per gap: `spec.count` messages, each after the gap's silence (or its keep-alives, every
/// `spec.keepalive_s`). `spec.timeout_s` is replaced by `timeouts`.
pub fn run_echo_idle(
    link: &mut dyn EchoLink,
    spec: &IdleSpec,
    payload: Payload,
    timeouts: EchoTimeouts,
    observer: &dyn Observer,
) -> MeasuredRun<Series> {
    let mut run = MeasuredRun::new(HostFacts::default());
    let size = spec.size_bytes as usize;
    let mut buffers = (vec![0u8; size], vec![0u8; size + super::latency::DATAGRAM_HEADER_BYTES + 1]);
    let mut sequence = 0u64;
    for &gap_s in &spec.gaps_s {
        observer.phase(&format!("gap {gap_s} s"), spec.count, ProgressUnit::Transactions);
        let gap = Duration::from_secs_f64(gap_s);
        let started = Instant::now();
        let mut histogram = RttHistogram::new();
        let mut counters = SeriesCounters { complete: true, ..SeriesCounters::default() };
        let mut changed = 0u64;
        for _ in 0..spec.count {
            if observer.cancelled() {
                run.error = Some(NetError::Interrupted);
                break;
            }
            if let Err(error) = wait_out(link, gap, spec.keepalive_s, (&mut buffers, &mut sequence), payload, timeouts)
            {
                run.error = Some(error);
                break;
            }
            sequence += 1;
            let sent_at = Instant::now();
            match exchange(link, &mut buffers, sequence, payload, timeouts) {
                Ok(Echo::Intact) => histogram.record(sent_at.elapsed().as_nanos() as u64),
                Ok(Echo::Changed(_)) => changed += 1,
                Ok(Echo::Missing(_)) if link.is_datagram() => counters.lost += 1,
                Ok(Echo::Missing(bytes)) => {
                    counters.lost += 1;
                    run.error = Some(stall(link, timeouts.message, &format!("{bytes} of {size} bytes of a message")));
                }
                Err(e) => run.error = Some(NetError::io(format!("echo over {}", link.describe()), e)),
            }
            observer.advance(1);
            if run.error.is_some() {
                break;
            }
        }
        counters.elapsed_s = started.elapsed().as_secs_f64();
        counters.complete = run.error.is_none();
        let mut series = Series::new(Some(spec.size_bytes), None, &histogram, counters);
        series.gap_s = Some(gap_s);
        // A rate over mostly idle time means nothing (as in the idle test against a responder).
        series.transactions_per_s = 0.0;
        observer.measured(Measurement::Series(&series));
        run.series.push(series);
        if changed > 0 {
            run.warnings
                .push(format!("after {gap_s} s gaps: {changed} messages {} (not timed)", super::CHANGED_WARNING));
        }
        if run.error.is_some() {
            break;
        }
    }
    run
}

/// Waits out one gap: silent, or exchanging a keep-alive every `keepalive_s` until the gap ends. A
/// keep-alive that does not come back intact ends the run: the timed message after it would not be one
/// after a kept-alive link.
fn wait_out(
    link: &mut dyn EchoLink,
    gap: Duration,
    keepalive_s: Option<f64>,
    (buffers, sequence): (&mut (Vec<u8>, Vec<u8>), &mut u64),
    payload: Payload,
    timeouts: EchoTimeouts,
) -> Result<(), NetError> {
    let start = Instant::now();
    let end = start + gap;
    let Some(period) = keepalive_s.map(Duration::from_secs_f64).filter(|p| !p.is_zero()) else {
        std::thread::sleep(gap);
        return Ok(());
    };
    let mut next = start + period;
    while next < end {
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        *sequence += 1;
        let size = buffers.0.len();
        match exchange(link, buffers, *sequence, payload, timeouts) {
            Ok(Echo::Intact) => {}
            Ok(Echo::Changed(bytes)) => {
                return Err(NetError::Invalid(format!(
                    "a keep-alive {} over {} ({bytes} of {size} bytes)",
                    super::CHANGED_WARNING,
                    link.describe()
                )))
            }
            Ok(Echo::Missing(bytes)) => {
                return Err(stall(link, timeouts.message, &format!("{bytes} of {size} bytes of a keep-alive")))
            }
            Err(e) => return Err(NetError::io(format!("keep-alive over {}", link.describe()), e)),
        }
        // A keep-alive slower than the period is followed by the next at once, never by a burst of them.
        next = (next + period).max(Instant::now());
    }
    std::thread::sleep(end.saturating_duration_since(Instant::now()));
    Ok(())
}
