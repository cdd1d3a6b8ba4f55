//! `linkperf connect`: arguments and their conversion into a `ConnectSpec`.

use std::time::Duration;

use clap::Args;
use linkperf_core::{ConnectSpec, Proto};

use super::output::OutputArgs;
use super::target::TargetArgs;
use super::value::{self, ProtoArg};
use crate::exit::UsageError;

/// The long description shown by `--help`.
pub const LONG_ABOUT: &str = "Connection-establishment latency: for each connection, the time from opening it until the responder's first byte is back (connect, a 12-byte request, a 1-byte response: about two round trips, as netperf's TCP_CRR), as a distribution, plus connections per second. --bare times the handshake alone (until connect returns: about one round trip for TCP).";

/// Examples shown after the options in `--help`.
const EXAMPLES: &str = "Examples:\n  linkperf connect                       TCP connections to a built-in responder on loopback\n  linkperf connect 198.18.0.2 -n 5000\n  linkperf connect 198.18.0.2 --bare      the handshake alone\n  linkperf connect --proto unix --duration 5s";

/// Arguments of `linkperf connect`.
#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct ConnectArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Transport (connection-oriented: tcp or unix).
    #[arg(long, value_enum, default_value = "tcp")]
    pub proto: ProtoArg,
    /// Timed connections [default: 1000].
    #[arg(short = 'n', long, conflicts_with = "duration")]
    pub count: Option<u64>,
    /// Run for this long instead of a count, e.g. 10s.
    #[arg(short, long, value_parser = value::duration)]
    pub duration: Option<Duration>,
    /// Untimed connections first.
    #[arg(long, default_value_t = 10)]
    pub warmup: u64,
    /// How long one connection may take before the run stops with an error.
    #[arg(long, default_value = "2s", value_parser = value::timeout)]
    pub timeout: Duration,
    /// Time the handshake alone: until connect returns (TCP: SYN, SYN-ACK; about one round trip), not the
    /// request and the first byte of the reply. The request is still sent and answered, untimed.
    #[arg(long)]
    pub bare: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The default number of timed connections.
const DEFAULT_COUNT: u64 = 1_000;

impl TryFrom<&ConnectArgs> for ConnectSpec {
    type Error = UsageError;

    fn try_from(args: &ConnectArgs) -> Result<Self, UsageError> {
        let proto = Proto::from(args.proto);
        if proto == Proto::Serial {
            return Err(UsageError("a serial line has no connections to establish: use latency or throughput".into()));
        }
        if !proto.is_connection_oriented() {
            return Err(UsageError(format!(
                "connect measures connections: use --proto tcp or unix, not {}",
                proto.name()
            )));
        }
        let stop = value::stop_condition(args.count, args.duration, DEFAULT_COUNT)?;
        if args.timeout.is_zero() {
            return Err(UsageError("--timeout must be above zero".into()));
        }
        Ok(ConnectSpec { proto, stop, warmup: args.warmup, timeout_s: args.timeout.as_secs_f64(), bare: args.bare })
    }
}
