//! `linkperf idle`: arguments and their conversion into an `IdleSpec`.

use std::time::Duration;

use clap::Args;
use linkperf_core::{IdleSpec, Proto};

use super::output::OutputArgs;
use super::target::TargetArgs;
use super::value::{self, ProtoArg};
use crate::exit::UsageError;

/// The long description shown by `--help`.
pub const LONG_ABOUT: &str = "Idle wake-up penalty: after each idle gap, the round trip of one message, COUNT times \
per gap, reported as min/typ/max per gap. Power-saving radios and interrupt moderation answer the first message \
after a silence more slowly; --keepalive exchanges a message on a second connection at a fixed period during the \
gaps, to show whether keep-alives remove the penalty.";

/// Examples shown after the options in `--help`.
const EXAMPLES: &str = "Examples:
  linkperf idle 198.18.0.2                                    gaps 0, 1ms, 10ms, 100ms, 500ms, 1s, 2s
  linkperf idle 198.18.0.2 --gaps 0,100ms,1s --count 20
  linkperf idle 198.18.0.2 --keepalive 50ms                   the same with keep-alives
  linkperf idle --proto serial --device /dev/ttyUSB0 --keepalive 50ms   keep-alives over a serial line";

/// Arguments of `linkperf idle`.
#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct IdleArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Transport.
    #[arg(long, value_enum, default_value = "udp")]
    pub proto: ProtoArg,
    /// Idle gaps before each timed message, e.g. 0,10ms,1s.
    #[arg(long, value_name = "GAPS", default_value = "0,1ms,10ms,100ms,500ms,1s,2s", value_parser = value::duration_list)]
    pub gaps: value::DurationList,
    /// Timed messages per gap.
    #[arg(short = 'n', long, default_value_t = 10)]
    pub count: u64,
    /// Message size in bytes (request and reply each) [default: 64; on a serial line: 1].
    #[arg(short, long, value_parser = value::size)]
    pub size: Option<u64>,
    /// Exchange a keep-alive message this often during the gaps: on a second connection to a responder;
    /// against an echo (--peer echo, --proto serial), on the same link, each one echoed and checked before
    /// the timed message is sent.
    #[arg(long, value_parser = value::duration)]
    pub keepalive: Option<Duration>,
    /// How long a reply may take: a later UDP reply counts as lost, a TCP/Unix one ends the run [default:
    /// 3s; on a serial line: 4 round trips of the message at the line's rate, at least 3s].
    #[arg(long, value_parser = value::timeout)]
    pub timeout: Option<Duration>,
    #[command(flatten)]
    pub line: super::line::LineArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The default message size.
const DEFAULT_SIZE: u64 = 64;
/// The default time a reply may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);

impl TryFrom<&IdleArgs> for IdleSpec {
    type Error = UsageError;

    fn try_from(args: &IdleArgs) -> Result<Self, UsageError> {
        if args.count == 0 {
            return Err(UsageError("--count must be at least 1".into()));
        }
        let size = args.size.unwrap_or(DEFAULT_SIZE);
        let timeout = args.timeout.unwrap_or(DEFAULT_TIMEOUT);
        if size == 0 || timeout.is_zero() || args.keepalive.is_some_and(|k| k.is_zero()) {
            return Err(UsageError("--size, --timeout and --keepalive must be above zero".into()));
        }
        Ok(IdleSpec {
            proto: Proto::from(args.proto),
            gaps_s: args.gaps.0.iter().map(Duration::as_secs_f64).collect(),
            count: args.count,
            size_bytes: size,
            keepalive_s: args.keepalive.map(|k| k.as_secs_f64()),
            timeout_s: timeout.as_secs_f64(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(argv: &[&str]) -> Result<IdleSpec, String> {
        IdleSpec::try_from(&crate::args::parse::<IdleArgs>(argv)?).map_err(|e| e.0)
    }

    #[test]
    fn default_gaps_span_zero_to_two_seconds() {
        let spec = spec(&[]).unwrap();
        assert_eq!(spec.gaps_s, vec![0.0, 0.001, 0.01, 0.1, 0.5, 1.0, 2.0]);
        assert_eq!((spec.count, spec.size_bytes, spec.keepalive_s), (10, 64, None));
    }

    #[test]
    fn bad_gaps_and_counts_are_usage_errors() {
        assert!(spec(&["--gaps", "0,soon"]).is_err());
        assert!(spec(&["--count", "0"]).is_err());
        assert!(spec(&["--keepalive", "0"]).is_err());
        assert_eq!(spec(&["--keepalive", "50ms"]).unwrap().keepalive_s, Some(0.05));
    }
}
