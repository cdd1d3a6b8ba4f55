//! Renderers of a [`RunResult`]: one per output format, each in its own file, behind one small trait.
//!
//! Renderers only lay out figures the result already holds; they compute nothing (beyond unit scaling) and
//! never mix formats.
//!
//! A renderer that treats kinds of test differently matches on [`linkperf_core::TestKind`] (or the
//! parameters) exhaustively, never on a test's name with a fallback, so that a new kind of test cannot be
//! forgotten by one of them: the CSV rows of each kind, the HTML datasheet's figure (or its note saying
//! why there is none), the charts of each kind, the table. JSON writes the result model as it is.

mod characterise_table;
pub mod chart;
pub mod comparison;
pub mod csv;
pub mod datasheet;
pub mod html;
pub mod json;
pub mod table;
mod throughput_table;

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
    /// The format chosen by `--json` and `--csv` flags (a table without either).
    pub fn from_flags(json: bool, csv: bool) -> Self {
        match (json, csv) {
            (true, _) => Format::Json,
            (_, true) => Format::Csv,
            _ => Format::Table,
        }
    }

    /// The renderer for this format.
    pub fn reporter(self) -> Box<dyn Reporter> {
        match self {
            Format::Table => Box::new(TableReporter),
            Format::Json => Box::new(JsonReporter),
            Format::Csv => Box::new(CsvReporter),
        }
    }
}

/// How a kept run is named in headings and legends: `run 12`, or `run 12 (before,board-a)`.
pub fn run_name(id: i64, labels: &[String]) -> String {
    match labels.is_empty() {
        true => format!("run {id}"),
        false => format!("run {id} ({})", labels.join(",")),
    }
}
