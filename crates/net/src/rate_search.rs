//! The zero-loss rate search (RFC 2544 sections 26.1 and 26.2): per datagram size, a binary search over
//! offered UDP rates for the highest whose loss is within the tolerance, and in the same trials the
//! sustainable rate (no loss and no queue growth); then round-trip probes sent alongside a last trial at
//! the rate found.
//!
//! The upper bound is `--max`, else the payload rate of a `--link-rate`, else measured: trains of
//! back-to-back datagrams, each longer than the last until their arrivals span [`PROBE_SPAN_S`], whose
//! arrival rate at the receiver is what the path carries (the interface's speed caps it, as a hint only:
//! virtual and many USB or radio interfaces report a speed they do not have). The longest the searches can
//! take is announced before they start. A trial whose sender fell short of the offered rate is marked
//! sender-limited and counts as not reached, never as loss on the link.

use std::time::Duration;

use linkperf_core::rate_search::{
    CapacityEstimate, RateSearch, TrialOutcome, Verdict, ZeroLossRate, LATENCY_PROBE_SHARE,
};
use linkperf_core::run_result::ThroughputSeries;
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
    let started = std::time::Instant::now();
    let (mut control, trials) = open_udp_trials(target, key, &spec.trial)?;
    let observer = &WithoutIntervals(observer);
    let mut search = Search { target, key, spec, observer, trials, results: Vec::new(), trains: Vec::new() };
    let Some(bounds) = search.upper_bounds(&mut control)? else { return Ok(search.finish()) };
    let maxes: Vec<f64> = bounds.iter().map(|(max, _)| *max).collect();
    // The bound counts from the start of the run: the probes of the path are part of it.
    let total = spec.time_bound_s(&maxes) + started.elapsed().as_secs_f64();
    let per_trial = spec.per_trial_s(&maxes);
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
    /// The last probe train of each size, when the bound was measured.
    trains: Vec<Option<Train>>,
}

/// What a train of back-to-back datagrams showed: its length and the receiver's arrival rate.
#[derive(Debug, Clone, Copy)]
struct Train {
    datagrams: u64,
    arrival_bps: f64,
    span_s: f64,
}

/// How long the arrivals of a probe train must span for its rate to be trusted: a token bucket's burst
/// (or an interface's own batching) lets the head of a train through faster than the path's rate, and a
/// longer train dilutes that head.
pub const PROBE_SPAN_S: f64 = 0.2;
/// The first train's length: short enough to cross a 9600 bit/s link in a second in 64-byte frames.
const FIRST_TRAIN: u64 = 8;
/// The longest train (96 MB of 1472-byte datagrams).
const LONGEST_TRAIN: u64 = 1 << 16;
/// Most a train grows over the last, so that a head passed at line rate does not make the next train huge.
const TRAIN_GROWTH: f64 = 8.0;
/// The upper bound of a search over the arrival rate of a train: a deep queue lets a trial pass above the
/// path's rate for its length, so the bound leaves room for that.
const BOUND_OVER_ARRIVALS: f64 = 1.25;

impl Search<'_> {
    fn finish(self) -> RateSearchRun {
        RateSearchRun { trials: self.trials, results: self.results }
    }

    /// The upper bound of each size's search and where it came from; `None` if the run stopped while the
    /// path was being probed.
    fn upper_bounds(&mut self, control: &mut ControlClient) -> Result<Option<Vec<(f64, String)>>, NetError> {
        let framing =
            framing(&self.spec.trial, self.target, crate::counters::interface_for(control.local_address()).as_deref());
        let given_link = self.spec.trial.link.is_some_and(|l| l.rate_bps.is_some());
        let sizes = self.spec.trial.sizes_bytes.clone();
        let mut bounds = Vec::new();
        for &size in &sizes {
            if let Some(max) = self.spec.max_bps {
                bounds.push((max, "--max".to_string()));
                self.trains.push(None);
                continue;
            }
            if let (Some(framing), true) = (framing, given_link) {
                let link = framing.udp(size, 0.0);
                bounds.push((link.max_goodput_bps, format!("the link's payload rate: {}", link.formula)));
                self.trains.push(None);
                continue;
            }
            let Some(train) = self.probe_path(control, size)? else { return Ok(None) };
            let mut bound = (
                train.arrival_bps * BOUND_OVER_ARRIVALS,
                format!(
                    "{BOUND_OVER_ARRIVALS} x the arrival rate of a train of {} back-to-back datagrams ({} over {:.0} ms)",
                    train.datagrams,
                    rate_text(train.arrival_bps),
                    train.span_s * 1e3
                ),
            );
            // The interface's speed is a hint: it caps the bound when lower, never sets it.
            if let Some(link) = framing.map(|f| f.udp(size, 0.0)).filter(|l| l.max_goodput_bps < bound.0) {
                bound = (link.max_goodput_bps, format!("the interface's payload rate: {}", link.formula));
            }
            bounds.push(bound);
            self.trains.push(Some(train));
        }
        Ok(Some(bounds))
    }

    /// Sends trains of back-to-back datagrams of `size`, each longer than the last, until their arrivals
    /// span [`PROBE_SPAN_S`] or a train overflows a queue; `None` if the run stopped meanwhile. A train holds at most its own length in
    /// any queue, so it drains in about its span.
    fn probe_path(&mut self, control: &mut ControlClient, size: u64) -> Result<Option<Train>, NetError> {
        let phase = self.spec.trial.phases[0];
        if phase.flows().contains(&linkperf_core::throughput::Flow::Download) && !control.supports("udp-bursts") {
            return Err(NetError::Invalid(
                "the responder cannot send trains of datagrams (an older linkperf): give the upper bound with --max or --link-rate"
                    .into(),
            ));
        }
        let mut length = FIRST_TRAIN;
        loop {
            self.observer.relabel(&format!("probing {} x {length}", linkperf_core::units::format_size(size)));
            let train = ThroughputSpec { datagrams: Some(length), rate: None, ..self.spec.trial.clone() };
            let measured = run_trial(&mut self.trials, control, (self.target, &train), (phase, size), self.observer);
            let hint = "the path's rate is measured with unpaced trains: give the upper bound with --max (at most the responder's limit) or --link-rate";
            let Some(start) = measured.map_err(|e| unpaced_refused(e, hint))? else {
                return Ok(None);
            };
            let rows: Vec<&ThroughputSeries> = sums(&self.trials.series[start..]).collect();
            let arrivals = rows.iter().map(|s| s.udp.as_ref().and_then(|u| u.delay.as_ref()));
            // Every flow must carry the rate: the slowest bounds the search.
            let (rate, span) = arrivals
                .map(|d| d.map_or((0.0, 0.0), |d| (d.arrival_bps, d.span_s)))
                .fold((f64::INFINITY, f64::INFINITY), |(r, s), (dr, ds)| (r.min(dr), s.min(ds)));
            // A train that lost datagrams overflowed a queue: its arrivals are the bottleneck's rate for as
            // long as that queue drains, and a longer train would only lose more.
            let overflowed = rows.iter().any(|s| s.udp.as_ref().is_some_and(|u| u.lost > 0));
            if span >= PROBE_SPAN_S || overflowed || length >= LONGEST_TRAIN {
                if !(rate.is_finite() && rate > 0.0) {
                    return Err(NetError::Invalid(format!(
                        "nothing of a train of {length} datagrams of {size} bytes arrived: give the upper bound with --max"
                    )));
                }
                return Ok(Some(Train { datagrams: length, arrival_bps: rate, span_s: span }));
            }
            let growth = if span > 0.0 { (PROBE_SPAN_S / span).clamp(2.0, TRAIN_GROWTH) } else { TRAIN_GROWTH };
            length = ((length as f64 * growth).ceil() as u64).min(LONGEST_TRAIN);
        }
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
        // Never below the lowest rate a stream is paced at, nor above the bound.
        let floor = linkperf_core::spec::MIN_UDP_RATE_BPS * f64::from(spec.trial.streams);
        let min = spec.min_for(max).max(floor.min(max / 2.0)).min(max);
        let mut search = RateSearch::new(min, max, spec.precision);
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
            latency_probe_bps: None,
            latency_probes_per_s: None,
            sustainable_bps: None,
            capacity: None,
        };
        while let Some(rate) = search.next() {
            self.observer.relabel(&format!("{} B {}", size, format_mbit(rate)));
            let trial = spec.trial_at(rate);
            let start = self.trials.series.len();
            let outcome = run_trial(&mut self.trials, control, (self.target, &trial), (phase, size), self.observer);
            result.trials += 1;
            if outcome?.is_none() {
                // Stopped (Ctrl-C, a failure): the best rate so far is still a result, marked incomplete.
                self.results.push(self.conclude(result, &search, index));
                return Ok(false);
            }
            let outcome = outcome_of(&self.trials.series[start..], spec.loss_tolerance_percent, &trial);
            // A trial whose sender fell short is sender-limited whatever else it shows (a loss on top of
            // a short sender fails the rate, but the rates above it were never offered either).
            let short =
                sums(&self.trials.series[start..]).any(|s| linkperf_core::rate_search::sender_fell_short(s, &trial));
            result.sender_limited |= outcome.verdict == Verdict::SenderLimited || short;
            if outcome.verdict == Verdict::Pass && search.zero_loss().is_none_or(|b| rate > b) {
                result.received_bps =
                    sums(&self.trials.series[start..]).filter_map(|s| s.receiver_bps).reduce(f64::min);
            }
            search.record(rate, outcome);
            if settle(Duration::from_secs_f64(spec.settle_s), self.observer) {
                self.trials.error = Some(NetError::Interrupted);
                self.results.push(self.conclude(result, &search, index));
                return Ok(false);
            }
        }
        result.complete = true;
        let mut result = self.conclude(result, &search, index);
        if let (Some(rate), true) = (result.rate_bps, spec.latency_probes_per_s > 0.0) {
            self.observer.relabel(&format!("{size} B latency"));
            match self.latency_at(control, size, rate) {
                Ok(None) => {}
                Ok(Some(latency)) => {
                    result.latency_probe_bps = Some(latency.probe_bps);
                    result.latency_probes_per_s = Some(latency.per_s);
                    (result.latency, result.latency_load) = (latency.series, latency.load);
                }
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

    /// The result with the rates found, in packets per second and against the link, and the capacity
    /// estimate: from the trial that offered least above the capacity, else from the probe train.
    fn conclude(&self, mut result: ZeroLossRate, search: &RateSearch, index: usize) -> ZeroLossRate {
        let size = result.payload_bytes;
        let best = search.zero_loss();
        result.rate_bps = best;
        result.sustainable_bps = search.sustainable();
        result.packets_per_s = best.map(|bps| bps / 8.0 / size as f64);
        result.capacity = match (search.capacity(), self.trains.get(index).copied().flatten()) {
            (Some((bps, offered)), _) => Some(CapacityEstimate {
                bps,
                method: format!(
                    "arrival rate of the trial at {}, which lost datagrams or grew a queue",
                    rate_text(offered)
                ),
            }),
            (None, Some(train)) => Some(CapacityEstimate {
                bps: train.arrival_bps,
                method: format!(
                    "arrival rate (dispersion) of a train of {} back-to-back datagrams over {:.0} ms (high by a token bucket's burst, when the path has one)",
                    train.datagrams,
                    train.span_s * 1e3
                ),
            }),
            (None, None) => None,
        };
        if let (Some(rate), Some(link)) = (best, self.spec.trial.link.and_then(|l| l.rate_bps)) {
            let framing = framing(&self.spec.trial, self.target, None);
            result.link = framing.filter(|f| f.link_bps == link).map(|f| f.udp(size, rate));
        }
        result
    }

    /// A last trial at `rate` with round-trip probes of `size` bytes beside it: the probes start a second
    /// into the load (or a quarter of it, if shorter) and stop before it ends. They are paced to at most
    /// [`LATENCY_PROBE_SHARE`] of the rate, and the load is lowered by their rate, so that together they
    /// offer `rate`. `None` (with a warning) when not three probes fit that share; a schedule the probes
    /// could not keep is reported as a warning.
    fn latency_at(&mut self, control: &mut ControlClient, size: u64, rate: f64) -> Result<Option<Latency>, NetError> {
        let spec = self.spec;
        let duration = spec.trial.duration_s;
        let lead = duration.min(4.0) / 4.0;
        let probe_size = size.max(linkperf_proto::PROBE_HEADER_BYTES as u64);
        let probe_bits = probe_size as f64 * 8.0;
        let per_s = spec.latency_probes_per_s.min(rate * LATENCY_PROBE_SHARE / probe_bits);
        let probing_s = duration - 2.0 * lead;
        if per_s * probing_s < 3.0 {
            self.trials.warnings.push(format!(
                "no latency at {size} B: at {} of {:.3} Mbit/s, fewer than 3 probes fit a {probing_s} s window (use a longer --trial)",
                LATENCY_PROBE_SHARE,
                rate / 1e6
            ));
            return Ok(None);
        }
        let probes = LatencySpec {
            proto: Proto::Udp,
            sizes_bytes: vec![probe_size],
            stop: StopCondition::DurationS(probing_s),
            warmup: 0,
            wait: WaitMode::Block,
            sessions: 1,
            rate_per_s: Some(per_s),
            // A reply may wait behind several datagrams each way on a slow link: 8 datagram times at the
            // rate found, and a second at least.
            timeout_s: (8.0 * probe_bits / rate).max(1.0),
            load: None,
        };
        let probe_bps = per_s * probe_bits;
        let load = spec.trial_at(rate - probe_bps);
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
        let series = latency.series.into_iter().find(|s| s.session.is_none());
        let scheduled = (per_s * probing_s).floor();
        let done = series.as_ref().map_or(0, |s| s.summary.as_ref().map_or(0, |m| m.count) + s.lost + s.late);
        if (done as f64) < scheduled * 0.9 - 1.0 {
            self.trials.warnings.push(format!(
                "latency at {size} B: {done} of {scheduled} probes scheduled at {per_s:.1}/s were sent: the schedule could not be kept"
            ));
        }
        let load = loaded.series.iter().find(|s| s.stream.is_none()).and_then(|s| s.udp.clone());
        Ok(Some(Latency { series, load, probe_bps, per_s }))
    }
}

/// The latency trial's outcome.
struct Latency {
    series: Option<Series>,
    load: Option<linkperf_core::run_result::UdpSeries>,
    probe_bps: f64,
    per_s: f64,
}

/// A responder with a UDP rate limit (`serve --max-rate`) refuses every unpaced request, uploads it only
/// receives included (the request does not say which way the datagrams flow): such a refusal, explained
/// with `hint`; any other error as it is.
pub(crate) fn unpaced_refused(error: NetError, hint: &str) -> NetError {
    match error {
        NetError::Refused { code: linkperf_proto::ErrorCode::OverLimit, message } => {
            NetError::Invalid(format!("the responder refused an unpaced trial ({message}); {hint}"))
        }
        other => other,
    }
}

/// A rate in the unit that suits it, with four significant digits: `2.915 kbit/s`, `11.67 Mbit/s`.
fn rate_text(bps: f64) -> String {
    let (value, unit) = match bps {
        b if b >= 1e9 => (b / 1e9, "Gbit/s"),
        b if b >= 1e6 => (b / 1e6, "Mbit/s"),
        b if b >= 1e3 => (b / 1e3, "kbit/s"),
        b => (b, "bit/s"),
    };
    let decimals = if value >= 100.0 {
        1
    } else if value >= 10.0 {
        2
    } else {
        3
    };
    format!("{value:.decimals$} {unit}")
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

/// What a trial's rows (one sum per flow) showed: the worst verdict; growing if any flow's queue grew
/// (unknown if a flow's growth was not measured); the slowest flow's arrival rate.
fn outcome_of(rows: &[ThroughputSeries], tolerance_percent: f64, trial: &ThroughputSpec) -> TrialOutcome {
    let sums: Vec<&ThroughputSeries> = sums(rows).collect();
    let verdict = sums
        .iter()
        .map(|s| Verdict::of(s, tolerance_percent, trial))
        .max_by_key(|v| severity(*v))
        .unwrap_or(Verdict::Failed);
    let delays: Vec<_> = sums.iter().map(|s| s.udp.as_ref().and_then(|u| u.delay.as_ref())).collect();
    let growing = delays
        .iter()
        .map(|d| d.filter(|d| d.growth_measured).map(|d| d.growing))
        .try_fold(false, |any, g| g.map(|g| any || g));
    let arrival_bps =
        delays.iter().map(|d| d.map(|d| d.arrival_bps)).try_fold(f64::INFINITY, |m, a| a.map(|a| m.min(a)));
    let sent_bps = sums.iter().map(|s| s.sender_bps).try_fold(f64::INFINITY, |m, a| a.map(|a| m.min(a)));
    TrialOutcome {
        verdict,
        growing,
        arrival_bps: arrival_bps.filter(|a| a.is_finite()),
        sent_bps: sent_bps.filter(|a| a.is_finite()),
    }
}
