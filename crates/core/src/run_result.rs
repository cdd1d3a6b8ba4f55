//! `RunResult`: the one serialisable model of a finished (or interrupted) run.
//!
//! Reporters render it and never compute figures of their own. Its JSON form is the versioned schema in
//! docs/json-schema.md; bump [`SCHEMA_VERSION`] on any incompatible change.

use serde::{Deserialize, Serialize};

use crate::histogram::RttHistogram;
use crate::host_facts::HostFacts;
use crate::spec::{ConnectSpec, LatencySpec, Proto, ThroughputSpec};
use crate::summary::LatencySummary;
use crate::throughput::{Flow, IntervalSample, TcpStats};

/// Version of the result schema written by this build.
pub const SCHEMA_VERSION: u32 = 1;

/// The parameters of a run, tagged by test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "test", rename_all = "snake_case")]
pub enum Parameters {
    /// A request/response latency test.
    Latency(LatencySpec),
    /// A connection-establishment test.
    Connect(ConnectSpec),
    /// A bulk-transfer test.
    Throughput(ThroughputSpec),
    /// An idle wake-up test.
    Idle(crate::spec::IdleSpec),
    /// An offered-rate sweep.
    Sweep(crate::spec::SweepSpec),
    /// A zero-loss rate search.
    Ratesearch(crate::spec::RateSearchSpec),
    /// A back-to-back burst search.
    Burst(crate::spec::BurstSpec),
}

impl Parameters {
    /// The test's name, as a subcommand.
    pub fn test_name(&self) -> &'static str {
        match self {
            Parameters::Latency(_) => "latency",
            Parameters::Connect(_) => "connect",
            Parameters::Throughput(_) => "throughput",
            Parameters::Idle(_) => "idle",
            Parameters::Sweep(_) => "sweep",
            Parameters::Ratesearch(_) => "ratesearch",
            Parameters::Burst(_) => "burst",
        }
    }

    /// The transport.
    pub fn proto(&self) -> Proto {
        match self {
            Parameters::Latency(spec) => spec.proto,
            Parameters::Connect(spec) => spec.proto,
            Parameters::Throughput(spec) => spec.proto,
            Parameters::Idle(spec) => spec.proto,
            Parameters::Sweep(spec) => spec.trial.proto,
            Parameters::Ratesearch(spec) => spec.trial.proto,
            Parameters::Burst(spec) => spec.trial.proto,
        }
    }
}

/// Whether a run measured everything it set out to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum RunStatus {
    /// Every series ran to its stop condition.
    Complete,
    /// The run stopped early; the series hold what was measured before `error`.
    Partial {
        /// What stopped the run.
        error: String,
    },
    /// The run measured nothing: it failed before its first series (a refusal, a failed authentication, an
    /// unreachable responder). Only the results database holds such runs; the test itself prints the error.
    Failed {
        /// Why.
        error: String,
    },
}

impl RunStatus {
    /// What stopped the run, unless it is complete.
    pub fn error(&self) -> Option<&str> {
        match self {
            RunStatus::Complete => None,
            RunStatus::Partial { error } | RunStatus::Failed { error } => Some(error),
        }
    }
}

/// The software that produced a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolInfo {
    /// Always `linkperf`.
    pub name: String,
    /// The version of the client.
    pub version: String,
}

/// Where the test ran to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// What the user named (`embedded` for the in-process responder).
    pub host: String,
    /// The address (or socket path) actually used.
    pub address: String,
}

/// Both endpoints' facts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Endpoints {
    /// The host running the test.
    pub client: HostFacts,
    /// The responder's host, as it reported itself.
    pub responder: HostFacts,
    /// When the far end is an echo (a serial loopback, an echo service) rather than a responder: how the
    /// loop was closed and the serial line's settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub echo: Option<crate::echo_setup::EchoSetup>,
    /// Which CPUs each end's threads were pinned to, when asked (docs/metrics.md, "CPU placement").
    #[serde(default, skip_serializing_if = "crate::placement::Placement::is_unpinned")]
    pub placement: crate::placement::Placement,
    /// How the client's sockets left its host (`--bind`, `--bind-dev`, `--dscp`, `--tos`), when asked.
    #[serde(default, skip_serializing_if = "crate::socket_setup::SocketSetup::is_default")]
    pub sockets: crate::socket_setup::SocketSetup,
}

/// One series of measurements: one message size of one session, or the aggregate of all sessions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// Message size in bytes (request and reply each), for tests with messages.
    pub size_bytes: Option<u64>,
    /// Session number from 1, or `None` for the aggregate over all sessions (or the only session).
    pub session: Option<u32>,
    /// The idle gap before each timed message, in seconds (idle tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_s: Option<f64>,
    /// The load running during the series, when measured under load (`None`: an idle path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<crate::spec::Direction>,
    /// Round-trip (or connection) time statistics; `None` if nothing was measured.
    pub summary: Option<LatencySummary>,
    /// Completed transactions per second over the series' elapsed time (summed over sessions in an aggregate).
    pub transactions_per_s: f64,
    /// Requests whose reply never came within the timeout (UDP only).
    pub lost: u64,
    /// Replies that came after their timeout had expired and were discarded (UDP only).
    pub late: u64,
    /// Wall time of the timed part of the series, in seconds.
    pub elapsed_s: f64,
    /// Whether the series ran to its stop condition.
    pub complete: bool,
    /// The samples, HdrHistogram V2 compressed and base64-encoded, in nanoseconds.
    pub histogram: String,
}

impl Series {
    /// Builds a series from its histogram and counters.
    pub fn new(
        size_bytes: Option<u64>,
        session: Option<u32>,
        histogram: &RttHistogram,
        counters: SeriesCounters,
    ) -> Self {
        let transactions_per_s =
            if counters.elapsed_s > 0.0 { histogram.count() as f64 / counters.elapsed_s } else { 0.0 };
        Self {
            size_bytes,
            session,
            gap_s: None,
            load: None,
            summary: LatencySummary::from_histogram(histogram),
            transactions_per_s,
            lost: counters.lost,
            late: counters.late,
            elapsed_s: counters.elapsed_s,
            complete: counters.complete,
            histogram: histogram.encode(),
        }
    }
}

/// Counters kept beside a series' histogram.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SeriesCounters {
    /// Lost requests.
    pub lost: u64,
    /// Late replies.
    pub late: u64,
    /// Timed wall time in seconds.
    pub elapsed_s: f64,
    /// Whether the series ran to its stop condition.
    pub complete: bool,
}

impl SeriesCounters {
    /// Adds another session's counters; elapsed time is the longest of the two.
    pub fn merge(&mut self, other: &SeriesCounters) {
        self.lost += other.lost;
        self.late += other.late;
        self.elapsed_s = self.elapsed_s.max(other.elapsed_s);
        self.complete &= other.complete;
    }
}

/// Throughput of one flow at one write size: the sum over streams, or one stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ThroughputSeries {
    /// Which test phase this belongs to (its direction).
    pub phase: crate::spec::Direction,
    /// Write size in bytes.
    pub size_bytes: u64,
    /// Direction of the data.
    pub flow: Flow,
    /// Stream number from 0, or `None` for the sum over all streams of this flow.
    pub stream: Option<u16>,
    /// Goodput measured where the data was read, in payload bits per second: for a sum, over the common
    /// window; for a stream, over its own first-to-last byte. `None` when it could not be computed.
    pub receiver_bps: Option<f64>,
    /// Goodput as the sender saw it (bytes accepted by its socket), computed the same way.
    pub sender_bps: Option<f64>,
    /// Payload bytes read by the receiver (in the window, for a sum).
    pub receiver_bytes: u64,
    /// Payload bytes written by the sender: every byte its sockets accepted over the whole test (unlike
    /// `receiver_bytes` and `sender_bps`, not only in the window).
    pub sender_bytes: u64,
    /// Seconds over which `receiver_bps` was computed.
    pub window_s: f64,
    /// Write-size messages per second at the receiver's goodput.
    pub messages_per_s: Option<f64>,
    /// Microseconds per write-size message at the receiver's goodput (the inverse of `messages_per_s`).
    pub us_per_message: Option<f64>,
    /// The receiver's intervals (sums only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub intervals: Vec<IntervalSample>,
    /// The sending socket's TCP state at the end (streams only, TCP only).
    pub tcp: Option<TcpStats>,
    /// UDP figures (UDP only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpSeries>,
    /// CPU cost of the sending end's stream threads.
    #[serde(default)]
    pub sender_cpu: Option<crate::throughput::CpuCost>,
    /// CPU cost of the receiving end's stream threads.
    #[serde(default)]
    pub receiver_cpu: Option<crate::throughput::CpuCost>,
    /// The goodput against the link's theoretical maximum (sums only, with a known link rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<crate::link_model::LinkEfficiency>,
    /// The client host's kernel counters over this row's test (sums only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_counters: Option<crate::counters::HostCounters>,
    /// The responder host's kernel counters over this row's test (sums only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responder_counters: Option<crate::counters::HostCounters>,
    /// The turns of this flow when the directions alternate (sums only): how long each wrote, how long its
    /// data took to drain, and what arrived of the other direction meanwhile (docs/metrics.md, "Turns").
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<crate::throughput::TurnSample>,
    /// Whether the phase ran its whole duration.
    pub complete: bool,
}

/// The UDP figures of a throughput series. Datagram counts cover the whole run (not only the window).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpSeries {
    /// The rate asked for, in bits per second of UDP payload (`None`: unpaced).
    pub offered_bps: Option<f64>,
    /// Datagrams sent.
    pub sent: u64,
    /// Datagrams received, duplicates included.
    pub received: u64,
    /// Datagrams sent and never received (`sent` minus distinct received; never negative).
    pub lost: u64,
    /// `lost` as a percentage of `sent`.
    pub loss_percent: Option<f64>,
    /// Datagrams that arrived after one with a higher sequence number.
    pub out_of_order: u64,
    /// Datagrams that arrived more than once.
    pub duplicates: u64,
    /// RFC 3550 interarrival jitter in microseconds (for a sum, the largest of its streams').
    pub jitter_us: f64,
    /// Times a sender fell behind its schedule and re-anchored it rather than send a burst.
    pub stalls: u64,
    /// Where the lost datagrams were lost, as far as the hosts' counters tell (sums only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<LossAttribution>,
    /// The trend of the relative one-way delay at the receiver: growth, the queue it implies, the arrival
    /// rate (for a sum: the largest growth, queues and rates summed). docs/metrics.md, "Delay growth".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<crate::delay_trend::DelayTrend>,
}

/// Lost datagrams by where they were lost, from the counter deltas of both hosts. The counters count every
/// program's traffic, so each share is an upper bound, capped so that the shares add up to the loss.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LossAttribution {
    /// Dropped by the sending host: `SndbufErrors`, transmit drops and errors of its interface.
    pub sending_host: u64,
    /// Dropped by the receiving interface: its receive drops, FIFO overruns and errors, and backlog drops.
    pub receiving_interface: u64,
    /// Dropped because the receiving socket's buffer was full (`RcvbufErrors`).
    pub receiver_socket_buffer: u64,
    /// The rest: lost between the hosts.
    pub path: u64,
}

impl LossAttribution {
    /// Splits `lost` datagrams using the datagrams the senders saw their own host drop (`sender_drops`,
    /// counted per datagram, GSO batches included) and the sending and receiving hosts' counter deltas
    /// (`SndbufErrors` counts a send call, however many datagrams it held).
    pub fn split(
        lost: u64,
        sender_drops: u64,
        sender: &crate::counters::HostCounters,
        receiver: &crate::counters::HostCounters,
    ) -> Self {
        let mut left = lost;
        let mut take = |count: u64| {
            let taken = count.min(left);
            left -= taken;
            taken
        };
        let sending = sender_drops
            + sender.udp_sndbuf_errors
            + sender.interface.as_ref().map_or(0, |i| i.tx_dropped + i.tx_errors);
        let interface = receiver.receive_drops();
        let sending_host = take(sending);
        let receiver_socket_buffer = take(receiver.udp_rcvbuf_errors);
        let receiving_interface = take(interface);
        LossAttribution { sending_host, receiving_interface, receiver_socket_buffer, path: left }
    }
}

/// A whole run: what was asked, where, by whom, and every series measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// [`SCHEMA_VERSION`] of this document.
    pub schema_version: u32,
    /// The software that produced it.
    pub tool: ToolInfo,
    /// The command line, as typed.
    pub command: Vec<String>,
    /// Start time, RFC 3339 in UTC.
    pub started_at: String,
    /// The test and its parameters.
    pub parameters: Parameters,
    /// Where it ran to.
    pub target: Target,
    /// Both endpoints' facts.
    pub endpoints: Endpoints,
    /// Every latency or connect series, in the order measured; per-session series follow their aggregate.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub series: Vec<Series>,
    /// Every throughput series, in the order measured; per-stream series follow their sum.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throughput: Vec<ThroughputSeries>,
    /// The zero-loss rate found for each size, by a rate search.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate_search: Vec<crate::rate_search::ZeroLossRate>,
    /// The longest whole bursts found for each size, by a burst search.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bursts: Vec<crate::rate_search::BurstResult>,
    /// Cautions about the figures (e.g. an end was CPU-bound), for people reading them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
    /// Whether the run completed.
    pub status: RunStatus,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_is_attributed_to_counters_first_and_the_path_last() {
        use crate::counters::{HostCounters, InterfaceCounters};
        let sender = HostCounters { udp_sndbuf_errors: 2, ..HostCounters::default() };
        let interface = InterfaceCounters { name: "eth0".into(), rx_fifo: 30, ..InterfaceCounters::default() };
        let receiver = HostCounters { udp_rcvbuf_errors: 50, interface: Some(interface), ..HostCounters::default() };
        let split = LossAttribution::split(100, 0, &sender, &receiver);
        assert_eq!(
            split,
            LossAttribution { sending_host: 2, receiver_socket_buffer: 50, receiving_interface: 30, path: 18 }
        );
        let capped = LossAttribution::split(10, 0, &sender, &receiver);
        assert_eq!(
            capped,
            LossAttribution { sending_host: 2, receiver_socket_buffer: 8, receiving_interface: 0, path: 0 }
        );
        // A sender that saw 64 datagrams of its GSO batches dropped by its own host: all of them there.
        let batched = LossAttribution::split(70, 64, &sender, &HostCounters::default());
        assert_eq!(batched, LossAttribution { sending_host: 66, path: 4, ..LossAttribution::default() });
    }

    #[test]
    fn driver_drops_and_kernel_drops_are_not_counted_twice() {
        let mut receiver = crate::counters::HostCounters {
            interface: Some(crate::counters::InterfaceCounters { rx_dropped: 30, ..Default::default() }),
            ..crate::counters::HostCounters::default()
        };
        receiver.nic.push(crate::counters::NicCounter { name: "rx_missed_errors".into(), value: 40 });
        let split = LossAttribution::split(100, 0, &crate::counters::HostCounters::default(), &receiver);
        assert_eq!((split.receiving_interface, split.path), (40, 60), "the larger of 30 and 40");
    }

    #[test]
    fn transactions_per_second_is_count_over_elapsed() {
        let mut h = RttHistogram::new();
        (0..50).for_each(|_| h.record(1_000));
        let counters = SeriesCounters { elapsed_s: 0.5, complete: true, ..Default::default() };
        let series = Series::new(Some(64), None, &h, counters);
        assert_eq!(series.transactions_per_s, 100.0);
        assert_eq!(series.summary.map(|s| s.count), Some(50));
    }

    #[test]
    fn merged_counters_add_losses_and_keep_the_longest_time() {
        let mut a = SeriesCounters { lost: 1, late: 2, elapsed_s: 1.0, complete: true };
        a.merge(&SeriesCounters { lost: 3, late: 0, elapsed_s: 2.0, complete: false });
        assert_eq!(a, SeriesCounters { lost: 4, late: 2, elapsed_s: 2.0, complete: false });
    }

    #[test]
    fn parameters_serialise_tagged_by_test() {
        let p = Parameters::Connect(ConnectSpec {
            proto: Proto::Tcp,
            stop: crate::StopCondition::Count(10),
            warmup: 0,
            timeout_s: 2.0,
            bare: false,
        });
        let json = serde_json::to_value(&p).expect("serialises");
        assert_eq!(json["test"], "connect");
        assert_eq!(json["proto"], "tcp");
        assert_eq!(json["stop"]["count"], 10);
    }
}
