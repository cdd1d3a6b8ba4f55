//! Throughput series from stream records: how both ends' measurements of a test become the reported rows
//! (sums over the common window, per-stream figures, UDP loss, CPU cost, counters, link efficiency).
//! Pure: the records come from the `net` crate's drivers. Definitions: docs/metrics.md, "Throughput".

use crate::counters::HostCounters;
use crate::datagram_tracker::UdpStats;
use crate::link_model::{Framing, LinkEfficiency};
use crate::run_result::{LossAttribution, ThroughputSeries, UdpSeries};
use crate::spec::{Direction, Proto, ThroughputSpec};
use crate::throughput::{sum_streams, CpuCost, End, Flow, StreamRecord};

/// Both hosts' counter deltas over one test.
pub struct TestCounters {
    /// The client host's.
    pub client: HostCounters,
    /// The responder host's, when it reported them.
    pub responder: Option<HostCounters>,
}

impl TestCounters {
    /// The sending and receiving hosts' deltas of a flow.
    fn by_end(&self, flow: Flow) -> (Option<&HostCounters>, Option<&HostCounters>) {
        match flow {
            Flow::Upload => (Some(&self.client), self.responder.as_ref()),
            Flow::Download => (self.responder.as_ref(), Some(&self.client)),
        }
    }
}

/// The series of one phase and write size, from both ends' stream records (`local`, `remote`): per flow, the
/// sum and then each stream (when there are several). `complete` marks whether the phase ran its course.
pub fn combine(
    spec: &ThroughputSpec,
    phase: Direction,
    size: u64,
    (local, remote): (&[StreamRecord], &[StreamRecord]),
    counters: &TestCounters,
    complete: bool,
) -> Vec<ThroughputSeries> {
    let mut series = Vec::new();
    for &flow in phase.flows() {
        let pick = |records: &[StreamRecord], end: End| -> Vec<StreamRecord> {
            records.iter().filter(|r| r.flow == flow && r.end == end).cloned().collect()
        };
        let all: Vec<StreamRecord> = local.iter().chain(remote).cloned().collect();
        let (mut receivers, senders) = (pick(&all, End::Receiver), pick(&all, End::Sender));
        receivers.sort_by_key(|r| r.index);
        let mut sum = sum_series(spec, phase, size, flow, &receivers, &senders, complete);
        sum.client_counters = Some(counters.client.clone());
        sum.responder_counters = counters.responder.clone();
        if let (Some(udp), (Some(sending), Some(receiving))) = (sum.udp.as_mut(), counters.by_end(flow)) {
            let drops = senders.iter().filter_map(|s| s.udp.as_ref()).map(|u| u.send_drops).sum();
            udp.attribution = Some(LossAttribution::split(udp.lost, drops, sending, receiving));
        }
        series.push(sum);
        if receivers.len() > 1 {
            for receiver in &receivers {
                let sender = senders.iter().find(|s| s.index == receiver.index);
                series.push(stream_series(spec, phase, size, flow, receiver, sender, complete));
            }
        } else if let Some(first) = series.last_mut() {
            // One stream: its TCP state belongs to the only series.
            first.tcp = senders.first().and_then(|s| s.tcp.clone());
        }
    }
    series
}

fn sum_series(
    spec: &ThroughputSpec,
    phase: Direction,
    size: u64,
    flow: Flow,
    receivers: &[StreamRecord],
    senders: &[StreamRecord],
    complete: bool,
) -> ThroughputSeries {
    let omit = spec.omit_intervals as usize;
    let received = sum_streams(receivers, omit);
    let sent = sum_streams(senders, omit);
    let receiver_bps = received.as_ref().map(|s| s.goodput_bps);
    ThroughputSeries {
        phase,
        size_bytes: size,
        flow,
        stream: None,
        receiver_bps,
        sender_bps: sent.as_ref().map(|s| s.goodput_bps),
        receiver_bytes: received.as_ref().map(|s| s.bytes).unwrap_or(0),
        // Every byte the senders' sockets accepted, not only those in the window: a send buffer larger than
        // the link's bandwidth-delay product fills in the first fine bin, which the window leaves out.
        sender_bytes: senders.iter().map(|s| s.bytes).sum(),
        window_s: received.as_ref().map(|s| s.window_s).unwrap_or(0.0),
        messages_per_s: receiver_bps.map(|bps| bps / 8.0 / size as f64),
        us_per_message: receiver_bps.filter(|&bps| bps > 0.0).map(|bps| size as f64 * 8.0 / bps * 1e6),
        intervals: received.map(|s| s.intervals).unwrap_or_default(),
        tcp: None,
        udp: udp_series(spec, size, (receivers, senders), complete),
        sender_cpu: CpuCost::of(senders),
        receiver_cpu: CpuCost::of(receivers),
        link: None,
        client_counters: None,
        responder_counters: None,
        turns: Vec::new(),
        complete,
    }
}

/// UDP figures of streams: counts summed, loss per stream pair (so duplicates in one stream cannot hide
/// loss in another; in a run stopped early, up to the highest sequence number received), jitter the
/// largest of the streams'.
fn udp_series(
    spec: &ThroughputSpec,
    size: u64,
    (receivers, senders): (&[StreamRecord], &[StreamRecord]),
    complete: bool,
) -> Option<UdpSeries> {
    if spec.proto != Proto::Udp {
        return None;
    }
    let mut series = UdpSeries {
        // Streams of the row: its senders, or its receivers when a sender's record is missing.
        offered_bps: spec.stream_rate_bps(size).map(|rate| rate * senders.len().max(receivers.len()) as f64),
        sent: 0,
        received: 0,
        lost: 0,
        loss_percent: None,
        out_of_order: 0,
        duplicates: 0,
        jitter_us: 0.0,
        stalls: 0,
        attribution: None,
        delay: None,
    };
    let mut paired = !senders.is_empty();
    for sender in senders {
        let sent = sender.udp.clone().unwrap_or_default();
        series.sent += sent.datagrams;
        series.stalls += sent.stalls;
        match receivers.iter().find(|r| r.index == sender.index) {
            Some(receiver) => {
                let received = receiver.udp.clone().unwrap_or_default();
                series.lost += match complete {
                    true => UdpStats::lost(&sent, &received),
                    false => UdpStats::lost_before_stop(&sent, &received),
                }
            }
            None => paired = false,
        }
    }
    // What arrived counts whether or not the sender's count came back (a run stopped early may lack the
    // peer's report); loss needs both ends of every stream, so it stays unknown without them.
    for received in receivers.iter().filter_map(|r| r.udp.as_ref()) {
        series.received += received.datagrams;
        series.out_of_order += received.out_of_order;
        series.duplicates += received.duplicates;
        series.jitter_us = series.jitter_us.max(received.jitter_us);
    }
    paired &= receivers.iter().all(|r| senders.iter().any(|s| s.index == r.index));
    series.loss_percent = (series.sent > 0 && paired).then(|| series.lost as f64 * 100.0 / series.sent as f64);
    series.delay = crate::delay_trend::DelayTrend::sum(receivers.iter().filter_map(|r| r.udp.as_ref()?.delay.as_ref()));
    Some(series)
}

/// One stream's figures, over its own window (from its first to its last byte, after the omitted intervals),
/// computed the same way as a sum's.
fn stream_series(
    spec: &ThroughputSpec,
    phase: Direction,
    size: u64,
    flow: Flow,
    receiver: &StreamRecord,
    sender: Option<&StreamRecord>,
    complete: bool,
) -> ThroughputSeries {
    let mut series = sum_series(
        spec,
        phase,
        size,
        flow,
        std::slice::from_ref(receiver),
        sender.map(std::slice::from_ref).unwrap_or_default(),
        complete,
    );
    series.stream = Some(receiver.index);
    series.intervals = Vec::new();
    series.tcp = sender.and_then(|s| s.tcp.clone());
    series
}

/// A caution when a sum's sending or receiving threads were busy enough to have set the rate themselves.
pub fn cpu_warning(series: &ThroughputSeries) -> Option<String> {
    if series.stream.is_some() {
        return None;
    }
    // A paced UDP sender spins while it waits for due times; if it kept its schedule, it was not short of CPU.
    let kept_pace = series.udp.as_ref().is_some_and(|u| {
        u.stalls == 0 && u.offered_bps.zip(series.sender_bps).is_some_and(|(asked, sent)| sent >= asked * 0.99)
    });
    let sender_cpu = series.sender_cpu.filter(|_| !kept_pace);
    let busy: Vec<&str> = [("sender", sender_cpu), ("receiver", series.receiver_cpu)]
        .into_iter()
        .filter(|(_, cost)| cost.is_some_and(|c| c.cpu_bound()))
        .map(|(end, _)| end)
        .collect();
    (!busy.is_empty()).then(|| {
        format!(
            "{} {} {}: the {} was CPU-bound (a stream thread used 90 % or more of a core), so this figure may measure the host rather than the link",
            series.phase.name(),
            crate::units::format_size(series.size_bytes),
            series.flow.name(),
            busy.join(" and the ")
        )
    })
}

/// A sum's goodput against the link: per TCP segment of the sender's MSS, or per UDP datagram.
pub fn link_efficiency(
    spec: &ThroughputSpec,
    framing: &Framing,
    sum: &ThroughputSeries,
    mss: Option<u64>,
) -> Option<LinkEfficiency> {
    let measured = sum.receiver_bps?;
    let payload = match spec.proto {
        Proto::Tcp => mss.filter(|&mss| mss > 0)?,
        _ => sum.size_bytes,
    };
    framing.for_proto(spec.proto, payload, measured)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datagram_tracker::UdpStats;
    use crate::throughput::{StreamMeter, TcpStats};

    const SECOND: u64 = 1_000_000_000;

    fn spec(proto: Proto, streams: u16) -> ThroughputSpec {
        ThroughputSpec { proto, streams, sizes_bytes: vec![1000], duration_s: 2.0, ..ThroughputSpec::default() }
    }

    /// A stream end moving 1000 bytes every 10 ms for 2 s.
    fn record(index: u16, end: End) -> StreamRecord {
        let mut meter =
            StreamMeter::new(index, Flow::Upload, end, crate::throughput::Bins::from_ns(SECOND, SECOND / 100));
        (0..=200).for_each(|t| meter.record(1000, t * SECOND / 100));
        meter.finish(None)
    }

    fn counters() -> TestCounters {
        TestCounters { client: HostCounters::default(), responder: Some(HostCounters::default()) }
    }

    #[test]
    fn one_stream_gives_one_row_with_its_tcp_state() {
        let tcp = TcpStats {
            retransmits: 1,
            cwnd_bytes: 2,
            srtt_us: 3,
            mss_bytes: 1448,
            congestion: "cubic".into(),
            max_srtt_us: None,
        };
        let sender = StreamRecord { tcp: Some(tcp.clone()), ..record(0, End::Sender) };
        let rows = combine(
            &spec(Proto::Tcp, 1),
            Direction::Upload,
            1000,
            (&[sender], &[record(0, End::Receiver)]),
            &counters(),
            true,
        );
        assert_eq!(rows.len(), 1);
        let row = &rows[0];
        assert_eq!(row.stream, None);
        assert_eq!(row.tcp, Some(tcp));
        // 1000 bytes per 10 ms is 800 kbit/s, over the whole 2 s.
        assert!((row.receiver_bps.unwrap() - 800_000.0).abs() < 1e-6, "{:?}", row.receiver_bps);
        assert!((row.us_per_message.unwrap() - 10_000.0).abs() < 1e-6);
    }

    #[test]
    fn udp_loss_is_counted_per_stream_pair() {
        // Stream 0 loses 10 of 100; stream 1 receives one datagram twice and loses none: the sum loses 10.
        let udp = |datagrams, duplicates| Some(UdpStats { datagrams, duplicates, ..UdpStats::default() });
        let senders = [
            StreamRecord { udp: udp(100, 0), ..record(0, End::Sender) },
            StreamRecord { udp: udp(100, 0), ..record(1, End::Sender) },
        ];
        let receivers = [
            StreamRecord { udp: udp(90, 0), ..record(0, End::Receiver) },
            StreamRecord { udp: udp(101, 1), ..record(1, End::Receiver) },
        ];
        let rows = combine(&spec(Proto::Udp, 2), Direction::Upload, 1000, (&senders, &receivers), &counters(), true);
        assert_eq!(rows.len(), 3, "a sum and two streams");
        let sum = rows[0].udp.as_ref().unwrap();
        assert_eq!((sum.sent, sum.received, sum.lost, sum.duplicates), (200, 191, 10, 1));
        assert_eq!(sum.loss_percent, Some(5.0));
        assert_eq!(sum.attribution.map(|a| a.path), Some(10), "no counter explains the loss");
        assert_eq!(rows[1].udp.as_ref().map(|u| u.lost), Some(10));
        assert_eq!(rows[2].udp.as_ref().map(|u| u.lost), Some(0));
    }

    #[test]
    fn what_arrived_counts_without_the_senders_report_and_loss_stays_unknown() {
        // A run stopped early: the receiver counted 90 datagrams, the sender's count never came.
        let udp = |datagrams| Some(UdpStats { datagrams, ..UdpStats::default() });
        let receiver = StreamRecord { udp: udp(90), ..record(0, End::Receiver) };
        let rows = combine(&spec(Proto::Udp, 1), Direction::Upload, 1000, (&[], &[receiver]), &counters(), false);
        let sum = rows[0].udp.as_ref().unwrap();
        assert_eq!((sum.sent, sum.received, sum.lost, sum.loss_percent), (0, 90, 0, None));
        assert!(sum.offered_bps.is_none(), "unpaced");
    }
}
