//! `--proto serial`: the termios path on pty pairs, and the line simulator of `common/echo_line.rs` that
//! stands for a serial line with a loopback plug (or a device server's port, behind TCP).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/echo_line.rs"]
mod echo_line;

use std::fs::File;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use common::{json, linkperf};
use echo_line::{cable, echo_args, passing, passing_said, tcp_line, Fault, Line};
use nix::sys::termios;

fn serial_args<'a>(test: &'a str, line: &'a Line, extra: &[&'a str]) -> Vec<&'a str> {
    echo_args(test, &["--proto", "serial", "--device", line.device()], extra)
}

/// Held by the tests that check figures against the simulated line, so that two paced simulators and their
/// linkperf processes do not compete for the machine's cores with each other.
static PACED: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs a 2-second throughput test over a simulated line (a pty, or a TCP port when `framing` is given)
/// and returns the series.
fn throughput(baud: u32, framing: &[&str], bits: u32) -> serde_json::Value {
    let _paced = PACED.lock().unwrap_or_else(|e| e.into_inner());
    let baud_text = baud.to_string();
    let mut extra = vec!["--baud", baud_text.as_str(), "--duration", "2s", "--interval", "1s", "--size", "64"];
    extra.extend_from_slice(framing);
    let line;
    let port;
    let args = if framing.is_empty() {
        line = Line::start(baud, bits, Duration::from_millis(1), Fault::None);
        serial_args("throughput", &line, &extra)
    } else {
        port = tcp_line(baud, bits, Duration::from_millis(1)).to_string();
        echo_args("throughput", &["127.0.0.1", "--port", &port, "--peer", "echo"], &extra)
    };
    let out = linkperf().args(args).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    json(&out.stdout)["throughput"][0].clone()
}

/// The line's share of its theoretical payload rate must be 100 % within 1 %: the simulator paces the echo
/// by a schedule (not by its sleeps), so only the first and last reads' timing can stray, by well under a
/// millisecond each, against a 2-second span (0.05 %).
fn assert_at_line_rate(series: &serde_json::Value, theoretical_bps: f64) {
    let link = &series["link"];
    assert_eq!(link["max_goodput_bps"].as_f64().unwrap(), theoretical_bps, "{series}");
    let percent = link["percent"].as_f64().unwrap();
    assert!((99.0..=101.0).contains(&percent), "measured {percent} % of {theoretical_bps} bit/s: {series}");
}

#[test]
fn throughput_at_9600_8n1_is_the_line_rate() {
    assert_at_line_rate(&throughput(9600, &[], 10), 7680.0);
}

#[test]
fn throughput_at_115200_8n1_is_the_line_rate() {
    assert_at_line_rate(&throughput(115_200, &[], 10), 92_160.0);
}

#[test]
fn throughput_at_9600_7e1_is_the_line_rate() {
    assert_at_line_rate(&throughput(9600, &["--data-bits", "7", "--parity", "even"], 10), 6720.0);
}

#[test]
fn throughput_at_115200_7e1_is_the_line_rate() {
    assert_at_line_rate(&throughput(115_200, &["--data-bits", "7", "--parity", "even"], 10), 80_640.0);
}

#[test]
fn a_one_byte_round_trip_is_the_character_time_plus_the_echo_delay() {
    // 9600 8N1: a character takes 10 / 9600 s = 1041.7 us; the echo adds 3 ms.
    let _paced = PACED.lock().unwrap_or_else(|e| e.into_inner());
    let line = Line::start(9600, 10, Duration::from_millis(3), Fault::None);
    let out = linkperf()
        .args(serial_args("latency", &line, &["--baud", "9600", "--size", "1", "--count", "100", "--warmup", "5"]))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary = &json(&out.stdout)["series"][0]["summary"];
    let simulated_us = 1e6 * 10.0 / 9600.0 + 3000.0;
    // Never less than the simulated delays (the echo is not sent before it is due); the median within
    // 1 ms above, the wake-up latency of two threads on a shared machine.
    let (min, p50) = (summary["min_us"].as_f64().unwrap(), summary["p50_us"].as_f64().unwrap());
    assert!(min >= simulated_us, "min {min} us < simulated {simulated_us} us");
    assert!(p50 <= simulated_us + 1000.0, "p50 {p50} us against simulated {simulated_us} us");
    assert_eq!(summary["count"], 100);
}

#[test]
fn a_byte_changed_on_the_line_is_reported() {
    let line = Line::start(115_200, 10, Duration::ZERO, Fault::Change(30));
    let run = passing(linkperf().args(serial_args(
        "latency",
        &line,
        &["--baud", "115200", "--size", "8", "--count", "20", "--warmup", "0"],
    )));
    assert_eq!(run["series"][0]["summary"]["count"], 19);
    assert!(run["warnings"].to_string().contains("1 of the 8 B messages came back changed"), "{}", run["warnings"]);
}

#[test]
fn a_byte_dropped_on_the_line_stalls_the_run_with_what_was_measured_kept() {
    let line = Line::start(115_200, 10, Duration::ZERO, Fault::Drop(20));
    let out = linkperf()
        .args(serial_args(
            "latency",
            &line,
            &["--baud", "115200", "--size", "8", "--count", "20", "--warmup", "0", "--timeout", "300ms"],
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let run = json(&out.stdout);
    assert_eq!(run["series"][0]["summary"]["count"], 2);
    assert_eq!(run["series"][0]["lost"], 1);
}

#[test]
fn settings_are_applied_printed_and_restored_afterwards() {
    let line = Line::start(19_200, 11, Duration::ZERO, Fault::None);
    let before = termios::tcgetattr(line.slave.as_fd()).unwrap();
    let out = linkperf()
        .args(serial_args(
            "latency",
            &line,
            &["--baud", "19200", "--stop-bits", "2", "--flow", "xonxoff", "--count", "5"],
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("19200 8N2, flow control xonxoff, applied and read back"), "{stderr}");
    let after = termios::tcgetattr(line.slave.as_fd()).unwrap();
    assert_eq!(termios::cfgetospeed(&after), termios::cfgetospeed(&before));
    assert_eq!(after.local_flags, before.local_flags, "canonical mode and echo are back");
    assert_eq!(after.control_flags, before.control_flags);
}

#[test]
fn a_setting_the_device_does_not_take_is_an_error_and_nothing_is_sent() {
    // A pty is always 8 data bits without parity: it takes 7E1 without complaint and keeps 8N1.
    let line = Line::start(9600, 10, Duration::ZERO, Fault::None);
    let out =
        linkperf().args(serial_args("latency", &line, &["--data-bits", "7", "--parity", "even"])).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("refused a setting: character framing 9600 7E1"), "{stderr}");
    assert_eq!(line.taken.load(Ordering::SeqCst), 0);
}

#[test]
fn a_port_held_by_another_process_is_a_clear_error() {
    let line = Line::start(9600, 10, Duration::ZERO, Fault::None);
    let holder = File::open(&line.path).unwrap();
    let _lock = nix::fcntl::Flock::lock(holder, nix::fcntl::FlockArg::LockExclusiveNonblock).unwrap();
    let out = linkperf().args(serial_args("latency", &line, &["--count", "5"])).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is in use by another process"), "{stderr}");
    assert_eq!(line.taken.load(Ordering::SeqCst), 0, "nothing was sent on a port in use");
}

#[test]
fn a_missing_device_and_an_unsupported_baud_rate_are_clear_errors() {
    let out = linkperf()
        .args(["latency", "--proto", "serial", "--device", "/dev/no-such-serial-port", "--no-store"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not open serial device /dev/no-such-serial-port"));
    let line = Line::start(9600, 10, Duration::ZERO, Fault::None);
    let out = linkperf().args(serial_args("latency", &line, &["--baud", "12345"])).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unsupported baud rate 12345"));
    let out = linkperf().args(["latency", "--proto", "serial", "--no-store"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --device PATH"));
}

#[test]
fn four_ports_at_once_each_run_at_their_line_rate() {
    let _paced = PACED.lock().unwrap_or_else(|e| e.into_inner());
    let lines: Vec<Line> = (0..4).map(|_| Line::start(9600, 10, Duration::from_millis(1), Fault::None)).collect();
    let devices: Vec<&str> = lines.iter().map(Line::device).collect();
    let list = devices.join(",");
    let run = passing(
        linkperf()
            .args(["throughput", "--proto", "serial", "--device", &list, "--baud", "9600", "--duration", "2s"])
            .args(["--interval", "1s", "--size", "64", "--json", "--no-progress", "--no-store"]),
    );
    let rows = run["throughput"].as_array().unwrap();
    assert_eq!(rows.len(), 5, "the sum, then one row per port");
    for row in &rows[1..] {
        assert_at_line_rate(row, 7680.0);
    }
    // The sum is four lines' worth, against four lines' rate.
    assert_at_line_rate(&rows[0], 4.0 * 7680.0);
    assert!(rows[0]["link"]["formula"].as_str().unwrap().starts_with("4 lines x 9600 bit/s"));
}

#[test]
fn idle_gives_one_round_trip_series_per_gap_over_a_serial_line() {
    let line = Line::start(115_200, 10, Duration::ZERO, Fault::None);
    let run = passing(linkperf().args(serial_args(
        "idle",
        &line,
        &["--baud", "115200", "--gaps", "0,50ms", "--count", "3", "--size", "4"],
    )));
    let series = run["series"].as_array().unwrap();
    assert_eq!(series.len(), 2);
    assert_eq!((series[0]["gap_s"].as_f64(), series[1]["gap_s"].as_f64()), (Some(0.0), Some(0.05)));
    assert!(series.iter().all(|s| s["summary"]["count"] == 3), "{series:?}");
    assert_eq!(line.taken.load(Ordering::SeqCst), 2 * 3 * 4, "without keep-alives, only the timed messages");
}

#[test]
fn keepalives_cross_the_line_during_the_gaps_and_the_timed_messages_still_come_back() {
    let _paced = PACED.lock().unwrap_or_else(|e| e.into_inner());
    let line = Line::start(115_200, 10, Duration::ZERO, Fault::None);
    let run = passing(
        linkperf()
            .args(serial_args("idle", &line, &["--baud", "115200", "--gaps", "200ms", "--count", "2", "--keepalive"]))
            .args(["20ms", "--size", "1"]),
    );
    assert_eq!(run["series"][0]["summary"]["count"], 2, "{run}");
    assert_eq!(run["parameters"]["keepalive_s"], 0.02);
    // Each 200 ms gap holds keep-alives at 20, 40, ..., 180 ms: 9 a gap when the machine keeps time, and at
    // least a few however loaded it is (each takes under 1 ms on the simulated line, the rest is sleep).
    let taken = line.taken.load(Ordering::SeqCst);
    assert!((2 + 2 * 3..=2 + 2 * 9).contains(&taken), "{taken} bytes crossed the line");
}

/// The shipped serial-server profile with its count and duration cut to fit a test, in `dir`.
fn quick_study(dir: &std::path::Path) -> PathBuf {
    let shipped = include_str!("../../../profiles/serial-server.toml");
    let quick = shipped.replace("--count 10000", "--count 100").replace("--duration 30s", "--duration 1s");
    assert_ne!(quick, shipped, "the profile still has the count and duration this test shortens");
    let profile = dir.join("serial-server.toml");
    std::fs::write(&profile, quick).unwrap();
    profile
}

/// The shares of the line's rate in a suite's output (one per throughput row it prints).
fn shares(stdout: &str) -> Vec<f64> {
    stdout
        .lines()
        .filter_map(|l| l.split_once(" % of the link's maximum goodput").map(|(head, _)| head))
        .filter_map(|head| head.rsplit(' ').next()?.parse().ok())
        .collect()
}

#[test]
fn the_serial_server_study_runs_over_two_ports_of_this_host() {
    let _paced = PACED.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let profile = quick_study(dir.path());
    let lines: Vec<Line> = (0..2).map(|_| Line::start(115_200, 10, Duration::ZERO, Fault::None)).collect();
    let devices = format!("{},{}", lines[0].device(), lines[1].device());
    let out = linkperf()
        .args(["suite", "--profile", profile.to_str().unwrap(), "--device", &devices, "--baud", "115200"])
        .args(["--no-store"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Round trip, 1 byte"), "{stdout}");
    assert!(stderr.contains("--proto serial --device"), "the suite says how it ran its tests: {stderr}");
    assert!(stdout.contains("set-up:    serial device looped back, 2 ports at once, 115200 8N1"), "{stdout}");
    // Both lines at once against two lines' rate: the simulated lines run at exactly that rate.
    let shares = shares(&stdout);
    assert_eq!(shares.len(), 1, "{stdout}");
    assert!(shares.iter().all(|p| (99.0..=101.0).contains(p)), "{shares:?}");
    assert!(lines.iter().all(|l| l.taken.load(Ordering::SeqCst) > 100 * 2), "both ports carried the tests");
}

#[test]
fn the_serial_server_study_runs_against_two_device_server_ports_with_the_line_rate() {
    let _paced = PACED.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let profile = quick_study(dir.path());
    let ports = [tcp_line(115_200, 10, Duration::ZERO), tcp_line(115_200, 10, Duration::ZERO)];
    let hosts = format!("127.0.0.1:{},127.0.0.1:{}", ports[0], ports[1]);
    let out = linkperf()
        .args(["suite", &hosts, "--profile", profile.to_str().unwrap(), "--baud", "115200", "--no-store"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("Round trip, 1 byte"), "{stdout}");
    // The sum over both ports against two lines' rate (the table prints sums); the simulated lines run at
    // exactly that rate.
    let shares = shares(&stdout);
    assert_eq!(shares.len(), 1, "{stdout}");
    assert!(shares.iter().all(|p| (99.0..=101.0).contains(p)), "{shares:?}");
}

#[test]
fn ctrl_c_stops_the_run_keeps_what_was_measured_and_restores_the_port() {
    let line = Line::start(115_200, 10, Duration::ZERO, Fault::None);
    let before = termios::tcgetattr(line.slave.as_fd()).unwrap();
    let mut child = common::spawnable()
        .args(serial_args("throughput", &line, &["--baud", "115200", "--duration", "30s", "--size", "64"]))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    assert!(common::wait_until(Duration::from_secs(10), || line.taken.load(Ordering::SeqCst) > 1000));
    let status = std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let mut exited = None;
    assert!(common::wait_until(Duration::from_secs(10), || {
        exited = child.try_wait().unwrap();
        exited.is_some()
    }));
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let run = json(&out.stdout);
    assert!(run["throughput"][0]["receiver_bytes"].as_u64().unwrap() > 1000, "{run}");
    let after = termios::tcgetattr(line.slave.as_fd()).unwrap();
    assert_eq!(termios::cfgetospeed(&after), termios::cfgetospeed(&before), "the baud rate is back");
    assert_eq!(after.local_flags, before.local_flags, "canonical mode and echo are back");
}

#[test]
fn serve_serial_is_the_far_end_of_a_line_between_two_ports() {
    let (near, far, _slaves) = cable();
    let mut server = common::spawnable()
        .args(["serve", "--serial", far.to_str().unwrap(), "--baud", "115200"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(server.stderr.take().unwrap());
    let mut first = String::new();
    std::io::BufRead::read_line(&mut lines, &mut first).unwrap();
    assert!(first.contains("echoing serial") && first.contains("115200 8N1"), "{first}");
    let out = linkperf()
        .args(["latency", "--proto", "serial", "--device", near.to_str().unwrap(), "--baud", "115200"])
        .args(["--size", "1,64", "--count", "200", "--json", "--no-progress", "--no-store"])
        .output()
        .unwrap();
    let _ = std::process::Command::new("kill").args(["-INT", &server.id().to_string()]).status();
    assert!(common::wait_until(Duration::from_secs(10), || server.try_wait().unwrap().is_some()));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = json(&out.stdout);
    assert!(run["series"].as_array().unwrap().iter().all(|s| s["summary"]["count"] == 200), "{run}");
    assert_eq!(server.wait().unwrap().code(), Some(0), "serve ends cleanly on Ctrl-C");
}

#[test]
fn a_latency_test_on_a_line_sizes_itself_to_the_line_announces_its_length_and_keeps_its_setup() {
    let _paced = PACED.lock().unwrap_or_else(|e| e.into_inner());
    let line = Line::start(1200, 10, Duration::ZERO, Fault::None);
    let (run, stderr) = passing_said(linkperf().args(serial_args(
        "latency",
        &line,
        &["--baud", "1200", "--count", "20", "--char-timeout", "50ms"],
    )));
    // Not the network's 64 bytes and 100 warm-up round trips: one character, and a hundredth of the count.
    assert_eq!(run["parameters"]["sizes_bytes"], serde_json::json!([1]));
    assert_eq!(run["parameters"]["warmup"], 1);
    let echo = &run["endpoints"]["echo"];
    assert_eq!(echo["peer"], "serial_device");
    assert_eq!((echo["line"]["baud"].as_u64(), echo["line"]["data_bits"].as_u64()), (Some(1200), Some(8)));
    assert_eq!((echo["line"]["parity"].as_str(), echo["line"]["flow"].as_str()), (Some("none"), Some("none")));
    assert_eq!((echo["inter_character_timeout_s"].as_f64(), echo["timeout_s"].as_f64()), (Some(0.05), Some(2.0)));
    // 21 round trips of 2 x 10 bits at 1200 bit/s: 350 ms, announced before the run.
    let expected = echo["expected_s"].as_f64().unwrap();
    assert!((expected - 21.0 * 20.0 / 1200.0).abs() < 1e-9, "{expected}");
    assert!(stderr.contains("20 round trips (and 1 untimed) of 1 B: about 350 ms at the line's rate"), "{stderr}");
}

#[test]
fn a_throughput_test_on_a_line_writes_what_suits_the_line_and_keeps_it_busy() {
    let _paced = PACED.lock().unwrap_or_else(|e| e.into_inner());
    let line = Line::start(9600, 10, Duration::from_millis(1), Fault::None);
    let (run, stderr) = passing_said(linkperf().args(serial_args(
        "throughput",
        &line,
        &["--baud", "9600", "--duration", "2s", "--interval", "1s"],
    )));
    // 50 ms of the line a write (48 characters at 960/s), a second in flight: not 1 MiB writes.
    assert_eq!(run["parameters"]["sizes_bytes"], serde_json::json!([48]));
    assert_eq!(run["endpoints"]["echo"]["window_bytes"], 960);
    assert_at_line_rate(&run["throughput"][0], 7680.0);
    assert!(stderr.contains("2 s of writes of 48 B, at most 960 B in flight per line (1 s to drain"), "{stderr}");
}

#[test]
fn throughput_to_a_slow_echo_of_unknown_rate_ends_in_bounded_time_with_its_pace() {
    let _paced = PACED.lock().unwrap_or_else(|e| e.into_inner());
    // A device server at 9600 8N1 whose rate is not given: the network's 1 MiB writes and 4 MiB in flight.
    // Writes are cut at the test's end, and the echo is waited for as long again as the test ran.
    let port = tcp_line(9600, 10, Duration::ZERO).to_string();
    let started = Instant::now();
    let (run, stderr) = passing_said(
        linkperf()
            .args(["throughput", "127.0.0.1", "--port", &port, "--peer", "echo", "--duration", "1s", "--json"])
            .args(["--no-progress", "--no-store"]),
    );
    // 1 s of writes, then at most 2 s (the silence timeout, longer than the test) of waiting: the bound
    // is loose (30 s) because a loaded machine may be slow to start the process; hours would fail it.
    assert!(started.elapsed() < Duration::from_secs(30), "{:?}", started.elapsed());
    assert!(run["warnings"].to_string().contains("were not waited for"), "{}", run["warnings"]);
    assert!(stderr.contains("1 s of writes, then at most 2 s for the rest of the echo"), "announced: {stderr}");
    // The pace of what came back is the line's, 960 bytes of 8 bits a second, within 1 % (the simulator
    // paces by a schedule).
    let bps = run["throughput"][0]["receiver_bps"].as_f64().unwrap();
    assert!((7680.0 * 0.99..=7680.0 * 1.01).contains(&bps), "{bps}");
}

#[test]
fn throughput_tables_at_serial_rates_read_in_kbit_and_bit_per_second() {
    let _paced = PACED.lock().unwrap_or_else(|e| e.into_inner());
    for (baud, unit) in [(9600, "kbit/s"), (300, "bit/s")] {
        let line = Line::start(baud, 10, Duration::ZERO, Fault::None);
        let baud_text = baud.to_string();
        let out = linkperf()
            .args(["throughput", "--proto", "serial", "--device", line.device(), "--baud", &baud_text])
            .args(["--duration", "2s", "--interval", "1s", "--no-progress", "--no-store"])
            .output()
            .unwrap();
        let table = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{table}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(table.contains(&format!("goodput in {unit} of payload")), "{table}");
        assert!(table.contains(&format!("recv {unit}")) && !table.contains("Mbit/s"), "{table}");
        assert!(table.contains(" % of the link's maximum goodput, "), "the share and its formula: {table}");
        let sum = table.lines().find(|l| l.trim_start().starts_with("upload") && l.contains(" sum ")).unwrap();
        let recv: f64 = sum.split_whitespace().nth(4).unwrap().parse().unwrap();
        // 7.68 kbit/s or 240 bit/s of payload: three significant digits at least, whatever the unit (the
        // simulated line runs at exactly its rate; the 300 bit/s one moves 60 characters, hence 3 %).
        let expected = if baud == 9600 { 7.68 } else { 240.0 };
        assert!((recv - expected).abs() <= expected * 0.03, "{recv} {unit} in: {sum}");
    }
}

#[test]
fn serve_serial_with_packing_holds_bytes_until_the_line_is_quiet_and_the_run_records_it() {
    let (near, far, _slaves) = cable();
    let mut server = common::spawnable()
        .args(["serve", "--serial", far.to_str().unwrap(), "--baud", "115200", "--pack-idle", "30ms"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = std::io::BufReader::new(server.stderr.take().unwrap());
    let mut lines = String::new();
    while !lines.contains("packing") {
        assert!(std::io::BufRead::read_line(&mut said, &mut lines).unwrap() > 0, "{lines}");
    }
    assert!(lines.contains("packing: forward after 30 ms quiet"), "{lines}");
    let device = near.to_str().unwrap();
    let out = linkperf()
        .args(echo_args("latency", &["--proto", "serial", "--device", device], &["--baud", "115200"]))
        .args(["--size", "4", "--count", "10", "--warmup", "1", "--pack-idle", "30ms"])
        .output()
        .unwrap();
    let _ = std::process::Command::new("kill").args(["-INT", &server.id().to_string()]).status();
    assert!(common::wait_until(Duration::from_secs(10), || server.try_wait().unwrap().is_some()));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = json(&out.stdout);
    // The far end forwards a message only once the line has been quiet for 30 ms after its last byte: no
    // round trip can be shorter (the cable itself adds nothing).
    let min_us = run["series"][0]["summary"]["min_us"].as_f64().unwrap();
    assert!(min_us >= 30_000.0, "{min_us} us");
    assert_eq!(run["endpoints"]["echo"]["packing"]["idle_s"], 0.03);
}

#[test]
fn a_serial_line_that_echoes_nothing_says_to_check_the_plug() {
    let line = Line::start(115_200, 10, Duration::ZERO, Fault::Silent);
    let out = linkperf()
        .args(serial_args("latency", &line, &["--baud", "115200", "--count", "5", "--timeout", "200ms"]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("hint: nothing came back over the serial line: is the loopback plug on"), "{stderr}");
    assert!(!stderr.contains("linkperf serve` running"), "{stderr}");
}

/// The whole shipped study at 9600 8N1 over one simulated port, as a user would run it: a measurement, not
/// a check for CI (it takes about a minute). `cargo test -p linkperf --test serial -- --ignored --nocapture`
#[test]
#[ignore = "takes about a minute: run by hand for the study's figures at 9600 8N1"]
fn the_shipped_serial_server_study_runs_at_9600_in_its_announced_time() {
    let _paced = PACED.lock().unwrap_or_else(|e| e.into_inner());
    // The echo 2 ms after each character, like a device server's own delay: with none, the simulator's
    // catch-up after a late wake-up can place a lone byte in a slot before it was sent.
    let line = Line::start(9600, 10, Duration::from_millis(2), Fault::None);
    let started = Instant::now();
    let out = linkperf()
        .args(["suite", "--study", "serial-server", "--device", line.device(), "--baud", "9600", "--no-store"])
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stderr}\n{stdout}\nthe suite took {:.1} s", started.elapsed().as_secs_f64());
    assert!(out.status.success());
    assert!(stderr.contains("10000 round trips (and 10 untimed) of 1 B: about 20.85 s"), "{stderr}");
    let shares = shares(&stdout);
    assert!(shares.len() == 1 && (99.0..=101.0).contains(&shares[0]), "{shares:?}");
}

/// The README's serial example, measured on the simulated line (9600 8N1, the echo 2 ms after each
/// character): `cargo test -p linkperf --test serial -- --ignored --nocapture readme`.
#[test]
#[ignore = "prints the README's example output"]
fn the_readme_example_over_a_simulated_9600_line() {
    let _paced = PACED.lock().unwrap_or_else(|e| e.into_inner());
    let line = Line::start(9600, 10, Duration::from_millis(2), Fault::None);
    for args in [
        vec!["latency", "--proto", "serial", "--device", line.device(), "--baud", "9600", "--size", "1,16"],
        vec!["latency", "--proto", "serial", "--device", line.device(), "--baud", "9600", "--count", "300"],
        vec!["throughput", "--proto", "serial", "--device", line.device(), "--baud", "9600", "--duration", "3s"],
    ] {
        let out = linkperf().args(&args).args(["--no-progress", "--no-store"]).output().unwrap();
        println!(
            "$ linkperf {}\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        assert!(out.status.success());
    }
}

#[test]
fn compare_heads_each_kept_run_with_its_line_setup() {
    let line = Line::start(115_200, 10, Duration::ZERO, Fault::None);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let db = db.to_str().unwrap();
    for (label, flow) in [("a", "none"), ("b", "xonxoff")] {
        let out = linkperf()
            .args(["latency", "--proto", "serial", "--device", line.device(), "--baud", "115200", "--count", "20"])
            .args(["--flow", flow, "--pack-length", "8", "--no-progress", "--db", db, "--label", label])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let out = linkperf().args(["compare", "--label", "a", "--label", "b", "--db", db]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for flow in ["none", "xonxoff"] {
        let heading = format!("latency over serial; serial device looped back, 1 port, 115200 8N1 (10 bits/character), flow control {flow}, far end's packing: forward after 8 characters");
        assert!(text.contains(&heading), "{heading}\n{text}");
    }
}

#[test]
fn throughput_at_two_baud_rates_compares_row_by_row() {
    // Each rate's write size follows its line; compare matches the rows all the same (the set-up heading
    // says which rate each run had).
    let _paced = PACED.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let db = db.to_str().unwrap();
    for baud in [19_200u32, 57_600] {
        let line = Line::start(baud, 10, Duration::ZERO, Fault::None);
        let out = linkperf()
            .args(["throughput", "--proto", "serial", "--device", line.device(), "--baud", &baud.to_string()])
            .args(["--duration", "2s", "--interval", "1s", "--no-progress", "--db", db, "--label", &baud.to_string()])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let out =
        linkperf().args(["compare", "--label", "19200", "--label", "57600", "--json", "--db", db]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let document = json(&out.stdout);
    let goodput = document["rows"].as_array().unwrap().iter().find(|r| r["name"] == "goodput").expect("a goodput row");
    let values: Vec<f64> =
        goodput["values"].as_array().unwrap().iter().map(|v| v.as_f64().expect("both runs")).collect();
    // 8N1: 80 % of the baud rate is payload; the faster line carries three times as much.
    assert!((values[1] / values[0] - 3.0).abs() < 0.1, "{goodput}");
}

#[test]
fn a_list_of_baud_rates_runs_the_suite_once_per_rate_on_a_local_port() {
    let _paced = PACED.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let profile = quick_study(dir.path());
    let db = dir.path().join("runs.db");
    // A pty takes any rate and the simulated line runs at its own: enough to see each rate set and kept.
    let line = Line::start(115_200, 10, Duration::ZERO, Fault::None);
    let out = linkperf()
        .args(["suite", "--profile", profile.to_str().unwrap(), "--device", line.device(), "--baud", "57600,115200"])
        .args(["--db", db.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for baud in ["57600", "115200"] {
        assert!(stdout.contains(&format!("\n{baud} baud\n")), "a heading per rate: {stdout}");
        assert!(stdout.contains(&format!("1 port, {baud} 8N1")), "each rate's set-up: {stdout}");
        let label = format!("baud:{baud}");
        let runs =
            linkperf().args(["runs", "--label", &label, "--json", "--db", db.to_str().unwrap()]).output().unwrap();
        let listed = json(&runs.stdout);
        assert!(!listed.as_array().unwrap().is_empty(), "runs labelled baud:{baud}");
    }
    let suite = ["suite", "--profile", profile.to_str().unwrap(), "--baud", "9600,19200", "--no-store"];
    let refused = linkperf().args(suite).output().unwrap();
    assert_eq!(refused.status.code(), Some(2), "a list of rates without --device");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("a list of baud rates needs --device"));
}
