//! Reaching the echoes a test names: serial devices (each locked, set, read back and announced), or TCP or
//! UDP echo services (several at once when given as a list), and what is known of the serial line.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use linkperf_core::echo_setup::{flow_name, EchoPeer, EchoSetup};
use linkperf_core::serial_line::{FlowControl, LineSettings, Packing};
use linkperf_core::Proto;
use linkperf_net::echo_peer::Payload;
use linkperf_net::transport::echo_link::{EchoLink, TcpEcho, UdpEcho};
use linkperf_net::transport::serial::{SerialError, SerialPort};
use linkperf_net::Target;

use super::hint::EchoProblem;
use crate::args::line::LineArgs;
use crate::args::target::TargetArgs;
use crate::cmd::endpoint::Endpoint;
use crate::exit::UsageError;

/// Echoes reached and ready: the links, where they are, and what their bytes may carry.
pub struct Opened {
    /// One link per target, in the order given.
    pub links: Vec<Box<dyn EchoLink>>,
    /// What the result names as the target.
    pub endpoint: Endpoint,
    /// The bytes sent: masked to the line's data bits, without XON/XOFF under software flow control.
    pub payload: Payload,
    /// The serial line's settings, when the link is one (or is behind the echo).
    pub line: Option<LineSettings>,
    /// What answers, as the result names it.
    pub peer: String,
    /// Which kind of echo it is.
    pub kind: EchoPeer,
    /// The far end's packing, as given (recorded, not applied: it is the far end's).
    pub packing: Option<Packing>,
}

impl Opened {
    /// The set-up kept with the result; the endpoint carries it from here on.
    pub fn keep_setup(&mut self, timeout: Duration, char_timeout: Option<Duration>, window: Option<u64>) {
        self.endpoint.echo = Some(EchoSetup {
            peer: self.kind,
            ports: self.links.len() as u32,
            line: self.line,
            inter_character_timeout_s: char_timeout.map(|d| d.as_secs_f64()),
            timeout_s: timeout.as_secs_f64(),
            window_bytes: window,
            packing: self.packing,
            expected_s: None,
        });
    }

    /// Records the run length announced before the run.
    pub fn expect(&mut self, seconds: Option<f64>) {
        if let Some(setup) = self.endpoint.echo.as_mut() {
            setup.expected_s = seconds;
        }
    }
}

/// Opens the links the arguments name: serial devices, or TCP or UDP echo services (several at once when
/// given as a list, each its own series). `timeout` bounds a TCP connection.
pub fn open(target: &TargetArgs, line: &LineArgs, proto: Proto, timeout: Duration) -> anyhow::Result<Opened> {
    if target.sockets.any() {
        return Err(UsageError(
            "--bind, --bind-dev, --dscp and --tos apply to tests against a linkperf responder, not yet to echo peers or serial lines"
                .into(),
        )
        .into());
    }
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
        let Some(address) = resolved.inet_address() else {
            return Err(UsageError(format!("'{item}' is not a network address")).into());
        };
        links.push(match proto {
            Proto::Tcp => Box::new(
                TcpEcho::connect(address, timeout)
                    .map_err(|e| EchoProblem::NoService(e.to_string()))
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
    let payload = settings.map_or_else(Payload::default, |s| payload_for(&s));
    let described: Vec<String> = links.iter().map(|l| l.describe()).collect();
    let peer = format!("echo service (no responder), {}", described.join(", "));
    let endpoint = Endpoint::named(first, hosts.clone());
    let packing = line.settings.packing();
    Ok(Opened { links, endpoint, payload, line: settings, peer, kind: EchoPeer::EchoService, packing })
}

/// One item of a list of echo services: `HOST:PORT`, `[V6]:PORT`, or a host with --port.
fn resolve_item(item: &str, port: u16) -> anyhow::Result<Target> {
    if let Ok(address) = item.parse::<std::net::SocketAddr>() {
        return Ok(Target::inet(address));
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
fn open_serial(devices: &[PathBuf], line: &LineArgs) -> anyhow::Result<Opened> {
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
    let endpoint = Endpoint::named(Target::unix(paths.join(",").into()), label);
    let peer = "loopback plug (no responder)".to_string();
    let payload = payload_for(&settings);
    let packing = line.settings.packing();
    Ok(Opened { links, endpoint, payload, line: Some(settings), peer, kind: EchoPeer::SerialDevice, packing })
}

/// The bytes a line carries intact: its data bits, and no XON/XOFF under software flow control.
fn payload_for(line: &LineSettings) -> Payload {
    Payload { mask: line.data_mask(), avoid_xon_xoff: line.flow == FlowControl::XonXoff }
}

/// A serial port's error: an unsupported baud rate is the user's input (exit 2), the rest the device's.
pub fn serial_error(e: SerialError) -> anyhow::Error {
    match e {
        SerialError::UnsupportedBaud(_) => anyhow::Error::new(UsageError(e.to_string())),
        other => anyhow::Error::new(other),
    }
}
