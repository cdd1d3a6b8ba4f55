//! `linkperf serve`: arguments of the responder.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use super::value;

/// The long description shown by `--help`.
pub const LONG_ABOUT: &str = "Run a responder: serves latency and connect tests (and every later test) to many clients at once, each in its own session. Control and data share one TCP port, and UDP tests use the same port number, so one firewall opening suffices. Prints one line per session on stderr.";

/// Examples shown after the options in `--help`.
const EXAMPLES: &str = "Examples:\n  linkperf serve                              all addresses, port 5250\n  linkperf serve --bind 198.18.0.2 --port 6000\n  linkperf serve --unix /run/linkperf.sock    also serve local (IPC) clients\n  linkperf serve --key-file /etc/linkperf.key require clients to hold the same key\n  linkperf serve --serial /dev/ttyS1 --baud 115200   echo a serial line (the far end of --proto serial)";

/// The default `--max-rate`: a responder left running must not become a fast UDP source for anyone who
/// reaches it. Higher rates are one flag away on a lab responder.
pub const DEFAULT_MAX_RATE: &str = "1G";

/// `--max-rate`: a rate in bits per second, or no limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaxRate(pub Option<f64>);

fn max_rate(text: &str) -> Result<MaxRate, String> {
    match text {
        "none" | "unlimited" => Ok(MaxRate(None)),
        rate => value::bit_rate(rate).map(|r| MaxRate(Some(r))),
    }
}

/// Arguments of `linkperf serve`.
#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct ServeArgs {
    /// Address to listen on (:: serves IPv6 and IPv4).
    #[arg(long, default_value = "::")]
    pub bind: IpAddr,
    /// TCP and UDP port.
    #[arg(short, long, default_value_t = 5250)]
    pub port: u16,
    /// Also listen on this Unix-domain socket path.
    #[arg(long, value_name = "PATH")]
    pub unix: Option<PathBuf>,
    /// Require clients to prove they hold the key in this file (HMAC challenge-response).
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// Most client sessions served at once.
    #[arg(long, default_value_t = 64)]
    pub max_sessions: u32,
    /// Longest test served; traffic of a longer one is cut.
    #[arg(long, default_value = "1h", value_parser = value::duration)]
    pub max_duration: Duration,
    /// Largest message served.
    #[arg(long, default_value = "16M", value_parser = value::size)]
    pub max_size: u64,
    /// Highest UDP throughput rate served per test, all streams together (e.g. 100M, or `none` for no
    /// limit). It bounds what the responder sends: its streams of an unpaced test are paced at it, and an
    /// unpaced burst is served up to one second's worth of it.
    #[arg(long, default_value = DEFAULT_MAX_RATE, value_parser = max_rate)]
    pub max_rate: MaxRate,
    /// Serve `--wait spin` (a busy-polling core per data connection, for the whole test); without it such
    /// requests are refused.
    #[arg(long)]
    pub allow_spin: bool,
    /// Run every responder thread on these CPUs (e.g. 1, 2-3, as taskset -c takes them), so that tests
    /// measured against it are comparable on a host with few CPUs.
    #[arg(long, value_name = "CPUS")]
    pub affinity: Option<linkperf_core::placement::CpuList>,
    /// Do not log sessions.
    #[arg(short, long)]
    pub quiet: bool,
    /// Instead of a network responder: echo every byte that arrives on this serial device, as a loopback
    /// plug would (the far end for `--proto serial` across two boards or two ports), with the settings below.
    #[arg(long, value_name = "PATH")]
    pub serial: Option<PathBuf>,
    #[command(flatten)]
    pub line: super::line::LineSettingsArgs,
}
