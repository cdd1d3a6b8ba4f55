//! `linkperf latency`: arguments and their conversion into a `LatencySpec`.

use std::time::Duration;

use clap::Args;
use linkperf_core::{LatencySpec, Proto};

use super::output::OutputArgs;
use super::target::TargetArgs;
use super::value::{self, ProtoArg, WaitArg};
use crate::exit::UsageError;

/// The long description shown by `--help`.
pub const LONG_ABOUT: &str = "Round-trip latency: the client sends SIZE bytes, the responder sends them back, and each round trip is timed. Reports count, min, mean, stddev, p50 (typ), p90, p99, p99.9, max, transactions/s and lost replies per message size, always as full round trips (never halved).";

/// Examples shown after the options in `--help`.
const EXAMPLES: &str = "Examples:\n  linkperf latency                                  64-byte TCP round trips on loopback\n  linkperf latency 198.18.0.2 --size 64,256,1k,4k,16k,64k\n  linkperf latency HOST --proto udp --wait spin --duration 10s\n  linkperf latency HOST --sessions 8 --size 1      8 concurrent sessions, each and aggregate\n  linkperf latency HOST --rate 1k                   open loop: 1000 requests/s on a fixed schedule\n  linkperf latency HOST --under-load up --duration 10s   idle, then beside a TCP upload (bufferbloat)\n  linkperf latency --proto serial --device /dev/ttyUSB0 --baud 9600   1-byte round trips through a loopback plug\n  linkperf latency HOST --port 4001 --peer echo --baud 9600   a device server's echo (no responder)";

/// Arguments of `linkperf latency`.
#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct LatencyArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Transport.
    #[arg(long, value_enum, default_value = "tcp")]
    pub proto: ProtoArg,
    /// Message sizes in bytes (k = 1024), one series each, e.g. 64,256,1k,4k,16k,64k. UDP messages carry
    /// a 12-byte header, so they are at least 12 bytes [default: 64; on a serial line: 1].
    #[arg(short, long, value_name = "SIZES", value_parser = value::size_list)]
    pub size: Option<value::SizeList>,
    /// Timed round trips per size and session [default: 10000; on a serial line: as many as fit in about
    /// 60 s of the line, 10 to 10000].
    #[arg(short = 'n', long, conflicts_with = "duration")]
    pub count: Option<u64>,
    /// Time per size instead of a count, e.g. 10s.
    #[arg(short, long, value_parser = value::duration)]
    pub duration: Option<Duration>,
    /// Untimed round trips before each size [default: 100; on a serial line: a hundredth of the count].
    #[arg(long)]
    pub warmup: Option<u64>,
    /// How both ends wait for data: block sleeps in the kernel; spin busy-polls (lowest latency, one core
    /// per session at each end).
    #[arg(long, value_enum, default_value = "block")]
    pub wait: WaitArg,
    /// Concurrent ping-pong sessions, each on its own connection; reported each and in aggregate.
    #[arg(long, default_value_t = 1)]
    pub sessions: u32,
    /// Open loop: requests per second per session on a fixed schedule (e.g. 1k); each round trip is timed
    /// from its scheduled send, so stalls are not hidden.
    #[arg(long, value_parser = value::per_second)]
    pub rate: Option<f64>,
    /// How long a reply may take: a later UDP reply counts as lost, a TCP/Unix one ends the run [default:
    /// 2s; on a serial line: 4 round trips of the largest message at the line's rate, at least 2s].
    #[arg(long, value_parser = value::timeout)]
    pub timeout: Option<Duration>,
    /// Measure each size twice, idle and then while bulk TCP saturates the path this way (bufferbloat);
    /// each series runs for --duration [default: 10s].
    #[arg(long, value_enum, value_name = "DIRECTION")]
    pub under_load: Option<LoadDirection>,
    /// Parallel TCP streams of the load, per direction.
    #[arg(long, default_value_t = 1, requires = "under_load")]
    pub load_streams: u16,
    /// TCP congestion control of the load, e.g. cubic (fills queues) or bbr (keeps them short) [default:
    /// the system's].
    #[arg(long, value_name = "NAME", requires = "under_load")]
    pub load_congestion: Option<String>,
    #[command(flatten)]
    pub line: super::line::LineArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The default number of timed round trips per size.
const DEFAULT_COUNT: u64 = 10_000;
/// The default message size.
const DEFAULT_SIZE: u64 = 64;
/// The default untimed round trips before each size.
const DEFAULT_WARMUP: u64 = 100;
/// The default time a reply may take.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
/// The default length of each series under load.
const DEFAULT_LOADED_S: f64 = 10.0;
/// How long the load runs before a loaded series starts, and after it ends.
const LOAD_LEAD_S: f64 = 2.0;

/// Which way the load of `--under-load` flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LoadDirection {
    /// The client sends the load.
    Up,
    /// The responder sends the load.
    Down,
    /// Both at once.
    Bidir,
}

impl TryFrom<&LatencyArgs> for LatencySpec {
    type Error = UsageError;

    fn try_from(args: &LatencyArgs) -> Result<Self, UsageError> {
        let proto = Proto::from(args.proto);
        let sizes = args.size.as_ref().map_or_else(|| vec![DEFAULT_SIZE], |s| s.0.clone());
        if let Some(zero) = sizes.iter().find(|&&s| s == 0) {
            return Err(UsageError(format!("message size {zero} is too small: sizes start at 1 byte")));
        }
        if args.sessions == 0 {
            return Err(UsageError("--sessions must be at least 1".into()));
        }
        let timeout = args.timeout.unwrap_or(DEFAULT_TIMEOUT);
        if timeout.is_zero() {
            return Err(UsageError("--timeout must be above zero".into()));
        }
        let (stop, load) = match args.under_load {
            None => (value::stop_condition(args.count, args.duration, DEFAULT_COUNT)?, None),
            Some(direction) => {
                if args.count.is_some() {
                    return Err(UsageError(
                        "--under-load runs each series for a time, so that the load can be sized: use --duration, not --count"
                            .into(),
                    ));
                }
                if args.load_streams == 0 || args.load_streams > 128 {
                    return Err(UsageError("--load-streams must be between 1 and 128".into()));
                }
                let seconds = args.duration.map_or(DEFAULT_LOADED_S, |d| d.as_secs_f64());
                let load = linkperf_core::spec::LoadSpec {
                    direction: match direction {
                        LoadDirection::Up => linkperf_core::Direction::Upload,
                        LoadDirection::Down => linkperf_core::Direction::Download,
                        LoadDirection::Bidir => linkperf_core::Direction::Bidirectional,
                    },
                    streams: args.load_streams,
                    proto: if proto == Proto::Unix { Proto::Unix } else { Proto::Tcp },
                    lead_s: LOAD_LEAD_S,
                    congestion: args.load_congestion.clone(),
                };
                (value::stop_condition(None, Some(Duration::from_secs_f64(seconds)), DEFAULT_COUNT)?, Some(load))
            }
        };
        Ok(LatencySpec {
            proto,
            sizes_bytes: sizes,
            stop,
            warmup: args.warmup.unwrap_or(DEFAULT_WARMUP),
            wait: args.wait.into(),
            sessions: args.sessions,
            rate_per_s: args.rate,
            timeout_s: timeout.as_secs_f64(),
            load,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_core::StopCondition;

    fn spec(argv: &[&str]) -> Result<LatencySpec, String> {
        LatencySpec::try_from(&crate::args::parse::<LatencyArgs>(argv)?).map_err(|e| e.0)
    }

    #[test]
    fn defaults_are_one_small_tcp_message() {
        let spec = spec(&[]).expect("valid");
        assert_eq!(spec.proto, Proto::Tcp);
        assert_eq!(spec.sizes_bytes, vec![64]);
        assert_eq!(spec.stop, StopCondition::Count(10_000));
        assert_eq!(spec.sessions, 1);
    }

    #[test]
    fn size_lists_and_durations_parse() {
        let spec = spec(&["--size", "1,64,1k,64k", "--duration", "1.5s", "--proto", "udp"]).expect("valid");
        assert_eq!(spec.sizes_bytes, vec![1, 64, 1024, 65536]);
        assert_eq!(spec.stop, StopCondition::DurationS(1.5));
    }

    #[test]
    fn impossible_requests_are_usage_errors() {
        assert!(spec(&["--size", "0"]).unwrap_err().contains("too small"));
        assert!(spec(&["--sessions", "0"]).is_err());
        assert!(spec(&["--count", "0"]).is_err());
        assert!(spec(&["--count", "5", "--duration", "1s"]).is_err());
        assert!(spec(&["--proto", "sctp"]).is_err());
        assert!(spec(&["--size", "12q"]).is_err());
        assert!(spec(&["--under-load", "up", "--count", "10"]).unwrap_err().contains("--duration"));
        assert!(spec(&["--load-streams", "2"]).is_err(), "needs --under-load");
        assert!(spec(&["--under-load", "sideways"]).is_err());
    }

    #[test]
    fn under_load_series_run_for_a_time_beside_a_tcp_load() {
        let spec = spec(&["--under-load", "bidir", "--load-streams", "4", "--proto", "udp"]).unwrap();
        assert_eq!(spec.stop, StopCondition::DurationS(10.0));
        let load = spec.load.unwrap();
        assert_eq!(
            (load.direction, load.streams, load.proto),
            (linkperf_core::Direction::Bidirectional, 4, Proto::Tcp)
        );
        // The load covers the series and its lead on both sides.
        assert_eq!(load.throughput(10.0).duration_s, 14.0);
    }
}
