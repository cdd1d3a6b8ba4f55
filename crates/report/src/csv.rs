//! The CSV rendering: a header and one row per series, in the units named by each column.

use std::io::{self, Write};

use linkperf_core::RunResult;

use crate::Reporter;

/// Column names; units are part of each name.
pub const COLUMNS: &str = "test,proto,size_bytes,session,count,min_us,mean_us,stddev_us,p50_us,p90_us,p99_us,p999_us,max_us,transactions_per_s,lost,late,elapsed_s,complete";

/// CSV with a header row. An empty cell means "not applicable" (no size, the aggregate session, or nothing
/// measured).
pub struct CsvReporter;

impl Reporter for CsvReporter {
    fn render(&self, run: &RunResult, out: &mut dyn Write) -> io::Result<()> {
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
    fn every_row_has_every_column() {
        let mut out = Vec::new();
        CsvReporter.render(&crate::fixture::latency_run(), &mut out).expect("renders");
        let columns = COLUMNS.split(',').count();
        for line in String::from_utf8_lossy(&out).lines() {
            assert_eq!(line.split(',').count(), columns, "{line}");
        }
    }
}
