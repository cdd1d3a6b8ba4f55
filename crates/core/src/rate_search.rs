//! RFC 2544 over UDP sockets: frame sizes mapped to datagram payloads, a trial's verdict from its rows, and
//! what the searches found (`ZeroLossRate`, `BurstResult`). The searches themselves are in `search`, which
//! depends on nothing here. Pure: the trials are run by the `net` crate. Definitions: docs/metrics.md,
//! "Characterising a link".

use serde::{Deserialize, Serialize};

use crate::run_result::ThroughputSeries;
pub use crate::search::{BinarySearch, LengthSearch, RateSearch, TrialOutcome, Verdict};
use crate::spec::ThroughputSpec;

/// Bytes of an Ethernet frame around its IP packet that RFC 2544 counts in a frame size: the 14-byte
/// header and the 4-byte frame check sequence (preamble and gap are not part of a frame size).
pub const ETHERNET_FRAME_BYTES_AROUND_IP: u64 = 14 + 4;
/// The UDP header.
pub const UDP_HEADER_BYTES: u64 = 8;
/// The frame sizes RFC 2544 section 9.1 lists for Ethernet.
pub const RFC2544_FRAME_SIZES: [u64; 7] = [64, 128, 256, 512, 1024, 1280, 1518];

/// Share of its scheduled datagrams a trial's sender may miss, beyond the schedule's granularity, and still
/// count as having offered the rate: short stalls of a shared machine.
pub const SENDER_TOLERANCE: f64 = 0.02;

/// Most of the rate found that the latency probes of RFC 2544 section 26.2 may take: they measure the
/// latency at the rate, and must not make it (100 probes/s of 1472 bytes are more than a 1 Mbit/s link).
pub const LATENCY_PROBE_SHARE: f64 = 0.1;

/// The UDP payload carried by an Ethernet frame of `frame_bytes` (header and FCS included) over IPv4 or
/// IPv6, or `None` when the frame cannot hold a UDP datagram at all.
pub fn frame_payload(frame_bytes: u64, ipv6: bool) -> Option<u64> {
    let ip_header = if ipv6 { 40 } else { 20 };
    frame_bytes.checked_sub(ETHERNET_FRAME_BYTES_AROUND_IP + ip_header + UDP_HEADER_BYTES)
}

impl Verdict {
    /// The verdict of a trial's sum series, run as `trial`: loss against `tolerance_percent` first (a
    /// sender that fell short offered less than the rate, so a loss then fails the rate all the more), then
    /// sender shortfall.
    pub fn of(series: &ThroughputSeries, tolerance_percent: f64, trial: &ThroughputSpec) -> Self {
        let Some(udp) = series.udp.as_ref() else { return Verdict::Failed };
        if !series.complete || udp.sent == 0 {
            return Verdict::Failed;
        }
        // Loss first: a link that lost datagrams when offered less than the rate fails the rate too.
        match udp.loss_percent {
            Some(loss) if loss <= tolerance_percent => {}
            _ => return Verdict::Loss,
        }
        if sender_fell_short(series, trial) {
            return Verdict::SenderLimited;
        }
        Verdict::Pass
    }
}

/// Whether a UDP series' senders, run as `trial`, sent fewer datagrams than their schedule held: counted
/// in datagrams, not as a rate, so that it holds for trials of a few datagrams. Each stream's schedule holds
/// `ceil(duration x rate / datagram bits)` datagrams; a sender may miss [`SENDER_TOLERANCE`] of them, plus
/// per stream the schedule's granularity: one batch of datagrams handed to the kernel in one call, and one
/// datagram for where the duration cuts the schedule. An unpaced series never falls short.
pub fn sender_fell_short(series: &ThroughputSeries, trial: &ThroughputSpec) -> bool {
    let Some(udp) = series.udp.as_ref() else { return false };
    let Some(offered) = udp.offered_bps.filter(|o| *o > 0.0) else { return false };
    let streams = f64::from(trial.streams.max(1));
    let size = series.size_bytes.max(1);
    let per_stream = offered / streams;
    let due = (trial.duration_s * per_stream / (size as f64 * 8.0)).ceil() * streams;
    let granularity = streams * (trial.datagrams_per_call(size, Some(per_stream)) as f64 + 1.0);
    (udp.sent as f64) < due * (1.0 - SENDER_TOLERANCE) - granularity
}

/// The longest bursts without loss of one size, over the repetitions of its search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BurstResult {
    /// The Ethernet frame size, when sizes were given as frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_bytes: Option<u64>,
    /// The UDP payload of each datagram.
    pub payload_bytes: u64,
    /// The longest burst that arrived whole, per finished repetition, in datagrams.
    pub lengths: Vec<u64>,
    /// The shortest of `lengths`.
    pub min: Option<u64>,
    /// Their median (the typical value).
    pub typ: Option<u64>,
    /// The longest of `lengths`.
    pub max: Option<u64>,
    /// The longest burst tried: a repetition that reached it found no limit below it.
    pub max_datagrams: u64,
    /// The rate at which the sender sent the longest whole bursts (median over repetitions), bits per
    /// second of UDP payload.
    pub sender_bps: Option<f64>,
    /// Trials run.
    pub trials: u32,
    /// Whether every repetition ran to its end.
    pub complete: bool,
}

impl BurstResult {
    /// Fills `min`, `typ` and `max` from `lengths`.
    pub fn summarise(&mut self) {
        let mut sorted = self.lengths.clone();
        sorted.sort_unstable();
        self.min = sorted.first().copied();
        self.max = sorted.last().copied();
        self.typ = (!sorted.is_empty()).then(|| sorted[(sorted.len() - 1) / 2]);
    }
}

/// The outcome of one frame size's search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZeroLossRate {
    /// The Ethernet frame size searched, when sizes were given as frames.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame_bytes: Option<u64>,
    /// The UDP payload of each datagram.
    pub payload_bytes: u64,
    /// The highest rate that passed, in bits per second of UDP payload (`None`: none passed): an offered
    /// rate, or the rate a sender-limited sender achieved without loss.
    pub rate_bps: Option<f64>,
    /// The same rate in datagrams (frames) per second.
    pub packets_per_s: Option<f64>,
    /// What the receiver measured in the passing trial at that rate, in bits per second of UDP payload.
    pub received_bps: Option<f64>,
    /// The search's lower bound, in bits per second of UDP payload.
    pub min_bps: f64,
    /// The upper bound.
    pub max_bps: f64,
    /// Where the upper bound came from: `--max`, the link rate, or the sender's unpaced rate.
    pub max_source: String,
    /// Trials run.
    pub trials: u32,
    /// Whether the sender fell short of the offered rate in any trial (whatever that trial's verdict): the
    /// rates it did not reach are unresolved, not lost on the link.
    pub sender_limited: bool,
    /// Whether the search ran to its end.
    pub complete: bool,
    /// The rate against the link's theoretical maximum, with `--link-rate`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<crate::link_model::LinkEfficiency>,
    /// Round trips of probes sent alongside a last trial at the rate found (RFC 2544 section 26.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<crate::run_result::Series>,
    /// The UDP figures of the load during the latency trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_load: Option<crate::run_result::UdpSeries>,
    /// The probes' own rate in the latency trial, bits per second of UDP payload (part of the rate found).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_probe_bps: Option<f64>,
    /// The probes sent per second in the latency trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_probes_per_s: Option<f64>,
    /// The sustainable rate: the highest offered rate that passed with no queue growth (docs/metrics.md,
    /// "Sustainable rate"), bits per second of UDP payload (`None`: none did, or growth was not measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sustainable_bps: Option<f64>,
    /// An estimate of the path's capacity that no queue inflates, with its method.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityEstimate>,
}

/// A capacity estimate and how it was made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityEstimate {
    /// Bits per second of UDP payload.
    pub bps: f64,
    /// How it was measured, in words and numbers.
    pub method: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_map_to_udp_payloads() {
        assert_eq!(frame_payload(64, false), Some(18));
        assert_eq!(frame_payload(1518, false), Some(1472));
        assert_eq!(frame_payload(1518, true), Some(1452));
        assert_eq!(frame_payload(64, true), None);
        assert_eq!(frame_payload(46, false), Some(0));
    }

    #[test]
    fn burst_results_summarise_as_min_median_max() {
        let mut result = BurstResult {
            frame_bytes: None,
            payload_bytes: 1472,
            lengths: vec![680, 650, 700, 660],
            min: None,
            typ: None,
            max: None,
            max_datagrams: 1000,
            sender_bps: None,
            trials: 40,
            complete: true,
        };
        result.summarise();
        assert_eq!((result.min, result.typ, result.max), (Some(650), Some(660), Some(700)));
    }

    #[test]
    fn verdicts_separate_sender_shortfall_from_loss() {
        use crate::run_result::UdpSeries;
        // The fixture's rows are 2 s trials of 1472-byte datagrams on one stream.
        let trial = ThroughputSpec { duration_s: 2.0, ..ThroughputSpec::default() };
        let mut series = crate::fixture::udp_row(100e6, 99.5e6, 0);
        assert_eq!(Verdict::of(&series, 0.0, &trial), Verdict::Pass);
        series.udp = Some(UdpSeries { lost: 1, loss_percent: Some(0.1), ..series.udp.clone().expect("udp") });
        assert_eq!(Verdict::of(&series, 0.0, &trial), Verdict::Loss);
        assert_eq!(Verdict::of(&series, 0.5, &trial), Verdict::Pass);
        let short = crate::fixture::udp_row(100e6, 90e6, 0);
        assert_eq!(Verdict::of(&short, 0.5, &trial), Verdict::SenderLimited);
        let short_and_lossy = crate::fixture::udp_row(100e6, 90e6, 100);
        assert_eq!(Verdict::of(&short_and_lossy, 0.0, &trial), Verdict::Loss, "loss at less than the rate");
        series.complete = false;
        assert_eq!(Verdict::of(&series, 0.5, &trial), Verdict::Failed);
    }

    fn row_of(offered: f64, sent: u64) -> ThroughputSeries {
        let mut row = crate::fixture::udp_row(offered, offered, 0);
        row.udp = row.udp.map(|u| crate::run_result::UdpSeries { sent, received: sent, ..u });
        row
    }

    #[test]
    fn a_trial_of_a_few_datagrams_is_judged_by_its_count() {
        // 200 kbit/s of 1472-byte datagrams for 2 s: 33.97 due, so the schedule holds 34. Its rate over the
        // first-to-last datagram looked 3 % short; the count is whole.
        let trial = ThroughputSpec { duration_s: 2.0, ..ThroughputSpec::default() };
        assert!(!sender_fell_short(&row_of(200e3, 35), &trial));
        assert!(!sender_fell_short(&row_of(200e3, 32), &trial), "one datagram of granularity, 2 % of tolerance");
        assert!(sender_fell_short(&row_of(200e3, 30), &trial));
        // At 1 Gbit/s a batch spans 4 datagrams (50 us of schedule): 169 837 due, 2 % and 5 may be missing.
        let due = (2.0 * 1e9 / 11776.0f64).ceil();
        assert!(!sender_fell_short(&row_of(1e9, (due * 0.98 - 5.0).ceil() as u64), &trial));
        assert!(sender_fell_short(&row_of(1e9, (due * 0.98 - 6.0).floor() as u64), &trial));
        // Two streams share the rate, and each has its own granularity.
        let two = ThroughputSpec { streams: 2, ..trial };
        assert!(!sender_fell_short(&row_of(400e3, 64), &two));
    }
}
