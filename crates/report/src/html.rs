//! The HTML report (`linkperf report`): one self-contained page for sharing: the runs, a datasheet of
//! their main figures, the charts (inline SVG), and each run's full table. It has no script, no external
//! style sheet, image or font, so it opens offline and shows the same everywhere.

use std::io::{self, Write};

use linkperf_core::datasheet::{datasheet_rows, DatasheetRow, Figure};
use linkperf_core::{RunResult, RunStatus, TestKind};

use crate::chart::Chart;
use crate::Reporter;

/// A run in a report.
pub struct ReportRun<'a> {
    /// Its number in the database.
    pub id: i64,
    /// Its labels.
    pub labels: &'a [String],
    /// Its result.
    pub result: &'a RunResult,
}

impl ReportRun<'_> {
    /// How its lines are named in charts: its labels, or `run N`.
    pub fn name(&self) -> String {
        crate::run_name(self.id, self.labels)
    }
}

const STYLE: &str = "body{font-family:sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}\
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ccc}\
table{border-collapse:collapse;margin:1em 0;font-size:.9em}th,td{border:1px solid #ccc;padding:.3em .6em;text-align:left}\
td.n{text-align:right;font-variant-numeric:tabular-nums}th{background:#f2f2f2}\
figure{margin:1.5em 0}figure svg{max-width:100%;height:auto}figcaption{font-size:.85em;color:#555}\
pre{background:#f7f7f7;padding:1em;overflow-x:auto;font-size:.8em}.partial{color:#a00}";

/// Writes the page for `runs` with `charts`, headed `title`; `generated` says when and by what;
/// `comparison` is a section rendered by `comparison::write_comparison` in HTML, put after the datasheet.
pub fn write_html(
    title: &str,
    generated: &str,
    runs: &[ReportRun<'_>],
    charts: &[Chart],
    comparison: Option<&str>,
    out: &mut dyn Write,
) -> io::Result<()> {
    writeln!(out, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">")?;
    writeln!(out, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")?;
    writeln!(out, "<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>", escape(title))?;
    writeln!(out, "<h1>{}</h1>\n<p>{}</p>", escape(title), escape(generated))?;
    write_runs(runs, out)?;
    write_datasheet(runs, out)?;
    if let Some(section) = comparison {
        out.write_all(section.as_bytes())?;
    }
    if !charts.is_empty() {
        writeln!(out, "<h2>Charts</h2>")?;
    }
    for chart in charts {
        writeln!(out, "<figure class=\"chart\" id=\"chart-{}\">", chart.id)?;
        // The SVG comes from our own drawing code; its text is escaped by the SVG backend.
        writeln!(out, "{}", chart.svg)?;
        writeln!(out, "<figcaption>{}</figcaption>\n</figure>", escape(&chart.title))?;
    }
    writeln!(out, "<h2>Every figure</h2>")?;
    for run in runs {
        let mut table = Vec::new();
        crate::TableReporter.render(run.result, &mut table)?;
        writeln!(
            out,
            "<details><summary>{}: {}</summary>",
            escape(&run.name()),
            escape(&run.result.command.join(" "))
        )?;
        writeln!(out, "<pre>{}</pre></details>", escape(&String::from_utf8_lossy(&table)))?;
    }
    writeln!(out, "<p>Figures are defined in docs/metrics.md of linkperf.</p>\n</body>\n</html>")
}

fn write_runs(runs: &[ReportRun<'_>], out: &mut dyn Write) -> io::Result<()> {
    writeln!(out, "<h2>Runs</h2>\n<table id=\"runs\">")?;
    writeln!(out, "<tr><th>run</th><th>test</th><th>started (UTC)</th><th>target</th><th>client</th><th>responder</th><th>labels</th><th>state</th></tr>")?;
    for run in runs {
        let r = run.result;
        let host = |h: &linkperf_core::HostFacts| {
            let interface = h.interface.as_ref().map(|i| format!(", {} ({})", i.name, i.driver)).unwrap_or_default();
            format!("{} ({}, {} x{}{interface})", h.hostname, h.kernel, h.cpu_model, h.cpus)
        };
        let state = match &r.status {
            RunStatus::Complete => "complete".to_string(),
            RunStatus::Partial { error } => format!("<span class=\"partial\">partial: {}</span>", escape(error)),
            RunStatus::Failed { error } => format!("<span class=\"partial\">failed: {}</span>", escape(error)),
        };
        writeln!(
            out,
            "<tr><td class=\"n\">{}</td><td>{} {}</td><td>{}</td><td>{} ({})</td><td>{}</td><td>{}</td><td>{}</td><td>{state}</td></tr>",
            run.id,
            r.parameters.test_name(),
            r.parameters.proto().name(),
            escape(&r.started_at),
            escape(&r.target.host),
            escape(&r.target.address),
            escape(&host(&r.endpoints.client)),
            escape(&host(&r.endpoints.responder)),
            escape(&run.labels.join(", "))
        )?;
    }
    writeln!(out, "</table>")
}

/// The figures of a run of `kind` that its datasheet rows show. A kind whose result is not one figure has
/// none and gets a note instead ([`without_figure`]).
fn datasheet_figures(kind: TestKind) -> &'static [Figure] {
    match kind {
        TestKind::Latency | TestKind::Connect | TestKind::Idle => &[Figure::Rtt, Figure::RttLoaded],
        TestKind::Throughput => &[Figure::Goodput],
        TestKind::Ratesearch => &[Figure::ZeroLoss],
        TestKind::Burst => &[Figure::Burst],
        TestKind::Sweep => &[],
    }
}

/// Why a run of `kind` has no datasheet row, and where its figures are.
fn without_figure(kind: TestKind) -> &'static str {
    match kind {
        TestKind::Sweep => {
            "a sweep's result is a curve, not one figure: see the charts of received rate and loss by offered \
             rate, and its table below"
        }
        TestKind::Latency
        | TestKind::Connect
        | TestKind::Idle
        | TestKind::Throughput
        | TestKind::Ratesearch
        | TestKind::Burst => "nothing was measured for its figure: see its table below",
    }
}

/// The main figure of each run, as a datasheet row: round trips, goodput, zero-loss rate, bursts; a note
/// for each run that has none.
fn write_datasheet(runs: &[ReportRun<'_>], out: &mut dyn Write) -> io::Result<()> {
    let mut rows: Vec<DatasheetRow> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for run in runs {
        let r = run.result;
        let test = format!("{}, {} {}", run.name(), r.parameters.test_name(), r.parameters.proto().name());
        let note = r.command.iter().skip(1).cloned().collect::<Vec<_>>().join(" ");
        let before = rows.len();
        for &figure in datasheet_figures(r.parameters.kind()) {
            let label = if figure == Figure::RttLoaded { format!("{test}, under load") } else { test.clone() };
            rows.extend(datasheet_rows(&label, figure, "Mbit/s", &format!("linkperf {note}"), std::slice::from_ref(r)));
        }
        if rows.len() == before {
            notes.push(format!("{test}: {}.", without_figure(r.parameters.kind())));
        }
    }
    if rows.is_empty() && notes.is_empty() {
        return Ok(());
    }
    writeln!(out, "<h2>Datasheet</h2>\n<table id=\"datasheet\">")?;
    writeln!(out, "<tr><th>Test</th><th>Min</th><th>Typ</th><th>Max</th><th>Unit</th><th>Notes</th></tr>")?;
    let value =
        |v: Option<f64>| v.map_or("-".into(), |v| if v.abs() >= 100.0 { format!("{v:.1}") } else { format!("{v:.2}") });
    for row in rows {
        writeln!(
            out,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td></tr>",
            escape(&row.test),
            value(row.min),
            value(row.typ),
            value(row.max),
            escape(&row.unit),
            escape(&row.note)
        )?;
    }
    writeln!(out, "</table>")?;
    for note in notes {
        writeln!(out, "<p class=\"no-figure\">{}</p>", escape(&note))?;
    }
    Ok(())
}

/// Text made safe for HTML.
pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_core::fixture;

    fn page(results: &[RunResult]) -> String {
        let labels = vec!["before".to_string()];
        let runs: Vec<ReportRun> = results
            .iter()
            .enumerate()
            .map(|(i, r)| ReportRun { id: i as i64 + 1, labels: &labels, result: r })
            .collect();
        let names: Vec<String> = runs.iter().map(ReportRun::name).collect();
        let refs: Vec<&RunResult> = results.iter().collect();
        let charts = crate::chart::charts(&refs, &names);
        let mut out = Vec::new();
        write_html("linkperf report", "generated by a test", &runs, &charts, None, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn the_page_is_self_contained_and_holds_every_part() {
        let html = page(&[fixture::latency_run(), fixture::throughput_run(), fixture::sweep_run()]);
        assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
        for part in [
            "id=\"runs\"",
            "id=\"datasheet\"",
            "chart-rtt-by-size",
            "chart-rtt-cdf",
            "chart-goodput-timeline",
            "chart-received-by-offered-rate",
            "chart-loss-by-offered-rate",
            "<details>",
        ] {
            assert!(html.contains(part), "{part}");
        }
        for external in ["<script", "src=", "href=", "@import", "url("] {
            assert!(!html.contains(external), "nothing external: {external}");
        }
    }

    #[test]
    fn every_run_has_a_datasheet_row_or_says_why_not() {
        let runs = fixture::every_kind_of_run();
        let html = page(&runs);
        let datasheet = &html[html.find("id=\"datasheet\"").unwrap()..html.find("<h2>Charts").unwrap()];
        for (i, run) in runs.iter().enumerate() {
            let name = format!("run {} (before), {}", i + 1, run.parameters.test_name());
            let rows = datasheet.matches(&format!("<tr><td>{name}")).count();
            let notes = datasheet.matches(&format!("<p class=\"no-figure\">{name}")).count();
            let expected_rows = if run.parameters.kind() == TestKind::Sweep { 0 } else { 1 };
            assert!(rows >= expected_rows && (rows > 0) != (notes > 0), "{name}: {rows} rows, {notes} notes");
        }
        assert!(datasheet.contains("a sweep's result is a curve"), "{datasheet}");
    }

    #[test]
    fn text_from_results_is_escaped() {
        let mut run = fixture::latency_run();
        run.target.host = "<b>&\"host\"".into();
        let html = page(&[run]);
        assert!(html.contains("&lt;b&gt;&amp;&quot;host&quot;") && !html.contains("<b>&"));
    }
}
