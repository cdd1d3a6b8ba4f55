//! Back-to-back frames (RFC 2544 section 26.4): per datagram size, the longest burst sent as fast as the
//! sender can that arrives whole, by a search over burst lengths, repeated for min/typ/max.
//!
//! Each trial is a UDP test of one stream whose sender sends exactly the burst, unpaced (batched like any
//! unpaced sender), then END; the receiver's count of distinct datagrams says whether it arrived whole.

use std::time::Duration;

use linkperf_core::rate_search::{BurstResult, LengthSearch};
use linkperf_core::run_result::ThroughputSeries;
use linkperf_core::units::format_seconds;
use linkperf_core::BurstSpec;

use crate::observer::{Observer, ProgressUnit, WithoutIntervals};
use crate::run::MeasuredRun;
use crate::sweep::settle;
use crate::throughput::{open_udp_trials, run_trial};
use crate::{NetError, Target};

/// Why a burst cannot run against a responder with a UDP rate limit, and what to do.
const UNPACED_HINT: &str = "bursts are back-to-back datagrams, unpaced by definition, and a responder with \
--max-rate refuses them even when it only receives: run burst against a responder without --max-rate";

/// What a burst search measured: every trial's rows, and the outcome per size.
pub struct BurstRun {
    /// The trials, in order.
    pub trials: MeasuredRun<ThroughputSeries>,
    /// One outcome per size (the last one incomplete when the run stopped early).
    pub results: Vec<BurstResult>,
}

/// Runs the searches. Fails outright only when nothing was measured.
pub fn run_burst(
    target: &Target,
    key: Option<&[u8]>,
    spec: &BurstSpec,
    observer: &dyn Observer,
) -> Result<BurstRun, NetError> {
    let (mut control, mut trials) = open_udp_trials(target, key, &spec.trial)?;
    let responder_sends =
        spec.trial.phases.iter().any(|p| p.flows().contains(&linkperf_core::throughput::Flow::Download));
    if responder_sends && !control.supports("udp-bursts") {
        // An older responder would ignore the burst length and send for the whole duration.
        return Err(NetError::Invalid(
            "the responder cannot send bursts (an older linkperf): use --direction up, or update the responder".into(),
        ));
    }
    let observer = &WithoutIntervals(observer);
    let bound = spec.time_bound_s();
    let per_size = LengthSearch::max_trials(spec.max_datagrams) * spec.repeat;
    observer.announce(&format!(
        "burst: {} size(s) x {} searches up to {} datagrams, at most {} trials, each burst sent within {} s: done within {}",
        spec.trial.sizes_bytes.len(),
        spec.repeat,
        spec.max_datagrams,
        per_size as usize * spec.trial.sizes_bytes.len(),
        spec.trial.duration_s,
        format_seconds(bound)
    ));
    observer.phase("burst", (bound * 1000.0) as u64, ProgressUnit::Milliseconds);
    let mut results = Vec::new();
    let phase = spec.trial.phases[0];
    for (index, &size) in spec.trial.sizes_bytes.iter().enumerate() {
        let mut result = BurstResult {
            frame_bytes: spec.frames_bytes.as_ref().and_then(|f| f.get(index).copied()),
            payload_bytes: size,
            lengths: Vec::new(),
            min: None,
            typ: None,
            max: None,
            max_datagrams: spec.max_datagrams,
            sender_bps: None,
            trials: 0,
            complete: false,
        };
        let mut rates = Vec::new();
        for repetition in 1..=spec.repeat {
            let mut search = LengthSearch::new(spec.max_datagrams);
            let mut longest_rate = None;
            while let Some(length) = search.next() {
                observer.relabel(&format!("{size} B {repetition}/{} {length}", spec.repeat));
                let trial = spec.trial_of(length);
                let start = trials.series.len();
                let outcome = run_trial(&mut trials, &mut control, (target, &trial), (phase, size), observer)
                    .map_err(|e| crate::rate_search::unpaced_refused(e, UNPACED_HINT))?;
                result.trials += 1;
                if outcome.is_none() {
                    result.summarise();
                    results.push(result);
                    return Ok(BurstRun { trials, results });
                }
                let sums = || trials.series[start..].iter().filter(|s| s.stream.is_none());
                // Whole: every flow sent the whole burst and lost none of it.
                let whole = sums().all(|s| {
                    s.complete
                        && s.udp.as_ref().is_some_and(|u| u.lost == 0 && u.sent == length * u64::from(trial.streams))
                });
                if whole && length > search.longest() {
                    longest_rate = sums().filter_map(|s| s.sender_bps).reduce(f64::min);
                }
                search.record(whole);
                if settle(Duration::from_secs_f64(spec.settle_s), observer) {
                    trials.error = Some(NetError::Interrupted);
                    result.summarise();
                    results.push(result);
                    return Ok(BurstRun { trials, results });
                }
            }
            result.lengths.push(search.longest());
            rates.extend(longest_rate);
        }
        rates.sort_by(f64::total_cmp);
        result.sender_bps = (!rates.is_empty()).then(|| rates[(rates.len() - 1) / 2]);
        result.complete = true;
        result.summarise();
        results.push(result);
    }
    Ok(BurstRun { trials, results })
}
