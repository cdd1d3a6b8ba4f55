//! The rendering of a comparison of runs (`linkperf compare`): a table for people, Markdown for a report
//! or a pull request, or JSON; one row per figure, a column per run, and each run's difference to the
//! baseline with its verdict. The figures and verdicts come from `linkperf_core::compare`.

use std::io::{self, Write};

use linkperf_core::compare::{Delta, Row, Verdict};
use linkperf_core::units::RateUnit;
use serde::Serialize;

/// A compared run, as its column is headed.
#[derive(Debug, Clone, Serialize)]
pub struct ComparedRun {
    /// Its number in the database.
    pub id: i64,
    /// Its labels.
    pub labels: Vec<String>,
    /// When it started.
    pub started_at: String,
    /// Its test.
    pub test: String,
    /// When the column pools a set of runs (a whole suite carrying a label): their numbers, oldest first.
    /// `id` is then the newest of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub set: Vec<i64>,
}

impl ComparedRun {
    /// Its name in a header: `run 12 (before)`, or `before (9 runs)` for a set.
    fn heading(&self) -> String {
        match (self.set.len(), self.labels.first()) {
            (0 | 1, _) | (_, None) => crate::run_name(self.id, &self.labels),
            (n, Some(label)) => format!("{label} ({n} runs)"),
        }
    }

    /// Its short name in a difference's header: `run 12`, or `before`.
    fn short(&self) -> String {
        match (self.set.len(), self.labels.first()) {
            (0 | 1, _) | (_, None) => format!("run {}", self.id),
            (_, Some(label)) => label.clone(),
        }
    }

    /// What it is, for the lines above the table.
    fn describe(&self) -> String {
        match self.set.as_slice() {
            [] | [_] => format!("run {} ({}, {})", self.id, self.test, self.started_at),
            set => {
                let numbers: Vec<String> = set.iter().map(i64::to_string).collect();
                let label = self.labels.first().map_or("", String::as_str);
                format!(
                    "label {label}: {} runs of {} (runs {}; the newest started {})",
                    set.len(),
                    self.test,
                    numbers.join(" "),
                    self.started_at
                )
            }
        }
    }
}

/// How a comparison is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComparisonFormat {
    /// An aligned table.
    Table,
    /// A Markdown table.
    Markdown,
    /// A JSON document.
    Json,
    /// An HTML section (a heading, the table and the method), for `linkperf report`.
    Html,
}

/// How the verdicts are made, printed under the table.
const METHOD: &str = "real: the 95 % interval of the difference excludes zero (medians: order-statistic intervals \
from the histograms; goodput: Welch's interval of the interval means; a test repeated on both sides: Welch's \
interval with Student's t over the repetitions' values, for every figure); noise: it includes zero; no \
verdict for single figures of single runs (tails, loss, search results)";

/// Writes the comparison of `runs` (the baseline at index `baseline`).
pub fn write_comparison(
    runs: &[ComparedRun],
    baseline: usize,
    rows: &[Row],
    format: ComparisonFormat,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        ComparisonFormat::Json => {
            #[derive(Serialize)]
            struct Document<'a> {
                baseline: i64,
                runs: &'a [ComparedRun],
                rows: &'a [Row],
                method: &'static str,
            }
            let document = Document { baseline: runs[baseline].id, runs, rows, method: METHOD };
            serde_json::to_writer_pretty(&mut *out, &document).map_err(io::Error::other)?;
            writeln!(out)
        }
        ComparisonFormat::Table | ComparisonFormat::Markdown | ComparisonFormat::Html => {
            write_text(runs, baseline, rows, format, out)
        }
    }
}

fn write_text(
    runs: &[ComparedRun],
    baseline: usize,
    rows: &[Row],
    format: ComparisonFormat,
    out: &mut dyn Write,
) -> io::Result<()> {
    let mut header = vec!["subject".to_string(), "figure".into(), "unit".into()];
    header.extend(runs.iter().map(ComparedRun::heading));
    for (_, r) in runs.iter().enumerate().filter(|(i, _)| *i != baseline) {
        header.push(format!("{} vs {}", r.short(), runs[baseline].short()));
    }
    let mut table = vec![header];
    for row in rows {
        let (unit, factor) = display_unit(row);
        let mut cells = vec![row.subject.clone(), row.name.clone(), unit];
        cells.extend(row.values.iter().map(|v| v.map_or("-".into(), |v| number(v * factor))));
        for (_, delta) in row.deltas.iter().enumerate().filter(|(i, _)| *i != baseline) {
            cells.push(delta.map_or("-".into(), |d| describe(scale(d, factor))));
        }
        table.push(cells);
    }
    let describe_run = ComparedRun::describe;
    let others: Vec<String> =
        runs.iter().enumerate().filter(|(i, _)| *i != baseline).map(|(_, r)| describe_run(r)).collect();
    match format {
        ComparisonFormat::Html => {
            let e = crate::html::escape;
            writeln!(out, "<h2>Before and after</h2>")?;
            writeln!(
                out,
                "<p>Baseline: {}; compared: {}.</p>",
                e(&describe_run(&runs[baseline])),
                e(&others.join(", "))
            )?;
            writeln!(out, "<table id=\"comparison\">")?;
            for (i, cells) in table.iter().enumerate() {
                let tag = if i == 0 { "th" } else { "td" };
                let cells: Vec<String> = cells
                    .iter()
                    .enumerate()
                    .map(|(c, cell)| {
                        let class = if i > 0 && c >= 3 { " class=\"n\"" } else { "" };
                        format!("<{tag}{class}>{}</{tag}>", e(cell))
                    })
                    .collect();
                writeln!(out, "<tr>{}</tr>", cells.concat())?;
            }
            writeln!(out, "</table>\n<p>{}.</p>", e(METHOD))
        }
        ComparisonFormat::Markdown => {
            writeln!(out, "Baseline: {}; compared: {}.\n", describe_run(&runs[baseline]), others.join(", "))?;
            for (i, cells) in table.iter().enumerate() {
                writeln!(out, "| {} |", cells.join(" | "))?;
                if i == 0 {
                    writeln!(out, "|{}", " --- |".repeat(cells.len()))?;
                }
            }
            writeln!(out, "\n{METHOD}.")
        }
        _ => {
            writeln!(out, "baseline: {}\ncompared: {}\n", describe_run(&runs[baseline]), others.join(", "))?;
            let widths: Vec<usize> = (0..table[0].len())
                .map(|c| table.iter().map(|row| row[c].chars().count()).max().unwrap_or(0))
                .collect();
            for cells in &table {
                let line: Vec<String> = cells
                    .iter()
                    .zip(&widths)
                    .enumerate()
                    .map(|(c, (cell, &w))| if c < 3 { format!("{cell:<w$}") } else { format!("{cell:>w$}") })
                    .collect();
                writeln!(out, "{}", line.join("  ").trim_end())?;
            }
            writeln!(out, "\n{METHOD}")
        }
    }
}

/// The unit a row is shown in, and the factor from its metric's unit: a rate in the bit-rate unit its
/// largest value asks for (`240 kbit/s`, not `0.2400 Mbit/s`); anything else as it is.
fn display_unit(row: &Row) -> (String, f64) {
    if row.unit != "Mbit/s" {
        return (row.unit.to_string(), 1.0);
    }
    let largest = row.values.iter().flatten().fold(0.0f64, |m, v| m.max(v.abs())) * 1e6;
    let unit = RateUnit::for_bit_rate(largest);
    (unit.name().to_string(), 1e6 / unit.bps())
}

/// A difference in a row's display unit.
fn scale(delta: Delta, factor: f64) -> Delta {
    Delta {
        difference: delta.difference * factor,
        interval: delta.interval.map(|(low, high)| (low * factor, high * factor)),
        ..delta
    }
}

/// A figure with as many decimals as its size needs.
fn number(value: f64) -> String {
    match value.abs() {
        v if v >= 1000.0 => format!("{value:.1}"),
        v if v >= 1.0 => format!("{value:.3}"),
        _ => format!("{value:.4}"),
    }
}

/// A difference for a cell: `+13.1 % real, worse [+4.8, +7.0]`, `-0.2 % noise`, `+3.0 %`.
fn describe(delta: Delta) -> String {
    let change = match delta.percent {
        Some(p) => format!("{p:+.1} %"),
        None => format!("{:+}", number(delta.difference)),
    };
    match (delta.verdict, delta.better, delta.interval) {
        (Verdict::Real, Some(better), Some((low, high))) => {
            format!("{change} real, {} [{}, {}]", if better { "better" } else { "worse" }, signed(low), signed(high))
        }
        (Verdict::Noise, _, _) => format!("{change} noise"),
        _ => change,
    }
}

fn signed(value: f64) -> String {
    let text = number(value);
    if value >= 0.0 {
        format!("+{text}")
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_core::compare::compare;
    use linkperf_core::fixture;

    fn render(format: ComparisonFormat) -> String {
        let (a, mut b) = (fixture::latency_run(), fixture::latency_run());
        // Run b: every round trip 20 % longer, so the medians differ beyond their noise.
        for series in &mut b.series {
            let h = linkperf_core::RttHistogram::decode(&series.histogram).unwrap();
            let mut slower = linkperf_core::RttHistogram::new();
            for q in 1..=200u32 {
                slower.record((h.quantile_ns(f64::from(q) / 200.0).unwrap() as f64 * 1.2) as u64);
            }
            let counters = linkperf_core::run_result::SeriesCounters {
                lost: 0,
                late: 0,
                elapsed_s: series.elapsed_s,
                complete: true,
            };
            *series = linkperf_core::Series::new(series.size_bytes, series.session, &slower, counters);
        }
        let rows = compare(&[&a, &b], 0);
        let runs = [
            ComparedRun {
                id: 3,
                labels: vec!["before".into()],
                started_at: "2026-11-22T00:00:00Z".into(),
                test: "latency".into(),
                set: Vec::new(),
            },
            ComparedRun {
                id: 5,
                labels: vec!["after".into()],
                started_at: "2026-11-22T01:00:00Z".into(),
                test: "latency".into(),
                set: Vec::new(),
            },
        ];
        let mut out = Vec::new();
        write_comparison(&runs, 0, &rows, format, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_comparison_table_matches_snapshot() {
        insta::assert_snapshot!(render(ComparisonFormat::Table));
    }

    #[test]
    fn the_comparison_in_markdown_matches_snapshot() {
        insta::assert_snapshot!(render(ComparisonFormat::Markdown));
    }

    #[test]
    fn the_comparison_in_json_has_every_row_and_verdict() {
        let document: serde_json::Value = serde_json::from_str(&render(ComparisonFormat::Json)).unwrap();
        assert_eq!(document["baseline"], 3);
        let p50 = &document["rows"][0];
        assert_eq!((p50["subject"].as_str(), p50["name"].as_str()), (Some("latency tcp 64 B"), Some("p50")));
        assert_eq!(p50["deltas"][1]["verdict"], "real");
        assert_eq!(p50["deltas"][1]["better"], false);
    }

    #[test]
    fn slow_rates_are_shown_in_kbit_per_second() {
        let slow = |bps: f64| {
            let mut run = fixture::throughput_run();
            for s in &mut run.throughput {
                s.receiver_bps = Some(bps);
                s.intervals.iter_mut().for_each(|i| i.goodput_bps = bps);
            }
            run
        };
        let (a, b) = (slow(240_000.0), slow(250_000.0));
        let rows = compare(&[&a, &b], 0);
        let runs: Vec<ComparedRun> = (1..=2)
            .map(|id| ComparedRun {
                id,
                labels: vec![],
                started_at: "t".into(),
                test: "throughput".into(),
                set: Vec::new(),
            })
            .collect();
        let mut out = Vec::new();
        write_comparison(&runs, 0, &rows, ComparisonFormat::Table, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let goodput = text.lines().find(|l| l.contains("kbit/s")).unwrap_or_else(|| panic!("{text}"));
        assert!(goodput.contains("240.0") && goodput.contains("250.0"), "{goodput}");
        assert!(!text.contains("Mbit/s"), "{text}");
    }
}
