//! Finding the responder: a named host, a Unix socket path, or a responder started in this process.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use linkperf_core::echo_setup::EchoSetup;
use linkperf_core::placement::{CpuList, Placement};
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
    /// Which CPUs each end was pinned to, as asked.
    pub placement: Placement,
    /// Keeps the embedded responder's socket file until the test ends.
    _embedded: Option<ResponderHandle>,
}

impl Endpoint {
    /// An endpoint that is not a responder (an echo service, a serial device): `target` is where it is,
    /// `label` what the user named.
    pub fn named(target: Target, label: String) -> Self {
        Self { target, label, echo: None, placement: Placement::default(), _embedded: None }
    }
}

/// Resolves `args` for a test over `proto`; with no host and no path, starts an embedded responder on
/// loopback, its threads on `responder_cpus` if given (which only an embedded responder can be).
pub fn resolve(args: &TargetArgs, proto: Proto, responder_cpus: Option<&CpuList>) -> anyhow::Result<Endpoint> {
    let mut endpoint = resolve_responder(args, proto, responder_cpus)?;
    if args.sockets.any() {
        if endpoint.target.inet_address().is_none() {
            return Err(UsageError(
                "--bind, --bind-dev, --dscp and --tos are for tests over IP, not Unix sockets".into(),
            )
            .into());
        }
        endpoint.target = endpoint.target.with_options(args.sockets.options()?);
    }
    Ok(endpoint)
}

fn resolve_responder(args: &TargetArgs, proto: Proto, responder_cpus: Option<&CpuList>) -> anyhow::Result<Endpoint> {
    if responder_cpus.is_some() && (args.host.is_some() || args.unix.is_some()) {
        return Err(UsageError(
            "--responder-affinity pins the built-in responder (no HOST); pin a responder elsewhere with `linkperf serve --affinity CPUS`"
                .into(),
        )
        .into());
    }
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
            Ok(Endpoint::named(target, host.clone()))
        }
        (None, Some(path), _) => Ok(Endpoint::named(Target::unix(path.clone()), path.display().to_string())),
        (None, None, _) => embedded(proto, responder_cpus),
    }
}

fn embedded(proto: Proto, cpus: Option<&CpuList>) -> anyhow::Result<Endpoint> {
    let unix = (proto == Proto::Unix).then(temporary_socket_path);
    let config = ResponderConfig {
        bind: SocketAddr::from(([127, 0, 0, 1], 0)),
        unix: unix.clone(),
        key: None,
        ..ResponderConfig::default()
    };
    // The responder's threads inherit the affinity of the thread that spawns them: pin this one for the
    // spawn, then give it back its own.
    let own = cpus.map(|_| linkperf_net::placement::current()).transpose()?;
    if let Some(cpus) = cpus {
        linkperf_net::placement::pin_current_thread(cpus)?;
    }
    let spawned = Responder::bind(config).and_then(Responder::spawn);
    if let Some(own) = &own {
        linkperf_net::placement::pin_current_thread(own)?;
    }
    let handle = spawned.context("could not start the embedded responder")?;
    let target = match &unix {
        Some(path) => Target::unix(path.clone()),
        None => Target::inet(handle.address()),
    };
    let placement = Placement { client: None, responder: cpus.cloned() };
    Ok(Endpoint { target, label: "embedded".into(), echo: None, placement, _embedded: Some(handle) })
}

fn temporary_socket_path() -> PathBuf {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    std::env::temp_dir().join(format!("linkperf-{}-{nanos}.sock", std::process::id()))
}
