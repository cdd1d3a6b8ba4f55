//! The table rendering for people: a header naming what was measured and how, then one row per series.

use std::io::{self, Write};

use linkperf_core::run_result::Parameters;
use linkperf_core::units::format_size;
use linkperf_core::{HostFacts, RunResult, RunStatus, Series};

use crate::Reporter;

/// An aligned text table with a descriptive header.
pub struct TableReporter;

impl Reporter for TableReporter {
    fn render(&self, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        if let RunStatus::Failed { error } = &run.status {
            // Nothing was measured, and the responder's facts were never received: one line says it all.
            return writeln!(
                out,
                "{} over {} to {} ({}): failed before measuring anything: {error}",
                run.parameters.test_name(),
                run.parameters.proto().name(),
                run.target.host,
                run.target.address
            );
        }
        write_header(run, out)?;
        let rate_label = match &run.parameters {
            Parameters::Latency(_) | Parameters::Idle(_) => "trans/s",
            Parameters::Connect(_) => "conn/s",
            Parameters::Throughput(spec) => {
                crate::throughput_table::write_body(spec, run, out)?;
                return write_footer(run, out);
            }
            Parameters::Sweep(_) => {
                crate::characterise_table::write_sweep(run, out)?;
                return write_footer(run, out);
            }
            Parameters::Ratesearch(spec) => {
                crate::characterise_table::write_search(spec, run, out)?;
                return write_footer(run, out);
            }
            Parameters::Burst(_) => {
                crate::characterise_table::write_bursts(run, out)?;
                return write_footer(run, out);
            }
        };
        let loaded = matches!(&run.parameters, Parameters::Latency(spec) if spec.load.is_some());
        if loaded {
            write!(out, "{:<13} ", "load")?;
        }
        writeln!(
            out,
            "{:>6} {:>7} {:>8} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>6}",
            if matches!(run.parameters, Parameters::Idle(_)) { "gap" } else { "size" },
            "session",
            "count",
            "min",
            "mean",
            "stddev",
            "p50(typ)",
            "p90",
            "p99",
            "p99.9",
            "max",
            rate_label,
            "lost"
        )?;
        for series in &run.series {
            if loaded {
                write!(out, "{:<13} ", series.load.map_or("idle", |d| d.name()))?;
            }
            write_row(series, out)?;
        }
        if loaded {
            write_under_load(run, out)?;
        }
        write_footer(run, out)
    }
}

fn write_header(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    let target = format!("{} ({})", run.target.host, run.target.address);
    match &run.parameters {
        Parameters::Latency(spec) => {
            let sessions =
                if spec.sessions == 1 { "1 session".to_string() } else { format!("{} sessions", spec.sessions) };
            let schedule = match spec.rate_per_s {
                Some(rate) => format!("open loop at {rate} requests/s per session, times from the intended send"),
                None => "closed loop".to_string(),
            };
            writeln!(
                out,
                "latency over {} to {target}: wait {}, {sessions}, {schedule}",
                spec.proto.name(),
                spec.wait.name()
            )?;
            writeln!(out, "round-trip times in µs; request and reply each carry SIZE bytes of payload")?;
            if let Some(load) = &spec.load {
                writeln!(
                    out,
                    "each size idle, then beside a {} {} load of {} stream(s) per direction ({}) that starts {} s before the series",
                    load.proto.name(),
                    load.direction.name(),
                    load.streams,
                    load.congestion.as_deref().unwrap_or("the system's congestion control"),
                    load.lead_s
                )?;
            }
        }
        Parameters::Throughput(spec) => {
            let phases: Vec<&str> = spec.phases.iter().map(|p| p.name()).collect();
            let streams = if spec.streams == 1 { "1 stream".into() } else { format!("{} streams", spec.streams) };
            writeln!(
                out,
                "throughput over {} to {target}: {}, {streams} per direction, {} s each, intervals of {} s",
                spec.proto.name(),
                phases.join(" then "),
                spec.duration_s,
                spec.interval_s
            )?;
            let payload = match spec.proto {
                linkperf_core::Proto::Udp => "UDP payload (datagram bytes after the UDP header)",
                _ => "payload (application bytes)",
            };
            let unit = crate::throughput_table::rate_unit(run);
            let prefix = match unit.name() {
                "bit/s" => String::new(),
                name => format!(", 1 {} = 10^{} bit", name.trim_end_matches("/s"), unit.bps().log10().round()),
            };
            writeln!(
                out,
                "goodput in {} of {payload}{prefix}, read by the receiver; what the sender wrote beside it",
                unit.name()
            )?;
        }
        Parameters::Idle(spec) => {
            let keepalive = match spec.keepalive_s {
                Some(period) => format!("keep-alive every {period} s on a second connection"),
                None => "no keep-alive".into(),
            };
            writeln!(
                out,
                "idle wake-up over {} to {target}: {} messages per gap, {keepalive}",
                spec.proto.name(),
                spec.count
            )?;
            writeln!(
                out,
                "round-trip times in µs of a {}-byte message sent after each idle GAP (first column)",
                spec.size_bytes
            )?;
        }
        Parameters::Sweep(spec) => crate::characterise_table::write_sweep_header(spec, &target, out)?,
        Parameters::Ratesearch(spec) => crate::characterise_table::write_search_header(spec, &target, out)?,
        Parameters::Burst(spec) => crate::characterise_table::write_burst_header(spec, &target, out)?,
        Parameters::Connect(spec) => {
            writeln!(out, "connect over {} to {target}", spec.proto.name())?;
            writeln!(
                out,
                "connection times in µs: connect, send a 12-byte request, receive the first byte of the response"
            )?;
        }
    }
    writeln!(out, "client:    {}", describe_host(&run.endpoints.client))?;
    writeln!(out, "responder: {}", describe_host(&run.endpoints.responder))?;
    if !run.endpoints.placement.is_unpinned() {
        writeln!(out, "pinned:    {}", run.endpoints.placement)?;
    }
    if !run.endpoints.sockets.is_default() {
        writeln!(out, "sockets:   {}", run.endpoints.sockets)?;
    }
    if let Some(echo) = &run.endpoints.echo {
        writeln!(out, "set-up:    {}", echo.describe())?;
    }
    writeln!(out)
}

fn describe_host(host: &HostFacts) -> String {
    let interface = match &host.interface {
        Some(i) => {
            let speed = i.speed_mbit.map(|s| format!(", {s} Mbit/s")).unwrap_or_default();
            let mtu = i.mtu_bytes.map(|m| format!(", MTU {m}")).unwrap_or_default();
            format!("; {} ({}{speed}{mtu})", i.name, i.driver)
        }
        None => String::new(),
    };
    if host.kernel.is_empty() && host.cpus == 0 {
        // A peer that told nothing about itself (an echo service, a loopback plug): its name only.
        return format!("{}{interface}", host.hostname);
    }
    format!("{} ({}, {} x{}{interface})", host.hostname, host.kernel, host.cpu_model, host.cpus)
}

fn write_row(series: &Series, out: &mut dyn Write) -> io::Result<()> {
    let size = match (series.gap_s, series.size_bytes) {
        (Some(gap), _) => format_gap(gap),
        (None, Some(size)) => format_size(size),
        (None, None) => "-".into(),
    };
    let session = series.session.map(|s| s.to_string()).unwrap_or_else(|| "all".into());
    let mark = if series.complete { "" } else { " *" };
    match &series.summary {
        Some(s) => writeln!(
            out,
            "{size:>6} {session:>7} {:>8} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>9.2} {:>10.0} {:>6}{mark}",
            s.count,
            s.min_us,
            s.mean_us,
            s.stddev_us,
            s.p50_us,
            s.p90_us,
            s.p99_us,
            s.p999_us,
            s.max_us,
            series.transactions_per_s,
            series.lost
        ),
        None => writeln!(out, "{size:>6} {session:>7} {:>8} {:>9}{mark}", 0, "no samples"),
    }
}

/// Idle against loaded latency per size, and the load's throughput.
fn write_under_load(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "\nlatency under load, typical (p50) and p99 round trip, idle -> loaded:")?;
    let aggregates: Vec<&Series> = run.series.iter().filter(|s| s.session.is_none()).collect();
    for pair in aggregates.windows(2) {
        let (idle, loaded) = (pair[0], pair[1]);
        let (Some(i), Some(l), None, Some(direction)) = (&idle.summary, &loaded.summary, idle.load, loaded.load) else {
            continue;
        };
        writeln!(
            out,
            "  {:>6}: p50 {:.2} -> {:.2} µs ({:+.2} µs, x{:.2}), p99 {:.2} -> {:.2} µs, under {} load",
            idle.size_bytes.map(format_size).unwrap_or_else(|| "-".into()),
            i.p50_us,
            l.p50_us,
            l.p50_us - i.p50_us,
            l.p50_us / i.p50_us.max(1e-9),
            i.p99_us,
            l.p99_us,
            direction.name()
        )?;
    }
    writeln!(out, "the load (bulk transfer beside each loaded series, goodput read by its receiver):")?;
    for s in run.throughput.iter().filter(|s| s.stream.is_none()) {
        let what = match s.phase {
            linkperf_core::Direction::Upload | linkperf_core::Direction::Download => s.flow.name().to_string(),
            phase => format!("{}, {}", phase.name(), s.flow.name()),
        };
        writeln!(
            out,
            "  {what}: {} over {:.2} s",
            s.receiver_bps.map(linkperf_core::units::format_bit_rate).unwrap_or_else(|| "-".into()),
            s.window_s
        )?;
    }
    Ok(())
}

fn write_footer(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    for warning in &run.warnings {
        writeln!(out, "\nwarning: {warning}")?;
    }
    let late: u64 = run.series.iter().filter(|s| s.session.is_none()).map(|s| s.late).sum();
    if late > 0 {
        writeln!(out, "\n{late} replies arrived after their timeout and were discarded (counted in lost)")?;
    }
    match &run.status {
        RunStatus::Complete | RunStatus::Failed { .. } => {}
        RunStatus::Partial { error } => {
            writeln!(out, "\n* stopped early: {error}")?;
            writeln!(out, "  the rows above hold what was measured before that")?;
        }
    }
    Ok(())
}

/// A gap as typed: `0`, `10ms`, `1.5s`.
fn format_gap(seconds: f64) -> String {
    match seconds {
        0.0 => "0".into(),
        s if s < 1.0 => format!("{}ms", (s * 1e6).round() / 1e3),
        s => format!("{s}s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_matches_snapshot() {
        let mut out = Vec::new();
        TableReporter.render(&linkperf_core::fixture::latency_run(), &mut out).expect("renders");
        insta::assert_snapshot!(String::from_utf8_lossy(&out));
    }

    #[test]
    fn throughput_table_matches_snapshot() {
        let mut out = Vec::new();
        TableReporter.render(&linkperf_core::fixture::throughput_run(), &mut out).expect("renders");
        insta::assert_snapshot!(String::from_utf8_lossy(&out));
    }

    #[test]
    fn sweep_table_matches_snapshot() {
        let mut out = Vec::new();
        TableReporter.render(&linkperf_core::fixture::sweep_run(), &mut out).expect("renders");
        insta::assert_snapshot!(String::from_utf8_lossy(&out));
    }

    #[test]
    fn ratesearch_table_matches_snapshot() {
        let mut out = Vec::new();
        TableReporter.render(&linkperf_core::fixture::ratesearch_run(), &mut out).expect("renders");
        insta::assert_snapshot!(String::from_utf8_lossy(&out));
    }

    #[test]
    fn under_load_table_matches_snapshot() {
        let mut out = Vec::new();
        TableReporter.render(&linkperf_core::fixture::under_load_run(), &mut out).expect("renders");
        insta::assert_snapshot!(String::from_utf8_lossy(&out));
    }

    #[test]
    fn burst_table_matches_snapshot() {
        let mut out = Vec::new();
        TableReporter.render(&linkperf_core::fixture::burst_run(), &mut out).expect("renders");
        insta::assert_snapshot!(String::from_utf8_lossy(&out));
    }

    #[test]
    fn gaps_format_as_typed() {
        assert_eq!(format_gap(0.0), "0");
        assert_eq!(format_gap(0.001), "1ms");
        assert_eq!(format_gap(0.5), "500ms");
        assert_eq!(format_gap(2.0), "2s");
    }

    #[test]
    fn partial_runs_say_why_they_stopped() {
        let mut run = linkperf_core::fixture::latency_run();
        run.status = RunStatus::Partial { error: "the responder closed the data connection".into() };
        run.series[0].complete = false;
        let mut out = Vec::new();
        TableReporter.render(&run, &mut out).expect("renders");
        let text = String::from_utf8_lossy(&out);
        assert!(text.contains("stopped early: the responder closed"), "{text}");
        assert!(text.lines().any(|l| l.ends_with(" *")), "{text}");
    }
}
