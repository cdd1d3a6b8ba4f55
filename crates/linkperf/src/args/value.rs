//! clap value parsers for the quantities users type (`64k`, `500ms`, `10k`), with the enums of the CLI.

use std::time::Duration;

use clap::ValueEnum;
use linkperf_core::units;
use linkperf_core::{Proto, StopCondition, WaitMode};

/// A comma-separated list of byte sizes, as one argument value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeList(pub Vec<u64>);

/// Parses `1,64,1k` into byte sizes.
pub fn size_list(text: &str) -> Result<SizeList, String> {
    units::parse_size_list(text).map(SizeList).map_err(|e| e.to_string())
}

/// Parses one size such as `64k`.
pub fn size(text: &str) -> Result<u64, String> {
    units::parse_size(text).map_err(|e| e.to_string())
}

/// A comma-separated list of durations, as one argument value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DurationList(pub Vec<Duration>);

/// Parses `0,10ms,1s`.
pub fn duration_list(text: &str) -> Result<DurationList, String> {
    text.split(',').map(|part| duration(part.trim())).collect::<Result<_, _>>().map(DurationList)
}

/// Parses `500ms`, `10s`, `2m`.
pub fn duration(text: &str) -> Result<Duration, String> {
    units::parse_duration(text).map_err(|e| e.to_string())
}

/// The shortest `--timeout`: below a millisecond, scheduling delays alone (a few hundred microseconds on a
/// busy host) would count replies on loopback as lost.
pub const MIN_TIMEOUT: Duration = Duration::from_millis(1);
/// The longest `--timeout`: a reply an hour late is a lost reply.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(3600);
/// The shortest reporting `--interval`: below 10 ms an interval holds a handful of packets on most links,
/// and the timer's own jitter becomes a visible part of each interval's rate.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);

/// Parses a reply timeout (`2s`, `500ms`) between [`MIN_TIMEOUT`] and [`MAX_TIMEOUT`].
pub fn timeout(text: &str) -> Result<Duration, String> {
    let value = duration(text)?;
    if !(MIN_TIMEOUT..=MAX_TIMEOUT).contains(&value) {
        return Err(format!("a timeout must be between 1ms and 1h (got {text})"));
    }
    Ok(value)
}

/// Parses a reporting interval (`1s`, `100ms`) of at least [`MIN_INTERVAL`].
pub fn interval(text: &str) -> Result<Duration, String> {
    let value = duration(text)?;
    if value < MIN_INTERVAL {
        return Err(format!("an interval must be at least 10ms (got {text})"));
    }
    Ok(value)
}

/// Parses an offered rate such as `100M` (bit/s) or `10kpps`.
pub fn rate(text: &str) -> Result<units::OfferedRate, String> {
    units::parse_rate(text).map_err(|e| e.to_string())
}

/// Parses a link rate in bits per second such as `100M` or `1G` (not packets per second).
pub fn bit_rate(text: &str) -> Result<f64, String> {
    match units::parse_rate(text).map_err(|e| e.to_string())? {
        units::OfferedRate::BitsPerSecond(bps) => Ok(bps),
        units::OfferedRate::PacketsPerSecond(_) => Err("a link rate is in bits per second, e.g. 100M".into()),
    }
}

/// Parses a rate per second such as `1000` or `10k`.
pub fn per_second(text: &str) -> Result<f64, String> {
    units::parse_per_second(text).map_err(|e| e.to_string())
}

/// The stop condition from `--count` and `--duration` (which clap keeps exclusive), or `default_count`.
pub fn stop_condition(
    count: Option<u64>,
    duration: Option<Duration>,
    default_count: u64,
) -> Result<StopCondition, crate::exit::UsageError> {
    use crate::exit::UsageError;
    match (count, duration) {
        (Some(0), _) => Err(UsageError("--count must be at least 1".into())),
        (_, Some(d)) if d.is_zero() => Err(UsageError("--duration must be above zero".into())),
        (_, Some(d)) => Ok(StopCondition::DurationS(d.as_secs_f64())),
        (Some(n), None) => Ok(StopCondition::Count(n)),
        (None, None) => Ok(StopCondition::Count(default_count)),
    }
}

/// The transport, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProtoArg {
    /// TCP (Nagle off).
    Tcp,
    /// UDP: one datagram per message, with loss counted.
    Udp,
    /// Unix-domain stream sockets on this host (IPC).
    Unix,
    /// A serial line: --device PATH, looped back by a plug (latency, throughput, idle).
    Serial,
}

impl From<ProtoArg> for Proto {
    fn from(value: ProtoArg) -> Self {
        match value {
            ProtoArg::Tcp => Proto::Tcp,
            ProtoArg::Udp => Proto::Udp,
            ProtoArg::Unix => Proto::Unix,
            ProtoArg::Serial => Proto::Serial,
        }
    }
}

/// The wait mode, as typed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WaitArg {
    /// Sleep in the kernel until data arrives.
    Block,
    /// Busy-poll (lowest latency; burns one core per session at each end).
    Spin,
}

impl From<WaitArg> for WaitMode {
    fn from(value: WaitArg) -> Self {
        match value {
            WaitArg::Block => WaitMode::Block,
            WaitArg::Spin => WaitMode::Spin,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_and_intervals_have_a_floor() {
        assert_eq!(timeout("2s"), Ok(Duration::from_secs(2)));
        assert!(timeout("100ns").unwrap_err().contains("between 1ms and 1h"));
        assert!(timeout("2h").is_err());
        assert_eq!(interval("10ms"), Ok(Duration::from_millis(10)));
        assert!(interval("100ns").unwrap_err().contains("at least 10ms"));
    }

    #[test]
    fn value_parsers_explain_bad_input() {
        assert_eq!(size_list("1,64,64k"), Ok(SizeList(vec![1, 64, 65536])));
        assert!(size_list("64x").unwrap_err().contains("unknown unit"));
        assert_eq!(duration("250ms"), Ok(Duration::from_millis(250)));
        assert!(duration("soon").unwrap_err().contains("not a number"));
        assert_eq!(per_second("2k"), Ok(2000.0));
    }
}
