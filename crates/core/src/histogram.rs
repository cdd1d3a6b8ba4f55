//! `RttHistogram`: where round-trip times are recorded.
//!
//! Samples are nanoseconds. Percentiles come from an HDR histogram with 3 significant digits (a relative
//! error of at most 0.1 %, so 10 ns at 10 µs); count, min, max, mean and standard deviation are kept exactly
//! beside it, so that they carry no bucketing error. Two histograms merge exactly, which is how per-session
//! series become an aggregate. The histogram serialises in the standard HdrHistogram V2 compressed encoding
//! (base64 text), readable by every HdrHistogram implementation.

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

/// The largest value recorded: one hour. Longer samples are clamped and counted in `clamped`.
const HIGHEST_NS: u64 = 3_600_000_000_000;
/// The most samples a decoded histogram may hold: 2^48, about 9 years of round trips at 1 million per
/// second. More is not a measurement, and would let the exact sums overflow.
const MAX_DECODED_SAMPLES: u64 = 1 << 48;

/// Significant decimal digits kept by the histogram buckets.
const SIGNIFICANT_DIGITS: u8 = 3;

/// Why an encoded histogram could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HistogramError {
    /// The text is not valid base64.
    #[error("histogram is not valid base64: {0}")]
    Base64(#[from] base64::DecodeError),
    /// The bytes are not a valid HdrHistogram encoding.
    #[error("histogram encoding is invalid: {0:?}")]
    Encoding(hdrhistogram::serialization::DeserializeError),
    /// The counts are more than any run records (their sums would overflow): not a histogram of samples.
    #[error("histogram holds more samples than a run can record ({0} or more)")]
    TooManySamples(u64),
}

/// Round-trip times in nanoseconds, with exact moments beside the HDR buckets.
#[derive(Debug, Clone)]
pub struct RttHistogram {
    buckets: Histogram<u64>,
    count: u64,
    sum_ns: u128,
    sum_sq_ns: u128,
    min_ns: u64,
    max_ns: u64,
}

impl Default for RttHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl RttHistogram {
    /// An empty histogram.
    pub fn new() -> Self {
        // The bounds are constants that hdrhistogram accepts (low >= 1, high >= 2 * low, digits <= 5).
        #[allow(clippy::unwrap_used)]
        let buckets = Histogram::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS).unwrap();
        Self { buckets, count: 0, sum_ns: 0, sum_sq_ns: 0, min_ns: u64::MAX, max_ns: 0 }
    }

    /// Records one sample of `ns` nanoseconds (clamped to 1 ns .. 1 h for the buckets only).
    pub fn record(&mut self, ns: u64) {
        self.buckets.saturating_record(ns.clamp(1, HIGHEST_NS));
        self.count += 1;
        self.sum_ns += u128::from(ns);
        self.sum_sq_ns += u128::from(ns) * u128::from(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    /// Adds every sample of `other` to this histogram.
    pub fn merge(&mut self, other: &RttHistogram) {
        // Both histograms have the same bounds (they are built only by `new`), so adding cannot fail.
        #[allow(clippy::unwrap_used)]
        self.buckets.add(&other.buckets).unwrap();
        // Saturating: histograms decoded from files are bounded by `decode`, but a merge of many must not panic.
        self.count = self.count.saturating_add(other.count);
        self.sum_ns = self.sum_ns.saturating_add(other.sum_ns);
        self.sum_sq_ns = self.sum_sq_ns.saturating_add(other.sum_sq_ns);
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// Number of samples.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The smallest sample, exactly; `None` when empty.
    pub fn min_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min_ns)
    }

    /// The largest sample, exactly; `None` when empty.
    pub fn max_ns(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max_ns)
    }

    /// The arithmetic mean, exactly (up to f64 rounding); `None` when empty.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum_ns as f64 / self.count as f64)
    }

    /// The population standard deviation (divides by n), computed from exact integer sums.
    pub fn stddev_ns(&self) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        let n = u128::from(self.count);
        // n * sum(x^2) - (sum x)^2 is exact in u128 for any run shorter than years; fall back to f64 if not.
        let variance_times_n_sq = match (n.checked_mul(self.sum_sq_ns), self.sum_ns.checked_mul(self.sum_ns)) {
            (Some(a), Some(b)) => a.saturating_sub(b) as f64,
            _ => (n as f64) * (self.sum_sq_ns as f64) - (self.sum_ns as f64).powi(2),
        };
        Some((variance_times_n_sq.max(0.0)).sqrt() / n as f64)
    }

    /// The value at quantile `q` (0..=1) by the HdrHistogram method: the smallest recorded bucket such that at
    /// least `q` of all samples are at or below it, reported as that bucket's highest equivalent value, clamped
    /// into the exact [min, max]. `None` when empty.
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        (self.count > 0).then(|| self.buckets.value_at_quantile(q).clamp(self.min_ns, self.max_ns))
    }

    /// The buckets, in HdrHistogram's V2 compressed encoding, as base64.
    pub fn encode(&self) -> String {
        use base64::Engine;
        let mut bytes = Vec::new();
        // Serialising into a Vec cannot fail for a histogram built by `new`.
        #[allow(clippy::unwrap_used)]
        V2DeflateSerializer::new().serialize(&self.buckets, &mut bytes).unwrap();
        base64::engine::general_purpose::STANDARD.encode(bytes)
    }

    /// Reads buckets encoded by [`RttHistogram::encode`] (or any HdrHistogram V2 compressed encoding).
    ///
    /// The exact moments are not part of that encoding, so they are rebuilt from the buckets: min, max and
    /// mean then carry the histogram's 0.1 % resolution.
    pub fn decode(text: &str) -> Result<Self, HistogramError> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD.decode(text.trim())?;
        let decoded: Histogram<u64> =
            Deserializer::new().deserialize(&mut bytes.as_slice()).map_err(HistogramError::Encoding)?;
        let mut histogram = Self::new();
        for bucket in decoded.iter_recorded() {
            // Values beyond the histogram's range are clamped as `record` clamps them, and each stands for
            // the middle of *our* bucket (a foreign encoding may have other buckets), so the moments agree
            // with the buckets and a decoded histogram encodes and decodes to the same figures; counts
            // come from a file or a peer, so the sums are checked.
            let foreign = decoded.median_equivalent(bucket.value_iterated_to()).clamp(1, HIGHEST_NS);
            let value = histogram.buckets.median_equivalent(foreign).clamp(1, HIGHEST_NS);
            let n = bucket.count_at_value();
            histogram.count = histogram
                .count
                .checked_add(n)
                .filter(|&c| c <= MAX_DECODED_SAMPLES)
                .ok_or(HistogramError::TooManySamples(MAX_DECODED_SAMPLES))?;
            histogram.buckets.saturating_record_n(value, n);
            // With count <= 2^48 and value <= 3.6e12 ns, value^2 x n < 2^(2x42 + 48) = 2^132 could still
            // overflow u128 in principle; checked, it is an error rather than a wrong figure.
            let (value, n) = (u128::from(value), u128::from(n));
            let too_many = || HistogramError::TooManySamples(MAX_DECODED_SAMPLES);
            histogram.sum_ns =
                value.checked_mul(n).and_then(|s| histogram.sum_ns.checked_add(s)).ok_or_else(too_many)?;
            histogram.sum_sq_ns = value
                .checked_mul(value)
                .and_then(|v| v.checked_mul(n))
                .and_then(|s| histogram.sum_sq_ns.checked_add(s))
                .ok_or_else(too_many)?;
            histogram.min_ns = histogram.min_ns.min(value as u64);
            histogram.max_ns = histogram.max_ns.max(value as u64);
        }
        Ok(histogram)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(samples: &[u64]) -> RttHistogram {
        let mut h = RttHistogram::new();
        samples.iter().for_each(|&s| h.record(s));
        h
    }

    #[test]
    fn empty_histogram_has_no_statistics() {
        let h = RttHistogram::new();
        assert_eq!(h.count(), 0);
        assert_eq!(h.min_ns(), None);
        assert_eq!(h.mean_ns(), None);
        assert_eq!(h.quantile_ns(0.5), None);
    }

    #[test]
    fn moments_are_exact_known_answers() {
        // 2, 4, 4, 4, 5, 5, 7, 9 microseconds: mean 5 us, population stddev 2 us.
        let h = from(&[2_000, 4_000, 4_000, 4_000, 5_000, 5_000, 7_000, 9_000]);
        assert_eq!(h.count(), 8);
        assert_eq!(h.min_ns(), Some(2_000));
        assert_eq!(h.max_ns(), Some(9_000));
        assert_eq!(h.mean_ns(), Some(5_000.0));
        assert_eq!(h.stddev_ns(), Some(2_000.0));
    }

    #[test]
    fn quantiles_follow_the_hdr_method_within_resolution() {
        // 1..=1000 microseconds: the p50 is 500 us, the p90 900 us, the p99 990 us, within 0.1 %.
        let samples: Vec<u64> = (1..=1000).map(|us| us * 1_000).collect();
        let h = from(&samples);
        for (q, expected) in [(0.5, 500_000.0), (0.9, 900_000.0), (0.99, 990_000.0), (1.0, 1_000_000.0)] {
            let got = h.quantile_ns(q).unwrap_or_default() as f64;
            assert!((got - expected).abs() <= expected * 0.001, "q={q}: {got} vs {expected}");
        }
    }

    #[test]
    fn quantiles_never_leave_the_exact_range() {
        let h = from(&[12_345, 12_345, 12_345]);
        assert_eq!(h.quantile_ns(0.5), Some(12_345));
        assert_eq!(h.quantile_ns(1.0), Some(12_345));
    }

    #[test]
    fn merging_equals_recording_everything_in_one() {
        let mut a = from(&[1_000, 2_000, 3_000]);
        let b = from(&[10_000, 20_000]);
        a.merge(&b);
        let all = from(&[1_000, 2_000, 3_000, 10_000, 20_000]);
        assert_eq!(a.count(), all.count());
        assert_eq!(a.mean_ns(), all.mean_ns());
        assert_eq!(a.stddev_ns(), all.stddev_ns());
        assert_eq!(a.max_ns(), Some(20_000));
        assert_eq!(a.quantile_ns(0.5), all.quantile_ns(0.5));
    }

    #[test]
    fn encoding_round_trips_the_buckets() {
        let samples: Vec<u64> = (1..=500).map(|i| i * 777).collect();
        let h = from(&samples);
        let decoded = RttHistogram::decode(&h.encode()).expect("decodes");
        assert_eq!(decoded.count(), h.count());
        for q in [0.1, 0.5, 0.9, 0.99] {
            let (a, b) = (h.quantile_ns(q).unwrap_or(0) as f64, decoded.quantile_ns(q).unwrap_or(0) as f64);
            assert!((a - b).abs() <= a * 0.002, "q={q}: {a} vs {b}");
        }
    }

    #[test]
    fn garbage_encodings_are_errors_not_panics() {
        assert!(RttHistogram::decode("not base64 !!").is_err());
        assert!(RttHistogram::decode("AAAA").is_err());
    }

    #[test]
    fn decoding_an_implausible_count_is_an_error_not_a_panic() {
        let mut h = Histogram::<u64>::new_with_bounds(1, HIGHEST_NS, SIGNIFICANT_DIGITS).unwrap();
        h.record_n(HIGHEST_NS, u64::MAX / 2).unwrap();
        h.record_n(1, u64::MAX / 4).unwrap();
        let mut bytes = Vec::new();
        V2DeflateSerializer::new().serialize(&h, &mut bytes).unwrap();
        use base64::Engine;
        let text = base64::engine::general_purpose::STANDARD.encode(bytes);
        assert!(matches!(RttHistogram::decode(&text), Err(HistogramError::TooManySamples(_))));
    }

    #[test]
    fn the_fuzzers_overflowing_inputs_decode_to_an_error_or_a_value() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/findings/histogram");
        for entry in std::fs::read_dir(dir).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            if let Ok(h) = RttHistogram::decode(&String::from_utf8_lossy(&bytes)) {
                let _ = (h.mean_ns(), h.stddev_ns(), h.quantile_ns(0.99));
            }
        }
    }
}
