//! Throughput measurements: what one end of one stream saw, and how stream records become the reported
//! goodput figures (docs/metrics.md, "Throughput").
//!
//! A `StreamMeter` counts payload bytes into fine time bins (a fraction of the reporting interval, see
//! [`resolution_ns`]) on a clock shared by every stream measured on the same host; times are passed in, so
//! this stays free of clocks. The sum over several streams is taken over the fine bins during which every
//! stream was transferring: the window is exactly the total length of those bins and the bytes are exactly
//! what was read in them, so streams that start or end a little apart neither inflate nor dilute the sum,
//! and at most two fine bins of the run are left out at its edges.

use serde::{Deserialize, Serialize};

/// Which way data flows, seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Flow {
    /// Client to responder.
    Upload,
    /// Responder to client.
    Download,
}

impl Flow {
    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Flow::Upload => "upload",
            Flow::Download => "download",
        }
    }
}

/// Which end of a stream a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum End {
    /// The end that wrote the data.
    Sender,
    /// The end that read it.
    Receiver,
}

/// TCP state of a sending socket at the end of a stream, from `TCP_INFO` and `TCP_CONGESTION`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpStats {
    /// Segments retransmitted over the connection's life (`tcpi_total_retrans`).
    pub retransmits: u64,
    /// Congestion window in bytes (`tcpi_snd_cwnd` x `tcpi_snd_mss`).
    pub cwnd_bytes: u64,
    /// Smoothed round-trip time in microseconds (`tcpi_rtt`).
    pub srtt_us: u64,
    /// Maximum segment size in bytes (`tcpi_snd_mss`).
    pub mss_bytes: u64,
    /// Congestion control algorithm, e.g. `cubic`.
    pub congestion: String,
    /// The largest smoothed round-trip time seen while the stream wrote (sampled about every 100 ms, and at
    /// the end), microseconds: the round trip of the loaded path, which a queue lengthens. `None` from a
    /// peer that does not sample it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_srtt_us: Option<u64>,
}

/// What one end measured of one stream. Times are nanoseconds since that end's test epoch (the first byte
/// of any stream of the test at that end); `bins[k]` holds the bytes of fine bin k, [k*R, (k+1)*R) with R
/// = `resolution_ns`, which divides the interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamRecord {
    /// Stream number from 0, unique within the test.
    pub index: u16,
    /// Direction of the stream.
    pub flow: Flow,
    /// Which end measured this.
    pub end: End,
    /// Payload bytes moved.
    pub bytes: u64,
    /// Completed read or write calls.
    pub calls: u64,
    /// When the first byte moved.
    pub first_ns: u64,
    /// When the last byte moved.
    pub last_ns: u64,
    /// Interval length in nanoseconds.
    pub interval_ns: u64,
    /// Length of a fine bin in nanoseconds; divides `interval_ns`.
    pub resolution_ns: u64,
    /// Bytes per fine bin from the epoch.
    pub bins: Vec<u64>,
    /// Sender-side TCP state, when the sender is a TCP socket.
    pub tcp: Option<TcpStats>,
    /// UDP figures, for UDP streams.
    #[serde(default)]
    pub udp: Option<crate::datagram_tracker::UdpStats>,
    /// CPU time of the thread that served this stream end.
    #[serde(default)]
    pub cpu: Option<ThreadCpu>,
}

/// CPU time one thread spent, and the wall time it spent it in (from `getrusage(RUSAGE_THREAD)`). It
/// includes the thread's system calls, not the kernel's deferred network processing (softirqs) done on
/// behalf of the socket, which the host counters show.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadCpu {
    /// User-mode seconds.
    pub user_s: f64,
    /// Kernel-mode seconds.
    pub system_s: f64,
    /// Wall seconds over which they were measured.
    pub wall_s: f64,
}

impl ThreadCpu {
    /// Busy share of one core, in percent.
    pub fn percent(&self) -> f64 {
        if self.wall_s > 0.0 {
            (self.user_s + self.system_s) / self.wall_s * 100.0
        } else {
            0.0
        }
    }
}

/// The CPU cost of one end of a flow (all its stream threads).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CpuCost {
    /// User-mode seconds of the stream threads.
    pub user_s: f64,
    /// Kernel-mode seconds of the stream threads.
    pub system_s: f64,
    /// User-mode time as a percentage of one core over the stream's wall time (summed over streams).
    pub user_percent: f64,
    /// Kernel-mode time likewise.
    pub system_percent: f64,
    /// CPU seconds (user and kernel) per 10^9 payload bytes moved.
    pub cpu_s_per_gb: Option<f64>,
    /// The busiest stream thread's share of a core, in percent; near 100 the end was CPU-bound.
    pub busiest_thread_percent: f64,
}

impl CpuCost {
    /// Sums the CPU of the records' threads against the bytes they moved; `None` if none has CPU figures.
    pub fn of(records: &[StreamRecord]) -> Option<CpuCost> {
        let cpus: Vec<(ThreadCpu, u64)> = records.iter().filter_map(|r| r.cpu.map(|c| (c, r.bytes))).collect();
        if cpus.is_empty() {
            return None;
        }
        let (user_s, system_s): (f64, f64) =
            cpus.iter().fold((0.0, 0.0), |(u, s), (c, _)| (u + c.user_s, s + c.system_s));
        let wall_s = cpus.iter().map(|(c, _)| c.wall_s).fold(0.0, f64::max);
        let bytes: u64 = cpus.iter().map(|(_, b)| b).sum();
        let percent = |seconds: f64| if wall_s > 0.0 { seconds / wall_s * 100.0 } else { 0.0 };
        Some(CpuCost {
            user_s,
            system_s,
            user_percent: percent(user_s),
            system_percent: percent(system_s),
            cpu_s_per_gb: (bytes > 0).then(|| (user_s + system_s) / (bytes as f64 / 1e9)),
            busiest_thread_percent: cpus.iter().map(|(c, _)| c.percent()).fold(0.0, f64::max),
        })
    }

    /// Whether a stream thread was busy enough (90 % of a core or more) that the end, not the link, may have
    /// set the rate.
    pub fn cpu_bound(&self) -> bool {
        self.busiest_thread_percent >= 90.0
    }
}

impl StreamRecord {
    /// Goodput of this stream alone: bytes over the time from its first to its last byte, in bit/s.
    pub fn goodput_bps(&self) -> f64 {
        let seconds = self.last_ns.saturating_sub(self.first_ns) as f64 / 1e9;
        if seconds > 0.0 {
            self.bytes as f64 * 8.0 / seconds
        } else {
            0.0
        }
    }
}

/// Most fine bins a meter keeps: a stream that runs longer than its bins cover merges neighbouring bins
/// (coarsening), so that no run length, interval or clock value can make a meter grow past this. A planned
/// run uses about 1000-2000 bins ([`resolution_ns`]); the rest is room for a slow link's drain.
pub const MAX_BINS: usize = 4096;

/// How far either way [`dividing`] looks for an exact cut: bounded, so that an interval of a prime number of
/// nanoseconds costs a few thousand divisions, not a search over all its parts.
const DIVISOR_SEARCH: u64 = 1024;

/// The time grid of a meter: intervals of `interval`, cut into fine bins of `resolution` (which divides
/// the interval).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bins {
    /// The reporting interval.
    pub interval: std::time::Duration,
    /// The fine-bin length; divides `interval`.
    pub resolution: std::time::Duration,
}

impl Bins {
    /// The grid of a run of `duration` reported every `interval` (see [`resolution_ns`]).
    pub fn for_run(interval: std::time::Duration, duration: std::time::Duration) -> Self {
        let interval_ns = nanos(interval).max(1);
        let resolution = resolution_ns(interval_ns, nanos(duration));
        Self::from_ns(interval_ns, resolution)
    }

    /// A grid from nanosecond lengths, made consistent: an interval of at least 1 ns, and a resolution that
    /// divides it.
    pub fn from_ns(interval_ns: u64, resolution_ns: u64) -> Self {
        let interval_ns = interval_ns.max(1);
        let resolution_ns = dividing(interval_ns, resolution_ns);
        Self {
            interval: std::time::Duration::from_nanos(interval_ns),
            resolution: std::time::Duration::from_nanos(resolution_ns),
        }
    }

    /// The interval in nanoseconds.
    pub fn interval_ns(&self) -> u64 {
        nanos(self.interval)
    }

    /// The resolution in nanoseconds.
    pub fn resolution_ns(&self) -> u64 {
        nanos(self.resolution)
    }
}

/// A duration in whole nanoseconds, saturating at `u64::MAX` (585 years).
fn nanos(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// The fine-bin length for a run of `duration_ns` reported every `interval_ns`: about a thousandth of the
/// run, at least 1 ms, at most the interval, and always a whole fraction of the interval. A run keeps at
/// most about 2000 bins per stream, and a sum loses at most two of them at its edges.
pub fn resolution_ns(interval_ns: u64, duration_ns: u64) -> u64 {
    dividing(interval_ns, (duration_ns / 1000).max(1_000_000))
}

/// A length near `wanted` that divides `interval_ns` exactly, so that bins tile intervals: the interval cut
/// into the fewest parts no longer than `wanted` when such a cut exists within twice as many parts, else
/// into fewer, longer parts (at worst the whole interval). Each search is bounded ([`DIVISOR_SEARCH`]
/// candidates), so the cost does not grow with the interval.
fn dividing(interval_ns: u64, wanted: u64) -> u64 {
    let interval_ns = interval_ns.max(1);
    let parts = interval_ns.div_ceil(wanted.clamp(1, interval_ns));
    let exact = |p: &u64| interval_ns % p == 0;
    let upward = parts..=parts.saturating_mul(2).min(parts.saturating_add(DIVISOR_SEARCH));
    let downward = (parts.saturating_sub(DIVISOR_SEARCH).max(1)..parts).rev();
    let parts = upward.clone().find(exact).or_else(|| downward.clone().find(exact)).unwrap_or(1);
    interval_ns / parts
}

/// Counts bytes into fine bins as they move. Callers pass the time since their epoch. At most [`MAX_BINS`]
/// bins are kept: a byte later than they reach makes the meter merge neighbouring bins (and, once a bin is
/// a whole interval, neighbouring intervals), so its memory is bounded whatever the times and grid given.
#[derive(Debug, Clone)]
pub struct StreamMeter {
    record: StreamRecord,
    started: bool,
}

impl StreamMeter {
    /// A meter for one stream end on the grid `bins`.
    pub fn new(index: u16, flow: Flow, end: End, bins: Bins) -> Self {
        let bins = Bins::from_ns(bins.interval_ns(), bins.resolution_ns());
        let record = StreamRecord {
            index,
            flow,
            end,
            bytes: 0,
            calls: 0,
            first_ns: 0,
            last_ns: 0,
            interval_ns: bins.interval_ns(),
            resolution_ns: bins.resolution_ns(),
            bins: Vec::new(),
            tcp: None,
            udp: None,
            cpu: None,
        };
        Self { record, started: false }
    }

    /// Records `bytes` moved by one call that completed at `at_ns`.
    #[inline]
    pub fn record(&mut self, bytes: u64, at_ns: u64) {
        let r = &mut self.record;
        if !self.started {
            self.started = true;
            r.first_ns = at_ns;
        }
        r.last_ns = at_ns;
        r.bytes += bytes;
        r.calls += 1;
        let mut bin = (at_ns / r.resolution_ns) as usize;
        if r.bins.len() <= bin {
            while bin >= MAX_BINS {
                coarsen(r);
                bin = (at_ns / r.resolution_ns) as usize;
            }
            r.bins.resize(bin + 1, 0);
        }
        r.bins[bin] += bytes;
    }

    /// The record so far (of a stream still running), with the TCP state given.
    pub fn snapshot(&self, tcp: Option<TcpStats>) -> StreamRecord {
        StreamRecord { tcp, ..self.record.clone() }
    }

    /// The bytes recorded so far.
    pub fn bytes(&self) -> u64 {
        self.record.bytes
    }

    /// The finished record.
    pub fn finish(self, tcp: Option<TcpStats>) -> StreamRecord {
        StreamRecord { tcp, ..self.record }
    }

    /// The finished record of a UDP stream.
    pub fn finish_udp(self, udp: crate::datagram_tracker::UdpStats) -> StreamRecord {
        StreamRecord { udp: Some(udp), ..self.record }
    }
}

/// Merges a record's fine bins by the smallest factor that keeps them tiling its intervals; once a bin is a
/// whole interval, the interval doubles with it.
fn coarsen(record: &mut StreamRecord) {
    let parts = record.interval_ns / record.resolution_ns;
    let factor = (2..=16).find(|f| parts % f == 0).unwrap_or(parts.max(2));
    if parts == 1 {
        record.interval_ns = record.interval_ns.saturating_mul(2);
    }
    record.resolution_ns = record.resolution_ns.saturating_mul(factor);
    record.bins = merged(&record.bins, factor as usize);
}

/// `bins` with every `factor` neighbours added into one.
fn merged(bins: &[u64], factor: usize) -> Vec<u64> {
    bins.chunks(factor.max(1)).map(|chunk| chunk.iter().sum()).collect()
}

/// One turn of a direction when the directions alternate (half duplex), as the client saw it. Times are
/// seconds since the client's test start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnSample {
    /// When the turn was given.
    pub start_s: f64,
    /// How long its senders wrote.
    pub writing_s: f64,
    /// The turnaround: from the end of writing until all the turn's data had arrived and the other
    /// direction was told to go; `None` if the drain did not complete in time (or the responder cannot
    /// confirm it).
    pub turnaround_s: Option<f64>,
    /// Payload bytes of this turn's direction that arrived during the turn (writing and turnaround).
    pub bytes: Option<u64>,
    /// Payload bytes of the other (idle) direction that arrived during the turn: zero when turns do not
    /// overlap. `None` where it cannot be seen (Unix sockets).
    pub idle_bytes: Option<u64>,
}

impl TurnSample {
    /// The time the turn held the link: its writing and its turnaround (`None` if it did not drain).
    pub fn held_s(&self) -> Option<f64> {
        self.turnaround_s.map(|t| self.writing_s + t)
    }

    /// The turn's goodput: its direction's bytes over the time it held the link, bits per second.
    pub fn goodput_bps(&self) -> Option<f64> {
        let held = self.held_s().filter(|h| *h > 0.0)?;
        Some(self.bytes? as f64 * 8.0 / held)
    }
}

/// One reported interval of a direction's sum.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IntervalSample {
    /// Start of the interval in seconds since the measuring end's epoch.
    pub start_s: f64,
    /// End of the interval.
    pub end_s: f64,
    /// Payload bytes of every stream in the interval.
    pub bytes: u64,
    /// `bytes` x 8 / interval length.
    pub goodput_bps: f64,
    /// Seconds of this interval inside the totals' window: all of it, or less at the edges of the run, in
    /// omitted intervals (`--omit`), and where not every stream was running.
    pub in_total_s: f64,
}

/// The sum of several streams measured at one end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamSum {
    /// Goodput in payload bits per second over `window_s`.
    pub goodput_bps: f64,
    /// Payload bytes in the window.
    pub bytes: u64,
    /// Length of the window: whole intervals in which every stream was transferring, after the omitted ones.
    pub window_s: f64,
    /// Every interval, with those outside the window marked excluded.
    pub intervals: Vec<IntervalSample>,
}

/// Sums stream records of one end and one direction over the fine bins in which every stream was
/// transferring (a bin counts if it starts at or after every stream's first byte and ends at or before every
/// stream's last byte) and which start after the first `omit` intervals. Intervals are reported whole; one
/// that is not wholly inside the window is marked excluded. Records whose meters coarsened differently are
/// first brought to the coarsest grid among them. `None` when no bin qualifies, or when the records' grids
/// do not fit together (records may come from a peer).
pub fn sum_streams(records: &[StreamRecord], omit: usize) -> Option<StreamSum> {
    let (interval_ns, resolution_ns) = common_grid(records)?;
    let binned: Vec<Vec<u64>> =
        records.iter().map(|r| merged(&r.bins, (resolution_ns / r.resolution_ns) as usize)).collect();
    let latest_first = records.iter().map(|r| r.first_ns).max()?;
    let earliest_last = records.iter().map(|r| r.last_ns).min()?;
    let window_start = latest_first.max((omit as u64).saturating_mul(interval_ns));
    let fine_bins = binned.iter().map(Vec::len).max()?;
    let per_interval = usize::try_from(interval_ns / resolution_ns).unwrap_or(usize::MAX);
    let at = |bin: usize, by: u64| (bin as u64).saturating_mul(by);
    let mut sum = StreamSum { goodput_bps: 0.0, bytes: 0, window_s: 0.0, intervals: Vec::new() };
    for k in 0..fine_bins.div_ceil(per_interval) {
        let mut interval = IntervalSample {
            start_s: at(k, interval_ns) as f64 / 1e9,
            end_s: at(k + 1, interval_ns) as f64 / 1e9,
            bytes: 0,
            goodput_bps: 0.0,
            in_total_s: 0.0,
        };
        let first_bin = k.saturating_mul(per_interval);
        for bin in first_bin..first_bin.saturating_add(per_interval).min(fine_bins) {
            let bytes: u64 = binned.iter().map(|b| b.get(bin).copied().unwrap_or(0)).sum();
            interval.bytes += bytes;
            if at(bin, resolution_ns) >= window_start && at(bin + 1, resolution_ns) <= earliest_last {
                sum.bytes += bytes;
                sum.window_s += resolution_ns as f64 / 1e9;
                interval.in_total_s += resolution_ns as f64 / 1e9;
            }
        }
        interval.goodput_bps = interval.bytes as f64 * 8.0 / (interval_ns as f64 / 1e9);
        sum.intervals.push(interval);
    }
    if sum.window_s == 0.0 {
        return None;
    }
    sum.goodput_bps = sum.bytes as f64 * 8.0 / sum.window_s;
    Some(sum)
}

/// The coarsest grid of `records` (interval, resolution), if every record's grid refines it: each bin
/// length divides the common one, which divides the common interval, which each interval divides.
fn common_grid(records: &[StreamRecord]) -> Option<(u64, u64)> {
    let interval_ns = records.iter().map(|r| r.interval_ns).max()?;
    let resolution_ns = records.iter().map(|r| r.resolution_ns).max()?;
    let divides = |part: u64, whole: u64| part > 0 && whole % part == 0;
    let fits = divides(resolution_ns, interval_ns)
        && records.iter().all(|r| divides(r.resolution_ns, resolution_ns) && divides(r.interval_ns, interval_ns));
    fits.then_some((interval_ns, resolution_ns))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;

    /// A stream with 1 s intervals and 1 s fine bins, so that windows are whole intervals.
    fn stream(index: u16, chunks: &[(u64, u64)]) -> StreamRecord {
        let mut meter = StreamMeter::new(index, Flow::Upload, End::Receiver, Bins::from_ns(SECOND, SECOND));
        chunks.iter().for_each(|&(bytes, at)| meter.record(bytes, at));
        meter.finish(None)
    }

    #[test]
    fn a_meter_bins_bytes_by_completion_time() {
        let r = stream(0, &[(100, 10), (200, SECOND - 1), (300, SECOND), (400, 3 * SECOND + 5)]);
        assert_eq!(r.bins, vec![300, 300, 0, 400]);
        assert_eq!((r.bytes, r.calls, r.first_ns, r.last_ns), (1000, 4, 10, 3 * SECOND + 5));
    }

    #[test]
    fn single_stream_goodput_is_bytes_over_its_active_time() {
        let r = stream(0, &[(1_000_000, 0), (1_000_000, 2 * SECOND)]);
        assert_eq!(r.goodput_bps(), 8_000_000.0);
    }

    #[test]
    fn the_sum_counts_only_intervals_where_every_stream_ran() {
        // Stream 0 runs 0..4.5 s, stream 1 starts at 1.2 s and runs to 4.1 s: whole common intervals are
        // [2,3) and [3,4). Each stream moves 1000 bytes per interval there.
        let a = stream(
            0,
            &[
                (500, 0),
                (1000, SECOND + 1),
                (1000, 2 * SECOND + 1),
                (1000, 3 * SECOND + 1),
                (7, 4 * SECOND + SECOND / 2),
            ],
        );
        let b = stream(
            1,
            &[(9, SECOND + SECOND / 5), (1000, 2 * SECOND + 2), (1000, 3 * SECOND + 2), (3, 4 * SECOND + SECOND / 10)],
        );
        let sum = sum_streams(&[a, b], 0).expect("two common intervals");
        assert_eq!(sum.bytes, 4000);
        assert_eq!(sum.window_s, 2.0);
        assert_eq!(sum.goodput_bps, 16_000.0);
        let counted: Vec<f64> = sum.intervals.iter().map(|i| i.in_total_s).collect();
        assert_eq!(counted, vec![0.0, 0.0, 1.0, 1.0, 0.0]);
    }

    #[test]
    fn omitted_intervals_leave_the_window() {
        let a = stream(0, &[(0, 0), (10, SECOND), (20, 2 * SECOND), (30, 3 * SECOND), (1, 4 * SECOND)]);
        let sum = sum_streams(&[a], 2).expect("intervals remain");
        assert_eq!(sum.window_s, 2.0);
        assert_eq!(sum.bytes, 20 + 30);
    }

    #[test]
    fn fine_bins_keep_all_but_the_edges_of_the_run() {
        // Two streams moving 1 kB every 10 ms for 3 s, the second starting 15 ms late; 100 ms bins.
        let records: Vec<StreamRecord> = [0u64, 15]
            .iter()
            .enumerate()
            .map(|(i, &offset_ms)| {
                let mut meter =
                    StreamMeter::new(i as u16, Flow::Upload, End::Receiver, Bins::from_ns(SECOND, SECOND / 10));
                (0..300).for_each(|t| meter.record(1000, (offset_ms + t * 10) * 1_000_000));
                meter.finish(None)
            })
            .collect();
        let sum = sum_streams(&records, 0).expect("a window");
        // Bins from 0.1 s (after the later first byte at 15 ms) to 2.9 s (before the earlier last at 2.99 s).
        assert!((sum.window_s - 2.8).abs() < 1e-9, "{}", sum.window_s);
        assert_eq!(sum.bytes, 2 * 280 * 1000);
        assert!((sum.goodput_bps - 1_600_000.0).abs() < 1e-6);
        let counted: Vec<f64> = sum.intervals.iter().map(|i| (i.in_total_s * 10.0).round() / 10.0).collect();
        assert_eq!(counted, vec![0.9, 1.0, 0.9, 0.0]);
    }

    #[test]
    fn resolution_divides_the_interval() {
        assert_eq!(resolution_ns(SECOND, 10 * SECOND), 10_000_000);
        assert_eq!(resolution_ns(SECOND, 3600 * SECOND), SECOND);
        assert_eq!(resolution_ns(SECOND, SECOND / 2), 1_000_000);
        // 7 ms wanted; 300 ms splits exactly into 48 bins of 6.25 ms.
        assert_eq!(resolution_ns(300_000_000, 7 * SECOND), 6_250_000);
        assert_eq!(resolution_ns(1_000_000_007, 10 * SECOND), 1_000_000_007, "a prime interval is one bin");
    }

    #[test]
    fn cpu_cost_sums_threads_against_bytes() {
        let cpu = |user_s, system_s| Some(ThreadCpu { user_s, system_s, wall_s: 2.0 });
        let mut a = stream(0, &[(1_000_000_000, 0)]);
        a.cpu = cpu(0.5, 1.5);
        let mut b = stream(1, &[(1_000_000_000, 0)]);
        b.cpu = cpu(0.1, 0.3);
        let cost = CpuCost::of(&[a, b]).unwrap();
        assert!((cost.user_s - 0.6).abs() < 1e-12 && (cost.system_s - 1.8).abs() < 1e-12);
        assert!((cost.user_percent - 30.0).abs() < 1e-9 && (cost.system_percent - 90.0).abs() < 1e-9);
        assert!((cost.cpu_s_per_gb.unwrap() - 1.2).abs() < 1e-12, "2.4 CPU-s for 2 GB");
        assert_eq!(cost.busiest_thread_percent, 100.0);
        assert!(cost.cpu_bound());
        assert_eq!(CpuCost::of(&[stream(0, &[(1, 0)])]), None);
    }

    #[test]
    fn inconsistent_bins_from_a_peer_give_no_sum() {
        let zero = StreamRecord { resolution_ns: 0, ..stream(0, &[(10, 0), (10, 3 * SECOND)]) };
        assert_eq!(sum_streams(&[zero], 0), None);
        let untiled = StreamRecord { resolution_ns: 7, ..stream(0, &[(10, 0), (10, 3 * SECOND)]) };
        assert_eq!(sum_streams(&[untiled], 0), None);
    }

    #[test]
    fn a_run_shorter_than_a_common_interval_has_no_sum() {
        let a = stream(0, &[(10, 0), (10, SECOND / 2)]);
        assert_eq!(sum_streams(&[a], 0), None);
        assert_eq!(sum_streams(&[], 0), None);
    }

    #[test]
    fn a_nanosecond_interval_and_a_late_byte_stay_within_the_bin_cap() {
        // The grid a hostile request asks for: 1 ns intervals; then a byte 5 s after the first.
        let mut meter = StreamMeter::new(0, Flow::Upload, End::Receiver, Bins::from_ns(1, 1));
        meter.record(10, 0);
        meter.record(20, 5 * SECOND);
        let record = meter.finish(None);
        assert!(record.bins.len() <= MAX_BINS, "{} bins", record.bins.len());
        assert_eq!(record.bins.iter().sum::<u64>(), 30, "coarsening keeps every byte");
        assert_eq!(record.interval_ns % record.resolution_ns, 0, "bins still tile intervals");
        assert!(record.resolution_ns * MAX_BINS as u64 > 5 * SECOND);
    }

    #[test]
    fn coarsening_keeps_the_bytes_of_each_period() {
        // 1 s intervals in 1 ms bins: 1 kB per second for 10 000 s forces several merges.
        let mut meter = StreamMeter::new(0, Flow::Upload, End::Receiver, Bins::from_ns(SECOND, SECOND / 1000));
        (0..10_000u64).for_each(|t| meter.record(1000, t * SECOND + SECOND / 2));
        let record = meter.finish(None);
        assert!(record.bins.len() <= MAX_BINS);
        assert_eq!(record.interval_ns % record.resolution_ns, 0);
        let sum = sum_streams(&[record], 0).expect("a window");
        assert_eq!(sum.intervals.iter().map(|i| i.bytes).sum::<u64>(), 10_000_000);
        assert!((sum.goodput_bps - 8000.0).abs() < 8000.0 * 0.01, "{}", sum.goodput_bps);
    }

    #[test]
    fn streams_coarsened_differently_are_summed_on_the_coarser_grid() {
        let grid = Bins::from_ns(SECOND, SECOND / 100);
        let mut short = StreamMeter::new(0, Flow::Upload, End::Receiver, grid);
        let mut long = StreamMeter::new(1, Flow::Upload, End::Receiver, grid);
        (0..300u64).for_each(|t| short.record(100, t * SECOND / 100));
        // The second stream runs far longer, so its meter merges bins; both moved 10 kB/s in the first 3 s.
        (0..300u64).for_each(|t| long.record(100, t * SECOND / 100));
        long.record(1, 100 * SECOND);
        let (short, long) = (short.finish(None), long.finish(None));
        assert_ne!(short.resolution_ns, long.resolution_ns);
        let sum = sum_streams(&[short, long], 0).expect("the common first seconds");
        assert!((sum.goodput_bps - 160_000.0).abs() < 160_000.0 * 0.05, "{}", sum.goodput_bps);
    }

    #[test]
    fn a_prime_interval_is_cut_without_a_long_search() {
        // 2^61 - 1 ns is prime: no cut exists. A search over its parts (2.3e11 of them) ran for hours; the
        // bounded one answers at once.
        let prime = (1u64 << 61) - 1;
        assert_eq!(resolution_ns(prime, 10 * SECOND), prime);
        assert_eq!(
            Bins::for_run(std::time::Duration::from_nanos(prime), std::time::Duration::from_secs(10)).resolution_ns(),
            prime
        );
    }

    #[test]
    fn grids_from_a_peer_that_do_not_tile_give_no_sum_and_no_panic() {
        let huge =
            StreamRecord { interval_ns: u64::MAX, resolution_ns: u64::MAX, ..stream(0, &[(10, 0), (10, 3 * SECOND)]) };
        let _ = sum_streams(&[huge], usize::MAX);
        let mixed = [stream(0, &[(10, 0)]), StreamRecord { interval_ns: 3 * SECOND, ..stream(1, &[(10, 0)]) }];
        assert_eq!(sum_streams(&mixed, 0), None, "1 s does not tile 3 s bins of another stream");
    }
}
