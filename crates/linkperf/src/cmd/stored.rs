//! `linkperf runs`, `show`, `export` and `import`: reading runs back from the results database, and
//! writing runs from files into it.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Context;
use linkperf_core::RunResult;
use linkperf_report::Format;
use linkperf_store::{RunFilter, RunSummary, Store, StoredRun};
use serde::{Deserialize, Serialize};

use crate::args::stored::{CompareArgs, DbArgs, ExportArgs, ImportArgs, ReportArgs, RunsArgs, ShowArgs};
use crate::exit::UsageError;
use crate::output::safe_value;

/// The version of the export document.
const EXPORT_VERSION: u32 = 1;

/// What `linkperf export --json` writes and `linkperf import` reads.
#[derive(Debug, Serialize, Deserialize)]
struct Export {
    /// [`EXPORT_VERSION`].
    linkperf_export: u32,
    /// The runs.
    runs: Vec<ExportedRun>,
}

/// One run of an export.
#[derive(Debug, Serialize, Deserialize)]
struct ExportedRun {
    /// Its number in the database it came from.
    id: i64,
    /// Its labels.
    labels: Vec<String>,
    /// The result.
    result: RunResult,
}

/// Opens an existing database to read it (reading commands neither create one nor write to it, so a
/// read-only database can be read).
fn open_existing(db: &DbArgs) -> anyhow::Result<Store> {
    let path = db.path();
    if !path.exists() {
        anyhow::bail!(
            "no results database at {}: run a test first (runs are kept by default), or give --db PATH",
            path.display()
        );
    }
    Ok(Store::open_for_reading(&path)?)
}

/// `linkperf runs`: one line per run, the newest first.
pub fn runs(args: RunsArgs) -> anyhow::Result<ExitCode> {
    let store = open_existing(&args.db)?;
    let filter =
        RunFilter { label: args.label, host: args.host, test: args.test, since: args.since, limit: Some(args.limit) };
    let runs = store.list(&filter)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &runs)?;
        writeln!(out)?;
    } else {
        write_runs(&runs, &mut out)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn write_runs(runs: &[RunSummary], out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "{:>6}  {:<20} {:<10} {:<5} {:<20} {:<12} {:<9} {:>6}  labels",
        "run", "started (UTC)", "test", "proto", "target", "responder", "state", "series"
    )?;
    for r in runs {
        writeln!(
            out,
            "{:>6}  {:<20} {:<10} {:<5} {:<20} {:<12} {:<9} {:>6}  {}",
            r.id,
            safe_value(r.started_at.replace('T', " ").trim_end_matches('Z')),
            safe_value(&r.test),
            safe_value(&r.proto),
            safe_value(&r.target),
            safe_value(&r.responder_host),
            if r.state == "running" { "unfinished" } else { r.state.as_str() },
            r.series,
            safe_value(&r.labels.join(","))
        )?;
    }
    Ok(())
}

/// `linkperf show ID`: the run as it was printed.
pub fn show(args: ShowArgs) -> anyhow::Result<ExitCode> {
    let store = open_existing(&args.db)?;
    let run = store.run(args.id)?;
    let format = Format::from_flags(args.json, args.csv);
    if format == Format::Table && !run.labels.is_empty() {
        println!("run {} (labels: {})", run.id, safe_value(&run.labels.join(", ")));
    }
    crate::output::emit(&run.result, format)?;
    Ok(ExitCode::SUCCESS)
}

/// `linkperf export ID...`: runs as one JSON document, or as CSV.
pub fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let store = open_existing(&args.db)?;
    let runs = args.ids.iter().map(|&id| store.run(id)).collect::<Result<Vec<StoredRun>, _>>()?;
    let mut out = std::io::stdout().lock();
    if args.csv {
        for (i, run) in runs.iter().enumerate() {
            if i > 0 {
                writeln!(out)?;
            }
            let mut csv = Vec::new();
            linkperf_report::csv::write_csv(&run.result, Some((run.id, &run.labels)), &mut csv)?;
            write!(out, "{}", crate::output::safe_text(&csv))?;
        }
    } else {
        let document = Export {
            linkperf_export: EXPORT_VERSION,
            runs: runs.into_iter().map(|r| ExportedRun { id: r.id, labels: r.labels, result: r.result }).collect(),
        };
        serde_json::to_writer_pretty(&mut out, &document)?;
        writeln!(out)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `linkperf import FILE...`: every run of each file, as new runs.
pub fn import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let mut store = Store::open(&args.db.path())?;
    for file in &args.files {
        let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
        let runs = parse_import(&text).with_context(|| {
            format!("{} is neither a `linkperf export` document nor a result printed by --json", file.display())
        })?;
        for (labels, result) in runs {
            let labels: Vec<String> = labels.into_iter().chain(args.labels.iter().cloned()).collect();
            let id = store.insert(&result, &labels)?;
            println!(
                "{}: imported as run {id} ({} of {})",
                safe_value(&file.display().to_string()),
                result.parameters.test_name(),
                safe_value(&result.started_at)
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The runs in an export document, a result, or a list of results.
fn parse_import(text: &str) -> anyhow::Result<Vec<(Vec<String>, RunResult)>> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    if value.get("linkperf_export").is_some() {
        let export: Export = serde_json::from_value(value)?;
        if export.linkperf_export > EXPORT_VERSION {
            anyhow::bail!("export version {} is newer than this linkperf's {EXPORT_VERSION}", export.linkperf_export);
        }
        return Ok(export.runs.into_iter().map(|r| (r.labels, r.result)).collect());
    }
    if value.is_array() {
        let results: Vec<RunResult> = serde_json::from_value(value)?;
        return Ok(results.into_iter().map(|r| (Vec::new(), r)).collect());
    }
    let result: RunResult = serde_json::from_value(value)?;
    if result.schema_version > linkperf_core::SCHEMA_VERSION {
        anyhow::bail!("result schema version {} is newer than this linkperf's", result.schema_version);
    }
    Ok(vec![(Vec::new(), result)])
}

/// One column of a comparison: a run, or every run of a suite that carries a label.
struct Side {
    /// The runs, oldest first.
    runs: Vec<StoredRun>,
    /// The label that chose them, for a set.
    label: Option<String>,
}

/// The columns of `compare`: each numbered run, then per label its newest run; when that run belongs to a
/// suite (it carries `suite:NAME`), every run carrying both the label and that suite's label.
fn sides(store: &Store, ids: &[i64], labels: &[String]) -> anyhow::Result<Vec<Side>> {
    let mut sides = Vec::new();
    for &id in ids {
        sides.push(Side { runs: vec![store.run(id)?], label: None });
    }
    for label in labels {
        let mut listed = store.list(&RunFilter { label: Some(label.clone()), ..RunFilter::default() })?;
        let newest = listed.first().ok_or_else(|| UsageError(format!("no run carries the label '{label}'")))?;
        let suite = newest.labels.iter().find(|l| l.starts_with("suite:") && *l != label).cloned();
        match suite {
            Some(suite) => listed.retain(|r| r.labels.contains(&suite)),
            None => listed.truncate(1),
        }
        listed.reverse();
        let runs = listed.iter().map(|r| store.run(r.id)).collect::<Result<Vec<StoredRun>, _>>()?;
        sides.push(Side { runs, label: Some(label.clone()) });
    }
    Ok(sides)
}

/// The runs of `compare` (numbered runs, then labels), matched: each column's heading, the rows of figures,
/// and the baseline's column. Notes on tests that only some sets ran go to stderr.
fn comparison(
    store: &Store,
    ids: &[i64],
    labels: &[String],
    baseline: Option<i64>,
) -> anyhow::Result<(Vec<linkperf_report::comparison::ComparedRun>, Vec<linkperf_core::compare::Row>, usize)> {
    let sides = sides(store, ids, labels)?;
    if sides.len() < 2 {
        return Err(UsageError("compare needs at least two runs: give their numbers or --label twice".into()).into());
    }
    let newest = |side: &Side| side.runs.last().map_or(0, |r| r.id);
    let baseline = match baseline {
        Some(id) => sides.iter().position(|s| s.runs.iter().any(|r| r.id == id)).ok_or_else(|| {
            let ids: Vec<i64> = sides.iter().map(newest).collect();
            UsageError(format!("--baseline {id} is not one of the compared runs ({ids:?})"))
        })?,
        None => 0,
    };
    let sets = sides.iter().any(|s| s.runs.len() > 1);
    let rows = if sets {
        let runs: Vec<Vec<&RunResult>> = sides.iter().map(|s| s.runs.iter().map(|r| &r.result).collect()).collect();
        let compared = linkperf_core::compare::compare_sets(&runs, baseline);
        for (test, counts) in &compared.tests {
            if counts.contains(&0) {
                let shown: Vec<String> =
                    sides.iter().zip(counts).map(|(s, n)| format!("{} {n}", side_name(s))).collect();
                eprintln!(
                    "note: a {test} test is not in every set (runs of it: {}); its figures are shown where it ran",
                    shown.join(", ")
                );
            }
        }
        compared.rows
    } else {
        let results: Vec<&RunResult> = sides.iter().map(|s| &s.runs[0].result).collect();
        linkperf_core::compare::compare(&results, baseline)
    };
    let compared = sides.iter().filter_map(|side| compared_run(side, sets)).collect();
    Ok((compared, rows, baseline))
}

/// A side's column heading: its newest run, the label that chose it first, and for a set every run's number.
fn compared_run(side: &Side, sets: bool) -> Option<linkperf_report::comparison::ComparedRun> {
    let newest = side.runs.last()?;
    let mut labels = newest.labels.clone();
    if let Some(label) = &side.label {
        labels.retain(|l| l != label);
        labels.insert(0, label.clone());
    }
    let test = match (sets, labels.iter().find(|l| l.starts_with("suite:"))) {
        (true, Some(suite)) => suite.clone(),
        _ => compared_test(&newest.result),
    };
    Some(linkperf_report::comparison::ComparedRun {
        id: newest.id,
        labels,
        started_at: newest.result.started_at.clone(),
        test,
        set: if sets { side.runs.iter().map(|r| r.id).collect() } else { Vec::new() },
    })
}

/// `linkperf compare A B ...`: every matching figure side by side, with differences and verdicts; labelled
/// suites test by test.
pub fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    use linkperf_report::comparison::{write_comparison, ComparisonFormat};
    let store = open_existing(&args.db)?;
    let (compared, rows, baseline) = comparison(&store, &args.ids, &args.labels, args.baseline)?;
    let format = match (args.markdown, args.json) {
        (true, _) => ComparisonFormat::Markdown,
        (_, true) => ComparisonFormat::Json,
        _ => ComparisonFormat::Table,
    };
    if rows.iter().all(|r| r.values.iter().filter(|v| v.is_some()).count() < 2) {
        eprintln!("warning: the runs have no figure in common (different tests or sizes): nothing to compare");
    }
    let mut rendered = Vec::new();
    write_comparison(&compared, baseline, &rows, format, &mut rendered)?;
    if format != ComparisonFormat::Json {
        rendered = crate::output::safe_text(&rendered).into_bytes();
    }
    std::io::stdout().lock().write_all(&rendered)?;
    if !args.fail_if_worse {
        return Ok(ExitCode::SUCCESS);
    }
    let worse = linkperf_core::gate::regressions(&rows, baseline, args.by);
    for regression in &worse {
        eprintln!("worse: {}", crate::output::safe_value(&regression.to_string()));
    }
    Ok(if worse.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(crate::exit::GATE) })
}

/// A side's name in a note: its label, or its run's number.
fn side_name(side: &Side) -> String {
    side.label.clone().unwrap_or_else(|| format!("run {}", side.runs[0].id))
}

/// `linkperf report ID...`: one HTML page (and SVG charts) of runs, overlaid.
pub fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    use linkperf_report::html::{write_html, ReportRun};
    let store = open_existing(&args.db)?;
    let mut ids = args.ids.clone();
    for label in &args.labels {
        let mut labelled = store.list(&RunFilter { label: Some(label.clone()), ..RunFilter::default() })?;
        if labelled.is_empty() {
            return Err(UsageError(format!("no run carries the label '{label}'")).into());
        }
        labelled.reverse();
        ids.extend(labelled.iter().map(|r| r.id).filter(|id| !args.ids.contains(id)));
    }
    if ids.is_empty() {
        return Err(UsageError("name the runs to report: their numbers, or --label".into()).into());
    }
    let runs = ids.iter().map(|&id| store.run(id)).collect::<Result<Vec<StoredRun>, _>>()?;
    let report_runs: Vec<ReportRun> =
        runs.iter().map(|r| ReportRun { id: r.id, labels: &r.labels, result: &r.result }).collect();
    let names: Vec<String> = report_runs.iter().map(ReportRun::name).collect();
    let results: Vec<&RunResult> = runs.iter().map(|r| &r.result).collect();
    let charts = linkperf_report::chart::charts(&results, &names);
    if let Some(dir) = &args.svg {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        for chart in &charts {
            let path = dir.join(format!("{}.svg", chart.id));
            std::fs::write(&path, &chart.svg).with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
    }
    if let Some(dir) = &args.png {
        write_pngs(&charts, dir)?;
    }
    let generated = format!(
        "Generated by linkperf {} at {} from the results database {}.",
        env!("CARGO_PKG_VERSION"),
        humantime::format_rfc3339_seconds(std::time::SystemTime::now()),
        store.path().display()
    );
    // Two labels or more: the labelled runs (or suites) side by side, as `compare` shows them.
    let comparison = match args.labels.len() {
        0 | 1 => None,
        _ => {
            let (compared, rows, baseline) = comparison(&store, &[], &args.labels, None)?;
            let mut section = Vec::new();
            let format = linkperf_report::comparison::ComparisonFormat::Html;
            linkperf_report::comparison::write_comparison(&compared, baseline, &rows, format, &mut section)?;
            Some(String::from_utf8_lossy(&section).into_owned())
        }
    };
    let mut page = Vec::new();
    write_html(&args.title, &generated, &report_runs, &charts, comparison.as_deref(), &mut page)?;
    match (&args.html, args.svg.as_ref().or(args.png.as_ref())) {
        (Some(path), _) => {
            std::fs::write(path, &page).with_context(|| format!("cannot write {}", path.display()))?;
            eprintln!("wrote {} ({} charts)", path.display(), charts.len());
        }
        (None, None) => std::io::stdout().lock().write_all(&page)?,
        (None, Some(_)) => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// Writes each chart as `DIR/ID.png`: its SVG rasterised, the text set in the system's fonts.
fn write_pngs(charts: &[linkperf_report::chart::Chart], dir: &std::path::Path) -> anyhow::Result<()> {
    use resvg::{tiny_skia, usvg};
    let mut options = usvg::Options::default();
    let fonts = options.fontdb_mut();
    fonts.load_system_fonts();
    // The charts ask for "sans-serif": give it a family this system has.
    let families: Vec<String> = fonts.faces().flat_map(|f| f.families.iter().map(|(name, _)| name.clone())).collect();
    let sans = ["DejaVu Sans", "Liberation Sans", "Noto Sans", "FreeSans", "Arial"]
        .into_iter()
        .find(|want| families.iter().any(|f| f == want))
        .map(str::to_string)
        .or_else(|| families.first().cloned());
    match sans {
        Some(family) => fonts.set_sans_serif_family(family),
        None => eprintln!(
            "warning: no fonts on this system: the PNG charts have no text (apt-get install fonts-dejavu-core)"
        ),
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for chart in charts {
        let file = dir.join(format!("{}.png", chart.id));
        let tree =
            usvg::Tree::from_str(&chart.svg, &options).with_context(|| format!("cannot read chart {}", chart.id))?;
        let size = tree.size().to_int_size();
        let mut pixmap = tiny_skia::Pixmap::new(size.width(), size.height())
            .ok_or_else(|| anyhow::anyhow!("chart {} has no size", chart.id))?;
        resvg::render(&tree, tiny_skia::Transform::default(), &mut pixmap.as_mut());
        pixmap.save_png(&file).with_context(|| format!("cannot write {}", file.display()))?;
        eprintln!("wrote {}", file.display());
    }
    Ok(())
}

/// A run's test as a compared column is headed: runs against an echo with their set-up (study 3's
/// parameter table), so that runs at different line settings are told apart.
fn compared_test(run: &RunResult) -> String {
    let test = run.parameters.test_name();
    match &run.endpoints.echo {
        Some(echo) => format!("{test} over {}; {}", run.parameters.proto().name(), echo.describe()),
        None => test.to_string(),
    }
}
