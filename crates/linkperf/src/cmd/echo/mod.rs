//! `latency`, `throughput` and `idle` against a peer that only echoes (`--peer echo` over TCP or UDP) or
//! over a serial line closed by a loopback plug (`--proto serial --device PATH`): no responder, no control
//! session.
//!
//! On a serial line (or behind an echo service whose line is given with `--baud`), what the user did not
//! give is scaled to the line's rate and the run length announced first (`plan`). The set-up (line
//! settings, timeouts, ports) is kept with the result. The links stay open until the result is printed and
//! kept; a serial port is restored to its previous settings when they drop, after Ctrl-C too (the drivers
//! stop on it and return what they measured).

pub mod hint;
mod open;
mod plan;

use std::process::ExitCode;
use std::time::Duration;

use linkperf_core::echo_setup::flow_name;
use linkperf_core::line_budget::MIN_TIMEOUT_S;
use linkperf_core::run_result::Parameters;
use linkperf_core::Series;
use linkperf_core::{LatencySpec, Proto, ThroughputSpec};
use linkperf_net::echo_peer::{run_echo_idle, run_echo_latency, run_echo_throughput, EchoTimeouts, Payload};
use linkperf_net::run::MeasuredRun;
use linkperf_net::transport::echo_link::EchoLink;
use linkperf_net::transport::serial::SerialPort;

use crate::args::latency::LatencyArgs;
use crate::args::throughput::ThroughputArgs;
use crate::cmd::Prepared;
use crate::exit::UsageError;
use crate::output::Measured;
use open::{open, serial_error, Opened};

/// Bytes in flight to a network echo: enough to fill a fast path, bounded so that the end of a test drains
/// quickly.
const NETWORK_WINDOW_BYTES: u64 = 4 << 20;

/// `linkperf latency` against an echo.
pub fn latency(args: LatencyArgs) -> anyhow::Result<ExitCode> {
    let mut spec = LatencySpec::try_from(&args)?;
    if spec.load.is_some() || spec.rate_per_s.is_some() || spec.sessions != 1 {
        return Err(UsageError(
            "against an echo, --under-load, --rate and --sessions are not available: the echo test is closed loop, one session".into(),
        )
        .into());
    }
    let connect_timeout = args.timeout.unwrap_or(crate::args::latency::DEFAULT_TIMEOUT);
    let mut opened = open(&args.target, &args.line, spec.proto, connect_timeout)?;
    let timeout = plan::latency(&mut spec, &args, opened.line.as_ref());
    opened.keep_setup(timeout, args.line.char_timeout, None);
    opened.expect(opened.line.map(|line| plan::announce_latency(&spec, &line)));
    let timeouts = EchoTimeouts { message: timeout, inter_character: args.line.char_timeout };
    run_series(opened, Parameters::Latency(spec.clone()), &args.output, |links, payload, observer| {
        run_echo_latency(links, &spec, payload, timeouts, observer)
    })
}

/// `linkperf throughput` against an echo: the rate of intact bytes back.
pub fn throughput(args: ThroughputArgs) -> anyhow::Result<ExitCode> {
    let mut spec = ThroughputSpec::try_from(&args)?;
    if spec.phases.len() != 1 || spec.phases[0] != linkperf_core::Direction::Upload || spec.streams != 1 {
        return Err(UsageError(
            "against an echo, data goes out and comes back: --direction, --sequential and --streams do not apply"
                .into(),
        )
        .into());
    }
    if spec.sizes_bytes.len() != 1 {
        return Err(UsageError("against an echo, give one write size (--size)".into()).into());
    }
    // After the sender stops, the echo may fall silent this long before the missing bytes are counted.
    let silence = args.line.char_timeout.unwrap_or(Duration::from_secs_f64(MIN_TIMEOUT_S));
    let mut opened = open(&args.target, &args.line, spec.proto, Duration::from_secs_f64(MIN_TIMEOUT_S))?;
    let given = args.size.as_ref().map(|s| s.0[0]);
    let window = match opened.line {
        Some(line) => {
            let (write, window) = plan::throughput(given, &line, spec.proto == Proto::Udp);
            spec.sizes_bytes = vec![write];
            window
        }
        None => NETWORK_WINDOW_BYTES,
    };
    opened.keep_setup(silence, args.line.char_timeout, Some(window));
    let ports = opened.links.len();
    let announced = match opened.line {
        Some(l) => Some(plan::announce_throughput(&l, ports, spec.duration_s, (spec.sizes_bytes[0], window))),
        None => plan::announce_unknown_rate(spec.duration_s, silence),
    };
    opened.expect(announced);
    let Opened { mut links, endpoint, payload, line, peer, kind, .. } = opened;
    let mut prepared = Prepared::with_endpoint(endpoint, None, &args.output)?;
    let parameters = Parameters::Throughput(spec.clone());
    prepared.begin(&parameters);
    let bits = line.map_or(8, |l| l.data_bits);
    let run = run_echo_throughput(&mut links, &spec, payload, bits, (silence, window), &prepared);
    let mut run = match run {
        Ok(run) => run,
        Err(error) => return Err(prepared.fail(parameters, error)),
    };
    run.responder.hostname = peer;
    if let Some(line) = line {
        // Each line against its own rate; a sum over several lines against as many lines' rate.
        let lines = run.series.iter().filter(|s| s.stream.is_some()).count().max(1) as u32;
        for s in &mut run.series {
            let n = if s.stream.is_some() { 1 } else { lines };
            s.link = s.receiver_bps.map(|bps| line.efficiency_of_lines(bps, n));
        }
    }
    let intact = run.series.first().map_or(0, |s| s.receiver_bytes);
    let hint = hint::after_run(kind, spec.proto == Proto::Udp, run.error.as_ref(), intact, &run.warnings);
    let code = prepared.conclude(parameters, Measured::throughput(run));
    show(hint);
    drop(links);
    code
}

/// `linkperf idle` against an echo: the round trip after each idle gap, one port; keep-alives, when asked,
/// go over the same link during the gaps.
pub fn idle(args: crate::args::idle::IdleArgs) -> anyhow::Result<ExitCode> {
    let mut spec = linkperf_core::IdleSpec::try_from(&args)?;
    let connect_timeout = args.timeout.unwrap_or(crate::args::idle::DEFAULT_TIMEOUT);
    let mut opened = open(&args.target, &args.line, spec.proto, connect_timeout)?;
    if opened.links.len() != 1 {
        return Err(UsageError("idle runs against one echo or one device at a time".into()).into());
    }
    let timeout = plan::idle(&mut spec, &args, opened.line.as_ref());
    opened.keep_setup(timeout, args.line.char_timeout, None);
    opened.expect(opened.line.map(|line| plan::announce_idle(&spec, &line)));
    let timeouts = EchoTimeouts { message: timeout, inter_character: args.line.char_timeout };
    run_series(opened, Parameters::Idle(spec.clone()), &args.output, |links, payload, observer| {
        run_echo_idle(links[0].as_mut(), &spec, payload, timeouts, observer)
    })
}

/// Runs a test of round-trip series against the opened echoes: keeps the run from its start, measures it
/// with `measure`, prints and keeps the result, and says what to check when its outcome points to a
/// problem with the echo. The links (a serial port: its settings) are released only after the result is kept.
fn run_series(
    opened: Opened,
    parameters: Parameters,
    output: &crate::args::output::OutputArgs,
    measure: impl FnOnce(&mut [Box<dyn EchoLink>], Payload, &Prepared) -> MeasuredRun<Series>,
) -> anyhow::Result<ExitCode> {
    let Opened { mut links, endpoint, payload, peer, kind, .. } = opened;
    let mut prepared = Prepared::with_endpoint(endpoint, None, output)?;
    prepared.begin(&parameters);
    let mut run = measure(&mut links, payload, &prepared);
    run.responder.hostname = peer;
    let aggregates = run.series.iter().filter(|s| s.session.is_none());
    let intact = aggregates.filter_map(|s| s.summary.as_ref().map(|x| x.count)).sum();
    let udp = parameters.proto() == Proto::Udp;
    let hint = hint::after_run(kind, udp, run.error.as_ref(), intact, &run.warnings);
    let code = prepared.conclude(parameters, Measured::series(run));
    show(hint);
    drop(links);
    code
}

/// `linkperf serve --serial PATH`: echoes the serial line until Ctrl-C; the port is restored on the way out.
pub fn serve_serial(
    path: &std::path::Path,
    settings: &crate::args::line::LineSettingsArgs,
    quiet: bool,
) -> anyhow::Result<ExitCode> {
    let line = settings.serial();
    let mut port = SerialPort::open(path, &line).map_err(serial_error)?;
    if !quiet {
        eprintln!(
            "linkperf serve: echoing serial {} at {}, flow control {} (settings read back)",
            path.display(),
            line.short(),
            flow_name(line.flow)
        );
    }
    let packing = settings.packing().unwrap_or_default();
    if !quiet && !packing.is_none() {
        eprintln!("linkperf serve: packing: {}", packing.describe());
    }
    let echoed = linkperf_net::echo_peer::serve::serve_echo(&mut port, &crate::progress::interrupted, &packing)?;
    if !quiet {
        eprintln!("linkperf serve: {echoed} bytes echoed");
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints what to check after a run that went wrong.
fn show(hint: Option<&str>) {
    if let Some(hint) = hint {
        eprintln!("hint: {hint}");
    }
}
