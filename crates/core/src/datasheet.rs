//! Datasheets: the tables a characterisation suite prints, built from the results of its runs.
//!
//! A suite profile (`linkperf suite --profile`) lists sections; each section becomes a [`Table`]:
//! - a datasheet section has rows `Test | Min | Typ | Max | Unit | Notes`, one test command per row (or per
//!   size or flow of it), its figure read from the run's results ([`Figure`]);
//! - a by-size section has one row per message size and one column per command (e.g. TCP between hosts
//!   beside Unix sockets on one host).
//!
//! How each figure is taken is defined in docs/metrics.md, "Datasheets". Pure: no I/O.

use serde::{Deserialize, Serialize};

mod spread;

use crate::run_result::{Series, ThroughputSeries};
use crate::units::RateUnit;
use crate::RunResult;
use spread::{both_ways, goodput_spread, Basis, Spread};

/// Which figure of a run a datasheet row shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Figure {
    /// Round trip (or connection time) of each size's aggregate series on an idle path: min, p50, max.
    Rtt,
    /// The same, of the series measured under load.
    RttLoaded,
    /// Receiver goodput of each flow: min and max of its whole intervals, typ the goodput over the run.
    Goodput,
    /// The zero-loss rate of each size of a rate search (RFC 2544 26.1), which a queue can inflate.
    ZeroLoss,
    /// The sustainable rate of each size of a rate search: no loss and no queue growth.
    Sustainable,
    /// The longest whole burst of each size: min, typ, max over the searches.
    Burst,
}

/// One row of a datasheet.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DatasheetRow {
    /// What was measured.
    pub test: String,
    /// The smallest value.
    pub min: Option<f64>,
    /// The typical value.
    pub typ: Option<f64>,
    /// The largest value.
    pub max: Option<f64>,
    /// The unit of the three.
    pub unit: String,
    /// How it was measured.
    pub note: String,
    /// Why the row has no figures, when it could not be measured (the test failed, or its results hold
    /// no value of the figure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// How Min and Max were taken when not over the test's own intervals: over longer spans on a link
    /// whose round trip or segments are long against an interval, or over half-duplex turns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remark: Option<String>,
    /// The span, in seconds, over which Min and Max are goodputs, when longer than the test's interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_max_span_s: Option<f64>,
}

impl DatasheetRow {
    /// A row that could not be measured, and why.
    pub fn not_measured(test: &str, note: &str, reason: String) -> Self {
        Self {
            test: test.into(),
            min: None,
            typ: None,
            max: None,
            unit: String::new(),
            note: note.into(),
            reason: Some(reason),
            remark: None,
            min_max_span_s: None,
        }
    }
}

/// A table of a suite's output.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Table {
    /// `Test | Min | Typ | Max | Unit | Notes`.
    Datasheet {
        /// Its heading.
        title: String,
        /// Its rows.
        rows: Vec<DatasheetRow>,
    },
    /// One row per size, a column per command.
    BySize {
        /// Its heading.
        title: String,
        /// The figure and unit of the cells, e.g. `round trip p50, µs`.
        figure: String,
        /// The columns' headings.
        columns: Vec<String>,
        /// Per size: the size in bytes and a cell per column.
        rows: Vec<(u64, Vec<Option<f64>>)>,
        /// How it was measured.
        note: String,
    },
    /// The runs' own tables, as their commands print them (a sweep, a UDP test).
    Runs {
        /// Its heading.
        title: String,
        /// The runs.
        runs: Vec<RunResult>,
    },
}

/// The datasheet rows of `test` with figure `figure` from its repeated runs (`runs`, one per repetition):
/// one row per size, gap or flow the runs have. Across repetitions the minimum of the minima, the median
/// of the typical values and the maximum of the maxima are shown. `unit` applies to rates (goodput, the
/// zero-loss rate): a [`RateUnit`] name (`Mbit/s`, `MB/s`, `MiB/s`, ...), or empty for the bit-rate unit
/// that the row's typical value asks for (`240 kbit/s`, not `0.24 Mbit/s`). A size, gap or flow that some
/// run has but whose figure no run gave is a row without figures, with the reason.
pub fn datasheet_rows(test: &str, figure: Figure, unit: &str, note: &str, runs: &[RunResult]) -> Vec<DatasheetRow> {
    let mut rows: Vec<(String, Vec<Spread>, &'static str)> = Vec::new();
    let mut add = |suffix: String, values: Option<Spread>, unit: &'static str| {
        let at = match rows.iter().position(|(s, _, _)| *s == suffix) {
            Some(at) => at,
            None => {
                rows.push((suffix, Vec::new(), unit));
                rows.len() - 1
            }
        };
        rows[at].1.extend(values);
    };
    for run in runs {
        match figure {
            Figure::Rtt | Figure::RttLoaded => {
                let loaded = figure == Figure::RttLoaded;
                let series: Vec<&Series> =
                    run.series.iter().filter(|s| s.session.is_none() && s.load.is_some() == loaded).collect();
                for s in &series {
                    let values = s.summary.as_ref().map(|m| Spread::plain(m.min_us, m.p50_us, m.max_us));
                    add(series_suffix(s, series.len()), values, "µs");
                }
            }
            Figure::Goodput => {
                let sums: Vec<&ThroughputSeries> = run.throughput.iter().filter(|s| s.stream.is_none()).collect();
                for s in &sums {
                    add(throughput_suffix(s, &sums), goodput_spread(s, &run.throughput), BIT_RATE);
                }
                for (suffix, both) in both_ways(&sums) {
                    add(suffix, Some(both), BIT_RATE);
                }
            }
            Figure::ZeroLoss | Figure::Sustainable => {
                for r in &run.rate_search {
                    let size =
                        r.frame_bytes.map_or(format!("{} B payload", r.payload_bytes), |f| format!("{f} B frames"));
                    let suffix = if run.rate_search.len() > 1 { format!(", {size}") } else { String::new() };
                    let rate = if figure == Figure::ZeroLoss { r.rate_bps } else { r.sustainable_bps };
                    add(suffix, rate.map(|b| Spread::plain(b, b, b)), BIT_RATE);
                }
            }
            Figure::Burst => {
                for b in &run.bursts {
                    let suffix = if run.bursts.len() > 1 { format!(", {} B", b.payload_bytes) } else { String::new() };
                    let values = b
                        .min
                        .zip(b.typ)
                        .zip(b.max)
                        .map(|((min, typ), max)| Spread::plain(min as f64, typ as f64, max as f64));
                    add(suffix, values, "datagrams");
                }
            }
        }
    }
    rows.into_iter()
        .map(|(suffix, values, kind)| {
            summarise(&format!("{test}{suffix}"), figure, unit, note, runs.len(), &values, kind)
        })
        .collect()
}

/// A row from its repetitions' spreads: the lowest Min, the median Typ, the highest Max.
fn summarise(
    test: &str,
    figure: Figure,
    unit: &str,
    note: &str,
    runs: usize,
    values: &[Spread],
    kind: &'static str,
) -> DatasheetRow {
    if values.is_empty() {
        let reason = format!("none of its {runs} runs gave {}", figure.missing());
        return DatasheetRow::not_measured(test, note, reason);
    }
    let min = values.iter().filter_map(|v| v.min).reduce(f64::min);
    let max = values.iter().filter_map(|v| v.max).reduce(f64::max);
    let mut typs: Vec<f64> = values.iter().map(|v| v.typ).collect();
    typs.sort_by(f64::total_cmp);
    let typ = typs[(typs.len() - 1) / 2];
    let (scale, unit) = match kind {
        BIT_RATE => {
            let unit = RateUnit::parse(unit).unwrap_or_else(|| RateUnit::for_bit_rate(typ));
            (unit.bps(), unit.name().to_string())
        }
        other => (1.0, other.to_string()),
    };
    // The widest basis among the repetitions speaks for the row.
    let basis = values.iter().filter_map(|v| v.basis.clone()).max_by(|a, b| a.span().total_cmp(&b.span()));
    DatasheetRow {
        test: test.to_string(),
        min: min.map(|m| m / scale),
        typ: Some(typ / scale),
        max: max.map(|m| m / scale),
        unit,
        note: note.to_string(),
        reason: None,
        min_max_span_s: basis.as_ref().and_then(Basis::span_s),
        remark: basis.map(|b| b.describe(min.is_some())),
    }
}

/// The kind of a row whose values are bit rates, shown in a [`RateUnit`].
const BIT_RATE: &str = "bit/s";

impl Figure {
    /// What a run lacks when it gives no value of this figure.
    fn missing(self) -> &'static str {
        match self {
            Figure::Rtt | Figure::RttLoaded => "a round trip (no reply was measured)",
            Figure::Goodput => "a receiver goodput (the receiver's figure is missing)",
            Figure::ZeroLoss => "a zero-loss rate (the search found no rate without loss)",
            Figure::Sustainable => {
                "a sustainable rate (no trial passed without loss and queue growth, or the responder reports no delay)"
            }
            Figure::Burst => "a burst length (the search found no whole burst)",
        }
    }
}

/// Which size or gap a series is, when a run has several.
fn series_suffix(s: &Series, count: usize) -> String {
    if count <= 1 {
        return String::new();
    }
    match (s.gap_s, s.size_bytes) {
        (Some(gap), _) => format!(", after {gap} s idle"),
        (None, Some(size)) => format!(", {size} B"),
        _ => String::new(),
    }
}

/// Which flow and size a throughput row is, when a run has several.
fn throughput_suffix(s: &ThroughputSeries, all: &[&ThroughputSeries]) -> String {
    let mut parts = Vec::new();
    if all.iter().any(|o| o.flow != s.flow) {
        parts.push(s.flow.name().to_string());
    }
    if all.iter().any(|o| o.size_bytes != s.size_bytes) {
        parts.push(format!("{} B writes", s.size_bytes));
    }
    match parts.is_empty() {
        true => String::new(),
        false => format!(" ({})", parts.join(", ")),
    }
}

/// What a by-size table shows in its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SizeFigure {
    /// The round trip's p50, µs.
    RttP50,
    /// Microseconds per message at the receiver's goodput (throughput runs).
    UsPerMessage,
    /// Receiver goodput, Mbit/s (throughput runs).
    Goodput,
}

impl SizeFigure {
    /// The figure and unit, as a table says.
    pub fn describe(self) -> &'static str {
        match self {
            SizeFigure::RttP50 => "round trip, typical (p50), µs",
            SizeFigure::UsPerMessage => "µs per message at the receiver's goodput",
            SizeFigure::Goodput => "receiver goodput, Mbit/s",
        }
    }
}

/// A by-size table headed `title`, with columns headed `headings` from the runs `columns` (`None`: that
/// column's test gave no result). Goodput cells take the bit-rate unit the table's largest value asks for,
/// so that every cell of the table shares one unit.
pub fn by_size_table(
    title: &str,
    figure: SizeFigure,
    note: &str,
    headings: Vec<String>,
    columns: &[Option<&RunResult>],
) -> Table {
    let mut rows = by_size_rows(figure, columns);
    let mut described = figure.describe().to_string();
    if figure == SizeFigure::Goodput {
        let largest = rows.iter().flat_map(|(_, cells)| cells.iter().flatten()).fold(0.0f64, |m, v| m.max(*v));
        let unit = RateUnit::for_bit_rate(largest * 1e6);
        let factor = 1e6 / unit.bps();
        rows.iter_mut().flat_map(|(_, cells)| cells.iter_mut().flatten()).for_each(|v| *v *= factor);
        described = format!("receiver goodput, {}", unit.name());
    }
    Table::BySize { title: title.into(), figure: described, columns: headings, rows, note: note.into() }
}

/// A by-size table: a row per size found in any column's run, a cell per column (goodput in Mbit/s).
pub fn by_size_rows(figure: SizeFigure, columns: &[Option<&RunResult>]) -> Vec<(u64, Vec<Option<f64>>)> {
    let value = |run: &RunResult, size: u64| -> Option<f64> {
        match figure {
            SizeFigure::RttP50 => run
                .series
                .iter()
                .find(|s| s.session.is_none() && s.load.is_none() && s.size_bytes == Some(size))
                .and_then(|s| s.summary.as_ref().map(|m| m.p50_us)),
            SizeFigure::UsPerMessage | SizeFigure::Goodput => {
                let row = run.throughput.iter().find(|s| s.stream.is_none() && s.size_bytes == size)?;
                match figure {
                    SizeFigure::UsPerMessage => row.us_per_message,
                    _ => row.receiver_bps.map(|b| b / 1e6),
                }
            }
        }
    };
    let mut sizes: Vec<u64> = columns
        .iter()
        .flatten()
        .flat_map(|run| {
            run.series.iter().filter_map(|s| s.size_bytes).chain(run.throughput.iter().map(|s| s.size_bytes))
        })
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes.into_iter().map(|size| (size, columns.iter().map(|run| run.and_then(|r| value(r, size))).collect())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn round_trips_give_a_row_per_size_from_min_p50_and_max() {
        let run = fixture::latency_run();
        let rows = datasheet_rows("Round trip", Figure::Rtt, "", "64 and 1024 bytes", std::slice::from_ref(&run));
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].test, "Round trip, 64 B");
        let summary = run.series[0].summary.clone().unwrap();
        assert_eq!(
            (rows[0].min, rows[0].typ, rows[0].max),
            (Some(summary.min_us), Some(summary.p50_us), Some(summary.max_us))
        );
        assert_eq!(rows[0].unit, "µs");
    }

    #[test]
    fn repetitions_give_the_lowest_min_the_median_typ_and_the_highest_max() {
        let mut runs = vec![fixture::latency_run(), fixture::latency_run(), fixture::latency_run()];
        for (run, shift) in runs.iter_mut().zip([0.0, 10.0, 20.0]) {
            run.series.truncate(1);
            let m = run.series[0].summary.as_mut().unwrap();
            (m.min_us, m.p50_us, m.max_us) = (m.min_us + shift, m.p50_us + shift, m.max_us + shift);
        }
        let base = fixture::latency_run().series[0].summary.clone().unwrap();
        let rows = datasheet_rows("RTT", Figure::Rtt, "", "", &runs);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].test, "RTT", "one size: no suffix");
        assert_eq!(
            (rows[0].min, rows[0].typ, rows[0].max),
            (Some(base.min_us), Some(base.p50_us + 10.0), Some(base.max_us + 20.0))
        );
    }

    #[test]
    fn goodput_spans_the_whole_intervals_and_converts_to_megabytes() {
        let run = fixture::throughput_run();
        let sum = &run.throughput[0];
        let rows = datasheet_rows("TCP", Figure::Goodput, "MB/s", "", std::slice::from_ref(&run));
        assert_eq!(rows.len(), 1);
        let typ = rows[0].typ.unwrap();
        assert!((typ - sum.receiver_bps.unwrap() / 8e6).abs() < 1e-9);
        assert!(rows[0].min.unwrap() <= typ && typ <= rows[0].max.unwrap());
        assert_eq!(rows[0].unit, "MB/s");
    }

    #[test]
    fn rates_take_the_unit_their_typical_value_asks_for_or_the_one_the_profile_names() {
        let mut run = fixture::throughput_run();
        let sum = &mut run.throughput[0];
        sum.receiver_bps = Some(240_000.0);
        sum.intervals.iter_mut().for_each(|i| i.goodput_bps = 240_000.0);
        let auto = datasheet_rows("TCP", Figure::Goodput, "", "", std::slice::from_ref(&run));
        assert_eq!((auto[0].typ, auto[0].unit.as_str()), (Some(240.0), "kbit/s"));
        let mib = datasheet_rows("TCP", Figure::Goodput, "MiB/s", "", std::slice::from_ref(&run));
        assert!((mib[0].typ.unwrap() - 240_000.0 / 8.0 / 1_048_576.0).abs() < 1e-12);
    }

    #[test]
    fn a_flow_without_its_figure_is_a_row_with_the_reason() {
        let mut run = fixture::throughput_run();
        run.throughput.iter_mut().for_each(|s| s.receiver_bps = None);
        let rows = datasheet_rows("TCP", Figure::Goodput, "", "note", &[run]);
        assert!(!rows.is_empty());
        assert_eq!((rows[0].typ, rows[0].note.as_str()), (None, "note"));
        assert!(rows[0].reason.as_deref().unwrap().contains("receiver's figure is missing"), "{:?}", rows[0]);
    }

    #[test]
    fn turns_of_the_other_direction_are_not_a_minimum() {
        let mut run = fixture::throughput_run();
        let sum = &mut run.throughput[0];
        sum.phase = crate::Direction::Alternating;
        let mut idle = sum.intervals[0].clone();
        (idle.bytes, idle.goodput_bps) = (0, 0.0);
        sum.intervals.push(idle);
        let rows = datasheet_rows("Half duplex", Figure::Goodput, "Mbit/s", "", std::slice::from_ref(&run));
        assert!(rows[0].min.unwrap() > 0.0, "{:?}", rows[0]);
    }

    #[test]
    fn search_results_make_rows() {
        let rows = datasheet_rows("UDP zero loss", Figure::ZeroLoss, "", "", &[fixture::ratesearch_run()]);
        assert_eq!((rows[0].typ, rows[0].unit.as_str()), (Some(10.0), "Mbit/s"));
        let bursts = datasheet_rows("Burst", Figure::Burst, "", "", &[fixture::burst_run()]);
        assert_eq!((bursts[0].min, bursts[0].typ, bursts[0].max), (Some(110.0), Some(112.0), Some(112.0)));
        let loaded = datasheet_rows("Loaded", Figure::RttLoaded, "", "", &[fixture::under_load_run()]);
        assert_eq!(loaded.len(), 1);
        assert!(loaded[0].typ.unwrap() > 400.0);
    }

    #[test]
    fn the_sustainable_rate_is_a_figure_of_its_own() {
        let mut run = fixture::ratesearch_run();
        let none = datasheet_rows("UDP sustainable", Figure::Sustainable, "", "", std::slice::from_ref(&run));
        assert!(none[0].reason.as_deref().unwrap().contains("sustainable rate"), "{:?}", none[0]);
        run.rate_search[0].sustainable_bps = Some(9.5e6);
        let rows = datasheet_rows("UDP sustainable", Figure::Sustainable, "", "", &[run]);
        assert_eq!((rows[0].typ, rows[0].unit.as_str()), (Some(9.5), "Mbit/s"));
    }

    /// A one-stream TCP upload of 1 s intervals moving `bytes[k]` in interval k, at 240 kbit/s over the
    /// run, whose sender saw round trips of up to `max_srtt_s`.
    fn slow_upload(bytes: &[u64], max_srtt_s: f64) -> RunResult {
        let mut run = fixture::throughput_run();
        run.throughput.truncate(1);
        let sum = &mut run.throughput[0];
        sum.receiver_bps = Some(240_000.0);
        sum.intervals = bytes
            .iter()
            .enumerate()
            .map(|(k, &b)| crate::throughput::IntervalSample {
                start_s: k as f64,
                end_s: k as f64 + 1.0,
                bytes: b,
                goodput_bps: b as f64 * 8.0,
                in_total_s: 1.0,
            })
            .collect();
        sum.tcp = Some(crate::throughput::TcpStats {
            retransmits: 0,
            cwnd_bytes: 14_480,
            srtt_us: 100_000,
            mss_bytes: 1448,
            congestion: "cubic".into(),
            max_srtt_us: Some((max_srtt_s * 1e6) as u64),
        });
        run
    }

    #[test]
    fn min_and_max_over_intervals_of_few_round_trips_are_taken_over_spans_of_four() {
        // Stalls and releases in 1 s intervals (0 and 480 kbit/s), steady over any 4 s: round trips of up
        // to 0.9 s make spans of 4 intervals (3.6 s rounded up), three of them in 12 s.
        let pattern: Vec<u64> = [30_000, 0, 60_000, 30_000].repeat(3);
        let rows = datasheet_rows("TCP", Figure::Goodput, "", "n", &[slow_upload(&pattern, 0.9)]);
        assert_eq!((rows[0].min, rows[0].typ, rows[0].max), (Some(240.0), Some(240.0), Some(240.0)), "{:?}", rows[0]);
        assert_eq!(rows[0].min_max_span_s, Some(4.0));
        let remark = rows[0].remark.as_deref().unwrap();
        assert!(remark.contains("3 spans of 4.000 s") && remark.contains("round trips (0.900 s"), "{remark}");
        // Round trips of 0.1 s: the 1 s intervals are long enough, and their min and max stand.
        let short = datasheet_rows("TCP", Figure::Goodput, "", "n", &[slow_upload(&pattern, 0.1)]);
        assert_eq!((short[0].min, short[0].max, short[0].remark.as_ref()), (Some(0.0), Some(480.0), None));
        // A run shorter than one span has no min and max, and says why.
        let brief = datasheet_rows("TCP", Figure::Goodput, "", "n", &[slow_upload(&pattern[..3], 0.9)]);
        assert_eq!((brief[0].min, brief[0].typ, brief[0].max), (None, Some(240.0), None));
        assert!(brief[0].remark.as_deref().unwrap().starts_with("no min/max"), "{:?}", brief[0]);
    }

    #[test]
    fn half_duplex_directions_give_their_turns_and_a_both_ways_row() {
        use crate::throughput::{Flow, TurnSample};
        let turn = |bytes: u64, turnaround_s: f64| TurnSample {
            start_s: 0.0,
            writing_s: 0.5,
            turnaround_s: Some(turnaround_s),
            bytes: Some(bytes),
            idle_bytes: Some(0),
        };
        let mut run = fixture::throughput_run();
        run.throughput.truncate(1);
        let up = &mut run.throughput[0];
        up.phase = crate::Direction::Alternating;
        // Each direction over its own turns: 60 kB in 2 s, 30 kB in 1.5 s.
        (up.turns, up.receiver_bytes, up.window_s) = (vec![turn(30_000, 0.5), turn(30_000, 0.5)], 60_000, 2.0);
        up.receiver_bps = Some(240_000.0);
        let mut down = up.clone();
        down.flow = Flow::Download;
        (down.turns, down.receiver_bytes, down.window_s) = (vec![turn(30_000, 1.0)], 30_000, 1.5);
        down.receiver_bps = Some(160_000.0);
        run.throughput.push(down);
        let rows = datasheet_rows("Half duplex", Figure::Goodput, "", "n", &[run]);
        let names: Vec<&str> = rows.iter().map(|r| r.test.as_str()).collect();
        assert_eq!(names, ["Half duplex (upload)", "Half duplex (download)", "Half duplex (both ways)"]);
        assert_eq!((rows[0].min, rows[0].typ, rows[0].max), (Some(240.0), Some(240.0), Some(240.0)));
        // 90 kB over the 3.5 s of all turns; min and max over the three turns.
        let both = &rows[2];
        assert!((both.typ.unwrap() - 90_000.0 * 8.0 / 3.5 / 1e3).abs() < 1e-9, "{both:?}");
        assert_eq!((both.min, both.max), (Some(160.0), Some(240.0)));
        assert!(both.remark.as_deref().unwrap().contains("per turn (3 turns)"), "{both:?}");
    }

    #[test]
    fn by_size_tables_line_up_the_sizes_of_every_column() {
        let a = fixture::latency_run();
        let mut b = fixture::latency_run();
        b.series.truncate(3);
        let rows = by_size_rows(SizeFigure::RttP50, &[Some(&a), Some(&b), None]);
        let mut slow = fixture::throughput_run();
        slow.throughput.iter_mut().for_each(|s| s.receiver_bps = Some(9600.0));
        let table = by_size_table("t", SizeFigure::Goodput, "", vec!["serial".into()], &[Some(&slow)]);
        let Table::BySize { figure, rows: slow_rows, .. } = table else { panic!("a by-size table") };
        assert_eq!((figure.as_str(), slow_rows[0].1[0]), ("receiver goodput, kbit/s", Some(9.6)));
        assert_eq!(rows.iter().map(|r| r.0).collect::<Vec<_>>(), vec![64, 1024]);
        assert_eq!(rows[1].1[1], None, "b has no 1024-byte series");
        assert_eq!(rows[0].1[2], None, "a column that did not run");
        assert_eq!(rows[0].1[0], a.series[0].summary.as_ref().map(|m| m.p50_us));
    }
}
