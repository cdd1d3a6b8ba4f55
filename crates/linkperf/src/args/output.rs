//! Arguments choosing the output format and progress display, shared by every test.

use clap::Args;
use linkperf_report::Format;

/// How results are shown.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Print the result as JSON (the versioned schema of docs/json-schema.md).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print the result as CSV, one row per series.
    #[arg(long)]
    pub csv: bool,
    /// Never show a progress bar (it shows only on a terminal, and only for runs over a second).
    #[arg(long)]
    pub no_progress: bool,
}

impl OutputArgs {
    /// The chosen format.
    pub fn format(&self) -> Format {
        match (self.json, self.csv) {
            (true, _) => Format::Json,
            (_, true) => Format::Csv,
            _ => Format::Table,
        }
    }
}
