//! `latency` and `throughput` against a peer that only echoes (`--peer echo` over TCP or UDP) or over a
//! serial line closed by a loopback plug (`--proto serial --device PATH`): no responder, no control session.
//!
//! The links stay open until the result is printed and kept; a serial port is restored to its previous
//! settings when they drop, after Ctrl-C too (the drivers stop on it and return what they measured).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use linkperf_core::run_result::Parameters;
use linkperf_core::serial_line::{FlowControl, LineSettings};
use linkperf_core::{LatencySpec, Proto, ThroughputSpec};
use linkperf_net::echo_peer::{run_echo_idle, run_echo_latency, run_echo_throughput, EchoTimeouts, Payload};
use linkperf_net::transport::echo_link::{EchoLink, TcpEcho, UdpEcho};
use linkperf_net::transport::serial::SerialPort;
use linkperf_net::Target;

use crate::args::latency::LatencyArgs;
use crate::args::line::LineArgs;
use crate::args::target::TargetArgs;
use crate::args::throughput::ThroughputArgs;
use crate::cmd::endpoint::Endpoint;
use crate::cmd::Prepared;
use crate::exit::UsageError;
use crate::output::Measured;

/// Bytes in flight to a network echo: enough to fill a fast path, bounded so that the end of a test drains
/// quickly.
const NETWORK_WINDOW_BYTES: u64 = 4 << 20;

/// An echo reached and ready: the link, where it is, and what its bytes may carry.
struct Opened {
    /// One link per target, in the order given.
    links: Vec<Box<dyn EchoLink>>,
    endpoint: Endpoint,
    payload: Payload,
    /// The serial line's settings, when the link is one (or is behind the echo).
    line: Option<LineSettings>,
    /// What answers, as the result names it.
    peer: String,
}

/// `linkperf latency` against an echo.
pub fn latency(args: LatencyArgs) -> anyhow::Result<ExitCode> {
    let spec = LatencySpec::try_from(&args)?;
    if spec.load.is_some() || spec.rate_per_s.is_some() || spec.sessions != 1 {
        return Err(UsageError(
            "against an echo, --under-load, --rate and --sessions are not available: the echo test is closed loop, one session".into(),
        )
        .into());
    }
    let timeout = args.timeout;
    let opened = open(&args.target, &args.line, spec.proto, timeout)?;
    let mut prepared = Prepared::with_endpoint(opened.endpoint, None, &args.output)?;
    let parameters = Parameters::Latency(spec.clone());
    prepared.begin(&parameters);
    let mut links = opened.links;
    let timeouts = EchoTimeouts { message: timeout, inter_character: args.line.char_timeout };
    let mut run = run_echo_latency(&mut links, &spec, opened.payload, timeouts, &prepared);
    run.responder.hostname = opened.peer;
    let code = prepared.conclude(parameters, Measured::series(run));
    drop(links);
    code
}

/// `linkperf throughput` against an echo: the rate of intact bytes back.
pub fn throughput(args: ThroughputArgs) -> anyhow::Result<ExitCode> {
    let spec = ThroughputSpec::try_from(&args)?;
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
    let timeout = Duration::from_secs(2);
    let mut opened = open(&args.target, &args.line, spec.proto, timeout)?;
    let mut prepared = Prepared::with_endpoint(opened.endpoint, None, &args.output)?;
    let parameters = Parameters::Throughput(spec.clone());
    prepared.begin(&parameters);
    let bits = opened.line.map_or(8, |l| l.data_bits);
    // A quarter of a second of the line in flight keeps it busy through the echo's delay and drains fast.
    let window = opened.line.map_or(NETWORK_WINDOW_BYTES, |l| (l.characters_per_s() / 4.0).max(256.0) as u64);
    let run = run_echo_throughput(&mut opened.links, &spec, opened.payload, bits, (timeout, window), &prepared);
    let mut run = match run {
        Ok(run) => run,
        Err(error) => return Err(prepared.fail(parameters, error)),
    };
    run.responder.hostname = opened.peer;
    if let Some(line) = opened.line {
        // Each line against its own rate; a sum over several lines against as many lines' rate.
        let lines = run.series.iter().filter(|s| s.stream.is_some()).count().max(1) as u32;
        for s in &mut run.series {
            let n = if s.stream.is_some() { 1 } else { lines };
            s.link = s.receiver_bps.map(|bps| line.efficiency_of_lines(bps, n));
        }
    }
    let code = prepared.conclude(parameters, Measured::throughput(run));
    drop(opened.links);
    code
}

/// `linkperf idle` against an echo: the round trip after each idle gap, one port.
pub fn idle(args: crate::args::idle::IdleArgs) -> anyhow::Result<ExitCode> {
    let spec = linkperf_core::IdleSpec::try_from(&args)?;
    if spec.keepalive_s.is_some() {
        return Err(UsageError("--keepalive needs a second session: an echo has none".into()).into());
    }
    let timeout = args.timeout;
    let opened = open(&args.target, &args.line, spec.proto, timeout)?;
    if opened.links.len() != 1 {
        return Err(UsageError("idle runs against one echo or one device at a time".into()).into());
    }
    let mut prepared = Prepared::with_endpoint(opened.endpoint, None, &args.output)?;
    let parameters = Parameters::Idle(spec.clone());
    prepared.begin(&parameters);
    let mut links = opened.links;
    let timeouts = EchoTimeouts { message: timeout, inter_character: args.line.char_timeout };
    let mut run = run_echo_idle(links[0].as_mut(), &spec, opened.payload, timeouts, &prepared);
    run.responder.hostname = opened.peer;
    let code = prepared.conclude(parameters, Measured::series(run));
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
    let echoed = linkperf_net::echo_peer::serve::serve_echo(&mut port, &crate::progress::interrupted)?;
    if !quiet {
        eprintln!("linkperf serve: {echoed} bytes echoed");
    }
    Ok(ExitCode::SUCCESS)
}

/// A serial port's error: an unsupported baud rate is the user's input (exit 2), the rest the device's.
fn serial_error(e: linkperf_net::transport::serial::SerialError) -> anyhow::Error {
    match e {
        linkperf_net::transport::serial::SerialError::UnsupportedBaud(_) => {
            anyhow::Error::new(UsageError(e.to_string()))
        }
        other => anyhow::Error::new(other),
    }
}

/// Opens the links the arguments name: serial devices, or TCP or UDP echo services (several at once when
/// given as a list, each its own series).
fn open(target: &TargetArgs, line: &LineArgs, proto: Proto, timeout: Duration) -> anyhow::Result<Opened> {
    if target.key_file.is_some() || target.unix.is_some() {
        return Err(UsageError("an echo takes no --key-file and no --unix path".into()).into());
    }
    if proto == Proto::Serial {
        if let Some(host) = &target.host {
            return Err(UsageError(format!("--proto serial uses --device, not a host ('{host}')")).into());
        }
        return open_serial(&line.device, line);
    }
    let Some(hosts) = &target.host else {
        return Err(UsageError(
            "--peer echo needs the echo service's HOST and --port (e.g. 192.0.2.7 --port 7)".into(),
        )
        .into());
    };
    let mut links: Vec<Box<dyn EchoLink>> = Vec::new();
    let mut first = None;
    for item in hosts.split(',').map(str::trim).filter(|h| !h.is_empty()) {
        let resolved = resolve_item(item, target.port)?;
        let Target::Inet(address) = resolved else {
            return Err(UsageError(format!("'{item}' is not a network address")).into());
        };
        links.push(match proto {
            Proto::Tcp => Box::new(
                TcpEcho::connect(address, timeout)
                    .with_context(|| format!("could not connect to the echo service at {address}"))?,
            ),
            Proto::Udp => {
                Box::new(UdpEcho::connect(address).with_context(|| format!("could not open UDP to {address}"))?)
            }
            other => return Err(UsageError(format!("--peer echo runs over tcp or udp, not {}", other.name())).into()),
        });
        first.get_or_insert(resolved);
    }
    let Some(first) = first else { return Err(UsageError("no echo service named".into()).into()) };
    // A device server's serial line behind the echo, when its rate is given: its data bits bound the payload.
    let settings = line.line_behind_echo();
    let payload = settings.map_or_else(Payload::default, |s| Payload {
        mask: s.data_mask(),
        avoid_xon_xoff: s.flow == FlowControl::XonXoff,
    });
    let described: Vec<String> = links.iter().map(|l| l.describe()).collect();
    let peer = format!("echo service (no responder), {}", described.join(", "));
    Ok(Opened { links, endpoint: Endpoint::named(first, hosts.clone()), payload, line: settings, peer })
}

/// One item of a list of echo services: `HOST:PORT`, `[V6]:PORT`, or a host with --port.
fn resolve_item(item: &str, port: u16) -> anyhow::Result<Target> {
    if let Ok(address) = item.parse::<std::net::SocketAddr>() {
        return Ok(Target::Inet(address));
    }
    match item.rsplit_once(':') {
        Some((host, p)) if !host.contains(':') => {
            let p: u16 = p.parse().map_err(|_| UsageError(format!("'{item}': the port must be a number")))?;
            Ok(Target::resolve(host, p)?)
        }
        _ => Ok(Target::resolve(item, port)?),
    }
}

/// Opens every serial device, each locked, set, read back and announced.
fn open_serial(devices: &[std::path::PathBuf], line: &LineArgs) -> anyhow::Result<Opened> {
    let settings = line.serial_settings();
    let mut links: Vec<Box<dyn EchoLink>> = Vec::new();
    for path in devices {
        let port = SerialPort::open(path, &settings).map_err(serial_error)?;
        eprintln!(
            "serial {}: {}, flow control {}, applied and read back",
            path.display(),
            settings.short(),
            flow_name(settings.flow)
        );
        links.push(Box::new(port));
    }
    let paths: Vec<String> = devices.iter().map(|p| p.display().to_string()).collect();
    let label = format!("loopback at {}", settings.short());
    let payload = Payload { mask: settings.data_mask(), avoid_xon_xoff: settings.flow == FlowControl::XonXoff };
    let endpoint = Endpoint::named(Target::Unix(paths.join(",").into()), label);
    let peer = "loopback plug (no responder)".to_string();
    Ok(Opened { links, endpoint, payload, line: Some(settings), peer })
}

fn flow_name(flow: FlowControl) -> &'static str {
    match flow {
        FlowControl::None => "none",
        FlowControl::RtsCts => "rtscts",
        FlowControl::XonXoff => "xonxoff",
    }
}
