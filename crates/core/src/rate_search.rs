//! RFC 2544 over UDP sockets: frame sizes mapped to datagram payloads, the binary search for the highest
//! offered rate with acceptable loss (section 26.1), its trials' verdicts, and the bound on its length.
//! Pure: the trials themselves are run by the `net` crate. Definitions: docs/metrics.md, "Characterising a
//! link".

use serde::{Deserialize, Serialize};

use crate::run_result::ThroughputSeries;

/// Bytes of an Ethernet frame around its IP packet that RFC 2544 counts in a frame size: the 14-byte
/// header and the 4-byte frame check sequence (preamble and gap are not part of a frame size).
pub const ETHERNET_FRAME_BYTES_AROUND_IP: u64 = 14 + 4;
/// The UDP header.
pub const UDP_HEADER_BYTES: u64 = 8;
/// The frame sizes RFC 2544 section 9.1 lists for Ethernet.
pub const RFC2544_FRAME_SIZES: [u64; 7] = [64, 128, 256, 512, 1024, 1280, 1518];

/// A trial's achieved sending rate below this share of the offered rate means the sender (not the link)
/// fell short.
pub const SENDER_SHORTFALL: f64 = 0.98;

/// The UDP payload carried by an Ethernet frame of `frame_bytes` (header and FCS included) over IPv4 or
/// IPv6, or `None` when the frame cannot hold a UDP datagram at all.
pub fn frame_payload(frame_bytes: u64, ipv6: bool) -> Option<u64> {
    let ip_header = if ipv6 { 40 } else { 20 };
    frame_bytes.checked_sub(ETHERNET_FRAME_BYTES_AROUND_IP + ip_header + UDP_HEADER_BYTES)
}

/// What a trial showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Loss within the tolerance, at the offered rate.
    Pass,
    /// More loss than the tolerance.
    Loss,
    /// The sender could not offer the rate (it fell more than 2 % short): the trial says nothing about the
    /// link, and the rate counts as not reached.
    SenderLimited,
    /// Nothing was received, or the trial was cut short.
    Failed,
}

impl Verdict {
    /// The verdict of a trial's sum series: sender shortfall first, then loss against `tolerance_percent`.
    pub fn of(series: &ThroughputSeries, tolerance_percent: f64) -> Self {
        let Some(udp) = series.udp.as_ref() else { return Verdict::Failed };
        if !series.complete || udp.sent == 0 {
            return Verdict::Failed;
        }
        if sender_fell_short(series) {
            return Verdict::SenderLimited;
        }
        match udp.loss_percent {
            Some(loss) if loss <= tolerance_percent => Verdict::Pass,
            _ => Verdict::Loss,
        }
    }

    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Loss => "loss",
            Verdict::SenderLimited => "sender-limited",
            Verdict::Failed => "failed",
        }
    }
}

/// Whether a UDP series' sender achieved less than [`SENDER_SHORTFALL`] of the offered rate.
pub fn sender_fell_short(series: &ThroughputSeries) -> bool {
    let offered = series.udp.as_ref().and_then(|u| u.offered_bps);
    match (offered, series.sender_bps) {
        (Some(offered), Some(achieved)) => achieved < offered * SENDER_SHORTFALL,
        (Some(_), None) => true,
        _ => false,
    }
}

/// The binary search of RFC 2544 section 26.1 over offered rates in `[min, max]` (`0 < min < max`): first
/// the maximum; then, if it did not pass, a rate between the highest that passed so far (or the minimum)
/// and the lowest that did not: their geometric mean while they are more than a factor 2 apart (so a link
/// far slower than the bound is found in a few trials), their midpoint after that, until they are within
/// `precision` of the upper one; last, if nothing passed, the minimum itself.
#[derive(Debug, Clone)]
pub struct BinarySearch {
    min_bps: f64,
    max_bps: f64,
    precision: f64,
    /// The highest rate that passed.
    best: Option<f64>,
    /// The lowest rate that did not pass (or, before the first trial, the maximum).
    failing: f64,
    /// The rate to try next.
    next: Option<f64>,
    tried_min: bool,
}

impl BinarySearch {
    /// A search between `min_bps` and `max_bps`, resolved to `precision` (a fraction, e.g. 0.01) of the
    /// rate found.
    pub fn new(min_bps: f64, max_bps: f64, precision: f64) -> Self {
        Self { min_bps, max_bps, precision, best: None, failing: max_bps, next: Some(max_bps), tried_min: false }
    }

    /// The most trials a search can take: the maximum; geometric steps until the bounds are a factor 2
    /// apart; halvings until they are `precision` apart; the minimum.
    pub fn max_trials(min_bps: f64, max_bps: f64, precision: f64) -> u32 {
        let octaves = (max_bps / min_bps).log2();
        let geometric = if octaves > 1.0 { octaves.log2().ceil() as u32 } else { 0 };
        let halvings = (1.0 / precision).log2().ceil().max(0.0) as u32;
        2 + geometric + halvings
    }

    /// The rate of the next trial, or `None` when the search is over.
    pub fn next(&self) -> Option<f64> {
        self.next
    }

    /// The highest rate that passed so far.
    pub fn best(&self) -> Option<f64> {
        self.best
    }

    /// Records the outcome of the trial at [`BinarySearch::next`] and chooses the one after.
    pub fn record(&mut self, verdict: Verdict) {
        let Some(rate) = self.next else { return };
        self.tried_min |= rate <= self.min_bps;
        if verdict == Verdict::Pass {
            self.best = Some(self.best.map_or(rate, |b| b.max(rate)));
        } else {
            self.failing = self.failing.min(rate);
        }
        let low = self.best.unwrap_or(self.min_bps);
        self.next = if self.best == Some(self.max_bps) {
            None
        } else if self.failing - low > self.precision * self.failing {
            Some(if self.failing > 2.0 * low { (low * self.failing).sqrt() } else { (low + self.failing) / 2.0 })
        } else if self.best.is_none() && !self.tried_min {
            Some(self.min_bps)
        } else {
            None
        };
    }
}

/// The search of RFC 2544 section 26.4 for the longest burst without loss, over whole lengths from 1 to
/// `max`: first `max`; then halving the range between the longest that passed and the shortest that did
/// not, down to one datagram.
#[derive(Debug, Clone)]
pub struct LengthSearch {
    /// The longest length that passed (0: none yet).
    passed: u64,
    /// The shortest length that did not pass (`max + 1` before any did not).
    failed: u64,
    next: Option<u64>,
}

impl LengthSearch {
    /// A search up to `max` datagrams (at least 1).
    pub fn new(max: u64) -> Self {
        let max = max.max(1);
        Self { passed: 0, failed: max + 1, next: Some(max) }
    }

    /// The most trials a search up to `max` takes.
    pub fn max_trials(max: u64) -> u32 {
        1 + (max.max(1) as f64).log2().ceil() as u32
    }

    /// The length of the next trial, or `None` when the search is over.
    pub fn next(&self) -> Option<u64> {
        self.next
    }

    /// The longest length that passed (0 if even one datagram was lost).
    pub fn longest(&self) -> u64 {
        self.passed
    }

    /// Records whether the burst of [`LengthSearch::next`] arrived whole, and chooses the next length.
    pub fn record(&mut self, passed: bool) {
        let Some(length) = self.next else { return };
        if passed {
            self.passed = self.passed.max(length);
        } else {
            self.failed = self.failed.min(length);
        }
        self.next = (self.failed - self.passed > 1).then(|| self.passed + (self.failed - self.passed) / 2);
    }
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
    /// The highest offered rate that passed, in bits per second of UDP payload (`None`: none passed).
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
    /// Whether any trial was sender-limited (its rate is then unresolved, not lost on the link).
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a search against a link that passes every rate up to `capacity`.
    fn search(min: f64, max: f64, precision: f64, capacity: f64) -> (Option<f64>, Vec<f64>) {
        let mut search = BinarySearch::new(min, max, precision);
        let mut tried = Vec::new();
        while let Some(rate) = search.next() {
            tried.push(rate);
            search.record(if rate <= capacity { Verdict::Pass } else { Verdict::Loss });
            assert!(tried.len() < 100, "the search ends");
        }
        (search.best(), tried)
    }

    #[test]
    fn frames_map_to_udp_payloads() {
        assert_eq!(frame_payload(64, false), Some(18));
        assert_eq!(frame_payload(1518, false), Some(1472));
        assert_eq!(frame_payload(1518, true), Some(1452));
        assert_eq!(frame_payload(64, true), None);
        assert_eq!(frame_payload(46, false), Some(0));
    }

    #[test]
    fn a_rate_that_passes_at_the_maximum_ends_the_search() {
        assert_eq!(search(1e3, 100e6, 0.01, 200e6), (Some(100e6), vec![100e6]));
    }

    #[test]
    fn the_search_converges_within_the_precision_and_its_bound() {
        let bound = BinarySearch::max_trials(16e3, 16e9, 0.01);
        let mut capacity = 17e3;
        while capacity < 16e9 {
            let (best, tried) = search(16e3, 16e9, 0.01, capacity);
            let best = best.expect("a rate passes");
            assert!(best <= capacity && capacity - best <= 0.01 * capacity * 1.02, "capacity {capacity}: found {best}");
            assert!(tried.len() as u32 <= bound, "capacity {capacity}: {} trials > {bound}", tried.len());
            capacity *= 1.37;
        }
    }

    #[test]
    fn nothing_passing_tries_the_minimum_last_and_reports_none() {
        let (best, tried) = search(1e6, 100e6, 0.01, 0.5e6);
        assert_eq!(best, None);
        assert_eq!(tried.last(), Some(&1e6));
        assert!(tried.len() as u32 <= BinarySearch::max_trials(1e6, 100e6, 0.01));
        let (best, tried) = search(1e6, 100e6, 0.01, 1.2e6);
        assert!(best.is_some_and(|b| b >= 1e6 && b <= 1.2e6), "{best:?} after {tried:?}");
    }

    #[test]
    fn the_trial_bound_counts_the_steps() {
        // 1000:1 is 10 octaves, halved 4 times to below one; 1 % needs 7 halvings; plus maximum and minimum.
        assert_eq!(BinarySearch::max_trials(0.1e6, 100e6, 0.01), 13);
        assert_eq!(BinarySearch::max_trials(60e6, 100e6, 0.01), 9);
        assert_eq!(BinarySearch::max_trials(60e6, 100e6, 0.5), 3);
    }

    #[test]
    fn the_length_search_finds_the_longest_whole_burst_exactly() {
        for (max, limit) in [(100_000u64, 673u64), (100_000, 0), (100_000, 100_000), (1, 1), (1000, 999), (7, 3)] {
            let mut search = LengthSearch::new(max);
            let mut trials = 0;
            while let Some(length) = search.next() {
                search.record(length <= limit);
                trials += 1;
            }
            assert_eq!(search.longest(), limit.min(max), "max {max}, limit {limit}");
            assert!(trials <= LengthSearch::max_trials(max), "{trials} trials for max {max}");
        }
        assert_eq!(LengthSearch::max_trials(100_000), 18);
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
        let mut series = crate::fixture::udp_row(100e6, 99.5e6, 0);
        assert_eq!(Verdict::of(&series, 0.0), Verdict::Pass);
        series.udp = Some(UdpSeries { lost: 1, loss_percent: Some(0.1), ..series.udp.clone().expect("udp") });
        assert_eq!(Verdict::of(&series, 0.0), Verdict::Loss);
        assert_eq!(Verdict::of(&series, 0.5), Verdict::Pass);
        series.sender_bps = Some(90e6);
        assert_eq!(Verdict::of(&series, 0.5), Verdict::SenderLimited);
        series.complete = false;
        assert_eq!(Verdict::of(&series, 0.5), Verdict::Failed);
    }
}
