//! The idle wake-up test against an echo: after each idle gap, the round trip of one message until its last
//! byte is back (docs/metrics.md, "Idle wake-up"), with every byte checked as in the latency test.

use std::time::{Duration, Instant};

use linkperf_core::run_result::SeriesCounters;
use linkperf_core::{HostFacts, IdleSpec, RttHistogram, Series};

use super::latency::{exchange, stall, Echo, EchoTimeouts};
use super::payload::Payload;
use crate::observer::{Measurement, Observer, ProgressUnit};
use crate::run::MeasuredRun;
use crate::transport::echo_link::EchoLink;
use crate::NetError;

/// Runs one series per gap: `spec.count` messages, each after the gap's silence. `spec.timeout_s` and
/// `spec.keepalive_s` are not used (the caller refuses a keep-alive: an echo has no second session).
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
            std::thread::sleep(gap);
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
            run.warnings.push(format!("after {gap_s} s gaps: {changed} messages came back changed (not timed)"));
        }
        if run.error.is_some() {
            break;
        }
    }
    run
}
