//! The table rendering of throughput runs: one row per series (sum, then streams), then each sum's
//! intervals.

use std::io::{self, Write};

use linkperf_core::run_result::ThroughputSeries;
use linkperf_core::units::format_size;
use linkperf_core::{RunResult, ThroughputSpec};

/// Writes the rows and intervals of a throughput run (the header and footer are the table's).
pub(crate) fn write_body(spec: &ThroughputSpec, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{:<13} {:>6} {:<8} {:>6} {:>12} {:>12} {:>8} {:>11} {:>9} {:>8} {:>9} {:>8} {:<6}",
        "phase",
        "size",
        "flow",
        "stream",
        "recv Mbit/s",
        "sent Mbit/s",
        "window s",
        "msg/s",
        "µs/msg",
        "retrans",
        "cwnd KiB",
        "srtt µs",
        "cc"
    )?;
    for series in &run.throughput {
        write_row(series, out)?;
    }
    write_intervals(spec, run, out)
}

fn write_row(s: &ThroughputSeries, out: &mut dyn Write) -> io::Result<()> {
    let mbit = |bps: Option<f64>| bps.map(|b| format!("{:.2}", b / 1e6)).unwrap_or_else(|| "-".into());
    let number = |v: Option<f64>, digits: usize| v.map(|v| format!("{v:.digits$}")).unwrap_or_else(|| "-".into());
    let stream = s.stream.map(|i| i.to_string()).unwrap_or_else(|| "sum".into());
    let (retrans, cwnd, srtt, cc) = match &s.tcp {
        Some(t) => (
            t.retransmits.to_string(),
            format!("{:.0}", t.cwnd_bytes as f64 / 1024.0),
            t.srtt_us.to_string(),
            t.congestion.clone(),
        ),
        None => ("-".into(), "-".into(), "-".into(), "-".into()),
    };
    let mark = if s.complete { "" } else { " *" };
    writeln!(
        out,
        "{:<13} {:>6} {:<8} {:>6} {:>12} {:>12} {:>8.2} {:>11} {:>9} {:>8} {:>9} {:>8} {:<6}{mark}",
        s.phase.name(),
        format_size(s.size_bytes),
        s.flow.name(),
        stream,
        mbit(s.receiver_bps),
        mbit(s.sender_bps),
        s.window_s,
        number(s.messages_per_s, 0),
        number(s.us_per_message, 3),
        retrans,
        cwnd,
        srtt,
        cc
    )
}

fn write_intervals(spec: &ThroughputSpec, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
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
            writeln!(out, "  {:>7.2} - {:>7.2} s {:>12.2} Mbit/s{note}", i.start_s, i.end_s, i.goodput_bps / 1e6)?;
        }
    }
    Ok(())
}
