//! The CSV rendering: a header and one row per series, in the units named by each column.

use std::io::{self, Write};

use linkperf_core::RunResult;

use crate::Reporter;

/// Column names; units are part of each name.
pub const COLUMNS: &str = "test,proto,size_bytes,session,count,min_us,mean_us,stddev_us,p50_us,p90_us,p99_us,p999_us,max_us,transactions_per_s,lost,late,elapsed_s,complete";

/// Column names of throughput rows.
pub const THROUGHPUT_COLUMNS: &str = "test,proto,phase,size_bytes,flow,stream,receiver_bps,sender_bps,receiver_bytes,sender_bytes,window_s,messages_per_s,us_per_message,retransmits,cwnd_bytes,srtt_us,congestion,offered_bps,sent_datagrams,received_datagrams,lost_datagrams,loss_percent,out_of_order,duplicates,jitter_us,stalls,complete";

/// CSV with a header row. An empty cell means "not applicable" (no size, the aggregate session, or nothing
/// measured).
pub struct CsvReporter;

impl Reporter for CsvReporter {
    fn render(&self, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        if !run.throughput.is_empty() {
            return render_throughput(run, out);
        }
        writeln!(out, "{COLUMNS}")?;
        let test = run.parameters.test_name();
        let proto = run.parameters.proto().name();
        for s in &run.series {
            let opt = |v: Option<String>| v.unwrap_or_default();
            let stats = match &s.summary {
                Some(m) => format!(
                    "{},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3},{:.3}",
                    m.count, m.min_us, m.mean_us, m.stddev_us, m.p50_us, m.p90_us, m.p99_us, m.p999_us, m.max_us
                ),
                None => "0,,,,,,,,".to_string(),
            };
            writeln!(
                out,
                "{test},{proto},{},{},{stats},{:.3},{},{},{:.6},{}",
                opt(s.size_bytes.map(|v| v.to_string())),
                opt(s.session.map(|v| v.to_string())),
                s.transactions_per_s,
                s.lost,
                s.late,
                s.elapsed_s,
                s.complete
            )?;
        }
        Ok(())
    }
}

fn render_throughput(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{THROUGHPUT_COLUMNS}")?;
    let proto = run.parameters.proto().name();
    let opt = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    for s in &run.throughput {
        let tcp = match &s.tcp {
            Some(t) => format!("{},{},{},{}", t.retransmits, t.cwnd_bytes, t.srtt_us, t.congestion),
            None => ",,,".to_string(),
        };
        let udp = match &s.udp {
            Some(u) => format!(
                "{},{},{},{},{},{},{},{:.3},{}",
                opt(u.offered_bps),
                u.sent,
                u.received,
                u.lost,
                opt(u.loss_percent),
                u.out_of_order,
                u.duplicates,
                u.jitter_us,
                u.stalls
            ),
            None => ",,,,,,,,".to_string(),
        };
        writeln!(
            out,
            "throughput,{proto},{},{},{},{},{},{},{},{},{:.6},{},{},{tcp},{udp},{}",
            s.phase.name(),
            s.size_bytes,
            s.flow.name(),
            s.stream.map(|v| v.to_string()).unwrap_or_default(),
            opt(s.receiver_bps),
            opt(s.sender_bps),
            s.receiver_bytes,
            s.sender_bytes,
            s.window_s,
            opt(s.messages_per_s),
            opt(s.us_per_message),
            s.complete
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_matches_snapshot() {
        let mut out = Vec::new();
        CsvReporter.render(&crate::fixture::latency_run(), &mut out).expect("renders");
        insta::assert_snapshot!(String::from_utf8_lossy(&out));
    }

    #[test]
    fn throughput_csv_matches_snapshot() {
        let mut out = Vec::new();
        CsvReporter.render(&crate::fixture::throughput_run(), &mut out).expect("renders");
        let text = String::from_utf8_lossy(&out);
        let columns = THROUGHPUT_COLUMNS.split(',').count();
        assert!(text.lines().all(|l| l.split(',').count() == columns), "{text}");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn every_row_has_every_column() {
        let mut out = Vec::new();
        CsvReporter.render(&crate::fixture::latency_run(), &mut out).expect("renders");
        let columns = COLUMNS.split(',').count();
        for line in String::from_utf8_lossy(&out).lines() {
            assert_eq!(line.split(',').count(), columns, "{line}");
        }
    }
}
