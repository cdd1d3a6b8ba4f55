//! Renderers of a [`RunResult`]: one per output format, each in its own file, behind one small trait.
//!
//! Renderers only lay out figures the result already holds; they compute nothing (beyond unit scaling) and
//! never mix formats.

pub mod csv;
pub mod json;
pub mod table;

use std::io::{self, Write};

use linkperf_core::RunResult;

pub use self::csv::CsvReporter;
pub use self::json::JsonReporter;
pub use self::table::TableReporter;

/// Renders a run in one format.
pub trait Reporter {
    /// Writes the whole rendering of `run` to `out`.
    fn render(&self, run: &RunResult, out: &mut dyn Write) -> io::Result<()>;
}

/// The output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A table for people.
    Table,
    /// The versioned JSON document.
    Json,
    /// One CSV row per series.
    Csv,
}

impl Format {
    /// The renderer for this format.
    pub fn reporter(self) -> Box<dyn Reporter> {
        match self {
            Format::Table => Box::new(TableReporter),
            Format::Json => Box::new(JsonReporter),
            Format::Csv => Box::new(CsvReporter),
        }
    }
}

#[cfg(test)]
pub(crate) mod fixture {
    //! A fixed result for snapshot tests.

    use linkperf_core::run_result::{Endpoints, Parameters, SeriesCounters, Target, ToolInfo};
    use linkperf_core::*;

    /// A two-size, two-session TCP latency run with fixed samples.
    pub fn latency_run() -> RunResult {
        let host = HostFacts {
            hostname: "bench-a".into(),
            kernel: "Linux 6.1.0".into(),
            cpu_model: "Test CPU".into(),
            cpus: 2,
        };
        let mut series = Vec::new();
        for size in [64u64, 1024] {
            let mut all = RttHistogram::new();
            let mut per_session = Vec::new();
            for session in 0..2u64 {
                let mut h = RttHistogram::new();
                (1..=100u64).for_each(|i| h.record(10_000 + i * 100 + session * 1_000 + size));
                all.merge(&h);
                per_session.push(h);
            }
            let counters = SeriesCounters { lost: 0, late: 0, elapsed_s: 0.01, complete: true };
            series.push(Series::new(Some(size), None, &all, counters));
            for (i, h) in per_session.iter().enumerate() {
                series.push(Series::new(Some(size), Some(i as u32 + 1), h, counters));
            }
        }
        RunResult {
            schema_version: SCHEMA_VERSION,
            tool: ToolInfo { name: "linkperf".into(), version: "0.0.0-test".into() },
            command: vec!["linkperf".into(), "latency".into(), "--sessions".into(), "2".into()],
            started_at: "2026-11-22T00:00:00Z".into(),
            parameters: Parameters::Latency(LatencySpec {
                proto: Proto::Tcp,
                sizes_bytes: vec![64, 1024],
                stop: StopCondition::Count(100),
                warmup: 10,
                wait: WaitMode::Block,
                sessions: 2,
                rate_per_s: None,
                timeout_s: 2.0,
            }),
            target: Target { host: "embedded".into(), address: "127.0.0.1:5250".into() },
            endpoints: Endpoints { client: host.clone(), responder: host },
            series,
            status: RunStatus::Complete,
        }
    }
}
