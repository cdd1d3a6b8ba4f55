//! A test against an echo, fitted to the serial line when there is one: what the user did not give is
//! scaled to the line's rate (`linkperf_core::line_budget`), and the expected run length is announced on
//! stderr before the first byte is sent, with how it was computed.

use std::time::Duration;

use linkperf_core::line_budget;
use linkperf_core::serial_line::LineSettings;
use linkperf_core::units::format_significant;
use linkperf_core::{IdleSpec, LatencySpec, StopCondition};
use linkperf_net::echo_peer::latency::DATAGRAM_HEADER_BYTES;

use crate::args::idle::IdleArgs;
use crate::args::latency::LatencyArgs;

/// Fits a latency test to `line`: 1-byte messages, a count that fits about a minute, a warm-up of a
/// hundredth, a timeout of four round trips; each only when not given. Returns the timeout.
pub fn latency(spec: &mut LatencySpec, args: &LatencyArgs, line: Option<&LineSettings>) -> Duration {
    let default_timeout = crate::args::latency::DEFAULT_TIMEOUT;
    let Some(line) = line else { return args.timeout.unwrap_or(default_timeout) };
    if args.size.is_none() {
        spec.sizes_bytes = vec![line_budget::MESSAGE_BYTES];
    }
    let largest = spec.sizes_bytes.iter().copied().max().unwrap_or(line_budget::MESSAGE_BYTES);
    let count = line_budget::latency_count(line, largest);
    if args.count.is_none() && args.duration.is_none() {
        spec.stop = StopCondition::Count(count);
    }
    if args.warmup.is_none() {
        spec.warmup = line_budget::warmup(match spec.stop {
            StopCondition::Count(n) => n,
            StopCondition::DurationS(_) => count,
        });
    }
    let timeout = args.timeout.unwrap_or_else(|| Duration::from_secs_f64(line_budget::timeout_s(line, largest)));
    spec.timeout_s = timeout.as_secs_f64();
    timeout
}

/// Announces a latency test on `line`; returns the expected seconds.
pub fn announce_latency(spec: &LatencySpec, line: &LineSettings) -> f64 {
    let sizes: Vec<String> = spec.sizes_bytes.iter().map(|s| format!("{s} B")).collect();
    let one = line.round_trip_s(spec.sizes_bytes[0]);
    let (expected, what) = match spec.stop {
        StopCondition::Count(n) => (
            line_budget::latency_s(line, &spec.sizes_bytes, n, spec.warmup),
            format!("{n} round trips (and {} untimed)", spec.warmup),
        ),
        StopCondition::DurationS(s) => {
            let warmup = line_budget::latency_s(line, &spec.sizes_bytes, 0, spec.warmup);
            (s * spec.sizes_bytes.len() as f64 + warmup, format!("{} per size", seconds(s)))
        }
    };
    eprintln!(
        "{}: {what} of {}: about {} at the line's rate ({} B out and back = 2 x {} x {} bits / {} bit/s = {} a \
         round trip), plus the echo's own delay; a message may take {} before the run ends",
        rate(line),
        sizes.join(", "),
        seconds(expected),
        spec.sizes_bytes[0],
        spec.sizes_bytes[0],
        line.bits_per_character(),
        line.baud,
        seconds(one),
        seconds(spec.timeout_s),
    );
    expected
}

/// Fits an idle test to `line`: a 1-byte message and a timeout of four round trips, unless given. Returns
/// the timeout.
pub fn idle(spec: &mut IdleSpec, args: &IdleArgs, line: Option<&LineSettings>) -> Duration {
    let default_timeout = crate::args::idle::DEFAULT_TIMEOUT;
    let Some(line) = line else { return args.timeout.unwrap_or(default_timeout) };
    if args.size.is_none() {
        spec.size_bytes = line_budget::MESSAGE_BYTES;
    }
    let scaled = line_budget::timeout_s(line, spec.size_bytes).max(default_timeout.as_secs_f64());
    let timeout = args.timeout.unwrap_or_else(|| Duration::from_secs_f64(scaled));
    spec.timeout_s = timeout.as_secs_f64();
    timeout
}

/// Announces an idle test on `line`; returns the expected seconds.
pub fn announce_idle(spec: &IdleSpec, line: &LineSettings) -> f64 {
    let gaps: f64 = spec.gaps_s.iter().sum::<f64>() * spec.count as f64;
    let trips = (spec.gaps_s.len() as u64 * spec.count) as f64 * line.round_trip_s(spec.size_bytes);
    eprintln!(
        "{}: {} gaps x {} messages of {} B: about {} ({} of gaps and {} of round trips at the line's rate); a \
         message may take {} before the run ends",
        rate(line),
        spec.gaps_s.len(),
        spec.count,
        spec.size_bytes,
        seconds(gaps + trips),
        seconds(gaps),
        seconds(trips),
        seconds(spec.timeout_s),
    );
    gaps + trips
}

/// The write size and the bytes in flight of a throughput test on `line` (`size`: the write size given;
/// `datagram`: each write is a datagram, which holds at least its sequence number).
pub fn throughput(size: Option<u64>, line: &LineSettings, datagram: bool) -> (u64, u64) {
    let least = if datagram { DATAGRAM_HEADER_BYTES as u64 } else { 1 };
    let write = size.unwrap_or_else(|| line_budget::write_bytes(line).max(least));
    (write, line_budget::window_bytes(line, write))
}

/// Announces a throughput test on `line` with `ports` lines at once; returns the expected seconds.
pub fn announce_throughput(line: &LineSettings, ports: usize, duration_s: f64, (write, window): (u64, u64)) -> f64 {
    let drain = line.transfer_s(window);
    let expected = duration_s + drain;
    eprintln!(
        "{}: {} of writes of {write} B, at most {window} B in flight per line ({} to drain at the end): about {}; \
         at most {} bit/s of payload per line ({})",
        rate(line),
        seconds(duration_s),
        seconds(drain),
        seconds(expected),
        format_significant(line.max_payload_bps()),
        if ports == 1 { "1 line".to_string() } else { format!("{ports} lines at once") },
    );
    expected
}

/// Announces a throughput test against an echo of unknown rate (no line given): its bound, not an
/// estimate; returns nothing to record.
pub fn announce_unknown_rate(duration_s: f64, silence: Duration) -> Option<f64> {
    let drain = silence.as_secs_f64().max(duration_s);
    eprintln!(
        "echo throughput: {} of writes, then at most {} for the rest of the echo (give a serial line's --baud to \
         size the test to it)",
        seconds(duration_s),
        seconds(drain)
    );
    None
}

/// `serial line 9600 8N1: 10 bits a character, 960 characters/s`.
fn rate(line: &LineSettings) -> String {
    format!(
        "serial line {}: {} bits a character, {} characters/s",
        line.short(),
        line.bits_per_character(),
        format_significant(line.characters_per_s())
    )
}

/// Seconds for people: `2.08 ms`, `21.0 s`, `4 min 33 s`.
fn seconds(s: f64) -> String {
    match s {
        s if s < 1.0 => format!("{} ms", format_significant(s * 1000.0)),
        s if s < 120.0 => format!("{} s", format_significant(s)),
        s => format!("{} min {} s", (s / 60.0).floor(), (s % 60.0).round()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_core::serial_line::{FlowControl, Parity};

    fn line(baud: u32) -> LineSettings {
        LineSettings { baud, data_bits: 8, parity: Parity::None, stop_bits: 1, flow: FlowControl::None }
    }

    fn latency_spec(argv: &[&str], baud: u32) -> (LatencySpec, Duration) {
        let args = crate::args::parse::<LatencyArgs>(argv).unwrap();
        let mut spec = LatencySpec::try_from(&args).unwrap();
        let timeout = latency(&mut spec, &args, Some(&line(baud)));
        (spec, timeout)
    }

    #[test]
    fn a_latency_test_on_a_line_defaults_to_the_studys_one_byte_round_trips() {
        let (spec, timeout) = latency_spec(&[], 9600);
        assert_eq!((spec.sizes_bytes.clone(), spec.stop, spec.warmup), (vec![1], StopCondition::Count(10_000), 100));
        assert_eq!(timeout, Duration::from_secs(2));
        // About 21 s: 10 100 round trips of 2.083 ms.
        assert!((announce_latency(&spec, &line(9600)) - 21.04).abs() < 0.01);
    }

    #[test]
    fn what_the_user_gives_is_kept_and_the_rest_scaled() {
        let (spec, timeout) = latency_spec(&["--size", "64", "--warmup", "3"], 300);
        // 64 B at 300 8N1: 2.133 s each way, 4.267 s a round trip: 14 fit in a minute.
        assert_eq!((spec.sizes_bytes.clone(), spec.stop, spec.warmup), (vec![64], StopCondition::Count(14), 3));
        assert!((timeout.as_secs_f64() - 4.0 * 2.0 * 640.0 / 300.0).abs() < 1e-6);
        let (spec, timeout) = latency_spec(&["--count", "50", "--timeout", "1s"], 75);
        assert_eq!((spec.stop, spec.warmup, timeout), (StopCondition::Count(50), 1, Duration::from_secs(1)));
    }

    #[test]
    fn throughput_on_a_line_writes_a_twentieth_of_a_second() {
        assert_eq!(throughput(None, &line(9600), false), (48, 960));
        assert_eq!(throughput(Some(64), &line(9600), false), (64, 960));
        // At 75 bit/s a write is one character, but a UDP datagram carries its 8-byte sequence number.
        assert_eq!((throughput(None, &line(75), false).0, throughput(None, &line(75), true).0), (1, 8));
        assert_eq!(seconds(273.0), "4 min 33 s");
    }
}
