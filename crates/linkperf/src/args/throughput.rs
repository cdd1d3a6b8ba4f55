//! `linkperf throughput`: arguments and their conversion into a `ThroughputSpec`.

use std::time::Duration;

use clap::{Args, ValueEnum};
use linkperf_core::{Direction, Proto, ThroughputSpec};

use super::output::OutputArgs;
use super::target::TargetArgs;
use super::value::{self, ProtoArg};
use crate::exit::UsageError;

/// The long description shown by `--help`.
pub const LONG_ABOUT: &str = "Throughput: bulk transfer for a fixed time, one way or both, over one or \
more parallel streams. Reports goodput (payload bits per second, application bytes only) measured at the \
receiver, with the sender's figure beside it, per interval and in total; for several streams, each stream and \
their sum over the intervals in which all of them ran. TCP streams also report retransmits, congestion \
window, smoothed RTT and the congestion control, read from the sending socket.";

/// Examples shown after the options in `--help`.
const EXAMPLES: &str = "Examples:
  linkperf throughput                                10 s TCP upload on loopback
  linkperf throughput 198.18.0.2 --direction down    the responder sends
  linkperf throughput 198.18.0.2 --direction bidir --streams 4
  linkperf throughput 198.18.0.2 --sequential        upload, then download
  linkperf throughput HOST --direction alternate -i 500ms   half duplex, 0.5 s turns
  linkperf throughput HOST --size 64,256,1k,4k,16k,64k --duration 5s   one row per write size
  linkperf throughput --proto unix --omit 1          IPC, first interval left out";

/// Arguments of `linkperf throughput`.
/// The most intervals times streams a test may ask for: the responder reports each stream's bytes per fine
/// bin (a bin is at most an interval) in one message of at most `MAX_CLIENT_FRAME_BYTES` (16 MiB), and a
/// bin takes up to 21 bytes of JSON; a quarter of the frame leaves room for the rest of the report.
const MAX_INTERVALS_PER_TEST: u64 = linkperf_proto::MAX_CLIENT_FRAME_BYTES as u64 / 64;

#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct ThroughputArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// Transport.
    #[arg(long, value_enum, default_value = "tcp")]
    pub proto: ProtoArg,
    /// Which way data flows.
    #[arg(long, value_enum, default_value = "up")]
    pub direction: DirectionArg,
    /// Run upload, then download (overrides --direction).
    #[arg(long)]
    pub sequential: bool,
    /// Parallel streams per direction, started together.
    #[arg(short = 'P', long, default_value_t = 1)]
    pub streams: u16,
    /// Write sizes in bytes (k = 1024), one series each, e.g. 64,1k,64k [default: 1M; UDP: 1472, the
    /// largest datagram payload in a 1500-byte IPv4 packet].
    #[arg(short, long, value_name = "SIZES", value_parser = value::size_list)]
    pub size: Option<value::SizeList>,
    /// UDP: offered rate per direction, split over the streams: bits per second (100M, 1.5G) or datagrams
    /// per second (10kpps) [default: as fast as the sender can].
    #[arg(short = 'b', long, value_parser = value::rate)]
    pub rate: Option<linkperf_core::units::OfferedRate>,
    /// Length of each phase and size.
    #[arg(short, long, default_value = "10s", value_parser = value::duration)]
    pub duration: Duration,
    /// Reporting interval (at least 10ms; at most 262144 intervals times streams per test, so that the
    /// responder's report of them fits in one message).
    #[arg(short, long, default_value = "1s", value_parser = value::interval)]
    pub interval: Duration,
    /// Leading intervals to leave out of the totals (e.g. TCP slow start).
    #[arg(long, default_value_t = 0)]
    pub omit: u32,
    /// Socket send and receive buffer size on both ends (default: the kernel's, with autotuning).
    #[arg(long, value_parser = value::size)]
    pub buffer: Option<u64>,
    /// TCP congestion control on both ends' sending sockets, e.g. cubic or bbr (default: the system's).
    #[arg(long, value_name = "NAME")]
    pub congestion: Option<String>,
    #[command(flatten)]
    pub link: super::link::LinkArgs,
    #[command(flatten)]
    pub batching: super::link::BatchArgs,
    /// Receivers discard data in the kernel (TCP MSG_TRUNC) instead of copying it out: measures the path
    /// and the sender without the receiver's copy.
    #[arg(long)]
    pub discard: bool,
    #[command(flatten)]
    pub line: super::line::LineArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The direction, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DirectionArg {
    /// The client sends.
    Up,
    /// The responder sends.
    Down,
    /// Both at once.
    Bidir,
    /// Both, taking turns of one --interval each, upload first (half-duplex links).
    Alternate,
}

impl TryFrom<&ThroughputArgs> for ThroughputSpec {
    type Error = UsageError;

    fn try_from(args: &ThroughputArgs) -> Result<Self, UsageError> {
        let proto = Proto::from(args.proto);
        let sizes = match (&args.size, proto) {
            (Some(sizes), _) => sizes.0.clone(),
            (None, Proto::Udp) => vec![DEFAULT_UDP_SIZE],
            (None, _) => vec![DEFAULT_STREAM_SIZE],
        };
        check_sizes(proto, &sizes)?;
        if args.rate.is_some() && proto != Proto::Udp {
            return Err(UsageError("--rate paces UDP only; TCP and Unix streams send as fast as they can".into()));
        }
        if args.streams == 0 || args.streams > 128 {
            return Err(UsageError("--streams must be between 1 and 128".into()));
        }
        if args.interval.is_zero() || args.duration < args.interval {
            return Err(UsageError("--interval must be above zero and no longer than --duration".into()));
        }
        let intervals = (args.duration.as_secs_f64() / args.interval.as_secs_f64()).floor() as u32;
        if u64::from(intervals) * u64::from(args.streams) > MAX_INTERVALS_PER_TEST {
            return Err(UsageError(format!(
                "{intervals} intervals of {} streams are too many to report (at most {MAX_INTERVALS_PER_TEST} intervals times streams): use a longer --interval or a shorter --duration",
                args.streams
            )));
        }
        if args.omit >= intervals {
            return Err(UsageError(format!("--omit {} leaves none of the {intervals} intervals", args.omit)));
        }
        let phases = match (args.sequential, args.direction) {
            (true, _) => vec![Direction::Upload, Direction::Download],
            (false, DirectionArg::Up) => vec![Direction::Upload],
            (false, DirectionArg::Down) => vec![Direction::Download],
            (false, DirectionArg::Bidir) => vec![Direction::Bidirectional],
            (false, DirectionArg::Alternate) => vec![Direction::Alternating],
        };
        let spec = ThroughputSpec {
            proto,
            phases,
            streams: args.streams,
            sizes_bytes: sizes,
            duration_s: args.duration.as_secs_f64(),
            interval_s: args.interval.as_secs_f64(),
            omit_intervals: args.omit,
            buffer_bytes: args.buffer,
            congestion: args.congestion.clone(),
            discard: args.discard,
            rate: args.rate,
            gso: !args.batching.no_gso,
            batch: args.batching.batch.max(1),
            datagrams: None,
            link: Some(args.link.spec()),
        };
        match spec.rate_problem("--rate") {
            Some(problem) => Err(UsageError(problem)),
            None => Ok(spec),
        }
    }
}

/// The write size of TCP and Unix streams when none is given: large, so that the sender makes few system
/// calls (1 MiB writes moved 1.2x more TCP over loopback than 128 KiB ones, bench/throughput.sh).
const DEFAULT_STREAM_SIZE: u64 = 1024 * 1024;
/// The UDP datagram payload when none is given: the largest in a 1500-byte IPv4 packet.
const DEFAULT_UDP_SIZE: u64 = 1472;

pub(crate) fn check_sizes(proto: Proto, sizes: &[u64]) -> Result<(), UsageError> {
    use linkperf_proto::limits::MAX_UDP_PAYLOAD_IPV6;
    use linkperf_proto::STREAM_PROBE_BYTES;
    if sizes.contains(&0) {
        return Err(UsageError("write sizes start at 1 byte".into()));
    }
    if proto == Proto::Udp {
        if let Some(small) = sizes.iter().find(|&&s| (s as usize) < STREAM_PROBE_BYTES) {
            return Err(UsageError(format!(
                "a UDP datagram of {small} bytes cannot hold the {STREAM_PROBE_BYTES}-byte header: use --size {STREAM_PROBE_BYTES} or more"
            )));
        }
        // The IPv4 limit (65507) depends on the path, and is checked when the target is known.
        if let Some(big) = sizes.iter().find(|&&s| s > MAX_UDP_PAYLOAD_IPV6) {
            return Err(UsageError(format!(
                "a UDP datagram carries at most {MAX_UDP_PAYLOAD_IPV6} bytes (over IPv6; 65507 over IPv4), not {big}"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(argv: &[&str]) -> Result<ThroughputSpec, String> {
        ThroughputSpec::try_from(&crate::args::parse::<ThroughputArgs>(argv)?).map_err(|e| e.0)
    }

    #[test]
    fn defaults_are_a_ten_second_tcp_upload() {
        let spec = spec(&[]).unwrap();
        assert_eq!(spec.phases, vec![Direction::Upload]);
        assert_eq!(spec.sizes_bytes, vec![1024 * 1024]);
        assert_eq!((spec.duration_s, spec.interval_s, spec.streams), (10.0, 1.0, 1));
    }

    #[test]
    fn sequential_runs_upload_then_download() {
        assert_eq!(spec(&["--sequential"]).unwrap().phases, vec![Direction::Upload, Direction::Download]);
        assert_eq!(spec(&["--direction", "bidir"]).unwrap().phases, vec![Direction::Bidirectional]);
        assert_eq!(spec(&["--direction", "alternate"]).unwrap().phases, vec![Direction::Alternating]);
        assert_eq!(spec(&["--direction", "alternate", "--proto", "udp"]).unwrap().phases, vec![Direction::Alternating]);
    }

    #[test]
    fn impossible_requests_are_usage_errors() {
        assert_eq!(spec(&["--proto", "udp"]).unwrap().sizes_bytes, vec![1472]);
        assert!(spec(&["--proto", "udp", "--size", "8"]).unwrap_err().contains("16-byte header"));
        assert!(spec(&["--proto", "udp", "--size", "65528"]).unwrap_err().contains("at most 65527"));
        assert!(spec(&["--proto", "udp", "--size", "65527"]).is_ok(), "fits over IPv6; IPv4 is checked later");
        assert!(spec(&["--rate", "10M"]).unwrap_err().contains("UDP only"));
        assert!(spec(&["--proto", "udp", "--rate", "fast"]).is_err());
        assert!(spec(&["--streams", "0"]).is_err());
        assert!(spec(&["--size", "0"]).is_err());
        assert!(spec(&["--duration", "1s", "--interval", "2s"]).is_err());
        let many = spec(&["--duration", "1h", "--interval", "10ms", "--streams", "8"]).unwrap_err();
        assert!(many.contains("too many to report"), "{many}");
        assert!(spec(&["--duration", "3s", "--omit", "3"]).unwrap_err().contains("leaves none"));
        assert!(spec(&["--direction", "sideways"]).is_err());
    }
}
