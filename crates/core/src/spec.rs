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
    /// A serial line (a tty device), looped back by a plug or an echoing device.
    Serial,
}

impl Proto {
    /// The lowercase name, as typed on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Proto::Tcp => "tcp",
            Proto::Udp => "udp",
            Proto::Unix => "unix",
            Proto::Serial => "serial",
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
    /// Measure each size twice: idle, then while this load saturates the path (`None`: idle only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadSpec>,
}

/// A bulk transfer run beside a latency series, to measure latency under load (bufferbloat).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadSpec {
    /// Which way the load flows (upload, download or bidirectional).
    pub direction: Direction,
    /// Parallel load streams per direction.
    pub streams: u16,
    /// The load's transport: TCP (Unix towards a Unix socket).
    pub proto: Proto,
    /// Seconds the load runs before the loaded series starts (to fill the queues), and after it ends.
    pub lead_s: f64,
    /// TCP congestion control of the load's senders (`None`: the system's default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub congestion: Option<String>,
}

impl LoadSpec {
    /// The throughput test that carries the load for a series of `series_s` seconds.
    pub fn throughput(&self, series_s: f64) -> ThroughputSpec {
        let duration_s = series_s + 2.0 * self.lead_s;
        ThroughputSpec {
            proto: self.proto,
            phases: vec![self.direction],
            streams: self.streams,
            duration_s,
            interval_s: duration_s.min(1.0),
            congestion: self.congestion.clone(),
            ..ThroughputSpec::default()
        }
    }
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
    /// Time the handshake only (until `connect` returns: about one round trip for TCP), not the request and
    /// the responder's first byte (about two).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bare: bool,
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
    /// UDP: each stream sends at most this many datagrams, then ends (a burst; `None`: for the duration).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datagrams: Option<u64>,
}

fn enabled() -> bool {
    true
}

fn default_batch() -> u32 {
    DEFAULT_UDP_BATCH
}

/// The lowest offered UDP rate, bits per second of payload, per stream: a 16-byte datagram every 1.3 s.
/// Slower than this is no link measurement; a mistyped rate (`0.001`) would pace one datagram a season.
pub const MIN_UDP_RATE_BPS: f64 = 100.0;

/// A usage problem with a UDP rate of `bps` bits per second per stream, for `what` (an option's name).
pub fn udp_rate_problem(what: &str, bps: f64) -> Option<String> {
    (!(bps.is_finite() && bps >= MIN_UDP_RATE_BPS)).then(|| {
        format!("{what} must be at least {MIN_UDP_RATE_BPS} bit/s per stream (a datagram every second or so), not {bps} bit/s")
    })
}

/// How long a paced batch of datagrams may span on its schedule: longer batches would be bursts at the
/// scale of the schedule.
pub const BATCH_SPAN_NS: u64 = 50_000;
/// Largest buffer the kernel accepts for one GSO send.
pub const GSO_BUFFER_BYTES: u64 = 65_000;

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
            datagrams: None,
        }
    }
}

impl ThroughputSpec {
    /// The rate of the path a run of trials crosses, as far as it is known before the first: the link's
    /// rate when given (`--link-rate`), else `slowest`, the lowest rate the run offers (a path that carries
    /// less than that is a slower path than the run was planned for).
    pub fn path_bps(&self, slowest: Option<f64>) -> Option<f64> {
        self.link.and_then(|l| l.rate_bps).or(slowest)
    }

    /// The rate each stream sends datagrams of `size` bytes at: the offered rate split evenly over the
    /// streams, in bits per second; `None` when unpaced.
    pub fn stream_rate_bps(&self, size: u64) -> Option<f64> {
        self.rate.map(|rate| rate.bps_for(size) / f64::from(self.streams))
    }

    /// A usage problem with the offered rate (`what`: its option's name): a stream paced below
    /// [`MIN_UDP_RATE_BPS`] at any size.
    pub fn rate_problem(&self, what: &str) -> Option<String> {
        self.sizes_bytes.iter().find_map(|&size| udp_rate_problem(what, self.stream_rate_bps(size)?))
    }

    /// Datagrams of `size` bytes a UDP sender at `stream_rate_bps` (`None`: unpaced) hands the kernel per
    /// send call: at most `batch` and what fits one GSO buffer, and when paced, what spans at most
    /// [`BATCH_SPAN_NS`] of its schedule (so 1 below 235 Mbit/s of 1472-byte datagrams).
    pub fn datagrams_per_call(&self, size: u64, stream_rate_bps: Option<f64>) -> u64 {
        let mut batch = u64::from(self.batch).clamp(1, (GSO_BUFFER_BYTES / size.max(1)).max(1));
        if let Some(rate) = stream_rate_bps.filter(|r| *r > 0.0) {
            let gap_ns = (size as f64 * 8.0 / rate * 1e9).max(1.0);
            batch = batch.min(((BATCH_SPAN_NS as f64 / gap_ns) as u64).max(1));
        }
        batch
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

/// Seconds a UDP trial may take beyond its duration on a fast path: the control exchange's round trips,
/// stream registration, the receiver's wait for the END datagrams (at most 2 s apart on a slow schedule,
/// less when they arrive) and the report. Constant only where the path's rate does not matter: see
/// [`trial_overhead_s`] for the rest.
pub const TRIAL_OVERHEAD_S: f64 = 1.5;

/// Bytes of control messages a trial moves over the path, the larger direction of the two: the request
/// and its answers, the registration of the streams and, mostly, the report of the peer's stream records
/// (bins of a thousandth of the trial each). Measured at 9600 bit/s with 2 s trials: 4.4 kB towards the
/// client for an upload step, 5.0 kB for a download step; twice that leaves room for longer records.
pub const TRIAL_CONTROL_BYTES: f64 = 10_000.0;

/// Seconds a UDP trial may take beyond its duration over a path that carries `path_bps` (`None`: not
/// known, taken as fast): [`TRIAL_OVERHEAD_S`], plus the time its control messages take at that rate
/// ([`TRIAL_CONTROL_BYTES`]). At 9600 bit/s that is 8.3 s more, which the constant alone (1.5 s) left out:
/// a sweep of four 2 s steps announced 16 s and took 27 s; at 1 Mbit/s 80 ms, at 10 Gbit/s nothing.
pub fn trial_overhead_s(path_bps: Option<f64>) -> f64 {
    let control = path_bps.filter(|r| *r > 0.0).map_or(0.0, |rate| TRIAL_CONTROL_BYTES * 8.0 / rate);
    TRIAL_OVERHEAD_S + control
}

/// An offered-rate sweep (RFC 2544 section 26.3, frame loss rate): the same UDP trial at each offered rate
/// in turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// The trial of every step: UDP, its direction(s), one datagram size, duration and streams. Its `rate`
    /// is left empty: each step sets its own.
    pub trial: ThroughputSpec,
    /// Offered rates in bits per second of UDP payload, one step each, in order.
    pub rates_bps: Vec<f64>,
    /// Pause after each trial, in seconds, so that queues drain before the next.
    pub settle_s: f64,
}

impl SweepSpec {
    /// The trial at offered rate `rate_bps`.
    pub fn trial_at(&self, rate_bps: f64) -> ThroughputSpec {
        ThroughputSpec { rate: Some(crate::units::OfferedRate::BitsPerSecond(rate_bps)), ..self.trial.clone() }
    }

    /// The longest the sweep can take, in seconds: every step's trials with their overhead and settling.
    pub fn time_bound_s(&self) -> f64 {
        let trials = self.rates_bps.len() * self.trial.phases.len();
        trials as f64 * self.per_trial_s()
    }

    /// The longest one step's trial takes with its overhead and settling, in seconds.
    pub fn per_trial_s(&self) -> f64 {
        let slowest = self.rates_bps.iter().copied().reduce(f64::min);
        self.trial.duration_s + trial_overhead_s(self.trial.path_bps(slowest)) + self.settle_s
    }
}

/// A search for the highest offered UDP rate with at most the tolerated loss, per datagram size (RFC 2544
/// section 26.1), and the latency at the rate found (section 26.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateSearchSpec {
    /// The trial: UDP, its direction, the payload sizes (one search each), duration and streams. Its
    /// `rate` is left empty: the search sets it.
    pub trial: ThroughputSpec,
    /// The Ethernet frame sizes the payloads were derived from, in the same order, when sizes were given
    /// as frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames_bytes: Option<Vec<u64>>,
    /// Highest loss, in percent of datagrams sent, for a trial to pass.
    pub loss_tolerance_percent: f64,
    /// Lowest rate searched, bits per second of UDP payload (`None`: 1/100 of the highest).
    pub min_bps: Option<f64>,
    /// Highest rate searched (`None`: the payload rate of the link given, else measured first by trains
    /// of back-to-back datagrams).
    pub max_bps: Option<f64>,
    /// Resolution of the search, as a fraction of the rate found.
    pub precision: f64,
    /// Pause after each trial, in seconds.
    pub settle_s: f64,
    /// Round-trip probes per second sent alongside a last trial at the rate found (0: no latency trial).
    pub latency_probes_per_s: f64,
}

impl RateSearchSpec {
    /// The trial at offered rate `rate_bps`.
    pub fn trial_at(&self, rate_bps: f64) -> ThroughputSpec {
        ThroughputSpec { rate: Some(crate::units::OfferedRate::BitsPerSecond(rate_bps)), ..self.trial.clone() }
    }

    /// The lowest rate searched below an upper bound of `max_bps`: `--min`, else 1/100 of the bound. The
    /// bound is measured (or given), so the rate sought lies within two decades below it.
    pub fn min_for(&self, max_bps: f64) -> f64 {
        self.min_bps.unwrap_or(max_bps / 100.0)
    }

    /// The longest the searches can take, in seconds, once their upper bounds are known (one per size):
    /// each search's trials at most, and the latency trial.
    pub fn time_bound_s(&self, max_bps: &[f64]) -> f64 {
        let per_trial = self.per_trial_s(max_bps);
        let latency = if self.latency_probes_per_s > 0.0 { 1 } else { 0 };
        let trials: u32 = max_bps
            .iter()
            .map(|&max| crate::search::RateSearch::max_trials(self.min_for(max), max, self.precision) + latency)
            .sum();
        f64::from(trials) * per_trial
    }

    /// The longest one trial takes with its overhead and settling, in seconds, once the upper bounds are
    /// known: the path carries about the lowest bound (measured, or the link's, or `--max`).
    pub fn per_trial_s(&self, max_bps: &[f64]) -> f64 {
        let slowest = max_bps.iter().copied().reduce(f64::min);
        self.trial.duration_s + trial_overhead_s(self.trial.path_bps(slowest)) + self.settle_s
    }
}

/// Back-to-back frames (RFC 2544 section 26.4): per datagram size, the longest burst sent as fast as the
/// sender can that arrives without loss, found by a search over burst lengths, repeated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurstSpec {
    /// The trial: UDP, one stream, its direction, the payload sizes; `duration_s` is the longest a burst
    /// may take to send. Its `datagrams` is left empty: each trial sets its burst length.
    pub trial: ThroughputSpec,
    /// The Ethernet frame sizes the payloads were derived from, when sizes were given as frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames_bytes: Option<Vec<u64>>,
    /// The longest burst tried, in datagrams.
    pub max_datagrams: u64,
    /// Searches per size (min/typ/max are over them).
    pub repeat: u32,
    /// Pause after each trial, in seconds.
    pub settle_s: f64,
}

impl BurstSpec {
    /// The trial of a burst of `datagrams`.
    pub fn trial_of(&self, datagrams: u64) -> ThroughputSpec {
        ThroughputSpec { datagrams: Some(datagrams), rate: None, ..self.trial.clone() }
    }

    /// The longest the searches can take, in seconds.
    pub fn time_bound_s(&self) -> f64 {
        let trials = crate::search::LengthSearch::max_trials(self.max_datagrams) * self.repeat;
        // Unpaced: only the link's rate, when given, says how long the control messages take.
        let per_trial = self.trial.duration_s + trial_overhead_s(self.trial.path_bps(None)) + self.settle_s;
        (self.trial.sizes_bytes.len() as u64 * u64::from(trials)) as f64 * per_trial
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trials_overhead_grows_with_the_time_its_control_messages_take() {
        assert_eq!(trial_overhead_s(None), TRIAL_OVERHEAD_S);
        // 10 kB at 9600 bit/s: 8.3 s more; at 10 Gbit/s, 8 us.
        assert!((trial_overhead_s(Some(9600.0)) - (1.5 + 80_000.0 / 9600.0)).abs() < 1e-9);
        assert!(trial_overhead_s(Some(10e9)) - TRIAL_OVERHEAD_S < 1e-5);
        let mut trial = ThroughputSpec::default();
        assert_eq!(trial.path_bps(Some(2e3)), Some(2e3), "the slowest rate offered, without a link rate");
        trial.link = Some(LinkSpec { rate_bps: Some(9600.0), overhead_bytes: 38, mtu_bytes: None });
        assert_eq!(trial.path_bps(Some(2e3)), Some(9600.0), "the link's rate when given");
    }
}
