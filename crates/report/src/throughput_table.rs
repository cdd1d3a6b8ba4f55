//! The table rendering of throughput runs: one row per series (sum, then streams), then each sum's
//! intervals.

use std::io::{self, Write};

use linkperf_core::counters::HostCounters;
use linkperf_core::run_result::ThroughputSeries;
use linkperf_core::units::{format_significant, format_size, RateUnit};
use linkperf_core::{Direction, Proto, RunResult, ThroughputSpec};

/// Writes the rows and intervals of a throughput run (the header and footer are the table's).
pub(crate) fn write_body(spec: &ThroughputSpec, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let unit = rate_unit(run);
    let (recv, sent) = (format!("recv {}", unit.name()), format!("sent {}", unit.name()));
    let common = ["phase", "size", "flow", "stream", &recv, &sent, "window s", "msg/s", "µs/msg"];
    write!(
        out,
        "{:<13} {:>6} {:<8} {:>6} {:>12} {:>12} {:>8} {:>11} {:>9}",
        common[0], common[1], common[2], common[3], common[4], common[5], common[6], common[7], common[8]
    )?;
    if spec.proto == Proto::Udp {
        let offer = format!("offer {}", unit.name());
        let udp = [offer.as_str(), "lost/sent", "loss %", "jitter µs", "ooo", "dup", "stalls"];
        writeln!(
            out,
            " {:>12} {:>19} {:>8} {:>10} {:>6} {:>6} {:>6}",
            udp[0], udp[1], udp[2], udp[3], udp[4], udp[5], udp[6]
        )?;
    } else {
        writeln!(out, " {:>8} {:>9} {:>8} {:<6}", "retrans", "cwnd KiB", "srtt µs", "cc")?;
    }
    for series in &run.throughput {
        write_row(series, unit, out)?;
    }
    write_both_ways(spec, run, unit, out)?;
    write_link(run, out)?;
    write_cpu(run, out)?;
    write_counters(run, out)?;
    write_turns(run, out)?;
    write_intervals(spec, run, out)
}

/// The bit-rate unit of a run's table: Mbit/s, or on a slower run the unit its fastest rate asks for
/// (kbit/s, bit/s), so that a serial line's 7.68 kbit/s never reads 0.01 Mbit/s.
pub(crate) fn rate_unit(run: &RunResult) -> RateUnit {
    let rows = run.throughput.iter();
    let rates = rows.flat_map(|s| {
        let offered = s.udp.as_ref().and_then(|u| u.offered_bps);
        let intervals = s.intervals.iter().map(|i| i.goodput_bps);
        [s.receiver_bps, s.sender_bps, offered].into_iter().flatten().chain(intervals)
    });
    match RateUnit::for_bit_rate(rates.fold(0.0, f64::max)) {
        RateUnit::GigabitPerSecond => RateUnit::MegabitPerSecond,
        slower => slower,
    }
}

/// A rate in `unit`: two decimals of Mbit/s as ever, at least three significant digits below.
fn rate_in(bps: f64, unit: RateUnit) -> String {
    match unit {
        RateUnit::MegabitPerSecond => format!("{:.2}", bps / 1e6),
        _ => format_significant(bps / unit.bps()),
    }
}

fn write_row(s: &ThroughputSeries, unit: RateUnit, out: &mut dyn Write) -> io::Result<()> {
    let mbit = |bps: Option<f64>| bps.map(|b| rate_in(b, unit)).unwrap_or_else(|| "-".into());
    let number = |v: Option<f64>, digits: usize| v.map(|v| format!("{v:.digits$}")).unwrap_or_else(|| "-".into());
    let stream = s.stream.map(|i| i.to_string()).unwrap_or_else(|| "sum".into());
    let mark = if s.complete { "" } else { " *" };
    write!(
        out,
        "{:<13} {:>6} {:<8} {:>6} {:>12} {:>12} {:>8.2} {:>11} {:>9}",
        s.phase.name(),
        format_size(s.size_bytes),
        s.flow.name(),
        stream,
        mbit(s.receiver_bps),
        mbit(s.sender_bps),
        s.window_s,
        number(s.messages_per_s, 0),
        number(s.us_per_message, 3),
    )?;
    match (&s.udp, &s.tcp) {
        (Some(u), _) => writeln!(
            out,
            " {:>12} {:>19} {:>8} {:>10.2} {:>6} {:>6} {:>6}{mark}",
            mbit(u.offered_bps),
            format!("{}/{}", u.lost, u.sent),
            number(u.loss_percent, 3),
            u.jitter_us,
            u.out_of_order,
            u.duplicates,
            u.stalls
        ),
        (None, Some(t)) => writeln!(
            out,
            " {:>8} {:>9.0} {:>8} {:<6}{mark}",
            t.retransmits,
            t.cwnd_bytes as f64 / 1024.0,
            t.srtt_us,
            t.congestion
        ),
        (None, None) => writeln!(out, " {:>8} {:>9} {:>8} {:<6}{mark}", "-", "-", "-", "-"),
    }
}

/// For phases that carry both directions, the link's total work: the sum of the two goodputs when they run
/// at once; when they take turns, both directions' bytes over the time of all their turns (each direction's
/// own goodput is over its own turns, which do not overlap the other's, so the two do not add up), or over
/// the duration when the turns' times are not known.
fn write_both_ways(spec: &ThroughputSpec, run: &RunResult, unit: RateUnit, out: &mut dyn Write) -> io::Result<()> {
    let sums: Vec<&ThroughputSeries> = run.throughput.iter().filter(|s| s.stream.is_none()).collect();
    for (up, down) in sums.iter().zip(sums.iter().skip(1)) {
        let both = matches!(up.phase, Direction::Bidirectional | Direction::Alternating);
        if both && up.phase == down.phase && up.size_bytes == down.size_bytes && up.flow != down.flow {
            let (total_bps, how) = match up.phase {
                Direction::Alternating => {
                    let bytes = (up.receiver_bytes + down.receiver_bytes) as f64 * 8.0;
                    let turned =
                        [up, down].iter().all(|s| !s.turns.is_empty() && s.turns.iter().all(|t| t.held_s().is_some()));
                    match turned {
                        true => (
                            Some(bytes / (up.window_s + down.window_s)),
                            "both directions' received bytes over all their turns",
                        ),
                        false => (Some(bytes / spec.duration_s), "both directions' received bytes over the duration"),
                    }
                }
                _ => (up.receiver_bps.zip(down.receiver_bps).map(|(a, b)| a + b), "upload + download receiver goodput"),
            };
            if let Some(total) = total_bps {
                writeln!(
                    out,
                    "{:<13} {:>6} both ways {:>19}   ({how})",
                    up.phase.name(),
                    format_size(up.size_bytes),
                    rate_in(total, unit)
                )?;
            }
        }
    }
    Ok(())
}

fn write_link(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    for s in run.throughput.iter().filter(|s| s.stream.is_none()) {
        if let Some(link) = &s.link {
            writeln!(
                out,
                "\n{} {} {}: {:.2} % of the link's maximum goodput, {}",
                s.phase.name(),
                format_size(s.size_bytes),
                s.flow.name(),
                link.percent,
                link.formula
            )?;
        }
    }
    Ok(())
}

fn write_cpu(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let sums: Vec<&ThroughputSeries> = run
        .throughput
        .iter()
        .filter(|s| s.stream.is_none() && (s.sender_cpu.is_some() || s.receiver_cpu.is_some()))
        .collect();
    if sums.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nCPU of the stream threads (user + system, % of one core; CPU-seconds per 10^9 bytes):")?;
    for s in sums {
        let describe = |cost: Option<linkperf_core::throughput::CpuCost>| match cost {
            Some(c) => format!(
                "{:.1} + {:.1} %, {} CPU-s/GB",
                c.user_percent,
                c.system_percent,
                c.cpu_s_per_gb.map(|v| format!("{v:.3}")).unwrap_or_else(|| "-".into())
            ),
            None => "-".into(),
        };
        writeln!(
            out,
            "  {} {} {}: sender {}; receiver {}",
            s.phase.name(),
            format_size(s.size_bytes),
            s.flow.name(),
            describe(s.sender_cpu),
            describe(s.receiver_cpu)
        )?;
    }
    Ok(())
}

fn write_counters(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let mut seen = Vec::new();
    for s in run.throughput.iter().filter(|s| s.stream.is_none()) {
        if let Some(u) = s.udp.as_ref().filter(|u| u.lost > 0).and_then(|u| u.attribution) {
            writeln!(
                out,
                "\n{} {} {}: lost datagrams by place (from host counters, upper bounds): sending host {}, receiving interface {}, receiver socket buffer {}, path {}",
                s.phase.name(),
                format_size(s.size_bytes),
                s.flow.name(),
                u.sending_host,
                u.receiving_interface,
                u.receiver_socket_buffer,
                u.path
            )?;
        }
        let key = (s.phase, s.size_bytes);
        if seen.contains(&key) || (s.client_counters.is_none() && s.responder_counters.is_none()) {
            continue;
        }
        seen.push(key);
        writeln!(out, "\nkernel counters over {} {} (client | responder):", s.phase.name(), format_size(s.size_bytes))?;
        let (c, r) = (s.client_counters.as_ref(), s.responder_counters.as_ref());
        let interface = |h: Option<&HostCounters>| match h.and_then(|h| h.interface.as_ref()) {
            Some(i) => format!(
                "{}: rx {} tx {} packets, rx drop {} fifo {} err {}, tx drop {} err {}",
                i.name, i.rx_packets, i.tx_packets, i.rx_dropped, i.rx_fifo, i.rx_errors, i.tx_dropped, i.tx_errors
            ),
            None => "no interface".into(),
        };
        let field = |h: Option<&HostCounters>, f: fn(&HostCounters) -> u64| {
            h.map(|h| f(h).to_string()).unwrap_or_else(|| "-".into())
        };
        writeln!(out, "  interface:            {} | {}", interface(c), interface(r))?;
        writeln!(
            out,
            "  UDP receive errors:   {} | {} (of which socket buffer full: {} | {})",
            field(c, |h| h.udp_in_errors),
            field(r, |h| h.udp_in_errors),
            field(c, |h| h.udp_rcvbuf_errors),
            field(r, |h| h.udp_rcvbuf_errors)
        )?;
        writeln!(
            out,
            "  UDP send buffer full: {} | {}",
            field(c, |h| h.udp_sndbuf_errors),
            field(r, |h| h.udp_sndbuf_errors)
        )?;
        writeln!(
            out,
            "  TCP retransmitted:    {} | {}",
            field(c, |h| h.tcp_retrans_segs),
            field(r, |h| h.tcp_retrans_segs)
        )?;
        writeln!(
            out,
            "  backlog drops:        {} | {}",
            field(c, |h| h.softnet_dropped),
            field(r, |h| h.softnet_dropped)
        )?;
        for (end, counters) in [("client", c), ("responder", r)] {
            write_nic(end, counters, out)?;
        }
    }
    Ok(())
}

/// The driver statistics that changed at one end (`ethtool -S`), a few per line, under the driver's names.
fn write_nic(end: &str, counters: Option<&HostCounters>, out: &mut dyn Write) -> io::Result<()> {
    let Some(h) = counters.filter(|h| !h.nic.is_empty()) else { return Ok(()) };
    let name = h.interface.as_ref().map_or("its interface", |i| i.name.as_str());
    writeln!(out, "  NIC statistics that changed, {end} ({name}):")?;
    let cells: Vec<String> = h.nic.iter().map(|n| format!("{} {}", n.name, n.value)).collect();
    for line in cells.chunks(4) {
        writeln!(out, "    {}", line.join(", "))?;
    }
    Ok(())
}

fn write_intervals(spec: &ThroughputSpec, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let unit = rate_unit(run);
    for s in run.throughput.iter().filter(|s| s.stream.is_none()) {
        writeln!(
            out,
            "\n{} {} {}: receiver goodput per interval, all streams{}",
            s.phase.name(),
            format_size(s.size_bytes),
            s.flow.name(),
            if spec.omit_intervals > 0 { format!(" (first {} omitted)", spec.omit_intervals) } else { String::new() }
        )?;
        if s.intervals.is_empty() {
            writeln!(out, "  no whole interval in which every stream ran: see the per-stream rows")?;
        }
        for i in &s.intervals {
            let length = i.end_s - i.start_s;
            let note = match i.in_total_s {
                t if t <= 0.0 => "  (not in total)".to_string(),
                t if t < length - 1e-9 => format!("  ({t:.3} s of it in total)"),
                _ => String::new(),
            };
            let rate = rate_in(i.goodput_bps, unit);
            writeln!(out, "  {:>7.2} - {:>7.2} s {rate:>12} {}{note}", i.start_s, i.end_s, unit.name())?;
        }
        if let Some(note) = short_interval_note(run, s) {
            writeln!(out, "  {note}")?;
        }
    }
    Ok(())
}

/// How many round trips an interval must span for its goodput to describe the link rather than TCP's
/// window (docs/metrics.md, "Intervals").
const ROUND_TRIPS_PER_INTERVAL: f64 = 4.0;

/// A caution under a sum's intervals when they are shorter than a few round trips of its connections (the
/// largest smoothed RTT among the flow's streams, the largest seen while writing when known).
fn short_interval_note(run: &RunResult, sum: &ThroughputSeries) -> Option<String> {
    let interval_s = sum.intervals.first().map(|i| i.end_s - i.start_s)?;
    let srtt_s = run
        .throughput
        .iter()
        .filter(|t| t.phase == sum.phase && t.size_bytes == sum.size_bytes && t.flow == sum.flow)
        .filter_map(|t| t.tcp.as_ref())
        .map(|t| t.max_srtt_us.unwrap_or(0).max(t.srtt_us) as f64 / 1e6)
        .fold(0.0, f64::max);
    (interval_s < ROUND_TRIPS_PER_INTERVAL * srtt_s).then(|| {
        format!(
            "note: intervals of {:.0} ms are shorter than {ROUND_TRIPS_PER_INTERVAL:.0} round trips ({:.0} ms at the longest round trip seen): they show TCP's bursts and stalls, so their min and max are not the link's; use a longer --interval",
            interval_s * 1e3,
            ROUND_TRIPS_PER_INTERVAL * srtt_s * 1e3
        )
    })
}

/// The turns of alternating tests, summarised per direction: how many, how long they wrote, their
/// turnaround (median and longest) and what arrived of the idle direction (docs/metrics.md, "Turns").
fn write_turns(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    for s in run.throughput.iter().filter(|s| s.stream.is_none() && !s.turns.is_empty()) {
        let mut turnarounds: Vec<f64> = s.turns.iter().filter_map(|t| t.turnaround_s).collect();
        turnarounds.sort_by(f64::total_cmp);
        let undrained = s.turns.len() - turnarounds.len();
        let writing_s: f64 = s.turns.iter().map(|t| t.writing_s).sum::<f64>() / s.turns.len() as f64;
        let idle: Option<u64> = s.turns.iter().map(|t| t.idle_bytes).sum();
        let turnaround = match (turnarounds.get(turnarounds.len() / 2), turnarounds.last()) {
            (Some(median), Some(longest)) => {
                format!("turnaround median {:.1} ms, longest {:.1} ms", median * 1e3, longest * 1e3)
            }
            _ => "no turn drained".into(),
        };
        writeln!(
            out,
            "\n{} {} {} turns: {}, writing {:.3} s each, {turnaround}{}; idle direction received {}",
            s.phase.name(),
            format_size(s.size_bytes),
            s.flow.name(),
            s.turns.len(),
            writing_s,
            if undrained > 0 { format!(" ({undrained} did not drain in time)") } else { String::new() },
            idle.map(|b| format!("{b} bytes")).unwrap_or_else(|| "- (not seen over Unix sockets)".into())
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_core::fixture;
    use linkperf_core::throughput::TurnSample;

    fn text(write: impl Fn(&RunResult, &mut dyn Write) -> io::Result<()>, run: &RunResult) -> String {
        let mut out = Vec::new();
        write(run, &mut out).expect("writes");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn intervals_shorter_than_four_round_trips_are_flagged() {
        let mut run = fixture::throughput_run();
        let spec = ThroughputSpec::default();
        let intervals = |run: &RunResult| text(|r, o| write_intervals(&spec, r, o), run);
        // The fixture's 1 s intervals over a 42 µs round trip: no note.
        assert!(!intervals(&run).contains("round trips"));
        // A 300 ms round trip (a slow link's queue) makes 1 s intervals too short.
        for s in &mut run.throughput {
            if let Some(tcp) = s.tcp.as_mut() {
                tcp.srtt_us = 300_000;
            }
        }
        let text = intervals(&run);
        assert!(text.contains("intervals of 1000 ms are shorter than 4 round trips (1200 ms"), "{text}");
    }

    #[test]
    fn turns_are_summarised_per_direction() {
        let mut run = fixture::throughput_run();
        let turn = |turnaround_s: Option<f64>, idle_bytes| TurnSample {
            start_s: 0.0,
            writing_s: 1.0,
            turnaround_s,
            bytes: Some(1000),
            idle_bytes,
        };
        run.throughput[0].turns = vec![turn(Some(0.002), Some(0)), turn(Some(0.004), Some(0)), turn(None, Some(5))];
        let text = text(write_turns, &run);
        assert!(text.contains("turns: 3, writing 1.000 s each"), "{text}");
        assert!(text.contains("turnaround median 4.0 ms, longest 4.0 ms (1 did not drain in time)"), "{text}");
        assert!(text.contains("idle direction received 5 bytes"), "{text}");
    }

    #[test]
    fn the_nic_statistics_that_changed_are_shown_by_end() {
        use linkperf_core::counters::{InterfaceCounters, NicCounter};
        let mut run = fixture::throughput_run();
        let sum = run.throughput.iter_mut().find(|s| s.stream.is_none()).expect("a sum row");
        let nic = (0..5).map(|i| NicCounter { name: format!("rx_queue_{i}_drops"), value: i + 1 }).collect();
        let interface = Some(InterfaceCounters { name: "eth1".into(), ..Default::default() });
        sum.responder_counters = Some(HostCounters { interface, nic, ..HostCounters::default() });
        sum.client_counters = Some(HostCounters::default());
        let text = text(write_counters, &run);
        assert!(text.contains("NIC statistics that changed, responder (eth1):"), "{text}");
        assert!(text.contains("    rx_queue_0_drops 1, rx_queue_1_drops 2, rx_queue_2_drops 3, rx_queue_3_drops 4\n    rx_queue_4_drops 5"), "{text}");
        assert!(!text.contains("changed, client"), "a client with no changed counter shows none: {text}");
    }
}
