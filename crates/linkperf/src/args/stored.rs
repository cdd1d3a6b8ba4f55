//! `linkperf runs`, `show`, `export` and `import`: the arguments of the commands that read and write the
//! results database.

use std::path::PathBuf;

use clap::Args;

/// Which database.
#[derive(Debug, Clone, Args)]
pub struct DbArgs {
    /// The results database [default: $LINKPERF_DB, else ~/.local/share/linkperf/results.db].
    #[arg(long, value_name = "PATH")]
    pub db: Option<PathBuf>,
}

impl DbArgs {
    /// The database file.
    pub fn path(&self) -> PathBuf {
        self.db.clone().unwrap_or_else(linkperf_store::default_path)
    }
}

/// Examples of `linkperf runs`.
const RUNS_EXAMPLES: &str = "Examples:
  linkperf runs                           the newest runs
  linkperf runs --label before --test throughput
  linkperf runs --host 198.18.0.2 --since 7d
  linkperf runs --since 2026-11-01 --json";

/// Arguments of `linkperf runs`.
#[derive(Debug, Clone, Args)]
#[command(after_help = RUNS_EXAMPLES)]
pub struct RunsArgs {
    /// Only runs carrying this label.
    #[arg(long)]
    pub label: Option<String>,
    /// Only runs whose target, client or responder host name contains this.
    #[arg(long)]
    pub host: Option<String>,
    /// Only runs of this test (latency, connect, throughput, idle, sweep, ratesearch, burst).
    #[arg(long)]
    pub test: Option<String>,
    /// Only runs since this date or time (2026-11-01, 2026-11-01T08:00:00Z) or for this long (7d, 12h).
    #[arg(long, value_parser = since)]
    pub since: Option<String>,
    /// At most this many runs, the newest first.
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
    /// Print the list as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Arguments of `linkperf show`.
#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    /// The run's number, as `linkperf runs` lists it.
    pub id: i64,
    /// Print the run as JSON (as `--json` printed it when it ran).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print the run as CSV.
    #[arg(long)]
    pub csv: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Arguments of `linkperf export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The runs' numbers.
    #[arg(required = true)]
    pub ids: Vec<i64>,
    /// One JSON document holding the runs with their labels (the default; `linkperf import` reads it).
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// CSV: each run's rows with its number in a first `run` column, runs separated by a blank line.
    #[arg(long)]
    pub csv: bool,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Arguments of `linkperf import`.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// Files written by `linkperf export`, or by a test's `--json`.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// Add this label to every imported run (repeat for several).
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Examples of `linkperf compare`.
const COMPARE_EXAMPLES: &str = "Examples:
  linkperf compare 12 15                          run 15 against run 12
  linkperf compare --label before --label after   the newest run of each label
  linkperf compare 12 15 17 --baseline 15 --markdown > changes.md";

/// Arguments of `linkperf compare`.
#[derive(Debug, Clone, Args)]
#[command(after_help = COMPARE_EXAMPLES)]
pub struct CompareArgs {
    /// The runs' numbers, as `linkperf runs` lists them.
    pub ids: Vec<i64>,
    /// Add the newest run carrying this label (repeat for several), after the numbered runs.
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// The run the others are compared with [default: the first].
    #[arg(long)]
    pub baseline: Option<i64>,
    /// Print a Markdown table.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// Exit 3, naming the figures, when a run is worse than the baseline beyond the noise of the measurement
    /// (the verdict `real`): for pipelines that must fail on a regression. Figures that have no noise
    /// estimate (p99, max, loss, searched rates) count only with --by.
    #[arg(long)]
    pub fail_if_worse: bool,
    /// With --fail-if-worse: only a change worse by more than PERCENT of the baseline fails, and then also one
    /// of a figure that has no noise estimate (e.g. --by 5).
    #[arg(long, value_name = "PERCENT", requires = "fail_if_worse", value_parser = percent)]
    pub by: Option<f64>,
    #[command(flatten)]
    pub db: DbArgs,
}

/// Reads a margin in percent: `5`, `2.5%`.
fn percent(text: &str) -> Result<f64, String> {
    text.trim()
        .trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|p| p.is_finite() && *p >= 0.0)
        .ok_or_else(|| format!("'{text}' is not a percentage (a number from 0, e.g. 5 or 2.5%)"))
}

/// Examples of `linkperf report`.
const REPORT_EXAMPLES: &str = "Examples:
  linkperf report 12 --html report.html           one run
  linkperf report --label before --label after --html compare.html   overlaid
  linkperf report --label suite:datasheet --html datasheet.html      every run of a suite
  linkperf report 12 13 --svg charts/             each chart as an SVG file
  linkperf report 12 --png charts/                 and as PNG";

/// Arguments of `linkperf report`.
#[derive(Debug, Clone, Args)]
#[command(after_help = REPORT_EXAMPLES)]
pub struct ReportArgs {
    /// The runs' numbers, as `linkperf runs` lists them.
    pub ids: Vec<i64>,
    /// Add every run carrying this label, oldest first (repeat for several), e.g. a whole suite:
    /// --label suite:datasheet.
    #[arg(long = "label", value_name = "LABEL")]
    pub labels: Vec<String>,
    /// Write the report, one self-contained HTML file, here [default: to stdout, unless --svg is given].
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Also write each chart as an SVG file into this directory.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// Also write each chart as a PNG file into this directory (its text in the system's fonts).
    #[arg(long, value_name = "DIR")]
    pub png: Option<PathBuf>,
    /// The report's heading.
    #[arg(long, default_value = "linkperf report")]
    pub title: String,
    #[command(flatten)]
    pub db: DbArgs,
}

/// `--since`: a date, a time, or a length of time back from now, as an RFC 3339 UTC time.
fn since(text: &str) -> Result<String, String> {
    let text = text.trim();
    let time = if let Ok(back) = humantime::parse_duration(text) {
        // Before 1970 no run was kept, and a time then cannot be written as RFC 3339.
        std::time::SystemTime::now()
            .checked_sub(back)
            .filter(|time| *time >= std::time::UNIX_EPOCH)
            .ok_or_else(|| format!("'{text}' reaches back before 1970: give a shorter length or a date"))?
    } else {
        let full = if text.len() == 10 { format!("{text}T00:00:00Z") } else { text.to_string() };
        humantime::parse_rfc3339_weak(full.trim_end_matches('Z')).map_err(|_| {
            format!("'{text}' is neither a date (2026-11-01), a time (2026-11-01T08:00:00Z) nor a length (7d, 12h)")
        })?
    };
    Ok(humantime::format_rfc3339_seconds(time).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_dates_times_and_lengths() {
        assert_eq!(since("2026-11-01"), Ok("2026-11-01T00:00:00Z".into()));
        assert_eq!(since("2026-11-01T08:30:00Z"), Ok("2026-11-01T08:30:00Z".into()));
        assert!(since("7d").unwrap() < humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string());
        assert!(since("yesterday-ish").unwrap_err().contains("neither a date"));
        assert!(since("99999999d").unwrap_err().contains("before 1970"));
        assert!(since("600000y").unwrap_err().contains("before 1970"));
    }
}
