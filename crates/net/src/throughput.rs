//! The throughput driver: for each phase (direction) and write size, opens the streams, moves data for the
//! duration, collects both ends' records and turns them into series.
//!
//! Upload streams are written here and read by the responder; download streams the other way round. The
//! receiver's figure is the goodput; the sender's is reported beside it. Definitions: docs/metrics.md.

mod streams;
mod turns;

use std::time::Duration;

use linkperf_core::link_model::{Framing, ETHERNET_OVERHEAD_BYTES};
use linkperf_core::run_result::ThroughputSeries;
use linkperf_core::spec::LinkSpec;
use linkperf_core::throughput::{End, Flow};
use linkperf_core::throughput_series::{combine, cpu_warning, link_efficiency, TestCounters};
use linkperf_core::{Direction, Proto, ThroughputSpec};
use linkperf_proto::{StreamHeader, TestRequest};

use crate::control::Report;
use crate::observer::{Measurement, Observer, ProgressUnit};
use crate::run::MeasuredRun;
use crate::{ControlClient, NetError, Target};

/// How long to wait for the responder's report once a stream has failed.
const REPORT_AFTER_FAILURE: Duration = Duration::from_secs(2);
/// How long a stream may make no progress before the run fails.
const STALL_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs a throughput test.
pub fn run_throughput(
    target: &Target,
    key: Option<&[u8]>,
    spec: &ThroughputSpec,
    observer: &dyn Observer,
) -> Result<MeasuredRun<ThroughputSeries>, NetError> {
    if let (Proto::Udp, None) = (spec.proto, target.inet_address()) {
        return Err(NetError::Invalid("--proto udp needs a host, not a Unix socket path".into()));
    }
    check_udp_sizes(target, spec)?;
    let mut control = ControlClient::connect(target, key, STALL_TIMEOUT)?;
    let mut run = MeasuredRun::of(&control);
    for &phase in &spec.phases {
        for &size in &spec.sizes_bytes {
            observer.phase(
                &format!("{} {}", phase.name(), linkperf_core::units::format_size(size)),
                (spec.duration_s * 1000.0) as u64,
                ProgressUnit::Milliseconds,
            );
            if run_trial(&mut run, &mut control, (target, spec), (phase, size), observer)?.is_none() {
                return Ok(run);
            }
        }
    }
    Ok(run)
}

/// Runs one phase at one write size on `control`'s session and adds its series (and CPU warnings) to
/// `run`. Returns where its series start in `run.series`, or `None` when the run must stop: the reason is
/// then in `run.error`, beside what was measured. Fails outright only when the run has measured nothing.
pub(crate) fn run_trial(
    run: &mut MeasuredRun<ThroughputSeries>,
    control: &mut ControlClient,
    (target, spec): (&Target, &ThroughputSpec),
    (phase, size): (Direction, u64),
    observer: &dyn Observer,
) -> Result<Option<usize>, NetError> {
    let start = run.series.len();
    match measure(control, target, spec, phase, size, observer) {
        Ok(series) => {
            for warning in series.iter().filter_map(cpu_warning) {
                if !run.warnings.contains(&warning) {
                    run.warnings.push(warning);
                }
            }
            series.iter().for_each(|s| observer.measured(Measurement::Throughput(s)));
            run.series.extend(series);
            Ok(Some(start))
        }
        Err((series, error))
            if run.series.is_empty() && series.is_empty() && !matches!(error, NetError::Interrupted) =>
        {
            Err(error)
        }
        Err((series, error)) => {
            run.series.extend(series);
            run.error = Some(error);
            Ok(None)
        }
    }
}

/// Refuses UDP datagram sizes that do not fit one datagram over the target's IP version (65507 bytes of
/// payload over IPv4, 65527 over IPv6).
fn check_udp_sizes(target: &Target, spec: &ThroughputSpec) -> Result<(), NetError> {
    use linkperf_proto::limits::{MAX_UDP_PAYLOAD_IPV4, MAX_UDP_PAYLOAD_IPV6};
    if spec.proto != Proto::Udp {
        return Ok(());
    }
    let (largest, family) =
        if target.is_ipv6() { (MAX_UDP_PAYLOAD_IPV6, "IPv6") } else { (MAX_UDP_PAYLOAD_IPV4, "IPv4") };
    match spec.sizes_bytes.iter().find(|&&s| s > largest) {
        Some(big) => {
            Err(NetError::Invalid(format!("a UDP datagram carries at most {largest} bytes over {family}, not {big}")))
        }
        None => Ok(()),
    }
}

/// Opens the control session of a run of UDP trials (sweeps, searches) of `trial`, after checking the
/// target and the sizes.
pub(crate) fn open_udp_trials(
    target: &Target,
    key: Option<&[u8]>,
    trial: &ThroughputSpec,
) -> Result<(ControlClient, MeasuredRun<ThroughputSeries>), NetError> {
    if target.inet_address().is_none() {
        return Err(NetError::Invalid("UDP trials need a host, not a Unix socket path".into()));
    }
    check_udp_sizes(target, trial)?;
    let control = ControlClient::connect(target, key, STALL_TIMEOUT)?;
    let run = MeasuredRun::of(&control);
    Ok((control, run))
}

type Failure = (Vec<ThroughputSeries>, NetError);

/// One phase at one write size: a test of its own on the responder.
fn measure(
    control: &mut ControlClient,
    target: &Target,
    spec: &ThroughputSpec,
    phase: Direction,
    size: u64,
    observer: &dyn Observer,
) -> Result<Vec<ThroughputSeries>, Failure> {
    let flows = phase.flows();
    let token = control
        .request(TestRequest::Throughput {
            proto: spec.proto,
            connections: u32::from(spec.streams) * flows.len() as u32,
            write_bytes: size,
            duration_s: spec.duration_s,
            interval_s: spec.interval_s,
            buffer_bytes: spec.buffer_bytes,
            congestion: spec.congestion.clone(),
            discard: spec.discard,
            rate_bps: spec.stream_rate_bps(size),
            gso: spec.gso,
            batch: spec.batch,
            alternating: phase == Direction::Alternating,
            datagrams: spec.datagrams,
        })
        .map_err(|e| (Vec::new(), e))?;
    let trial = streams::Trial { token, spec, size, phase };
    let opened = flows
        .iter()
        .flat_map(|&flow| {
            (0..spec.streams).map(move |i| StreamHeader { flow, index: i + flow_offset(flow, spec.streams) })
        })
        .map(|header| streams::open(target, &trial, header))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| (Vec::new(), e))?;
    let counter_watch = crate::counters::CounterWatch::start(control.local_address());
    // The responder reports what its receiving (upload) streams read in each interval as it goes.
    let interval_watch = match phase.flows().contains(&Flow::Upload) {
        true => Some(control.watch_intervals().map_err(|e| (Vec::new(), e))?),
        false => None,
    };
    let confirms_turns = control.supports(turns::CAPABILITY);
    let turns =
        (phase == Direction::Alternating).then_some(streams::TurnControl { control: &mut *control, confirms_turns });
    let ran = streams::run(&trial, &opened, streams::Sidecars { turns, watch: interval_watch }, observer);
    if let Some(interval_watch) = ran.watch {
        control.resume(interval_watch);
    }
    let client_counters = counter_watch.delta();
    let mut error = ran.error;
    let wait = if error.is_some() { REPORT_AFTER_FAILURE } else { crate::control::CONTROL_TIMEOUT };
    let remote = control.report_within(token, wait).unwrap_or_else(|e| {
        // Keep this end's measurements: the responder's are lost with the path to it.
        error = error.take().or(Some(e));
        Report { streams: Vec::new(), counters: None }
    });
    let _ = control.done(token);
    let counters = TestCounters { client: client_counters, responder: remote.counters };
    let mut series = combine(spec, phase, size, (&ran.records, &remote.streams), &counters, error.is_none());
    for sum in series.iter_mut().filter(|s| s.stream.is_none()) {
        sum.turns = ran.turns.iter().filter(|(flow, _)| *flow == sum.flow).map(|(_, t)| t.clone()).collect();
        if !sum.turns.is_empty() {
            // Every byte each end moved; `None` for an end whose records did not come back.
            let total = |end: End| -> Option<u64> {
                let records = ran.records.iter().chain(&remote.streams).filter(|r| r.flow == sum.flow && r.end == end);
                let bytes: Vec<u64> = records.map(|r| r.bytes).collect();
                (!bytes.is_empty()).then(|| bytes.iter().sum())
            };
            turns::rate_over_turns(sum, total(End::Receiver), total(End::Sender));
        }
    }
    // The receiver's figure of a stream is the result: a test without it is not complete, whatever else it
    // measured. (A UDP trial that received nothing, or a burst shorter than a bin, is a measurement.)
    let missing = series.iter().find(|s| s.stream.is_none() && s.receiver_bps.is_none());
    if let (None, Some(missing), false) = (&error, missing, spec.proto == Proto::Udp) {
        error = Some(NetError::MissingFigure { flow: missing.flow.name() });
        series.iter_mut().for_each(|s| s.complete = false);
    }
    if let Some(framing) = framing(spec, target, counter_watch.interface()) {
        let mss = series.iter().find_map(|s| s.tcp.as_ref()).map(|t| t.mss_bytes);
        for sum in series.iter_mut().filter(|s| s.stream.is_none()) {
            sum.link = link_efficiency(spec, &framing, sum, mss);
        }
    }
    match error {
        None => Ok(series),
        Some(error) => Err((series, error)),
    }
}

/// Download streams are numbered after the upload ones, so every stream of a test has its own number.
fn flow_offset(flow: Flow, streams: u16) -> u16 {
    match flow {
        Flow::Upload => 0,
        Flow::Download => streams,
    }
}

/// The link model of a run: the rate given, or the client interface's speed; the MTU given, or the
/// interface's, or 1500. `None` without a rate, or over a Unix socket.
pub(crate) fn framing(spec: &ThroughputSpec, target: &Target, interface: Option<&str>) -> Option<Framing> {
    target.inet_address()?;
    let (speed, mtu) = interface.map(crate::counters::interface_link).unwrap_or((None, None));
    let link =
        spec.link.unwrap_or(LinkSpec { rate_bps: None, overhead_bytes: ETHERNET_OVERHEAD_BYTES, mtu_bytes: None });
    Some(Framing {
        link_bps: link.rate_bps.or(speed)?,
        mtu_bytes: link.mtu_bytes.or(mtu).unwrap_or(1500),
        overhead_bytes: link.overhead_bytes,
        ipv6: target.is_ipv6(),
    })
}
