//! Charts of runs, as SVG: round trip by message size, goodput by write size, received rate and loss by
//! offered rate, the distribution (CDF) of round trips, and goodput per interval. Several runs overlay on
//! one chart, a line each. Drawn with `plotters`' SVG backend: the text uses the viewer's sans-serif font,
//! so a page holding them needs no font or script of its own. (`linkperf report --png` rasterises these
//! SVG documents; plotters' own bitmaps would need a font engine for the SVG text as well.)

use linkperf_core::histogram::RttHistogram;
use linkperf_core::units::format_size;
use linkperf_core::{RunResult, TestKind};
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

/// A drawn chart.
pub struct Chart {
    /// A short name, for element ids and file names (`rtt-by-size`).
    pub id: &'static str,
    /// The caption.
    pub title: String,
    /// The SVG document.
    pub svg: String,
}

/// A chart's axes and lines.
struct Plot {
    x: (String, Scale, (f64, f64)),
    y: (String, Scale, (f64, f64)),
    lines: Vec<Line>,
}

/// A named line of points.
struct Line {
    name: String,
    points: Vec<(f64, f64)>,
    dashed: bool,
    /// The palette entry (lines of one run may share it); `None`: the line's own.
    color: Option<usize>,
}

/// Axis scales.
#[derive(Clone, Copy, PartialEq)]
enum Scale {
    Linear,
    Log,
}

/// Size of every chart, in pixels.
const SIZE: (u32, u32) = (860, 440);

/// The charts (by id) that can show a run of `kind`. A run is drawn only on these, so a new kind of test
/// must choose its charts here.
fn charts_of(kind: TestKind) -> &'static [&'static str] {
    match kind {
        // Under load, the load's goodput per interval too.
        TestKind::Latency => &["rtt-by-size", "rtt-cdf", "goodput-timeline"],
        TestKind::Connect | TestKind::Idle => &["rtt-cdf"],
        // Paced UDP over several sizes gives received rate and loss by offered rate.
        TestKind::Throughput => {
            &["goodput-by-size", "goodput-timeline", "received-by-offered-rate", "loss-by-offered-rate"]
        }
        // Their trials, each at an offered rate.
        TestKind::Sweep | TestKind::Ratesearch => &["received-by-offered-rate", "loss-by-offered-rate"],
        // The lengths of bursts: the datasheet and the run's table show them.
        TestKind::Burst => &[],
    }
}

/// Every chart the runs have data for, in a fixed order. `names` labels each run's lines.
pub fn charts(runs: &[&RunResult], names: &[String]) -> Vec<Chart> {
    let named: Vec<(&RunResult, &str)> = runs.iter().copied().zip(names.iter().map(String::as_str)).collect();
    let on = |id: &str| -> Vec<(&RunResult, &str)> {
        named.iter().copied().filter(|(run, _)| charts_of(run.parameters.kind()).contains(&id)).collect()
    };
    [
        rtt_by_size(&on("rtt-by-size")),
        rtt_cdf(&on("rtt-cdf")),
        goodput_by_size(&on("goodput-by-size")),
        offered_rate(&on("received-by-offered-rate"), false),
        offered_rate(&on("loss-by-offered-rate"), true),
        timeline(&on("goodput-timeline")),
    ]
    .into_iter()
    .flatten()
    .collect()
}

fn rtt_by_size(runs: &[(&RunResult, &str)]) -> Option<Chart> {
    let mut lines = Vec::new();
    for (index, (run, name)) in runs.iter().enumerate() {
        let idle: Vec<_> =
            run.series.iter().filter(|s| s.session.is_none() && s.load.is_none() && s.gap_s.is_none()).collect();
        let points = |pick: fn(&linkperf_core::LatencySummary) -> f64| -> Vec<(f64, f64)> {
            idle.iter().filter_map(|s| Some((s.size_bytes? as f64, pick(s.summary.as_ref()?)))).collect()
        };
        let p50 = points(|m| m.p50_us);
        if p50.len() >= 2 {
            let color = Some(index);
            lines.push(Line { name: format!("{name} p50"), points: p50, dashed: false, color });
            lines.push(Line { name: format!("{name} p99"), points: points(|m| m.p99_us), dashed: true, color });
        }
    }
    draw(
        "rtt-by-size",
        "Round trip by message size".into(),
        ("message size, bytes", Scale::Log),
        ("round trip, µs", Scale::Log),
        lines,
    )
}

fn rtt_cdf(runs: &[(&RunResult, &str)]) -> Option<Chart> {
    let mut lines = Vec::new();
    for (run, name) in runs {
        let aggregates: Vec<_> = run.series.iter().filter(|s| s.session.is_none()).collect();
        for s in &aggregates {
            let Ok(h) = RttHistogram::decode(&s.histogram) else { continue };
            if h.count() == 0 {
                continue;
            }
            // 200 quantiles from 0 to 99.9 %, then the maximum: enough for a smooth curve.
            let mut points: Vec<(f64, f64)> = (0..=200)
                .filter_map(|i| {
                    let q = f64::from(i) / 200.0 * 0.999;
                    h.quantile_ns(q).map(|ns| (ns as f64 / 1000.0, q))
                })
                .collect();
            points.extend(h.max_ns().map(|ns| (ns as f64 / 1000.0, 1.0)));
            let what = match (s.gap_s, s.size_bytes, s.load) {
                (Some(gap), _, _) => format!("after {gap} s"),
                (None, Some(size), None) => format!("{} B", format_size(size)),
                (None, Some(size), Some(load)) => format!("{} B, {} load", format_size(size), load.name()),
                _ => "connect".into(),
            };
            let label = if aggregates.len() > 1 { format!("{name} {what}") } else { name.to_string() };
            lines.push(Line { name: label, points, dashed: s.load.is_some(), color: None });
        }
    }
    draw(
        "rtt-cdf",
        "Distribution of round trips (CDF)".into(),
        ("round trip, µs", Scale::Log),
        ("fraction at or below", Scale::Linear),
        lines,
    )
}

fn goodput_by_size(runs: &[(&RunResult, &str)]) -> Option<Chart> {
    let mut lines = Vec::new();
    for (run, name) in runs {
        let sums: Vec<_> = run
            .throughput
            .iter()
            .filter(|s| s.stream.is_none() && s.udp.as_ref().is_none_or(|u| u.offered_bps.is_none()))
            .collect();
        let mut flows: Vec<_> = sums.iter().map(|s| (s.phase, s.flow)).collect();
        flows.dedup();
        for (phase, flow) in flows {
            let points: Vec<(f64, f64)> = sums
                .iter()
                .filter(|s| s.phase == phase && s.flow == flow)
                .filter_map(|s| Some((s.size_bytes as f64, s.receiver_bps?)))
                .collect();
            if points.len() >= 2 {
                lines.push(Line { name: format!("{name} {}", flow.name()), points, dashed: false, color: None });
            }
        }
    }
    let unit = in_rate_unit(&mut lines, false, true);
    draw(
        "goodput-by-size",
        "Goodput by write size".into(),
        ("write size, bytes", Scale::Log),
        (&format!("receiver goodput, {unit}"), Scale::Linear),
        lines,
    )
}

/// Received rate (or, with `loss`, loss %) against the offered rate, for runs of paced UDP trials.
fn offered_rate(runs: &[(&RunResult, &str)], loss: bool) -> Option<Chart> {
    let mut lines = Vec::new();
    for (run, name) in runs {
        let mut flows: Vec<_> = run.throughput.iter().filter(|s| s.stream.is_none()).map(|s| s.flow).collect();
        flows.sort_by_key(|f| f.name());
        flows.dedup();
        for flow in flows {
            let mut points: Vec<(f64, f64)> = run
                .throughput
                .iter()
                .filter(|s| s.stream.is_none() && s.flow == flow)
                .filter_map(|s| {
                    let udp = s.udp.as_ref()?;
                    let y = if loss { udp.loss_percent? } else { s.receiver_bps? };
                    Some((udp.offered_bps?, y))
                })
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            if points.len() >= 2 {
                lines.push(Line { name: format!("{name} {}", flow.name()), points, dashed: false, color: None });
            }
        }
    }
    if !loss && !lines.is_empty() {
        // The line on which nothing is lost: received = offered.
        let top = lines.iter().flat_map(|l| l.points.iter().map(|p| p.0)).fold(0.0, f64::max);
        let reference = vec![(0.0, 0.0), (top, top)];
        lines.push(Line { name: "received = offered".into(), points: reference, dashed: true, color: None });
    }
    // The offered rate, and the received rate (not the loss): one unit for both.
    let unit = in_rate_unit(&mut lines, true, !loss);
    let (id, title, y) = match loss {
        true => ("loss-by-offered-rate", "Loss by offered rate", "loss, % of datagrams sent".to_string()),
        false => {
            ("received-by-offered-rate", "Received rate by offered rate", format!("received, {unit} of UDP payload"))
        }
    };
    let x = format!("offered, {unit} of UDP payload");
    draw(id, title.into(), (&x, Scale::Linear), (&y, Scale::Linear), lines)
}

fn timeline(runs: &[(&RunResult, &str)]) -> Option<Chart> {
    let mut lines = Vec::new();
    for (run, name) in runs {
        let sums: Vec<_> = run.throughput.iter().filter(|s| s.stream.is_none() && s.intervals.len() >= 2).collect();
        // Many sizes or flows would make the timeline only noise.
        if sums.len() > 4 {
            continue;
        }
        for s in &sums {
            let points = s.intervals.iter().map(|i| (i.end_s, i.goodput_bps)).collect();
            let what = if sums.len() > 1 {
                format!(" {} {}", format_size(s.size_bytes), s.flow.name())
            } else {
                String::new()
            };
            lines.push(Line { name: format!("{name}{what}"), points, dashed: false, color: None });
        }
    }
    let unit = in_rate_unit(&mut lines, false, true);
    draw(
        "goodput-timeline",
        "Goodput per interval".into(),
        ("time, s (end of interval)", Scale::Linear),
        (&format!("receiver goodput, {unit}"), Scale::Linear),
        lines,
    )
}

/// The axes of `lines` that hold rates in bits per second (`x`, `y`) rescaled to the one unit the largest
/// of them asks for (a 9600 bit/s line in kbit/s, not 0.0077 Mbit/s); the unit's name.
fn in_rate_unit(lines: &mut [Line], x: bool, y: bool) -> &'static str {
    let rates = |&(px, py): &(f64, f64)| [(x, px), (y, py)].into_iter().filter(|(rate, _)| *rate).map(|(_, v)| v.abs());
    let largest = lines.iter().flat_map(|l| l.points.iter().flat_map(rates)).fold(0.0f64, f64::max);
    let unit = linkperf_core::units::RateUnit::for_bit_rate(largest);
    for point in lines.iter_mut().flat_map(|l| l.points.iter_mut()) {
        if x {
            point.0 /= unit.bps();
        }
        if y {
            point.1 /= unit.bps();
        }
    }
    unit.name()
}

/// Draws `lines` on axes named and scaled as given; `None` without lines.
fn draw(id: &'static str, title: String, x: (&str, Scale), y: (&str, Scale), lines: Vec<Line>) -> Option<Chart> {
    let all = || lines.iter().flat_map(|l| l.points.iter().copied());
    let range = |values: Vec<f64>, scale: Scale| -> Option<(f64, f64)> {
        let positive: Vec<f64> =
            values.into_iter().filter(|v| v.is_finite() && (scale == Scale::Linear || *v > 0.0)).collect();
        let low = positive.iter().copied().fold(f64::INFINITY, f64::min);
        let high = positive.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if !low.is_finite() {
            return None;
        }
        Some(match scale {
            Scale::Log => (low / 1.3, high * 1.3),
            Scale::Linear => (low.min(0.0), if high > 0.0 { high * 1.08 } else { 1.0 }),
        })
    };
    let xr = range(all().map(|p| p.0).collect(), x.1)?;
    let yr = range(all().map(|p| p.1).collect(), y.1)?;
    let plot = Plot { x: (x.0.to_string(), x.1, xr), y: (y.0.to_string(), y.1, yr), lines };
    let mut svg = String::new();
    render(SVGBackend::with_string(&mut svg, SIZE).into_drawing_area(), &title, &plot).ok()?;
    Some(Chart { id, title, svg })
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

/// Draws `plot` on `root`, with each axis linear or logarithmic.
fn render<DB: DrawingBackend>(root: DrawingArea<DB, plotters::coord::Shift>, title: &str, plot: &Plot) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let (xr, yr) = (plot.x.2, plot.y.2);
    let descs = (plot.x.0.as_str(), plot.y.0.as_str());
    match (plot.x.1, plot.y.1) {
        (Scale::Log, Scale::Log) => {
            axes(root, title, descs, ((xr.0..xr.1).log_scale(), (yr.0..yr.1).log_scale()), &plot.lines)
        }
        (Scale::Log, Scale::Linear) => axes(root, title, descs, ((xr.0..xr.1).log_scale(), yr.0..yr.1), &plot.lines),
        (Scale::Linear, Scale::Log) => axes(root, title, descs, (xr.0..xr.1, (yr.0..yr.1).log_scale()), &plot.lines),
        (Scale::Linear, Scale::Linear) => axes(root, title, descs, (xr.0..xr.1, yr.0..yr.1), &plot.lines),
    }
}

fn axes<DB, X, Y>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    (x_desc, y_desc): (&str, &str),
    (xs, ys): (X, Y),
    lines: &[Line],
) -> DrawResult
where
    DB: DrawingBackend,
    DB::ErrorType: 'static,
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(72)
        .build_cartesian_2d(xs, ys)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .x_labels(10)
        .y_labels(8)
        .max_light_lines(2)
        .label_style(("sans-serif", 13))
        .draw()?;
    for (i, line) in lines.iter().enumerate() {
        let color = Palette99::pick(line.color.unwrap_or(i)).to_rgba();
        let style = ShapeStyle { color, filled: false, stroke_width: 2 };
        let points = line.points.iter().copied();
        let series = if line.dashed {
            chart.draw_series(DashedLineSeries::new(points, 6, 4, style))?
        } else {
            chart.draw_series(LineSeries::new(points, style))?
        };
        series.label(line.name.clone()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        chart.draw_series(line.points.iter().map(|&p| Circle::new(p, 2, style.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 13))
        .draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_core::fixture;

    fn ids(runs: &[&RunResult]) -> Vec<&'static str> {
        let names: Vec<String> = (0..runs.len()).map(|i| format!("run {i}")).collect();
        charts(runs, &names).iter().map(|c| c.id).collect()
    }

    #[test]
    fn each_kind_of_run_gets_its_charts() {
        assert_eq!(ids(&[&fixture::latency_run()]), vec!["rtt-by-size", "rtt-cdf"]);
        assert_eq!(ids(&[&fixture::throughput_run()]), vec!["goodput-timeline"]);
        assert_eq!(ids(&[&fixture::sweep_run()]), vec!["received-by-offered-rate", "loss-by-offered-rate"]);
    }

    #[test]
    fn every_chart_a_kind_names_exists_and_a_burst_has_none() {
        let drawn = [
            "rtt-by-size",
            "rtt-cdf",
            "goodput-by-size",
            "received-by-offered-rate",
            "loss-by-offered-rate",
            "goodput-timeline",
        ];
        for kind in TestKind::ALL {
            for id in charts_of(kind) {
                assert!(drawn.contains(id), "{kind:?}: {id}");
            }
        }
        assert!(ids(&[&fixture::burst_run()]).is_empty());
        assert_eq!(ids(&[&fixture::ratesearch_run()]), vec!["received-by-offered-rate", "loss-by-offered-rate"]);
    }

    #[test]
    fn several_runs_overlay_on_one_chart_with_a_legend_entry_each() {
        let (a, b) = (fixture::latency_run(), fixture::latency_run());
        let names = vec!["before".to_string(), "after".to_string()];
        let charts = charts(&[&a, &b], &names);
        let by_size = charts.iter().find(|c| c.id == "rtt-by-size").unwrap();
        assert!(by_size.svg.starts_with("<svg"), "{}", &by_size.svg[..40]);
        for label in ["before p50", "before p99", "after p50", "after p99"] {
            assert!(by_size.svg.contains(label), "{label}");
        }
        assert!(by_size.svg.contains("message size, bytes") && by_size.svg.contains("round trip, µs"));
    }

    #[test]
    fn rate_axes_read_in_the_unit_their_values_ask_for() {
        let mut slow = fixture::throughput_run();
        for s in &mut slow.throughput {
            for i in &mut s.intervals {
                i.goodput_bps = 7680.0;
            }
        }
        let charts = charts(&[&slow], &["9600 baud".to_string()]);
        let timeline = charts.iter().find(|c| c.id == "goodput-timeline").unwrap();
        assert!(timeline.svg.contains("receiver goodput, kbit/s"), "a serial line's rate is not 0.0077 Mbit/s");
        let sweep = super::charts(&[&fixture::sweep_run()], &["a".to_string()]);
        let loss = sweep.iter().find(|c| c.id == "loss-by-offered-rate").unwrap();
        assert!(loss.svg.contains("offered, Mbit/s of UDP payload") && loss.svg.contains("loss, % of datagrams sent"));
    }
}
