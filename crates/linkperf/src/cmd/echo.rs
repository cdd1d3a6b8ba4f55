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
use linkperf_net::echo_peer::{run_echo_latency, run_echo_throughput, EchoTimeouts, Payload};
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
    link: Box<dyn EchoLink>,
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
    let mut links = vec![opened.link];
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
    let run = run_echo_throughput(opened.link.as_mut(), &spec, opened.payload, bits, (timeout, window), &prepared);
    let mut run = match run {
        Ok(run) => run,
        Err(error) => return Err(prepared.fail(parameters, error)),
    };
    run.responder.hostname = opened.peer;
    if let Some(line) = opened.line {
        for s in &mut run.series {
            s.link = s.receiver_bps.map(|bps| line.efficiency(bps));
        }
    }
    let code = prepared.conclude(parameters, Measured::throughput(run));
    drop(opened.link);
    code
}

/// `linkperf idle` against an echo: not measured yet.
pub fn idle(_args: crate::args::idle::IdleArgs) -> anyhow::Result<ExitCode> {
    Err(UsageError("idle against an echo or a serial line is not available yet: use latency".into()).into())
}

/// Opens the link the arguments name: a serial device, or a TCP or UDP echo service.
fn open(target: &TargetArgs, line: &LineArgs, proto: Proto, timeout: Duration) -> anyhow::Result<Opened> {
    if target.key_file.is_some() || target.unix.is_some() {
        return Err(UsageError("an echo takes no --key-file and no --unix path".into()).into());
    }
    if let (Proto::Serial, Some(path)) = (proto, &line.device) {
        if let Some(host) = &target.host {
            return Err(UsageError(format!("--proto serial uses --device, not a host ('{host}')")).into());
        }
        let settings = line.serial_settings();
        let port = SerialPort::open(path, &settings).map_err(|e| match e {
            linkperf_net::transport::serial::SerialError::UnsupportedBaud(_) => {
                anyhow::Error::new(UsageError(e.to_string()))
            }
            other => anyhow::Error::new(other),
        })?;
        eprintln!(
            "serial {}: {}, flow control {}, applied and read back",
            path.display(),
            settings.short(),
            flow_name(settings.flow)
        );
        let label = format!("loopback at {}", settings.short());
        let payload = Payload { mask: settings.data_mask(), avoid_xon_xoff: settings.flow == FlowControl::XonXoff };
        let endpoint = Endpoint::named(Target::Unix(port.path().to_path_buf()), label);
        let peer = "loopback plug (no responder)".to_string();
        return Ok(Opened { link: Box::new(port), endpoint, payload, line: Some(settings), peer });
    }
    let Some(host) = &target.host else {
        return Err(UsageError(
            "--peer echo needs the echo service's HOST and --port (e.g. 192.0.2.7 --port 7)".into(),
        )
        .into());
    };
    let resolved = Target::resolve(host, target.port)?;
    let Target::Inet(address) = resolved else {
        return Err(UsageError(format!("'{host}' is not a network address")).into());
    };
    let link: Box<dyn EchoLink> = match proto {
        Proto::Tcp => Box::new(
            TcpEcho::connect(address, timeout)
                .with_context(|| format!("could not connect to the echo service at {address}"))?,
        ),
        Proto::Udp => Box::new(UdpEcho::connect(address).with_context(|| format!("could not open UDP to {address}"))?),
        other => return Err(UsageError(format!("--peer echo runs over tcp or udp, not {}", other.name())).into()),
    };
    // A device server's serial line behind the echo, when its rate is given: its data bits bound the payload.
    let settings = line.line_behind_echo();
    let payload = settings.map_or_else(Payload::default, |s| Payload {
        mask: s.data_mask(),
        avoid_xon_xoff: s.flow == FlowControl::XonXoff,
    });
    let peer = format!("echo service (no responder), {}", link.describe());
    Ok(Opened { link, endpoint: Endpoint::named(resolved, host.clone()), payload, line: settings, peer })
}

fn flow_name(flow: FlowControl) -> &'static str {
    match flow {
        FlowControl::None => "none",
        FlowControl::RtsCts => "rtscts",
        FlowControl::XonXoff => "xonxoff",
    }
}
