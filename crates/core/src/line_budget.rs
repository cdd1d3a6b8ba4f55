//! Test sizes, counts and timeouts scaled to a serial line's rate, and the run length they imply
//! (docs/serial.md, "Defaults scaled to the line").
//!
//! The defaults that suit a network (64-byte messages 10 000 times, 1 MiB writes, a 2-second timeout) do not
//! fit a line of 9600 bit/s: a 1 MiB write alone takes 18 minutes to cross it, and a 64-byte message at 75
//! bit/s takes longer than the timeout. On a line, whatever the user did not give is derived from the
//! line's character time (its bits per character over the baud rate), so that a test with no options ends
//! in about a minute at any rate. Only computes; the binary announces the result before the run.

use crate::serial_line::LineSettings;

/// The round trips a latency test with no `--count` fits in, in seconds of the line (counted in
/// [`LineSettings::round_trip_s`], so a loopback plug finishes in about half).
pub const LATENCY_BUDGET_S: f64 = 60.0;
/// The most round trips a default count asks for (the network default, and study 3's iterations).
pub const MAX_COUNT: u64 = 10_000;
/// The fewest round trips a default count asks for, so that a series has percentiles to speak of.
pub const MIN_COUNT: u64 = 10;
/// The shortest timeout for a message, as on a network.
pub const MIN_TIMEOUT_S: f64 = 2.0;
/// The time a write of a throughput test takes on the line, in seconds: short enough that the end of the
/// test is not a long write still crossing the line.
pub const WRITE_S: f64 = 0.05;
/// The time the bytes in flight of a throughput test take on the line, in seconds: enough to cover the
/// echo's own delay (a device server's packing timer, a far end's read) and a busy machine's late reads,
/// so that the line never waits for the sender, and short enough that the end of the test drains in a
/// second. (A quarter second lost 0.6 % of a 30 s run at 9600 8N1 on a loaded 2-core machine; a second,
/// nothing.)
pub const WINDOW_S: f64 = 1.0;

/// The most bytes in flight on a line: a tty's receive buffer (Linux's N_TTY_BUF_SIZE). With no more in
/// flight than it holds, a reader that is late never makes the line overrun it (bytes lost, and counted
/// missing by the test, though the line carried them).
pub const MAX_WINDOW_BYTES: u64 = 4096;

/// The message size of a latency or idle test on a line: one character, study 3's test.
pub const MESSAGE_BYTES: u64 = 1;

/// Round trips of `size` bytes that fit in [`LATENCY_BUDGET_S`], between [`MIN_COUNT`] and [`MAX_COUNT`].
pub fn latency_count(line: &LineSettings, size: u64) -> u64 {
    let fits = (LATENCY_BUDGET_S / line.round_trip_s(size.max(1))).floor() as u64;
    fits.clamp(MIN_COUNT, MAX_COUNT)
}

/// Untimed round trips before a series of `count`: a hundredth of it, 1 to 100 (100 on a network).
pub fn warmup(count: u64) -> u64 {
    (count / 100).clamp(1, 100)
}

/// How long a message of `size` bytes may take to come back: four of its round trips on the line, and at
/// least [`MIN_TIMEOUT_S`] (64 bytes at 75 bit/s cross the line in 8.5 s each way).
pub fn timeout_s(line: &LineSettings, size: u64) -> f64 {
    (4.0 * line.round_trip_s(size)).max(MIN_TIMEOUT_S)
}

/// The write size of a throughput test: [`WRITE_S`] of the line, 1 to 1024 bytes (48 at 9600 8N1).
pub fn write_bytes(line: &LineSettings) -> u64 {
    ((line.characters_per_s() * WRITE_S).floor() as u64).clamp(1, 1024)
}

/// The most bytes a throughput test keeps in flight: [`WINDOW_S`] of the line, at most
/// [`MAX_WINDOW_BYTES`], and at least two writes and 8 characters (960 at 9600 8N1, 4096 at 115200, 8 at
/// 75).
pub fn window_bytes(line: &LineSettings, write: u64) -> u64 {
    ((line.characters_per_s() * WINDOW_S).ceil() as u64).min(MAX_WINDOW_BYTES).max(2 * write).max(8)
}

/// The seconds a latency test is expected to take on the line: its round trips, warm-up included, each
/// counted as [`LineSettings::round_trip_s`] (the echo's own delay comes on top).
pub fn latency_s(line: &LineSettings, sizes: &[u64], count: u64, warmup: u64) -> f64 {
    sizes.iter().map(|&size| (count + warmup) as f64 * line.round_trip_s(size)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serial_line::{FlowControl, Parity};

    fn line(baud: u32) -> LineSettings {
        LineSettings { baud, data_bits: 8, parity: Parity::None, stop_bits: 1, flow: FlowControl::None }
    }

    #[test]
    fn a_one_byte_series_at_9600_keeps_the_studys_ten_thousand_round_trips() {
        // 2 x 10 bits / 9600 bit/s = 2.083 ms a round trip: 28 800 fit in 60 s, capped at 10 000.
        assert_eq!(latency_count(&line(9600), 1), 10_000);
        assert_eq!(warmup(10_000), 100);
        let expected = latency_s(&line(9600), &[1], 10_000, 100);
        assert!((expected - 10_100.0 * 20.0 / 9600.0).abs() < 1e-9, "{expected}");
    }

    #[test]
    fn slow_lines_get_fewer_round_trips_and_longer_timeouts() {
        // 75 bit/s: 2 x 10 / 75 = 0.267 s a 1-byte round trip, 225 in a minute.
        assert_eq!(latency_count(&line(75), 1), 225);
        assert_eq!(warmup(225), 2);
        // 64 bytes at 75 bit/s: 17.07 s out and back, 3 fit; never fewer than 10.
        assert_eq!(latency_count(&line(75), 64), MIN_COUNT);
        assert!((timeout_s(&line(75), 64) - 4.0 * 2.0 * 640.0 / 75.0).abs() < 1e-9);
        assert_eq!(timeout_s(&line(115_200), 1), MIN_TIMEOUT_S);
    }

    #[test]
    fn throughput_writes_and_windows_follow_the_character_rate() {
        assert_eq!(write_bytes(&line(9600)), 48);
        assert_eq!(window_bytes(&line(9600), 48), 960);
        assert_eq!((write_bytes(&line(75)), window_bytes(&line(75), 1)), (1, 8));
        assert_eq!(write_bytes(&line(4_000_000)), 1024);
        assert_eq!(window_bytes(&line(115_200), 576), MAX_WINDOW_BYTES, "no more than a tty's receive buffer");
        assert_eq!(window_bytes(&line(1200), 1024), 2048, "never less than two writes given by the user");
    }
}
