//! Validated test specifications: what a test will do, independent of how the user typed it.
//!
//! The binary turns command-line arguments into these types (parse, don't validate); the drivers in `net` take
//! them as given. Serialised into every result as its parameters.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// The transport a test runs over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Proto {
    /// TCP over IPv4 or IPv6.
    Tcp,
    /// UDP over IPv4 or IPv6.
    Udp,
    /// Unix-domain stream sockets on this host.
    Unix,
}

impl Proto {
    /// The lowercase name, as typed on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
            Proto::Unix => "unix",
        }
    }

    /// Whether the transport has connections (connection-establishment latency applies).
    pub fn is_connection_oriented(self) -> bool {
        !matches!(self, Proto::Udp)
    }
}

/// How a test waits for data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitMode {
    /// Sleep in the kernel until data arrives (a blocking receive).
    Block,
    /// Busy-poll with non-blocking receives: the lowest latency, at the cost of a whole core per waiter.
    Spin,
}

impl WaitMode {
    /// The lowercase name, as typed on the command line.
    pub fn name(self) -> &'static str {
        match self {
            WaitMode::Block => "block",
            WaitMode::Spin => "spin",
        }
    }
}

/// When a series stops.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopCondition {
    /// After this many timed transactions.
    Count(u64),
    /// After this much time, in seconds.
    DurationS(f64),
}

impl StopCondition {
    /// The duration bound, if this condition is a duration.
    pub fn duration(self) -> Option<Duration> {
        match self {
            StopCondition::Count(_) => None,
            StopCondition::DurationS(s) => Some(Duration::from_secs_f64(s)),
        }
    }
}

/// A request/response (ping-pong) latency test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySpec {
    /// Transport.
    pub proto: Proto,
    /// Message sizes in bytes, one series each, in this order. The reply has the same size.
    pub sizes_bytes: Vec<u64>,
    /// When each size's series stops.
    pub stop: StopCondition,
    /// Untimed round trips before each size's series.
    pub warmup: u64,
    /// How both ends wait for data.
    pub wait: WaitMode,
    /// Number of concurrent ping-pong sessions.
    pub sessions: u32,
    /// Open-loop schedule in transactions per second per session, or `None` for closed loop (next message as
    /// soon as the reply is in).
    pub rate_per_s: Option<f64>,
    /// How long a reply may take: a UDP reply later than this counts as lost; a TCP/Unix one ends the run.
    pub timeout_s: f64,
}

/// A connection-establishment latency test (connect, request, first byte of response, close).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectSpec {
    /// Transport (connection-oriented only).
    pub proto: Proto,
    /// When the series stops.
    pub stop: StopCondition,
    /// Untimed connections first.
    pub warmup: u64,
    /// How long one connection may take before the run ends with an error.
    pub timeout_s: f64,
}

/// An idle wake-up test: the round trip of the first message after each idle gap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdleSpec {
    /// Transport.
    pub proto: Proto,
    /// Idle gaps before a message, in seconds, one series each.
    pub gaps_s: Vec<f64>,
    /// Messages per gap.
    pub count: u64,
    /// Message size in bytes (request and reply each).
    pub size_bytes: u64,
    /// Send a keep-alive round trip on a second connection this often during the gaps (`None`: silence).
    pub keepalive_s: Option<f64>,
    /// How long a reply may take (UDP: later counts as lost; streams: ends the run).
    pub timeout_s: f64,
}

/// Which ways a throughput test moves data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// The client sends.
    Upload,
    /// The responder sends (the client still opens every connection, so this works through NAT).
    Download,
    /// Both at once, on separate connections (full duplex).
    Bidirectional,
    /// Both, taking turns of one interval each, upload first (half duplex, as on radio links).
    Alternating,
}

impl Direction {
    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Upload => "upload",
            Direction::Download => "download",
            Direction::Bidirectional => "bidirectional",
            Direction::Alternating => "alternating",
        }
    }

    /// The flows a phase in this direction carries.
    pub fn flows(self) -> &'static [crate::throughput::Flow] {
        use crate::throughput::Flow;
        match self {
            Direction::Upload => &[Flow::Upload],
            Direction::Download => &[Flow::Download],
            Direction::Bidirectional | Direction::Alternating => &[Flow::Upload, Flow::Download],
        }
    }
}

/// A bulk-transfer (throughput) test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputSpec {
    /// Transport (tcp or unix).
    pub proto: Proto,
    /// The phases, run one after the other (one, or upload then download with `--sequential`).
    pub phases: Vec<Direction>,
    /// Parallel streams per flow.
    pub streams: u16,
    /// Write sizes in bytes, one series each.
    pub sizes_bytes: Vec<u64>,
    /// Length of each phase and size, in seconds.
    pub duration_s: f64,
    /// Length of a reporting interval, in seconds.
    pub interval_s: f64,
    /// Leading intervals left out of the totals (warm-up, e.g. TCP slow start).
    pub omit_intervals: u32,
    /// Socket send and receive buffer size requested, in bytes (`None`: the kernel's default and autotuning).
    pub buffer_bytes: Option<u64>,
    /// TCP congestion control for the sending sockets (`None`: the system's default).
    #[serde(default)]
    pub congestion: Option<String>,
    /// Receivers discard data in the kernel (`MSG_TRUNC` on TCP) instead of copying it to user space.
    #[serde(default)]
    pub discard: bool,
    /// UDP: offered rate per direction, split evenly over the streams (`None`: each stream sends as fast
    /// as it can).
    #[serde(default)]
    pub rate: Option<crate::units::OfferedRate>,
    /// The link to compare goodput with (`None`: the interface's own speed, when it reports one).
    #[serde(default)]
    pub link: Option<LinkSpec>,
    /// UDP: whether senders use segmentation offload (GSO) and receivers receive coalescing (GRO).
    #[serde(default = "enabled")]
    pub gso: bool,
    /// UDP: most datagrams handed to the kernel in one send call.
    #[serde(default = "default_batch")]
    pub batch: u32,
}

fn enabled() -> bool {
    true
}

fn default_batch() -> u32 {
    DEFAULT_UDP_BATCH
}

/// Datagrams per send call by default: what fits one 64 KiB GSO buffer at 1472 bytes is 44; 32 keeps pacing
/// fine-grained while taking most of the gain.
pub const DEFAULT_UDP_BATCH: u32 = 32;

impl Default for ThroughputSpec {
    /// A 10 s TCP upload on one stream in 1 MiB writes, reported every second: `linkperf throughput` with
    /// no options.
    fn default() -> Self {
        Self {
            proto: Proto::Tcp,
            phases: vec![Direction::Upload],
            streams: 1,
            sizes_bytes: vec![1 << 20],
            duration_s: 10.0,
            interval_s: 1.0,
            omit_intervals: 0,
            buffer_bytes: None,
            congestion: None,
            discard: false,
            rate: None,
            link: None,
            gso: true,
            batch: DEFAULT_UDP_BATCH,
        }
    }
}

impl ThroughputSpec {
    /// The rate each stream sends datagrams of `size` bytes at: the offered rate split evenly over the
    /// streams, in bits per second; `None` when unpaced.
    pub fn stream_rate_bps(&self, size: u64) -> Option<f64> {
        self.rate.map(|rate| rate.bps_for(size) / f64::from(self.streams))
    }
}

/// The link a goodput is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LinkSpec {
    /// Link rate in bits per second (`None`: the interface's speed).
    pub rate_bps: Option<f64>,
    /// Bytes each frame adds to its IP packet (38 for Ethernet).
    pub overhead_bytes: u64,
    /// IP MTU in bytes (`None`: the interface's).
    pub mtu_bytes: Option<u64>,
}
