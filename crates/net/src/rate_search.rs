//! The zero-loss rate search (RFC 2544 sections 26.1 and 26.2): per datagram size, a binary search over
//! offered UDP rates for the highest whose loss is within the tolerance, then round-trip probes sent
//! alongside a last trial at the rate found.
//!
//! The upper bound is `--max`, else the link's payload rate (given, or the interface's speed), else the
//! sender's unpaced rate, measured first in a short trial per size. The longest the searches can take is
//! announced before they start. A trial whose sender fell short of the offered rate is marked
//! sender-limited and counts as not reached, never as loss on the link.

use std::time::Duration;

use linkperf_core::rate_search::{BinarySearch, Verdict, ZeroLossRate};
use linkperf_core::run_result::ThroughputSeries;
use linkperf_core::spec::SENDER_PROBE_S;
use linkperf_core::units::format_seconds;
use linkperf_core::{LatencySpec, Proto, RateSearchSpec, Series, StopCondition, ThroughputSpec, WaitMode};

use crate::observer::{CancelOnly, Observer, ProgressUnit, WithoutIntervals};
use crate::run::MeasuredRun;
use crate::sweep::{format_mbit, settle};
use crate::throughput::{framing, open_udp_trials, run_trial};
use crate::{ControlClient, NetError, Target};

/// What a search measured: every trial's rows, and the outcome per size.
pub struct RateSearchRun {
    /// The trials, in order (the sender probes first, when there were any).
    pub trials: MeasuredRun<ThroughputSeries>,
    /// One outcome per size searched (the last one incomplete when the run stopped early).
    pub results: Vec<ZeroLossRate>,
}

/// Runs the searches. Fails outright only when nothing was measured.
pub fn run_rate_search(
    target: &Target,
    key: Option<&[u8]>,
    spec: &RateSearchSpec,
    observer: &dyn Observer,
) -> Result<RateSearchRun, NetError> {
    let (mut control, trials) = open_udp_trials(target, key, &spec.trial)?;
    let mut search = Search { target, key, spec, observer: &WithoutIntervals(observer), trials, results: Vec::new() };
    let Some(bounds) = search.upper_bounds(&mut control)? else { return Ok(search.finish()) };
    let maxes: Vec<f64> = bounds.iter().map(|(max, _)| *max).collect();
    let total = spec.time_bound_s(&maxes);
    let per_trial = spec.trial.duration_s + linkperf_core::spec::TRIAL_OVERHEAD_S + spec.settle_s;
    search.observer.announce(&format!(
        "ratesearch: {} size(s), at most {} trials of {} s, {} s apart: done within {}",
        spec.trial.sizes_bytes.len(),
        (total / per_trial).round(),
        spec.trial.duration_s,
        spec.settle_s,
        format_seconds(total)
    ));
    search.observer.phase("search", (total * 1000.0) as u64, ProgressUnit::Milliseconds);
    for (index, (max, source)) in bounds.into_iter().enumerate() {
        if !search.search_size(&mut control, index, (max, source))? {
            break;
        }
    }
    Ok(search.finish())
}

/// The state of a run of searches.
struct Search<'a> {
    target: &'a Target,
    key: Option<&'a [u8]>,
    spec: &'a RateSearchSpec,
    observer: &'a dyn Observer,
    trials: MeasuredRun<ThroughputSeries>,
    results: Vec<ZeroLossRate>,
}

impl Search<'_> {
    fn finish(self) -> RateSearchRun {
        RateSearchRun { trials: self.trials, results: self.results }
    }

    /// The upper bound of each size's search and where it came from; `None` if the run stopped while the
    /// sender was being measured.
    fn upper_bounds(&mut self, control: &mut ControlClient) -> Result<Option<Vec<(f64, String)>>, NetError> {
        let framing =
            framing(&self.spec.trial, self.target, crate::counters::interface_for(control.local_address()).as_deref());
        let sizes = self.spec.trial.sizes_bytes.clone();
        let mut bounds = Vec::new();
        for &size in &sizes {
            if let Some(max) = self.spec.max_bps {
                bounds.push((max, "--max".to_string()));
            } else if let Some(framing) = framing {
                let link = framing.udp(size, 0.0);
                bounds.push((link.max_goodput_bps, format!("the link's payload rate: {}", link.formula)));
            } else {
                let label = format!("probing {}", linkperf_core::units::format_size(size));
                self.observer.phase(&label, (SENDER_PROBE_S * 1000.0) as u64, ProgressUnit::Milliseconds);
                let probe = ThroughputSpec { duration_s: SENDER_PROBE_S, rate: None, ..self.spec.trial.clone() };
                let phase = self.spec.trial.phases[0];
                let Some(start) =
                    run_trial(&mut self.trials, control, (self.target, &probe), (phase, size), self.observer)?
                else {
                    return Ok(None);
                };
                // Every flow's sender must manage the rate: the slowest one bounds the search.
                let sent =
                    sums(&self.trials.series[start..]).filter_map(|s| s.sender_bps).fold(f64::INFINITY, f64::min);
                if !sent.is_finite() || sent <= 0.0 {
                    return Err(NetError::Invalid(format!(
                        "the sender moved nothing in the {SENDER_PROBE_S} s probe at {size} bytes: give the upper bound with --max"
                    )));
                }
                bounds.push((sent, format!("the sender's unpaced rate in a {SENDER_PROBE_S} s probe")));
                if settle(Duration::from_secs_f64(self.spec.settle_s), self.observer) {
                    self.trials.error = Some(NetError::Interrupted);
                    return Ok(None);
                }
            }
        }
        Ok(Some(bounds))
    }

    /// Searches one size; `false` when the run stopped (the reason is in `trials.error`).
    fn search_size(
        &mut self,
        control: &mut ControlClient,
        index: usize,
        (max, source): (f64, String),
    ) -> Result<bool, NetError> {
        let spec = self.spec;
        let size = spec.trial.sizes_bytes[index];
        let phase = spec.trial.phases[0];
        let min = spec.min_for(max).min(max);
        let mut search = BinarySearch::new(min, max, spec.precision);
        let mut result = ZeroLossRate {
            frame_bytes: spec.frames_bytes.as_ref().and_then(|f| f.get(index).copied()),
            payload_bytes: size,
            rate_bps: None,
            packets_per_s: None,
            received_bps: None,
            min_bps: min,
            max_bps: max,
            max_source: source,
            trials: 0,
            sender_limited: false,
            complete: false,
            link: None,
            latency: None,
            latency_load: None,
        };
        while let Some(rate) = search.next() {
            self.observer.relabel(&format!("{} B {}", size, format_mbit(rate)));
            let trial = spec.trial_at(rate);
            let start = self.trials.series.len();
            let outcome = run_trial(&mut self.trials, control, (self.target, &trial), (phase, size), self.observer);
            result.trials += 1;
            if outcome?.is_none() {
                // Stopped (Ctrl-C, a failure): the best rate so far is still a result, marked incomplete.
                self.results.push(self.conclude(result, search.best()));
                return Ok(false);
            }
            let verdict = sums(&self.trials.series[start..])
                .map(|s| Verdict::of(s, spec.loss_tolerance_percent))
                .max_by_key(|v| severity(*v))
                .unwrap_or(Verdict::Failed);
            result.sender_limited |= verdict == Verdict::SenderLimited;
            if verdict == Verdict::Pass && search.best().is_none_or(|b| rate > b) {
                result.received_bps =
                    sums(&self.trials.series[start..]).filter_map(|s| s.receiver_bps).reduce(f64::min);
            }
            search.record(verdict);
            if settle(Duration::from_secs_f64(spec.settle_s), self.observer) {
                self.trials.error = Some(NetError::Interrupted);
                self.results.push(self.conclude(result, search.best()));
                return Ok(false);
            }
        }
        result.complete = true;
        let mut result = self.conclude(result, search.best());
        if let (Some(rate), true) = (result.rate_bps, spec.latency_probes_per_s > 0.0) {
            self.observer.relabel(&format!("{size} B latency"));
            match self.latency_at(control, size, rate) {
                Ok((latency, load)) => (result.latency, result.latency_load) = (latency, load),
                Err(error) => {
                    self.trials.error = Some(error);
                    self.results.push(result);
                    return Ok(false);
                }
            }
        }
        self.results.push(result);
        Ok(true)
    }

    /// The result with the rate found, in packets per second and against the link.
    fn conclude(&self, mut result: ZeroLossRate, best: Option<f64>) -> ZeroLossRate {
        let size = result.payload_bytes;
        result.rate_bps = best;
        result.packets_per_s = best.map(|bps| bps / 8.0 / size as f64);
        if let (Some(rate), Some(link)) = (best, self.spec.trial.link.and_then(|l| l.rate_bps)) {
            let framing = framing(&self.spec.trial, self.target, None);
            result.link = framing.filter(|f| f.link_bps == link).map(|f| f.udp(size, rate));
        }
        result
    }

    /// A last trial at `rate` with round-trip probes of `size` bytes beside it: the probes start a second
    /// into the load (or a quarter of it, if shorter) and stop before it ends. The load is lowered by the
    /// probes' own rate, so that together they offer `rate`.
    fn latency_at(
        &mut self,
        control: &mut ControlClient,
        size: u64,
        rate: f64,
    ) -> Result<(Option<Series>, Option<linkperf_core::run_result::UdpSeries>), NetError> {
        let spec = self.spec;
        let duration = spec.trial.duration_s;
        let lead = duration.min(4.0) / 4.0;
        let probes = LatencySpec {
            proto: Proto::Udp,
            sizes_bytes: vec![size.max(linkperf_proto::PROBE_HEADER_BYTES as u64)],
            stop: StopCondition::DurationS(duration - 2.0 * lead),
            warmup: 0,
            wait: WaitMode::Block,
            sessions: 1,
            rate_per_s: Some(spec.latency_probes_per_s),
            timeout_s: 1.0,
            load: None,
        };
        let probe_bps = spec.latency_probes_per_s * size as f64 * 8.0;
        let load = spec.trial_at((rate - probe_bps).max(rate / 2.0));
        let mut loaded = MeasuredRun::new(self.trials.responder.clone());
        let (target, key, observer) = (self.target, self.key, self.observer);
        let (trial, latency) = std::thread::scope(|scope| {
            let probing = scope.spawn(|| {
                std::thread::sleep(Duration::from_secs_f64(lead));
                crate::latency::run_latency(target, key, &probes, &CancelOnly(observer))
            });
            let trial = run_trial(&mut loaded, control, (target, &load), (spec.trial.phases[0], size), observer);
            let latency = probing.join().unwrap_or_else(|_| Err(NetError::Invalid("the probe thread failed".into())));
            (trial, latency)
        });
        trial?;
        let latency = latency?;
        if let Some(error) = loaded.error.or(latency.error) {
            return Err(error);
        }
        let load = loaded.series.iter().find(|s| s.stream.is_none()).and_then(|s| s.udp.clone());
        Ok((latency.series.into_iter().find(|s| s.session.is_none()), load))
    }
}

/// The sum rows of a trial (one per flow).
fn sums(series: &[ThroughputSeries]) -> impl Iterator<Item = &ThroughputSeries> {
    series.iter().filter(|s| s.stream.is_none())
}

/// How bad a verdict is, for the verdict of a trial of several flows: the worst of theirs.
fn severity(verdict: Verdict) -> u8 {
    match verdict {
        Verdict::Pass => 0,
        Verdict::Loss => 1,
        Verdict::SenderLimited => 2,
        Verdict::Failed => 3,
    }
}
