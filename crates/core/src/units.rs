//! Parsing of the quantities users type: message sizes, durations and rates.
//!
//! Conventions (documented in docs/metrics.md):
//! - sizes are bytes, and their suffixes are binary: `1k` = `1KiB` = 1024 bytes, `1M` = 1 MiB;
//! - durations take `ns`, `us`, `ms`, `s`, `m`, `h`; a bare number is seconds;
//! - per-second rates take decimal suffixes: `10k` = 10 000 per second.
//!
//! This module only parses and formats; it does not decide what a value means for a test.

use std::time::Duration;

/// Why a quantity could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnitError {
    /// The text is empty.
    #[error("empty value")]
    Empty,
    /// The number part is not a number.
    #[error("'{0}' is not a number")]
    NotANumber(String),
    /// The suffix is not one this quantity accepts.
    #[error("unknown unit '{unit}' in '{text}' (expected one of: {expected})")]
    UnknownUnit {
        /// The suffix that was given.
        unit: String,
        /// The whole text.
        text: String,
        /// The accepted suffixes.
        expected: &'static str,
    },
    /// The value does not fit, or is negative or not finite.
    #[error("'{0}' is out of range")]
    OutOfRange(String),
}

/// Parses a size in bytes: `64`, `1k`, `16KiB`, `1M`, `1.5k` (binary multiples).
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let (number, unit) = split_number(text)?;
    let multiplier: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(unknown(unit, text, "B, k, KiB, M, MiB, G, GiB")),
    };
    let bytes = number * multiplier;
    if bytes.fract() != 0.0 || bytes > u64::MAX as f64 {
        return Err(UnitError::OutOfRange(text.to_string()));
    }
    Ok(bytes as u64)
}

/// Parses a comma-separated list of sizes: `1,64,256,1k`.
pub fn parse_size_list(text: &str) -> Result<Vec<u64>, UnitError> {
    text.split(',').map(|part| parse_size(part.trim())).collect()
}

/// Parses a duration: `500ms`, `10s`, `2m`, `250us`, or a bare number of seconds.
pub fn parse_duration(text: &str) -> Result<Duration, UnitError> {
    let (number, unit) = split_number(text)?;
    let seconds_per_unit = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "" | "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(unknown(unit, text, "ns, us, ms, s, m, h")),
    };
    Duration::try_from_secs_f64(number * seconds_per_unit).map_err(|_| UnitError::OutOfRange(text.to_string()))
}

/// Parses a count per second with decimal multiples: `500`, `10k`, `1.5M`.
pub fn parse_per_second(text: &str) -> Result<f64, UnitError> {
    let (number, unit) = split_number(text)?;
    let multiplier = match unit {
        "" => 1.0,
        "k" | "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        _ => return Err(unknown(unit, text, "k, M, G")),
    };
    let value = number * multiplier;
    if value <= 0.0 || !value.is_finite() {
        return Err(UnitError::OutOfRange(text.to_string()));
    }
    Ok(value)
}

/// An offered rate, as typed: bits per second, or datagrams per second.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OfferedRate {
    /// Bits per second of UDP payload.
    BitsPerSecond(f64),
    /// Datagrams per second.
    PacketsPerSecond(f64),
}

impl OfferedRate {
    /// The rate in bits per second of payload for datagrams of `size_bytes`.
    pub fn bps_for(self, size_bytes: u64) -> f64 {
        match self {
            OfferedRate::BitsPerSecond(bps) => bps,
            OfferedRate::PacketsPerSecond(pps) => pps * size_bytes as f64 * 8.0,
        }
    }
}

/// Parses a rate: `100M` or `100Mbit` (bits per second, decimal multiples k, M, G), or `10kpps`
/// (datagrams per second).
pub fn parse_rate(text: &str) -> Result<OfferedRate, UnitError> {
    let trimmed = text.trim();
    let (number, packets) = match trimmed.strip_suffix("pps") {
        Some(rest) => (rest, true),
        None => (trimmed.trim_end_matches("bit/s").trim_end_matches("bps").trim_end_matches("bit"), false),
    };
    let value = parse_per_second(number).map_err(|e| match e {
        UnitError::UnknownUnit { unit, .. } => {
            UnitError::UnknownUnit { unit, text: text.to_string(), expected: "k, M, G, then bit/s or pps" }
        }
        other => other,
    })?;
    Ok(if packets { OfferedRate::PacketsPerSecond(value) } else { OfferedRate::BitsPerSecond(value) })
}

/// Formats a byte count the way sizes are typed: `64`, `1k`, `64k`, `1M` when exact, else bytes.
pub fn format_size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    match bytes {
        b if b >= KIB * KIB && b % (KIB * KIB) == 0 => format!("{}M", b / (KIB * KIB)),
        b if b >= KIB && b % KIB == 0 => format!("{}k", b / KIB),
        b => b.to_string(),
    }
}

/// Formats a length of time for people: `45 s`, `3 min 20 s`, `1 h 5 min` (whole seconds, rounded up).
pub fn format_seconds(seconds: f64) -> String {
    let total = seconds.max(0.0).ceil() as u64;
    match (total / 3600, total % 3600 / 60, total % 60) {
        (0, 0, s) => format!("{s} s"),
        (0, m, 0) => format!("{m} min"),
        (0, m, s) => format!("{m} min {s} s"),
        (h, m, _) => format!("{h} h {m} min"),
    }
}

/// A unit in which a table shows a rate: decimal bit rates, or bytes per second in the decimal (MB, 10^6)
/// or binary (MiB, 2^20) megabytes that some studies used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RateUnit {
    /// bit/s.
    BitPerSecond,
    /// kbit/s, 10^3 bit/s.
    KilobitPerSecond,
    /// Mbit/s, 10^6 bit/s.
    MegabitPerSecond,
    /// Gbit/s, 10^9 bit/s.
    GigabitPerSecond,
    /// MB/s, 10^6 bytes per second.
    MegabytePerSecond,
    /// MiB/s, 2^20 bytes per second.
    MebibytePerSecond,
}

impl RateUnit {
    /// Every unit, as a profile or a table names it.
    pub const ALL: [RateUnit; 6] = [
        RateUnit::BitPerSecond,
        RateUnit::KilobitPerSecond,
        RateUnit::MegabitPerSecond,
        RateUnit::GigabitPerSecond,
        RateUnit::MegabytePerSecond,
        RateUnit::MebibytePerSecond,
    ];

    /// Its name: `bit/s`, `kbit/s`, `Mbit/s`, `Gbit/s`, `MB/s`, `MiB/s`.
    pub fn name(self) -> &'static str {
        match self {
            RateUnit::BitPerSecond => "bit/s",
            RateUnit::KilobitPerSecond => "kbit/s",
            RateUnit::MegabitPerSecond => "Mbit/s",
            RateUnit::GigabitPerSecond => "Gbit/s",
            RateUnit::MegabytePerSecond => "MB/s",
            RateUnit::MebibytePerSecond => "MiB/s",
        }
    }

    /// Bits per second in one of it.
    pub fn bps(self) -> f64 {
        match self {
            RateUnit::BitPerSecond => 1.0,
            RateUnit::KilobitPerSecond => 1e3,
            RateUnit::MegabitPerSecond => 1e6,
            RateUnit::GigabitPerSecond => 1e9,
            RateUnit::MegabytePerSecond => 8e6,
            RateUnit::MebibytePerSecond => 8.0 * 1_048_576.0,
        }
    }

    /// The unit named `name`.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|u| u.name() == name)
    }

    /// The bit-rate unit in which `bps` reads as 1 to 999 (bit/s below 1 kbit/s, Gbit/s from 1 Gbit/s).
    pub fn for_bit_rate(bps: f64) -> Self {
        match bps.abs() {
            b if b >= 1e9 => RateUnit::GigabitPerSecond,
            b if b >= 1e6 => RateUnit::MegabitPerSecond,
            b if b >= 1e3 => RateUnit::KilobitPerSecond,
            _ => RateUnit::BitPerSecond,
        }
    }
}

/// A figure with at least three significant digits and no more decimals than that needs: `1234`, `123.4`,
/// `12.35`, `1.235`, `0.240`, `0.000312`. Whole numbers print without decimals.
pub fn format_significant(value: f64) -> String {
    let magnitude = value.abs();
    if !value.is_finite() {
        return value.to_string();
    }
    if value.fract() == 0.0 && magnitude < 1e15 {
        return format!("{value:.0}");
    }
    let decimals = match magnitude {
        m if m >= 1000.0 => 0,
        m if m >= 100.0 => 1,
        m if m >= 1.0 => 2,
        m => (2.0 - m.log10().floor()).clamp(3.0, 12.0) as usize,
    };
    format!("{value:.decimals$}")
}

/// A bit rate in the unit its magnitude asks for, with three significant digits: `250 kbit/s`,
/// `9.57 Mbit/s`, `1.20 Gbit/s`.
pub fn format_bit_rate(bps: f64) -> String {
    let unit = RateUnit::for_bit_rate(bps);
    format!("{} {}", format_significant(bps / unit.bps()), unit.name())
}

fn split_number(text: &str) -> Result<(f64, &str), UnitError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(UnitError::Empty);
    }
    let split = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().map_err(|_| UnitError::NotANumber(text.to_string()))?;
    if !number.is_finite() || number < 0.0 {
        return Err(UnitError::OutOfRange(text.to_string()));
    }
    Ok((number, unit.trim()))
}

fn unknown(unit: &str, text: &str, expected: &'static str) -> UnitError {
    UnitError::UnknownUnit { unit: unit.to_string(), text: text.to_string(), expected }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_show_in_the_unit_their_magnitude_asks_for() {
        assert_eq!(format_bit_rate(240_000.0), "240 kbit/s");
        assert_eq!(format_bit_rate(9_570_000.0), "9.57 Mbit/s");
        assert_eq!(format_bit_rate(823_456.0), "823.5 kbit/s");
        assert_eq!(format_bit_rate(9600.0), "9.60 kbit/s");
        assert_eq!(format_bit_rate(1.2e9), "1.20 Gbit/s");
        assert_eq!(format_bit_rate(12.5), "12.50 bit/s");
        assert_eq!(RateUnit::parse("MiB/s").map(RateUnit::bps), Some(8.0 * 1_048_576.0));
        assert_eq!(format_significant(0.24), "0.240");
        assert_eq!(format_significant(0.000312), "0.000312");
        assert_eq!(format_significant(1234.4), "1234");
    }

    #[test]
    fn sizes_use_binary_multiples() {
        assert_eq!(parse_size("64"), Ok(64));
        assert_eq!(parse_size("1k"), Ok(1024));
        assert_eq!(parse_size("16KiB"), Ok(16384));
        assert_eq!(parse_size("64k"), Ok(65536));
        assert_eq!(parse_size("1M"), Ok(1 << 20));
        assert_eq!(parse_size("1.5k"), Ok(1536));
        assert_eq!(parse_size(" 2G "), Ok(2 << 30));
    }

    #[test]
    fn bad_sizes_are_refused_with_a_reason() {
        assert_eq!(parse_size(""), Err(UnitError::Empty));
        assert!(matches!(parse_size("abc"), Err(UnitError::NotANumber(_))));
        assert!(matches!(parse_size("12q"), Err(UnitError::UnknownUnit { .. })));
        assert!(matches!(parse_size("0.3"), Err(UnitError::OutOfRange(_))));
        assert!(matches!(parse_size("-5"), Err(UnitError::NotANumber(_))));
    }

    #[test]
    fn size_lists_split_on_commas() {
        assert_eq!(parse_size_list("1,64, 1k"), Ok(vec![1, 64, 1024]));
        assert!(parse_size_list("1,,2").is_err());
    }

    #[test]
    fn durations_accept_common_units() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert!(matches!(parse_duration("3 fortnights"), Err(UnitError::UnknownUnit { .. })));
    }

    #[test]
    fn rates_use_decimal_multiples() {
        assert_eq!(parse_per_second("500"), Ok(500.0));
        assert_eq!(parse_per_second("10k"), Ok(10_000.0));
        assert_eq!(parse_per_second("1.5M"), Ok(1_500_000.0));
        assert!(parse_per_second("0").is_err());
    }

    #[test]
    fn rates_take_bits_or_packets_per_second() {
        assert_eq!(parse_rate("100M"), Ok(OfferedRate::BitsPerSecond(100e6)));
        assert_eq!(parse_rate("1.5Gbit"), Ok(OfferedRate::BitsPerSecond(1.5e9)));
        assert_eq!(parse_rate("250kbit/s"), Ok(OfferedRate::BitsPerSecond(250e3)));
        assert_eq!(parse_rate("10kpps"), Ok(OfferedRate::PacketsPerSecond(10e3)));
        assert_eq!(OfferedRate::PacketsPerSecond(1000.0).bps_for(1472), 11_776_000.0);
        assert!(matches!(parse_rate("10Q"), Err(UnitError::UnknownUnit { .. })));
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("0").is_err());
    }

    #[test]
    fn lengths_of_time_format_for_people() {
        assert_eq!(format_seconds(44.2), "45 s");
        assert_eq!(format_seconds(120.0), "2 min");
        assert_eq!(format_seconds(200.0), "3 min 20 s");
        assert_eq!(format_seconds(3900.0), "1 h 5 min");
    }

    #[test]
    fn sizes_format_as_typed() {
        assert_eq!(format_size(64), "64");
        assert_eq!(format_size(1024), "1k");
        assert_eq!(format_size(65536), "64k");
        assert_eq!(format_size(1 << 20), "1M");
        assert_eq!(format_size(1500), "1500");
    }
}
