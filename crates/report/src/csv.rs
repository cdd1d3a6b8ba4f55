//! The CSV rendering: a header and one row per series, in the units named by each column.

use std::io::{self, Write};

use linkperf_core::RunResult;

use crate::Reporter;

/// Column names; units are part of each name.
pub const COLUMNS: &str = "test,proto,size_bytes,session,count,min_us,mean_us,stddev_us,p50_us,p90_us,p99_us,p999_us,max_us,transactions_per_s,lost,late,elapsed_s,complete,load";

/// Column names of throughput rows.
pub const THROUGHPUT_COLUMNS: &str = "test,proto,phase,size_bytes,flow,stream,receiver_bps,sender_bps,receiver_bytes,sender_bytes,window_s,messages_per_s,us_per_message,retransmits,cwnd_bytes,srtt_us,congestion,offered_bps,sent_datagrams,received_datagrams,lost_datagrams,loss_percent,out_of_order,duplicates,jitter_us,stalls,complete";

/// Column names of rate search results (one row per size searched).
pub const RATE_SEARCH_COLUMNS: &str = "test,proto,frame_bytes,payload_bytes,rate_bps,packets_per_s,received_bps,link_percent,trials,min_bps,max_bps,sender_limited,complete,latency_count,latency_min_us,latency_p50_us,latency_p99_us,latency_max_us,latency_lost";

/// Column names of burst results (one row per size).
pub const BURST_COLUMNS: &str =
    "test,proto,frame_bytes,payload_bytes,min_datagrams,typ_datagrams,max_datagrams,max_tried,sender_bps,trials,complete,lengths";

/// CSV with a header row. An empty cell means "not applicable" (no size, the aggregate session, or nothing
/// measured).
pub struct CsvReporter;

impl Reporter for CsvReporter {
    fn render(&self, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
        use linkperf_core::run_result::Parameters;
        match run.parameters {
            Parameters::Ratesearch(_) => return render_rate_search(run, out),
            Parameters::Burst(_) => return render_bursts(run, out),
            Parameters::Throughput(_) | Parameters::Sweep(_) => return render_throughput(run, out),
            _ => {}
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
                "{test},{proto},{},{},{stats},{:.3},{},{},{:.6},{},{}",
                opt(s.size_bytes.map(|v| v.to_string())),
                opt(s.session.map(|v| v.to_string())),
                s.transactions_per_s,
                s.lost,
                s.late,
                s.elapsed_s,
                s.complete,
                s.load.map_or("", |d| d.name())
            )?;
        }
        Ok(())
    }
}

/// The rate found per size; the trials are in the JSON document.
fn render_rate_search(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{RATE_SEARCH_COLUMNS}")?;
    let opt = |v: Option<f64>| v.map(|v| format!("{v:.3}")).unwrap_or_default();
    for r in &run.rate_search {
        let latency = match r.latency.as_ref().and_then(|l| l.summary.as_ref().map(|m| (m, l.lost))) {
            Some((m, lost)) => {
                format!("{},{:.3},{:.3},{:.3},{:.3},{lost}", m.count, m.min_us, m.p50_us, m.p99_us, m.max_us)
            }
            None => ",,,,,".to_string(),
        };
        writeln!(
            out,
            "ratesearch,udp,{},{},{},{},{},{},{},{:.3},{:.3},{},{},{latency}",
            r.frame_bytes.map(|f| f.to_string()).unwrap_or_default(),
            r.payload_bytes,
            opt(r.rate_bps),
            opt(r.packets_per_s),
            opt(r.received_bps),
            opt(r.link.as_ref().map(|l| l.percent)),
            r.trials,
            r.min_bps,
            r.max_bps,
            r.sender_limited,
            r.complete
        )?;
    }
    Ok(())
}

/// The longest whole burst per size; `lengths` lists each search's, separated by spaces.
fn render_bursts(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{BURST_COLUMNS}")?;
    let count = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    for r in &run.bursts {
        let lengths: Vec<String> = r.lengths.iter().map(|l| l.to_string()).collect();
        writeln!(
            out,
            "burst,udp,{},{},{},{},{},{},{},{},{},{}",
            count(r.frame_bytes),
            r.payload_bytes,
            count(r.min),
            count(r.typ),
            count(r.max),
            r.max_datagrams,
            r.sender_bps.map(|v| format!("{v:.3}")).unwrap_or_default(),
            r.trials,
            r.complete,
            lengths.join(" ")
        )?;
    }
    Ok(())
}

fn render_throughput(run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "{THROUGHPUT_COLUMNS}")?;
    let test = run.parameters.test_name();
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
            "{test},{proto},{},{},{},{},{},{},{},{},{:.6},{},{},{tcp},{udp},{}",
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
        CsvReporter.render(&linkperf_core::fixture::latency_run(), &mut out).expect("renders");
        insta::assert_snapshot!(String::from_utf8_lossy(&out));
    }

    #[test]
    fn throughput_csv_matches_snapshot() {
        let mut out = Vec::new();
        CsvReporter.render(&linkperf_core::fixture::throughput_run(), &mut out).expect("renders");
        let text = String::from_utf8_lossy(&out);
        let columns = THROUGHPUT_COLUMNS.split(',').count();
        assert!(text.lines().all(|l| l.split(',').count() == columns), "{text}");
        insta::assert_snapshot!(text);
    }

    #[test]
    fn rate_search_csv_has_a_row_per_size_with_every_column() {
        let mut out = Vec::new();
        CsvReporter.render(&linkperf_core::fixture::ratesearch_run(), &mut out).expect("renders");
        let text = String::from_utf8_lossy(&out);
        let columns = RATE_SEARCH_COLUMNS.split(',').count();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.lines().all(|l| l.split(',').count() == columns), "{text}");
        assert!(text.contains("ratesearch,udp,1518,1472,10000000.000,849.185,"), "{text}");
    }

    #[test]
    fn burst_csv_has_a_row_per_size() {
        let mut out = Vec::new();
        CsvReporter.render(&linkperf_core::fixture::burst_run(), &mut out).expect("renders");
        let text = String::from_utf8_lossy(&out);
        assert_eq!(
            text.lines().nth(1),
            Some("burst,udp,1518,1472,110,112,112,1000,9500000000.000,33,true,112 112 110")
        );
        assert!(text.lines().all(|l| l.split(',').count() == BURST_COLUMNS.split(',').count()), "{text}");
    }

    #[test]
    fn every_row_has_every_column() {
        let mut out = Vec::new();
        CsvReporter.render(&linkperf_core::fixture::latency_run(), &mut out).expect("renders");
        let columns = COLUMNS.split(',').count();
        for line in String::from_utf8_lossy(&out).lines() {
            assert_eq!(line.split(',').count(), columns, "{line}");
        }
    }
}
