//! Finding the responder: a named host, a Unix socket path, or a responder started in this process.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use linkperf_core::echo_setup::EchoSetup;
use linkperf_core::Proto;
use linkperf_net::{Responder, ResponderConfig, ResponderHandle, Target};

use crate::args::target::TargetArgs;
use crate::exit::UsageError;

/// The responder a test talks to, and the embedded one if the test started it.
pub struct Endpoint {
    /// Where to connect.
    pub target: Target,
    /// What the user named, or `embedded`.
    pub label: String,
    /// The set-up of a test against an echo (kept with the result), `None` against a responder.
    pub echo: Option<EchoSetup>,
    /// Keeps the embedded responder's socket file until the test ends.
    _embedded: Option<ResponderHandle>,
}

impl Endpoint {
    /// An endpoint that is not a responder (an echo service, a serial device): `target` is where it is,
    /// `label` what the user named.
    pub fn named(target: Target, label: String) -> Self {
        Self { target, label, echo: None, _embedded: None }
    }
}

/// Resolves `args` for a test over `proto`; with no host and no path, starts an embedded responder on
/// loopback.
pub fn resolve(args: &TargetArgs, proto: Proto) -> anyhow::Result<Endpoint> {
    match (&args.host, &args.unix, proto) {
        (Some(_), Some(_), _) => Err(UsageError("give either HOST or --unix PATH, not both".into()).into()),
        (Some(host), None, Proto::Unix) => {
            Err(UsageError(format!("--proto unix reaches a local responder by --unix PATH, not by host ('{host}')"))
                .into())
        }
        (None, Some(_), Proto::Tcp | Proto::Udp) => {
            Err(UsageError(format!("--unix PATH is for --proto unix, not {}", proto.name())).into())
        }
        (Some(host), None, _) => {
            let target = Target::resolve(host, args.port)?;
            Ok(Endpoint { target, label: host.clone(), echo: None, _embedded: None })
        }
        (None, Some(path), _) => Ok(Endpoint {
            target: Target::Unix(path.clone()),
            label: path.display().to_string(),
            echo: None,
            _embedded: None,
        }),
        (None, None, _) => embedded(proto),
    }
}

fn embedded(proto: Proto) -> anyhow::Result<Endpoint> {
    let unix = (proto == Proto::Unix).then(temporary_socket_path);
    let config = ResponderConfig {
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        unix: unix.clone(),
        key: None,
        ..ResponderConfig::default()
    };
    let handle =
        Responder::bind(config).and_then(Responder::spawn).context("could not start the embedded responder")?;
    let target = match &unix {
        Some(path) => Target::Unix(path.clone()),
        None => Target::Inet(handle.address()),
    };
    Ok(Endpoint { target, label: "embedded".into(), echo: None, _embedded: Some(handle) })
}

fn temporary_socket_path() -> PathBuf {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    std::env::temp_dir().join(format!("linkperf-{}-{nanos}.sock", std::process::id()))
}
