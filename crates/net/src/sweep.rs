//! The offered-rate sweep (RFC 2544 section 26.3, frame loss rate): the same UDP trial at each offered
//! rate in turn, on one control session, with a pause between trials so that queues drain.

use std::time::Duration;

use linkperf_core::run_result::ThroughputSeries;
use linkperf_core::SweepSpec;

use crate::observer::{Observer, ProgressUnit, WithoutIntervals};
use crate::run::MeasuredRun;
use crate::throughput::{open_udp_trials, run_trial};
use crate::{NetError, Target};

/// Runs a sweep: one row per step and flow, in order. Fails outright only when nothing was measured.
pub fn run_sweep(
    target: &Target,
    key: Option<&[u8]>,
    spec: &SweepSpec,
    observer: &dyn Observer,
) -> Result<MeasuredRun<ThroughputSeries>, NetError> {
    let (mut control, mut run) = open_udp_trials(target, key, &spec.trial)?;
    let observer = &WithoutIntervals(observer);
    let size = spec.trial.sizes_bytes.first().copied().unwrap_or(1472);
    let bound = spec.time_bound_s();
    observer.announce(&format!(
        "sweep: {} steps of {} s, {} s apart: done within {}",
        spec.rates_bps.len(),
        spec.trial.duration_s,
        spec.settle_s,
        linkperf_core::units::format_seconds(bound)
    ));
    observer.phase("sweep", (bound * 1000.0) as u64, ProgressUnit::Milliseconds);
    for (step, &rate) in spec.rates_bps.iter().enumerate() {
        let trial = spec.trial_at(rate);
        for &phase in &trial.phases {
            observer.relabel(&format!("{} {}/{}", format_mbit(rate), step + 1, spec.rates_bps.len()));
            if run_trial(&mut run, &mut control, (target, &trial), (phase, size), observer)?.is_none() {
                return Ok(run);
            }
            if settle(Duration::from_secs_f64(spec.settle_s), observer) {
                run.error = Some(NetError::Interrupted);
                return Ok(run);
            }
        }
    }
    Ok(run)
}

/// A rate for a progress label: `150M`.
pub(crate) fn format_mbit(bps: f64) -> String {
    format!("{}M", (bps / 1e4).round() / 100.0)
}

/// Waits `pause` between trials, moving the progress bar; `true` if the user asked to stop meanwhile.
///
/// The pause (`--settle`, 1 s by default, 200 ms for bursts) is a constant, not derived from the path,
/// because the trial itself already waited for the path's queue: a receiver ends its trial at the END
/// datagrams, which queue behind the data, or after a quiet second with nothing arriving, and the report
/// is asked for only then. So the next trial never starts into the last one's queue, at 9600 bit/s (a 900
/// byte queue drains in 0.75 s inside the trial) as at 10 Gbit/s (where the pause only costs time). What
/// the pause covers is what the receiver cannot see: the sending host's own queues and the reverse path
/// of the control messages, which hold little.
pub(crate) fn settle(pause: Duration, observer: &dyn Observer) -> bool {
    const STEP: Duration = Duration::from_millis(100);
    let end = std::time::Instant::now() + pause;
    loop {
        if observer.cancelled() {
            return true;
        }
        let now = std::time::Instant::now();
        if now >= end {
            return false;
        }
        let step = STEP.min(end - now);
        std::thread::sleep(step);
        observer.advance(step.as_millis() as u64);
    }
}
