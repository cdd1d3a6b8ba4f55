//! Arguments choosing the output format and progress display, shared by every test.

use clap::Args;
use linkperf_core::gate::Condition;
use linkperf_core::placement::CpuList;
use linkperf_report::Format;

/// How results are shown.
#[derive(Debug, Clone, Args)]
pub struct OutputArgs {
    /// Print the result as JSON (the versioned schema of docs/json-schema.md).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print newline-delimited JSON as the run goes: one object per phase, interval and finished series as
    /// it is measured, then the result document (docs/json-schema.md, "Streaming"), for dashboards and
    /// pipelines that follow a long test.
    #[arg(long, conflicts_with_all = ["json", "csv"])]
    pub json_stream: bool,
    /// Print the result as CSV, one row per series.
    #[arg(long)]
    pub csv: bool,
    /// Never show a progress bar (it shows only on a terminal, and only for runs over a second).
    #[arg(long)]
    pub no_progress: bool,
    /// Fail the run (exit 3) when a figure meets this condition, e.g. 'p99 > 2ms', 'goodput < 900M',
    /// 'loss > 0' (repeat for several). FIGURE OP VALUE, OP one of > >= < <=; figures: min, mean, p50 (typ),
    /// p90, p99, p99.9, max (times: 2ms, 150us), goodput, zero-loss, sustainable (bit rates: 900M, 250k),
    /// loss (percent), jitter (a time), burst (datagrams). It applies to every size or flow of the run; a
    /// figure the run lacks fails too.
    #[arg(long = "fail-if", value_name = "CONDITION", value_parser = gate)]
    pub fail_if: Vec<Condition>,
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub placement: PlacementArgs,
}

/// Which CPUs each end runs on.
#[derive(Debug, Clone, Args)]
pub struct PlacementArgs {
    /// Pin the client's measuring threads to these CPUs, e.g. 0 or 2-3 (as taskset -c takes them); kept
    /// with the run. On a small host the scheduler moves a round trip by more than most changes do.
    #[arg(long, value_name = "CPUS")]
    pub affinity: Option<CpuList>,
    /// Pin the built-in responder (no HOST) to these CPUs, e.g. --affinity 0 --responder-affinity 1. A
    /// responder on another host is pinned with `linkperf serve --affinity CPUS`.
    #[arg(long, value_name = "CPUS")]
    pub responder_affinity: Option<CpuList>,
}

/// Where and whether a run is kept.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// The results database [default: $LINKPERF_DB, else ~/.local/share/linkperf/results.db].
    #[arg(long, value_name = "PATH")]
    pub db: Option<std::path::PathBuf>,
    /// Do not keep this run in the results database.
    #[arg(long, conflicts_with = "db")]
    pub no_store: bool,
    /// Tag the kept run (repeat for several), e.g. --label before --label board-a; `linkperf runs --label`
    /// finds it.
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
}

impl StoreArgs {
    /// The database to use, unless the run is not to be kept.
    pub fn path(&self) -> Option<std::path::PathBuf> {
        (!self.no_store).then(|| self.db.clone().unwrap_or_else(linkperf_store::default_path))
    }
}

impl OutputArgs {
    /// The chosen format.
    pub fn format(&self) -> Format {
        Format::from_flags(self.json, self.csv)
    }
}

/// Reads a `--fail-if` condition.
pub(crate) fn gate(text: &str) -> Result<Condition, String> {
    text.parse().map_err(|e: linkperf_core::gate::GateError| e.to_string())
}
