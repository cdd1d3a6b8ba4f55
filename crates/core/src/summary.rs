//! `LatencySummary`: the figures reported for one series of round trips.
//!
//! Every figure is defined in docs/metrics.md. All times are round-trip times in microseconds (never half of
//! one presented as a one-way latency).

use serde::{Deserialize, Serialize};

use crate::histogram::RttHistogram;

/// Count, extremes, moments and percentiles of a series, in microseconds of round-trip time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencySummary {
    /// Number of timed round trips (warm-up excluded).
    pub count: u64,
    /// Smallest round trip, exact.
    pub min_us: f64,
    /// Arithmetic mean, exact.
    pub mean_us: f64,
    /// Population standard deviation, exact.
    pub stddev_us: f64,
    /// Median ("typ"), HDR histogram method, within 0.1 %.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest round trip, exact.
    pub max_us: f64,
}

impl LatencySummary {
    /// Summarises a histogram; `None` when it holds no samples.
    pub fn from_histogram(h: &RttHistogram) -> Option<Self> {
        let us = |ns: u64| ns as f64 / 1_000.0;
        let q = |q: f64| h.quantile_ns(q).map(us);
        Some(Self {
            count: h.count(),
            min_us: us(h.min_ns()?),
            mean_us: h.mean_ns()? / 1_000.0,
            stddev_us: h.stddev_ns()? / 1_000.0,
            p50_us: q(0.50)?,
            p90_us: q(0.90)?,
            p99_us: q(0.99)?,
            p999_us: q(0.999)?,
            max_us: us(h.max_ns()?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_reports_microseconds_of_round_trip() {
        let mut h = RttHistogram::new();
        for ns in [10_000, 20_000, 30_000, 40_000] {
            h.record(ns);
        }
        let s = LatencySummary::from_histogram(&h).expect("non-empty");
        assert_eq!(s.count, 4);
        assert_eq!(s.min_us, 10.0);
        assert_eq!(s.max_us, 40.0);
        assert_eq!(s.mean_us, 25.0);
        assert!((s.stddev_us - 11.180_339_887).abs() < 1e-6);
        assert!((s.p50_us - 20.0).abs() <= 0.02, "p50 {}", s.p50_us);
        assert!((s.p999_us - 40.0).abs() <= 0.04, "p99.9 {}", s.p999_us);
    }

    #[test]
    fn empty_series_has_no_summary() {
        assert_eq!(LatencySummary::from_histogram(&RttHistogram::new()), None);
    }
}
