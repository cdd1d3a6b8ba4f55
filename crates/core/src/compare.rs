//! Comparing runs: the figures of each run as keyed metrics, matched across runs, with the difference to
//! a baseline and a verdict on whether it exceeds the noise of the measurement (docs/metrics.md,
//! "Comparing runs").
//!
//! The verdicts use what a result keeps of its samples. For a round-trip median: a distribution-free 95 %
//! confidence interval of each median from the order statistics of its histogram (ranks n/2 -+ 0.98 sqrt(n)),
//! combined for the difference as the root of the sum of the squared half-widths. For a goodput: the mean
//! of its whole intervals, with Welch's 95 % interval of the difference of the means. Other figures (tail
//! percentiles, loss, rates found by a search) are single numbers and get no verdict. Pure: no I/O.

use serde::Serialize;

use crate::histogram::RttHistogram;
use crate::run_result::{Series, ThroughputSeries};
use crate::RunResult;

/// z for a two-sided 95 % interval.
const Z95: f64 = 1.959_964;

/// What a metric's value can be tested with.
#[derive(Debug, Clone)]
pub enum Samples {
    /// The round trips behind a median.
    Histogram(RttHistogram),
    /// Per-interval goodputs (bits per second) behind a mean.
    Intervals(Vec<f64>),
    /// A single number.
    None,
}

/// One figure of a run.
#[derive(Debug, Clone)]
pub struct Metric {
    /// What it is a figure of, e.g. `latency tcp 64 B`; matched across runs with `name`.
    pub subject: String,
    /// The figure, e.g. `p50`.
    pub name: String,
    /// Its unit, e.g. `µs`.
    pub unit: &'static str,
    /// Its value, in `unit`.
    pub value: f64,
    /// Whether a larger value is better (goodput) or worse (latency, loss).
    pub higher_is_better: bool,
    /// The samples behind it.
    pub samples: Samples,
    /// The value of each repetition, when the metric pools repeated runs of one test ([`pooled_metrics`]);
    /// empty for a single run.
    pub repetitions: Vec<f64>,
}

/// The figures of a run, in the order of its result.
pub fn metrics(run: &RunResult) -> Vec<Metric> {
    let test = run.parameters.test_name();
    let proto = run.parameters.proto().name();
    let mut out = Vec::new();
    for s in run.series.iter().filter(|s| s.session.is_none()) {
        out.extend(series_metrics(&format!("{test} {proto} {}", series_subject(s)), s));
    }
    for s in run.throughput.iter().filter(|s| s.stream.is_none()) {
        out.extend(throughput_metrics(&format!("{test} {proto} {}", throughput_subject(run, s)), s));
    }
    for r in &run.rate_search {
        let size = datagram_subject(r.frame_bytes, r.payload_bytes);
        if let Some(rate) = r.rate_bps {
            out.push(single(format!("{test} udp {size}"), "zero-loss rate", "Mbit/s", rate / 1e6, true));
        }
        if let Some(rate) = r.sustainable_bps {
            out.push(single(format!("{test} udp {size}"), "sustainable rate", "Mbit/s", rate / 1e6, true));
        }
    }
    for b in &run.bursts {
        let size = datagram_subject(b.frame_bytes, b.payload_bytes);
        if let Some(typ) = b.typ {
            out.push(single(format!("{test} udp {size}"), "longest burst (typ)", "datagrams", typ as f64, true));
        }
    }
    out
}

/// The size of a search's datagrams: `1518 B frame` when sizes were given as frames, else `1472 B payload`.
pub(crate) fn datagram_subject(frame_bytes: Option<u64>, payload_bytes: u64) -> String {
    frame_bytes.map_or(format!("{payload_bytes} B payload"), |f| format!("{f} B frame"))
}

/// A size for people: `64 B`, `1 KiB`, `1 MiB`, `1500 B`.
fn size_text(bytes: u64) -> String {
    let typed = crate::units::format_size(bytes);
    if let Some(k) = typed.strip_suffix('k') {
        format!("{k} KiB")
    } else if let Some(m) = typed.strip_suffix('M') {
        format!("{m} MiB")
    } else {
        format!("{bytes} B")
    }
}

fn single(subject: String, name: &str, unit: &'static str, value: f64, higher_is_better: bool) -> Metric {
    Metric {
        subject,
        name: name.into(),
        unit,
        value,
        higher_is_better,
        samples: Samples::None,
        repetitions: Vec::new(),
    }
}

pub(crate) fn series_subject(s: &Series) -> String {
    let mut subject = match (s.gap_s, s.size_bytes) {
        (Some(gap), _) => format!("after {gap} s idle"),
        (None, Some(size)) => size_text(size),
        (None, None) => "connection".into(),
    };
    if let Some(load) = s.load {
        subject.push_str(&format!(" under {} load", load.name()));
    }
    subject
}

fn series_metrics(subject: &str, s: &Series) -> Vec<Metric> {
    let Some(summary) = &s.summary else { return Vec::new() };
    let histogram = RttHistogram::decode(&s.histogram).ok();
    let metric = |name: &str, value: f64, samples: Samples| Metric {
        subject: subject.to_string(),
        name: name.into(),
        unit: "µs",
        value,
        higher_is_better: false,
        samples,
        repetitions: Vec::new(),
    };
    vec![
        metric("p50", summary.p50_us, histogram.map_or(Samples::None, Samples::Histogram)),
        metric("p99", summary.p99_us, Samples::None),
        metric("max", summary.max_us, Samples::None),
    ]
}

/// What a throughput row is a figure of: its phase, flow, write size and offered rate. Against an echo (a
/// serial line, an echo service) the write size is not the user's choice but follows the line's rate, so it
/// is left out: runs at two baud rates then compare row by row.
pub(crate) fn throughput_subject(run: &RunResult, s: &ThroughputSeries) -> String {
    let phase = match s.phase.flows().len() {
        1 => String::new(),
        _ => format!("{} ", s.phase.name()),
    };
    let offered = match s.udp.as_ref().and_then(|u| u.offered_bps) {
        Some(bps) => format!(" at {}", crate::units::format_bit_rate(bps)),
        None => String::new(),
    };
    match run.endpoints.echo {
        Some(_) => format!("{phase}{}{offered}", s.flow.name()),
        None => format!("{phase}{} {}{offered}", s.flow.name(), size_text(s.size_bytes)),
    }
}

fn throughput_metrics(subject: &str, s: &ThroughputSeries) -> Vec<Metric> {
    let mut out = Vec::new();
    if let Some(bps) = s.receiver_bps {
        // Only whole intervals inside the totals: the edges of a run are not samples of its rate.
        let intervals: Vec<f64> = s
            .intervals
            .iter()
            .filter(|i| i.in_total_s >= (i.end_s - i.start_s) * 0.999)
            .map(|i| i.goodput_bps / 1e6)
            .collect();
        out.push(Metric {
            subject: subject.to_string(),
            name: "goodput".into(),
            unit: "Mbit/s",
            value: bps / 1e6,
            higher_is_better: true,
            samples: Samples::Intervals(intervals),
            repetitions: Vec::new(),
        });
    }
    if let Some(loss) = s.udp.as_ref().and_then(|u| u.loss_percent) {
        out.push(single(subject.to_string(), "loss", "%", loss, false));
    }
    out
}

/// Whether a difference is larger than the noise of the measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The 95 % interval of the difference excludes zero.
    Real,
    /// It includes zero: the runs do not differ beyond their noise.
    Noise,
    /// No samples to tell.
    Untested,
}

/// A difference to the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Delta {
    /// Value minus the baseline's, in the metric's unit.
    pub difference: f64,
    /// The difference as a percentage of the baseline.
    pub percent: Option<f64>,
    /// The 95 % interval of the difference, when the samples allow one.
    pub interval: Option<(f64, f64)>,
    /// Real or noise.
    pub verdict: Verdict,
    /// Whether the change is for the better (by the metric's direction), when real.
    pub better: Option<bool>,
}

/// A distribution-free 95 % interval of a histogram's median, in µs: the values at ranks n/2 -+ z sqrt(n)/2
/// (the binomial order-statistic interval). `None` with fewer than 10 samples.
pub fn median_interval_us(h: &RttHistogram) -> Option<(f64, f64)> {
    let n = h.count() as f64;
    if n < 10.0 {
        return None;
    }
    let half = Z95 * n.sqrt() / 2.0;
    let at = |rank: f64| h.quantile_ns((rank / n).clamp(0.0, 1.0)).map(|ns| ns as f64 / 1000.0);
    Some((at((n / 2.0 - half).max(1.0))?, at((n / 2.0 + half).min(n))?))
}

/// The difference of `value` to `base`, with a verdict from their samples.
pub fn delta(base: &Metric, value: &Metric) -> Delta {
    let difference = value.value - base.value;
    let percent = (base.value != 0.0).then(|| difference / base.value.abs() * 100.0);
    let interval = match (&base.samples, &value.samples) {
        _ if base.repetitions.len() >= 2 && value.repetitions.len() >= 2 => {
            repetitions_interval(&base.repetitions, &value.repetitions)
        }
        (Samples::Histogram(a), Samples::Histogram(b)) => median_difference_interval(a, b, difference),
        (Samples::Intervals(a), Samples::Intervals(b)) => welch_interval(a, b),
        _ => None,
    };
    let verdict = match interval {
        Some((low, high)) if low > 0.0 || high < 0.0 => Verdict::Real,
        Some(_) => Verdict::Noise,
        None => Verdict::Untested,
    };
    let better = (verdict == Verdict::Real).then_some((difference > 0.0) == value.higher_is_better);
    Delta { difference, percent, interval, verdict, better }
}

/// The 95 % interval of the difference of two medians: the difference -+ the root of the sum of the squared
/// half-widths of each median's interval, widened to the histograms' resolution (3 significant digits).
fn median_difference_interval(a: &RttHistogram, b: &RttHistogram, difference: f64) -> Option<(f64, f64)> {
    let (a_low, a_high) = median_interval_us(a)?;
    let (b_low, b_high) = median_interval_us(b)?;
    let resolution = a_high.max(b_high) * 1e-3;
    let half = (((a_high - a_low) / 2.0).powi(2) + ((b_high - b_low) / 2.0).powi(2)).sqrt() + resolution;
    Some((difference - half, difference + half))
}

/// Welch's 95 % interval of the difference of two means (`b - a`), normal approximation; `None` with fewer
/// than two samples on either side.
fn welch_interval(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    let stats = |x: &[f64]| {
        let n = x.len() as f64;
        let mean = x.iter().sum::<f64>() / n;
        let variance = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, variance / n)
    };
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let ((mean_a, var_a), (mean_b, var_b)) = (stats(a), stats(b));
    let half = Z95 * (var_a + var_b).sqrt();
    let difference = mean_b - mean_a;
    Some((difference - half, difference + half))
}

/// The 95 % interval of the difference of the mean of repetitions (`b - a`): Welch's interval with
/// Student's t at the Welch-Satterthwaite degrees of freedom, since a handful of runs is not a normal sample.
/// Two runs a side give a wide interval; it says how much the runs of one set differ among themselves,
/// which no sample inside one run can tell. `None` with fewer than two repetitions on either side.
fn repetitions_interval(a: &[f64], b: &[f64]) -> Option<(f64, f64)> {
    let stats = |x: &[f64]| {
        let n = x.len() as f64;
        let mean = x.iter().sum::<f64>() / n;
        let variance = x.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, variance / n, n)
    };
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let ((mean_a, se_a, n_a), (mean_b, se_b, n_b)) = (stats(a), stats(b));
    let se = se_a + se_b;
    let difference = mean_b - mean_a;
    if se == 0.0 {
        // Every repetition gave the same figure on both sides: a difference is exact, not noise.
        return Some((difference, difference));
    }
    let df = se * se / (se_a * se_a / (n_a - 1.0) + se_b * se_b / (n_b - 1.0));
    let half = t95(df) * se.sqrt();
    Some((difference - half, difference + half))
}

/// Student's t for a two-sided 95 % interval at `df` degrees of freedom (rounded down, which widens the
/// interval): exact table values to 30, then the normal z.
fn t95(df: f64) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    match df.floor() as usize {
        0 => TABLE[0],
        d if d <= 30 => TABLE[d - 1],
        _ => Z95,
    }
}

/// One row of a comparison: a figure of a subject in every run.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// What it is a figure of.
    pub subject: String,
    /// The figure.
    pub name: String,
    /// Its unit.
    pub unit: &'static str,
    /// Whether a larger value is better.
    #[serde(skip)]
    pub higher_is_better: bool,
    /// Its value in each run (`None`: that run has no such figure).
    pub values: Vec<Option<f64>>,
    /// The difference of each run to the baseline (`None` for the baseline itself, or a missing value).
    pub deltas: Vec<Option<Delta>>,
}

/// Matches the figures of `runs` and compares each with the figure of run `baseline` (an index).
pub fn compare(runs: &[&RunResult], baseline: usize) -> Vec<Row> {
    rows_of(runs.iter().map(|r| metrics(r)).collect(), baseline)
}

/// Rows of figures matched by subject and name across the runs (one list of metrics per run), each compared
/// with the baseline's.
fn rows_of(per_run: Vec<Vec<Metric>>, baseline: usize) -> Vec<Row> {
    let count = per_run.len();
    let mut rows: Vec<Row> = Vec::new();
    let mut samples: Vec<Vec<Option<Metric>>> = Vec::new();
    for (index, metrics) in per_run.into_iter().enumerate() {
        for metric in metrics {
            let at = rows.iter().position(|r| r.subject == metric.subject && r.name == metric.name);
            let at = at.unwrap_or_else(|| {
                rows.push(Row {
                    subject: metric.subject.clone(),
                    name: metric.name.clone(),
                    unit: metric.unit,
                    higher_is_better: metric.higher_is_better,
                    values: vec![None; count],
                    deltas: vec![None; count],
                });
                samples.push(vec![None; count]);
                rows.len() - 1
            });
            rows[at].values[index] = Some(metric.value);
            samples[at][index] = Some(metric);
        }
    }
    for (row, metrics) in rows.iter_mut().zip(&samples) {
        let Some(base) = &metrics[baseline] else { continue };
        for (index, metric) in metrics.iter().enumerate() {
            if let (Some(metric), true) = (metric, index != baseline) {
                row.deltas[index] = Some(delta(base, metric));
            }
        }
    }
    rows
}

/// A comparison of sets of runs (e.g. a whole suite before and after a change), matched test by test.
#[derive(Debug, Clone, Default)]
pub struct SetComparison {
    /// The figures of every test that each set ran, in the order the baseline set ran them.
    pub rows: Vec<Row>,
    /// Per test key: how many runs of it each set holds (repetitions are pooled).
    pub tests: Vec<(String, Vec<usize>)>,
}

/// Compares sets of runs (one set per label) test by test: runs of the same test with the same parameters
/// (every one of them) are matched across the sets, the repetitions of a test within a set are pooled ([`pooled_metrics`]),
/// and each matched figure is compared with the baseline set's. Two tests whose figures would read alike
/// (the same test with other parameters) are told apart by a `(#n)` after the subject.
pub fn compare_sets(sets: &[Vec<&RunResult>], baseline: usize) -> SetComparison {
    let mut keys: Vec<&crate::run_result::Parameters> = Vec::new();
    let order = std::iter::once(baseline).chain((0..sets.len()).filter(|&i| i != baseline));
    for set in order {
        for run in &sets[set] {
            if !keys.contains(&&run.parameters) {
                keys.push(&run.parameters);
            }
        }
    }
    let mut out = SetComparison::default();
    let mut subjects: Vec<String> = Vec::new();
    for (number, key) in keys.iter().enumerate() {
        let groups: Vec<Vec<&RunResult>> =
            sets.iter().map(|set| set.iter().copied().filter(|r| r.parameters == **key).collect()).collect();
        let mut rows = rows_of(groups.iter().map(|g| pooled_metrics(g)).collect(), baseline);
        for row in &mut rows {
            if subjects.contains(&row.subject) {
                row.subject = format!("{} (#{})", row.subject, number + 1);
            }
        }
        subjects.extend(rows.iter().map(|r| r.subject.clone()));
        out.tests.push((key.test_name().to_string(), groups.iter().map(Vec::len).collect()));
        out.rows.extend(rows);
    }
    out
}

/// The figures of repetitions of one test, pooled: each figure's value is the median of the runs' values,
/// its `repetitions` are those values (two or more on both sides of a comparison: the verdict comes from how
/// the runs differ among themselves, Welch with Student's t), and its samples are pooled too (histograms
/// merged, intervals joined) for a comparison with a side of one run. One run: its own figures.
pub fn pooled_metrics(runs: &[&RunResult]) -> Vec<Metric> {
    let mut pooled: Vec<(Metric, Vec<f64>)> = Vec::new();
    for run in runs {
        for metric in metrics(run) {
            match pooled.iter_mut().find(|(m, _)| m.subject == metric.subject && m.name == metric.name) {
                None => {
                    let value = metric.value;
                    pooled.push((metric, vec![value]));
                }
                Some((into, values)) => {
                    values.push(metric.value);
                    match (&mut into.samples, metric.samples) {
                        (Samples::Histogram(a), Samples::Histogram(b)) => a.merge(&b),
                        (Samples::Intervals(a), Samples::Intervals(b)) => a.extend(b),
                        _ => {}
                    }
                }
            }
        }
    }
    pooled
        .into_iter()
        .map(|(mut metric, values)| {
            if values.len() > 1 {
                metric.value = median(&values);
                metric.repetitions = values;
            }
            metric
        })
        .collect()
}

/// The median of `values` (the mean of the middle two for an even count); 0 for none.
fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A histogram of `n` round trips spread evenly (deterministically) over `center -+ spread` µs.
    fn spread(center_us: f64, spread_us: f64, n: u64, phase: f64) -> RttHistogram {
        let mut h = RttHistogram::new();
        for i in 0..n {
            // A low-discrepancy sequence: evenly spread, with a different offset per `phase`.
            let u = ((i as f64 + phase) * 0.618_033_988_75).fract();
            h.record(((center_us + (2.0 * u - 1.0) * spread_us) * 1000.0) as u64);
        }
        h
    }

    fn latency(h: RttHistogram) -> Metric {
        let value = h.quantile_ns(0.5).unwrap_or(0) as f64 / 1000.0;
        Metric {
            subject: "latency tcp 64 B".into(),
            name: "p50".into(),
            unit: "µs",
            value,
            higher_is_better: false,
            samples: Samples::Histogram(h),
            repetitions: Vec::new(),
        }
    }

    #[test]
    fn a_real_shift_of_the_median_is_flagged() {
        // 5 µs on a spread of -+20 µs, with 5000 samples a side: far outside the median's noise.
        let d = delta(&latency(spread(100.0, 20.0, 5000, 0.1)), &latency(spread(105.0, 20.0, 5000, 0.7)));
        assert_eq!(d.verdict, Verdict::Real, "{d:?}");
        assert_eq!(d.better, Some(false), "higher latency is worse");
        assert!((d.difference - 5.0).abs() < 0.5, "{d:?}");
    }

    #[test]
    fn samples_of_the_same_distribution_are_noise() {
        for (a, b) in [(0.1, 0.7), (0.3, 0.9), (0.5, 0.2)] {
            let d = delta(&latency(spread(100.0, 20.0, 5000, a)), &latency(spread(100.0, 20.0, 5000, b)));
            assert_eq!(d.verdict, Verdict::Noise, "{d:?}");
        }
        // A small shift among few, widely spread samples is noise too.
        let d = delta(&latency(spread(100.0, 50.0, 40, 0.1)), &latency(spread(103.0, 50.0, 40, 0.4)));
        assert_eq!(d.verdict, Verdict::Noise, "{d:?}");
    }

    #[test]
    fn the_median_interval_comes_from_order_statistics() {
        // 10 000 values 1..=10000 µs: ranks 5000 -+ 98 give 4902 and 5098 µs, as the histogram holds them:
        // to 3 significant digits, reported as the top of their bucket (up to 0.2 % above).
        let mut h = RttHistogram::new();
        (1..=10_000u64).for_each(|v| h.record(v * 1000));
        let (low, high) = median_interval_us(&h).unwrap();
        assert!((4902.0..=4902.0 * 1.002).contains(&low), "{low}");
        assert!((5098.0..=5098.0 * 1.002).contains(&high), "{high}");
        let mut few = RttHistogram::new();
        (1..=5u64).for_each(|v| few.record(v));
        assert_eq!(median_interval_us(&few), None);
    }

    #[test]
    fn goodputs_compare_by_welch_on_their_intervals() {
        let metric = |values: Vec<f64>| Metric {
            subject: "throughput tcp upload".into(),
            name: "goodput".into(),
            unit: "Mbit/s",
            value: values.iter().sum::<f64>() / values.len() as f64,
            higher_is_better: true,
            samples: Samples::Intervals(values),
            repetitions: Vec::new(),
        };
        let base = metric(vec![940.0, 941.0, 939.0, 940.5, 939.5]);
        let faster = delta(&base, &metric(vec![950.0, 951.0, 949.0, 950.5, 949.5]));
        assert_eq!((faster.verdict, faster.better), (Verdict::Real, Some(true)));
        let same = delta(&base, &metric(vec![939.0, 942.0, 938.0, 941.0, 940.0]));
        assert_eq!(same.verdict, Verdict::Noise);
        let one = delta(&base, &metric(vec![950.0]));
        assert_eq!(one.verdict, Verdict::Untested);
        assert!((one.percent.unwrap() - 10.0 / 940.0 * 100.0).abs() < 1e-9);
    }

    #[test]
    fn runs_are_matched_by_subject_and_figure() {
        let a = crate::fixture::latency_run();
        let mut b = crate::fixture::latency_run();
        b.series.truncate(3); // only the 64-byte size
        let rows = compare(&[&a, &b], 0);
        let p50: Vec<&Row> = rows.iter().filter(|r| r.name == "p50").collect();
        assert_eq!(p50.len(), 2, "64 B and 1 KiB");
        assert_eq!(p50[0].subject, "latency tcp 64 B");
        assert_eq!(p50[0].deltas[1].map(|d| d.difference), Some(0.0));
        assert_eq!(p50[1].subject, "latency tcp 1 KiB");
        assert_eq!(p50[1].values[1], None, "run b has no 1 KiB series");
        assert!(p50[0].deltas[0].is_none(), "no delta for the baseline");
        let sweep = compare(&[&crate::fixture::sweep_run()], 0);
        assert!(sweep.iter().any(|r| r.subject == "sweep udp upload 1472 B at 20 Mbit/s" && r.name == "loss"));
    }

    /// A latency run whose aggregate 64-byte series holds `n` round trips around `center_us`.
    fn latency_around(center_us: f64, n: u64, phase: f64) -> RunResult {
        let mut run = crate::fixture::latency_run();
        let counters = crate::run_result::SeriesCounters { lost: 0, late: 0, elapsed_s: 1.0, complete: true };
        run.series = vec![Series::new(Some(64), None, &spread(center_us, 10.0, n, phase), counters)];
        run
    }

    #[test]
    fn sets_are_matched_test_by_test_and_repetitions_pooled() {
        let throughput = crate::fixture::throughput_run();
        let before = [latency_around(100.0, 400, 0.1), throughput.clone()];
        // After: the throughput test first, the latency test twice and slower (105 µs), a sweep only here.
        let (slower_a, slower_b, sweep) =
            (latency_around(105.0, 400, 0.3), latency_around(105.0, 400, 0.6), crate::fixture::sweep_run());
        let after = [&throughput, &slower_a, &slower_b, &sweep];
        let compared = compare_sets(&[before.iter().collect(), after.to_vec()], 0);
        let tests: Vec<(&str, &[usize])> = compared.tests.iter().map(|(t, n)| (t.as_str(), n.as_slice())).collect();
        assert_eq!(tests, [("latency", &[1, 2][..]), ("throughput", &[1, 1][..]), ("sweep", &[0, 1][..])]);
        let p50 = compared.rows.iter().find(|r| r.subject == "latency tcp 64 B" && r.name == "p50").unwrap();
        let d = p50.deltas[1].unwrap();
        assert_eq!((d.verdict, d.better), (Verdict::Real, Some(false)), "{d:?}");
        assert!((p50.values[1].unwrap() - 105.0).abs() < 0.5, "the pooled median: {:?}", p50.values);
        let goodput = compared.rows.iter().find(|r| r.name == "goodput").unwrap();
        assert_eq!(goodput.deltas[1].map(|d| d.difference), Some(0.0), "the same throughput run on both sides");
        assert!(compared.rows.iter().any(|r| r.subject.starts_with("sweep") && r.values[0].is_none()));
    }

    #[test]
    fn pooled_repetitions_merge_their_samples() {
        let (a, b) = (latency_around(100.0, 300, 0.2), latency_around(110.0, 300, 0.4));
        let pooled = pooled_metrics(&[&a, &b]);
        let p50 = pooled.iter().find(|m| m.name == "p50").unwrap();
        let Samples::Histogram(h) = &p50.samples else { panic!("{p50:?}") };
        assert_eq!(h.count(), 600);
        let max = pooled.iter().find(|m| m.name == "max").unwrap();
        let maxima = [metrics(&a)[2].value, metrics(&b)[2].value];
        assert_eq!(max.value, (maxima[0] + maxima[1]) / 2.0, "a single figure: the median of the runs'");
        assert_eq!(pooled_metrics(&[&a]).len(), metrics(&a).len());
    }

    #[test]
    fn repetitions_on_both_sides_judge_by_how_runs_differ_among_themselves() {
        let runs = |centres: &[f64]| -> Vec<RunResult> {
            centres.iter().enumerate().map(|(i, &c)| latency_around(c, 2000, i as f64 * 0.3)).collect()
        };
        // Runs that each hold 2000 tight samples but differ from each other by +-10 %: a 3 % shift of the
        // median is inside the runs' own spread (noise), although each run's histogram would call it real.
        let (before, after) = (runs(&[90.0, 100.0, 110.0]), runs(&[93.0, 103.0, 113.0]));
        let sets = [before.iter().collect::<Vec<_>>(), after.iter().collect()];
        let p50 = compare_sets(&sets, 0).rows.into_iter().find(|r| r.name == "p50").unwrap();
        assert_eq!(p50.deltas[1].unwrap().verdict, Verdict::Noise, "{p50:?}");
        // Consistent runs (+-1 %) and a 10 % shift: real, and tails get a verdict too.
        let (before, after) = (runs(&[99.0, 100.0, 101.0]), runs(&[109.0, 110.0, 111.0]));
        let sets = [before.iter().collect::<Vec<_>>(), after.iter().collect()];
        let rows = compare_sets(&sets, 0).rows;
        for name in ["p50", "p99"] {
            let d = rows.iter().find(|r| r.name == name).unwrap().deltas[1].unwrap();
            assert_eq!((d.verdict, d.better), (Verdict::Real, Some(false)), "{name}: {d:?}");
        }
    }

    #[test]
    fn t_quantiles_widen_intervals_of_few_runs() {
        assert_eq!(t95(1.0), 12.706);
        assert_eq!(t95(2.7), 4.303, "rounded down");
        assert_eq!(t95(1000.0), Z95);
        let (low, high) = repetitions_interval(&[1.0, 3.0], &[2.0, 4.0]).unwrap();
        // Means 2 and 3, each standard error 1, so se = sqrt(2), df = 2: 1 -+ 4.303 * 1.414.
        assert!((low - (1.0 - 4.303 * 2f64.sqrt())).abs() < 1e-9 && (high - (1.0 + 4.303 * 2f64.sqrt())).abs() < 1e-9);
    }
}
