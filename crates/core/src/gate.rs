//! Gates: conditions on a run's figures that fail a pipeline when they hold (`--fail-if 'p99 > 2ms'`),
//! and the regressions of a comparison (`compare --fail-if-worse`).
//!
//! A condition names a figure, an operator and a threshold typed in the figure's own kind of unit (a time
//! for round trips, a bit rate for goodput and rates, a percentage for loss). It applies to every subject of
//! the run that has that figure (every message size of a latency test, every flow of a throughput test):
//! it fails when any of them meets it, and when none has the figure at all, since a gate that cannot be
//! checked must not pass silently. Pure: no I/O.

use std::fmt;

use crate::compare::{Row, Verdict};
use crate::units::{self, OfferedRate};
use crate::RunResult;

/// A figure a gate can test, as the user names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateFigure {
    /// Smallest round trip (or connection time).
    Min,
    /// Mean round trip.
    Mean,
    /// Median round trip (`typ`, `median`).
    P50,
    /// 90th percentile.
    P90,
    /// 99th percentile.
    P99,
    /// 99.9th percentile.
    P999,
    /// Largest round trip.
    Max,
    /// Receiver goodput of a flow, payload bits per second.
    Goodput,
    /// UDP loss, percent of datagrams sent.
    Loss,
    /// UDP interarrival jitter (RFC 3550).
    Jitter,
    /// RFC 2544 zero-loss rate of a rate search, payload bits per second.
    ZeroLoss,
    /// Sustainable rate of a rate search (no loss, no queue growth), payload bits per second.
    Sustainable,
    /// Longest whole burst (typical over the searches), datagrams.
    Burst,
}

/// The kind of unit a figure is measured and typed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Microseconds; typed as a duration (`2ms`, `150us`).
    Time,
    /// Bits per second; typed as a rate (`900M`, `250kbit/s`).
    Rate,
    /// Percent; typed as `0.1` or `0.1%`.
    Percent,
    /// A count.
    Count,
}

impl GateFigure {
    const ALL: [(GateFigure, &'static [&'static str]); 13] = [
        (GateFigure::Min, &["min"]),
        (GateFigure::Mean, &["mean"]),
        (GateFigure::P50, &["p50", "typ", "median"]),
        (GateFigure::P90, &["p90"]),
        (GateFigure::P99, &["p99"]),
        (GateFigure::P999, &["p99.9", "p999"]),
        (GateFigure::Max, &["max"]),
        (GateFigure::Goodput, &["goodput"]),
        (GateFigure::Loss, &["loss"]),
        (GateFigure::Jitter, &["jitter"]),
        (GateFigure::ZeroLoss, &["zero-loss"]),
        (GateFigure::Sustainable, &["sustainable"]),
        (GateFigure::Burst, &["burst"]),
    ];

    /// The names a gate accepts, for help texts and errors.
    pub const NAMES: &'static str =
        "min, mean, p50 (typ), p90, p99, p99.9, max, goodput, loss, jitter, zero-loss, sustainable, burst";

    fn parse(name: &str) -> Option<Self> {
        let name = name.trim().to_ascii_lowercase();
        Self::ALL.iter().find(|(_, names)| names.contains(&name.as_str())).map(|(f, _)| *f)
    }

    /// The figure's name as printed.
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(f, _)| *f == self).map_or("", |(_, names)| names[0])
    }

    fn kind(self) -> Kind {
        match self {
            GateFigure::Min
            | GateFigure::Mean
            | GateFigure::P50
            | GateFigure::P90
            | GateFigure::P99
            | GateFigure::P999
            | GateFigure::Max
            | GateFigure::Jitter => Kind::Time,
            GateFigure::Goodput | GateFigure::ZeroLoss | GateFigure::Sustainable => Kind::Rate,
            GateFigure::Loss => Kind::Percent,
            GateFigure::Burst => Kind::Count,
        }
    }

    /// Every value of this figure in `run`, with its subject (the same subjects `compare` shows).
    fn values(self, run: &RunResult) -> Vec<(String, f64)> {
        let test = run.parameters.test_name();
        let proto = run.parameters.proto().name();
        let mut out = Vec::new();
        for s in run.series.iter().filter(|s| s.session.is_none()) {
            let Some(m) = &s.summary else { continue };
            let value = match self {
                GateFigure::Min => m.min_us,
                GateFigure::Mean => m.mean_us,
                GateFigure::P50 => m.p50_us,
                GateFigure::P90 => m.p90_us,
                GateFigure::P99 => m.p99_us,
                GateFigure::P999 => m.p999_us,
                GateFigure::Max => m.max_us,
                _ => continue,
            };
            out.push((format!("{test} {proto} {}", crate::compare::series_subject(s)), value));
        }
        for s in run.throughput.iter().filter(|s| s.stream.is_none()) {
            let udp = s.udp.as_ref();
            let value = match self {
                GateFigure::Goodput => s.receiver_bps,
                GateFigure::Loss => udp.and_then(|u| u.loss_percent),
                GateFigure::Jitter => udp.map(|u| u.jitter_us),
                _ => None,
            };
            if let Some(value) = value {
                out.push((format!("{test} {proto} {}", crate::compare::throughput_subject(run, s)), value));
            }
        }
        for r in &run.rate_search {
            let value = match self {
                GateFigure::ZeroLoss => r.rate_bps,
                GateFigure::Sustainable => r.sustainable_bps,
                _ => None,
            };
            if let Some(value) = value {
                out.push((
                    format!("{test} udp {}", crate::compare::datagram_subject(r.frame_bytes, r.payload_bytes)),
                    value,
                ));
            }
        }
        for b in run.bursts.iter().filter(|_| self == GateFigure::Burst) {
            if let Some(typ) = b.typ {
                out.push((
                    format!("{test} udp {}", crate::compare::datagram_subject(b.frame_bytes, b.payload_bytes)),
                    typ as f64,
                ));
            }
        }
        out
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Greater,
    /// `>=`
    GreaterOrEqual,
    /// `<`
    Less,
    /// `<=`
    LessOrEqual,
}

impl Op {
    fn holds(self, value: f64, threshold: f64) -> bool {
        match self {
            Op::Greater => value > threshold,
            Op::GreaterOrEqual => value >= threshold,
            Op::Less => value < threshold,
            Op::LessOrEqual => value <= threshold,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Op::Greater => ">",
            Op::GreaterOrEqual => ">=",
            Op::Less => "<",
            Op::LessOrEqual => "<=",
        }
    }
}

/// Why a condition could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// No operator.
    #[error("'{0}' has no comparison: write FIGURE OP VALUE, e.g. 'p99 > 2ms', 'goodput < 900M', 'loss > 0'")]
    NoOperator(String),
    /// An unknown figure.
    #[error("unknown figure '{figure}' in '{text}' (one of: {names})", names = GateFigure::NAMES)]
    UnknownFigure {
        /// The figure as typed.
        figure: String,
        /// The whole condition.
        text: String,
    },
    /// A threshold that is not a value of the figure's kind.
    #[error("'{value}' in '{text}' is not {expected}")]
    BadValue {
        /// The value as typed.
        value: String,
        /// The whole condition.
        text: String,
        /// What the figure takes.
        expected: &'static str,
    },
}

/// One condition: when it holds for any subject of a run, the run fails its gate.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// The figure tested.
    pub figure: GateFigure,
    /// How it is compared.
    pub op: Op,
    /// The threshold in the figure's base unit: µs, bit/s, percent or a count.
    pub threshold: f64,
}

impl std::str::FromStr for Condition {
    type Err = GateError;

    /// Reads `FIGURE OP VALUE`, spaces optional: `p99 > 2ms`, `goodput<900M`, `loss >= 0.1%`.
    fn from_str(text: &str) -> Result<Self, GateError> {
        let at = text.find(['<', '>']).ok_or_else(|| GateError::NoOperator(text.into()))?;
        let (figure_text, rest) = text.split_at(at);
        let (op, value_text) = match (rest.as_bytes()[0], rest[1..].strip_prefix('=')) {
            (b'>', Some(v)) => (Op::GreaterOrEqual, v),
            (b'>', None) => (Op::Greater, &rest[1..]),
            (_, Some(v)) => (Op::LessOrEqual, v),
            (_, None) => (Op::Less, &rest[1..]),
        };
        let figure = GateFigure::parse(figure_text)
            .ok_or_else(|| GateError::UnknownFigure { figure: figure_text.trim().into(), text: text.into() })?;
        let value_text = value_text.trim();
        let bad = |expected| GateError::BadValue { value: value_text.into(), text: text.into(), expected };
        let threshold = match figure.kind() {
            Kind::Time => units::parse_duration(value_text)
                .map(|d| d.as_secs_f64() * 1e6)
                .map_err(|_| bad("a time such as 2ms, 150us or 1.5s"))?,
            Kind::Rate if is_zero(value_text) => 0.0,
            Kind::Rate => match units::parse_rate(value_text) {
                Ok(OfferedRate::BitsPerSecond(bps)) => bps,
                _ => return Err(bad("a bit rate such as 900M, 250k or 9600 (bits per second)")),
            },
            Kind::Percent => value_text
                .trim_end_matches('%')
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|p| (0.0..=100.0).contains(p))
                .ok_or_else(|| bad("a percentage from 0 to 100, such as 0 or 0.1%"))?,
            Kind::Count => {
                value_text.parse::<u64>().map(|c| c as f64).map_err(|_| bad("a whole number of datagrams"))?
            }
        };
        Ok(Condition { figure, op, threshold })
    }
}

fn is_zero(text: &str) -> bool {
    text.parse::<f64>().is_ok_and(|v| v == 0.0)
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.figure.name(), self.op.symbol(), format_value(self.figure.kind(), self.threshold))
    }
}

/// A figure in its kind's unit for people: `2.31 ms`, `943 Mbit/s`, `0.12 %`.
fn format_value(kind: Kind, value: f64) -> String {
    match kind {
        Kind::Time if value >= 1e6 => format!("{} s", units::format_significant(value / 1e6)),
        Kind::Time if value >= 1e3 => format!("{} ms", units::format_significant(value / 1e3)),
        Kind::Time => format!("{} µs", units::format_significant(value)),
        Kind::Rate => units::format_bit_rate(value),
        Kind::Percent => format!("{} %", units::format_significant(value)),
        Kind::Count => format!("{value}"),
    }
}

/// A condition that failed a run.
#[derive(Debug, Clone, PartialEq)]
pub enum GateFailure {
    /// The condition holds for a subject: `p99 of latency tcp 64 B is 2.31 ms (> 2 ms)`.
    Met {
        /// The condition.
        condition: Condition,
        /// What the figure belongs to.
        subject: String,
        /// Its value, in the figure's base unit.
        value: f64,
    },
    /// The run has no such figure, so the gate could not be checked.
    Missing {
        /// The condition.
        condition: Condition,
    },
}

impl fmt::Display for GateFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GateFailure::Met { condition, subject, value } => write!(
                f,
                "{} of {subject} is {} ({} {})",
                condition.figure.name(),
                format_value(condition.figure.kind(), *value),
                condition.op.symbol(),
                format_value(condition.figure.kind(), condition.threshold)
            ),
            GateFailure::Missing { condition } => {
                write!(f, "'{condition}' cannot be checked: this run has no {} figure", condition.figure.name())
            }
        }
    }
}

/// The conditions of `conditions` that `run` meets (each subject that meets one is a failure), and those
/// it cannot be checked against. Empty: the run passes its gates.
pub fn check(conditions: &[Condition], run: &RunResult) -> Vec<GateFailure> {
    let mut failures = Vec::new();
    for condition in conditions {
        let values = condition.figure.values(run);
        if values.is_empty() {
            failures.push(GateFailure::Missing { condition: condition.clone() });
        }
        failures.extend(
            values
                .into_iter()
                .filter(|(_, v)| condition.op.holds(*v, condition.threshold))
                .map(|(subject, value)| GateFailure::Met { condition: condition.clone(), subject, value }),
        );
    }
    failures
}

/// As [`check`], over a set of runs (a suite): each condition fails for every subject of every run that
/// meets it, and as missing only when no run has the figure at all.
pub fn check_all(conditions: &[Condition], runs: &[&RunResult]) -> Vec<GateFailure> {
    let mut failures = Vec::new();
    for condition in conditions {
        let per_run: Vec<Vec<GateFailure>> =
            runs.iter().map(|run| check(std::slice::from_ref(condition), run)).collect();
        let missing = |f: &GateFailure| matches!(f, GateFailure::Missing { .. });
        if per_run.iter().all(|f| f.iter().any(missing)) {
            failures.push(GateFailure::Missing { condition: condition.clone() });
        } else {
            failures.extend(per_run.into_iter().flatten().filter(|f| !missing(f)));
        }
    }
    failures
}

/// A figure of a comparison that got worse.
#[derive(Debug, Clone, PartialEq)]
pub struct Regression {
    /// What it is a figure of.
    pub subject: String,
    /// The figure.
    pub name: String,
    /// Its unit.
    pub unit: &'static str,
    /// The baseline's value.
    pub baseline: f64,
    /// The worse value.
    pub value: f64,
    /// The change in percent of the baseline, when the baseline is not zero.
    pub percent: Option<f64>,
    /// Whether the difference exceeds the noise of the measurement (`Real`) or could not be tested.
    pub verdict: Verdict,
}

impl fmt::Display for Regression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (b, v) = (units::format_significant(self.baseline), units::format_significant(self.value));
        write!(f, "{} of {}: {b} -> {v} {}", self.name, self.subject, self.unit)?;
        if let Some(p) = self.percent {
            write!(f, " ({p:+.1} %)")?;
        }
        match self.verdict {
            Verdict::Real => write!(f, ", beyond the noise"),
            _ => write!(f, ", a single figure (no noise estimate)"),
        }
    }
}

/// The figures of a comparison that got worse than the baseline (run `baseline`):
/// - without `by_percent`: those whose change the comparison calls real (its 95 % interval excludes zero);
///   figures with no samples to tell (tail percentiles, loss, searched rates) are not gated;
/// - with `by_percent`: those worse by more than that many percent of the baseline, when the change is real
///   or cannot be tested (a single figure worse by more than the margin fails).
pub fn regressions(rows: &[Row], baseline: usize, by_percent: Option<f64>) -> Vec<Regression> {
    let mut out = Vec::new();
    for row in rows {
        let Some(base) = row.values.get(baseline).copied().flatten() else { continue };
        for (value, delta) in row.values.iter().zip(&row.deltas) {
            let (Some(value), Some(delta)) = (value, delta) else { continue };
            let worse = match delta.verdict {
                Verdict::Real => delta.better == Some(false),
                Verdict::Untested => by_percent.is_some() && is_worse(row, base, *value),
                Verdict::Noise => false,
            };
            let beyond_margin = match (by_percent, delta.percent) {
                (Some(margin), Some(percent)) => percent.abs() > margin,
                // A change from a zero baseline (e.g. no loss to some loss) is beyond any margin.
                (Some(_), None) => *value != base,
                (None, _) => true,
            };
            if worse && beyond_margin {
                out.push(Regression {
                    subject: row.subject.clone(),
                    name: row.name.clone(),
                    unit: row.unit,
                    baseline: base,
                    value: *value,
                    percent: delta.percent,
                    verdict: delta.verdict,
                });
            }
        }
    }
    out
}

/// Whether `value` is worse than `base` for the row's figure (larger is better only for rates and bursts).
fn is_worse(row: &Row, base: f64, value: f64) -> bool {
    if row.higher_is_better {
        value < base
    } else {
        value > base
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{compare, Delta};
    use crate::run_result::SeriesCounters;

    /// A latency run with one aggregate series per `(size, centre µs)`: 1000 round trips spread evenly
    /// over the centre -+ 10 %.
    fn latency_run(sizes: &[(u64, f64)]) -> RunResult {
        let mut run = crate::fixture::latency_run();
        let counters = SeriesCounters { lost: 0, late: 0, elapsed_s: 1.0, complete: true };
        run.series = sizes
            .iter()
            .map(|&(size, centre_us)| {
                let mut h = crate::RttHistogram::new();
                for i in 0..1000u64 {
                    let u = (i as f64 * 0.618_033_988_75).fract();
                    h.record((centre_us * (0.9 + 0.2 * u) * 1000.0) as u64);
                }
                crate::Series::new(Some(size), None, &h, counters)
            })
            .collect();
        run
    }

    fn condition(text: &str) -> Condition {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn conditions_read_their_figures_units() {
        let c = condition("p99 > 2ms");
        assert_eq!((c.figure, c.op, c.threshold), (GateFigure::P99, Op::Greater, 2000.0));
        let c = condition("goodput<900M");
        assert_eq!((c.figure, c.op, c.threshold), (GateFigure::Goodput, Op::Less, 900e6));
        let c = condition(" loss >= 0.1% ");
        assert_eq!((c.figure, c.op, c.threshold), (GateFigure::Loss, Op::GreaterOrEqual, 0.1));
        let c = condition("typ <= 150us");
        assert_eq!((c.figure, c.op, c.threshold), (GateFigure::P50, Op::LessOrEqual, 150.0));
        assert_eq!(condition("zero-loss < 250kbit/s").threshold, 250e3);
        assert_eq!(condition("goodput < 0").threshold, 0.0);
        assert_eq!(condition("burst < 64").threshold, 64.0);
        assert_eq!(condition("p99.9 > 1s").to_string(), "p99.9 > 1 s");
    }

    #[test]
    fn bad_conditions_say_what_is_wrong() {
        assert!(matches!("p99 2ms".parse::<Condition>(), Err(GateError::NoOperator(_))));
        assert!(matches!("p98 > 2ms".parse::<Condition>(), Err(GateError::UnknownFigure { .. })));
        assert!(matches!("p99 > 900M".parse::<Condition>(), Err(GateError::BadValue { .. })));
        assert!(matches!("goodput < 2ms".parse::<Condition>(), Err(GateError::BadValue { .. })));
        assert!(matches!("goodput < 10kpps".parse::<Condition>(), Err(GateError::BadValue { .. })));
        assert!(matches!("loss > 101".parse::<Condition>(), Err(GateError::BadValue { .. })));
        assert!(matches!("burst > 1.5".parse::<Condition>(), Err(GateError::BadValue { .. })));
        let text = "p98 > 2ms".parse::<Condition>().unwrap_err().to_string();
        assert!(text.contains("p99"), "the error lists the figures: {text}");
    }

    #[test]
    fn a_condition_fails_each_subject_that_meets_it() {
        let run = latency_run(&[(64, 100.0), (1024, 300.0)]);
        assert!(check(&[condition("p50 > 1ms")], &run).is_empty());
        let failures = check(&[condition("p50 > 200us")], &run);
        assert_eq!(failures.len(), 1, "{failures:?}");
        let GateFailure::Met { subject, value, .. } = &failures[0] else { panic!("{failures:?}") };
        assert!(subject.contains("1 KiB"), "{subject}");
        assert!((value - 300.0).abs() < 1.0, "{value}");
        assert!(failures[0].to_string().starts_with("p50 of latency tcp 1 KiB is 30"), "{}", failures[0]);
    }

    #[test]
    fn a_figure_the_run_lacks_fails_its_gate() {
        let run = latency_run(&[(64, 100.0)]);
        let failures = check(&[condition("goodput < 1M")], &run);
        assert!(matches!(failures.as_slice(), [GateFailure::Missing { .. }]), "{failures:?}");
    }

    #[test]
    fn across_a_suite_a_figure_counts_where_a_run_has_it() {
        let (fast, slow) = (latency_run(&[(64, 100.0)]), latency_run(&[(64, 300.0)]));
        let throughput = crate::fixture::throughput_run();
        let runs = [&fast, &throughput, &slow];
        let failures = check_all(&[condition("p50 > 200us")], &runs);
        assert!(matches!(failures.as_slice(), [GateFailure::Met { value, .. }] if *value > 250.0), "{failures:?}");
        assert!(check_all(&[condition("p50 > 1s")], &runs).is_empty(), "the throughput run lacking p50 is no failure");
        let missing = check_all(&[condition("zero-loss < 1M")], &runs);
        assert!(matches!(missing.as_slice(), [GateFailure::Missing { .. }]), "{missing:?}");
    }

    fn row(higher_is_better: bool, values: [f64; 2], delta: Delta) -> Row {
        Row {
            subject: "s".into(),
            name: "n".into(),
            unit: "µs",
            higher_is_better,
            values: vec![Some(values[0]), Some(values[1])],
            deltas: vec![None, Some(delta)],
        }
    }

    fn delta(verdict: Verdict, better: Option<bool>, percent: f64) -> Delta {
        Delta { difference: 0.0, percent: Some(percent), interval: None, verdict, better }
    }

    #[test]
    fn only_worse_changes_beyond_noise_and_margin_regress() {
        let real_worse = row(false, [100.0, 110.0], delta(Verdict::Real, Some(false), 10.0));
        let real_better = row(false, [100.0, 90.0], delta(Verdict::Real, Some(true), -10.0));
        let noise = row(false, [100.0, 130.0], delta(Verdict::Noise, None, 30.0));
        let untested_worse = row(false, [100.0, 120.0], delta(Verdict::Untested, None, 20.0));
        let rows = [real_worse, real_better, noise, untested_worse];
        let names = |r: Vec<Regression>| r.into_iter().map(|r| r.value).collect::<Vec<_>>();
        assert_eq!(names(regressions(&rows, 0, None)), [110.0]);
        assert_eq!(names(regressions(&rows, 0, Some(5.0))), [110.0, 120.0]);
        assert_eq!(names(regressions(&rows, 0, Some(15.0))), [120.0]);
        assert!(regressions(&rows, 0, Some(50.0)).is_empty());
    }

    #[test]
    fn a_slower_run_regresses_against_its_baseline() {
        let fast = latency_run(&[(64, 100.0)]);
        let slow = latency_run(&[(64, 150.0)]);
        let rows = compare(&[&fast, &slow], 0);
        let found = regressions(&rows, 0, None);
        assert!(found.iter().any(|r| r.name == "p50" && r.verdict == Verdict::Real), "{found:?}");
        assert!(regressions(&compare(&[&slow, &fast], 0), 0, None).is_empty(), "faster is no regression");
    }
}
