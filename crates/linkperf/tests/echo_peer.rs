//! `--peer echo`: latency and throughput against a plain echo service (no linkperf responder), started by
//! each test on 127.0.0.1 as a thread: an intact echo, one that changes a byte, one that drops a byte, and
//! a peer that accepts but never echoes.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;
#[path = "common/echo_line.rs"]
mod echo_line;

use std::net::TcpListener;
use std::sync::atomic::Ordering;

use common::{json, linkperf};
use echo_line::{echo_args, passing, tcp_echo, udp_echo, Fault};

fn args<'a>(test: &'a str, port: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    echo_args(test, &["127.0.0.1", "--port", port, "--peer", "echo"], extra)
}

#[test]
fn tcp_round_trips_against_an_echo_service_are_timed_per_size() {
    let port = tcp_echo(Fault::None).to_string();
    let run = passing(linkperf().args(args("latency", &port, &["--size", "1,1k", "--count", "300", "--warmup", "10"])));
    let series = run["series"].as_array().unwrap();
    assert_eq!(series.len(), 2);
    for s in series {
        assert_eq!(s["summary"]["count"], 300, "{s}");
        assert_eq!(s["lost"], 0);
    }
    assert!(run["warnings"].as_array().is_none_or(|w| w.is_empty()), "{}", run["warnings"]);
}

#[test]
fn a_changed_byte_is_counted_and_not_timed() {
    // The 50th byte of the stream: in the 5th 10-byte message of the warm-up-free run.
    let port = tcp_echo(Fault::Change(45)).to_string();
    let out =
        linkperf().args(args("latency", &port, &["--size", "10", "--count", "100", "--warmup", "0"])).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = json(&out.stdout);
    assert_eq!(run["series"][0]["summary"]["count"], 99, "one message of 100 came back changed");
    let warnings = run["warnings"].to_string();
    assert!(warnings.contains("1 of the 10 B messages came back changed (1 bytes differed)"), "{warnings}");
}

#[test]
fn a_dropped_byte_stalls_the_stream_and_ends_the_run_keeping_what_was_measured() {
    let port = tcp_echo(Fault::Drop(25)).to_string();
    let out = linkperf()
        .args(args("latency", &port, &["--size", "10", "--count", "100", "--warmup", "0", "--timeout", "300ms"]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "a partial run exits 1");
    let run = json(&out.stdout);
    // Messages 1 and 2 came back whole; the 3rd lost its 6th byte and never completed.
    assert_eq!(run["series"][0]["summary"]["count"], 2);
    assert_eq!(run["series"][0]["lost"], 1);
    assert!(
        run["warnings"].to_string().contains("1 bytes of the 10 B messages never came back"),
        "{}",
        run["warnings"]
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no reply within 0.3 s"), "{stderr}");
}

#[test]
fn a_peer_that_does_not_echo_is_a_clear_error_with_exit_code_1() {
    let port = tcp_echo(Fault::Silent).to_string();
    let out = linkperf()
        .args(args("latency", &port, &["--size", "4", "--count", "10", "--timeout", "200ms"]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no reply within 0.2 s") && stderr.contains("does the peer echo"), "{stderr}");
    // No `linkperf serve` to start against an echo: the hint says what is wrong with the echo.
    assert!(stderr.contains("hint: the echo service took the bytes but sent nothing back"), "{stderr}");
    assert!(!stderr.contains("linkperf serve` running"), "{stderr}");
}

#[test]
fn an_echo_service_that_is_not_there_is_named_as_such() {
    // A port just closed: nothing listens on it.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let out = linkperf().args(args("latency", &port, &["--count", "5"])).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("could not connect to the echo service at 127.0.0.1"), "{stderr}");
    assert!(stderr.contains("hint: no echo service listens there: check the address and --port"), "{stderr}");
    assert!(!stderr.contains("linkperf serve"), "{stderr}");
}

#[test]
fn bytes_that_all_come_back_changed_point_to_the_line_settings() {
    let port = tcp_echo(Fault::ChangeAll).to_string();
    let out =
        linkperf().args(args("latency", &port, &["--size", "4", "--count", "5", "--warmup", "0"])).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("hint: bytes came back changed: the two ends' settings differ"), "{stderr}");
}

#[test]
fn keepalives_go_to_a_udp_echo_during_the_gaps() {
    let (port, seen) = udp_echo(0);
    let port = port.to_string();
    let run = passing(
        linkperf()
            .args(args("idle", &port, &["--proto", "udp", "--size", "16", "--gaps", "0,100ms", "--count", "2"]))
            .args(["--keepalive", "20ms"]),
    );
    assert!(run["series"].as_array().unwrap().iter().all(|s| s["summary"]["count"] == 2), "{run}");
    // 4 timed datagrams; each 100 ms gap holds keep-alives at 20, 40, 60, 80 ms (at least one however
    // loaded the machine is); the 0 s gaps hold none.
    let datagrams = seen.load(Ordering::SeqCst);
    assert!((4 + 2..=4 + 2 * 4).contains(&datagrams), "{datagrams} datagrams reached the echo");
}

#[test]
fn udp_datagrams_lost_by_the_echo_are_counted_and_the_run_goes_on() {
    let (port, seen) = udp_echo(20);
    let port = port.to_string();
    let run = passing(linkperf().args(args(
        "latency",
        &port,
        &["--proto", "udp", "--size", "32", "--count", "50", "--warmup", "5", "--timeout", "200ms"],
    )));
    assert_eq!(run["series"][0]["summary"]["count"], 49);
    assert_eq!(run["series"][0]["lost"], 1);
    assert_eq!(seen.load(Ordering::SeqCst), 55, "5 warm-up and 50 timed datagrams reached the echo");
}

#[test]
fn throughput_counts_the_intact_bytes_that_came_back() {
    let port = tcp_echo(Fault::None).to_string();
    let run = passing(linkperf().args(args(
        "throughput",
        &port,
        &["--duration", "500ms", "--interval", "100ms", "--size", "4k"],
    )));
    let s = &run["throughput"][0];
    assert!(s["receiver_bps"].as_f64().unwrap() > 0.0, "{s}");
    assert_eq!(s["receiver_bytes"], s["sender_bytes"], "every byte came back intact");
}

#[test]
fn throughput_through_a_corrupting_echo_reports_the_changed_bytes() {
    let port = tcp_echo(Fault::Change(1000)).to_string();
    let run = passing(linkperf().args(args(
        "throughput",
        &port,
        &["--duration", "300ms", "--interval", "100ms", "--size", "4k"],
    )));
    assert!(run["warnings"].to_string().contains("1 bytes came back changed"), "{}", run["warnings"]);
    let s = &run["throughput"][0];
    assert_eq!(s["receiver_bytes"].as_u64().unwrap() + 1, s["sender_bytes"].as_u64().unwrap());
}

#[test]
fn an_echo_needs_a_host_and_takes_no_responder_options() {
    let out = linkperf().args(["latency", "--peer", "echo", "--no-store"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs the echo service's HOST"));
    let out =
        linkperf().args(["latency", "127.0.0.1", "--peer", "echo", "--sessions", "2", "--no-store"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn sixteen_echo_services_at_once_give_sixteen_series_and_their_aggregate() {
    let targets: Vec<String> = (0..16).map(|_| format!("127.0.0.1:{}", tcp_echo(Fault::None))).collect();
    let list = targets.join(",");
    let run = passing(linkperf().args([
        "latency",
        &list,
        "--peer",
        "echo",
        "--size",
        "1",
        "--count",
        "50",
        "--json",
        "--no-progress",
        "--no-store",
    ]));
    let series = run["series"].as_array().unwrap();
    assert_eq!(series.len(), 17, "the aggregate, then one per port");
    assert_eq!(series[0]["session"], serde_json::Value::Null);
    assert_eq!(series[0]["summary"]["count"], 16 * 50);
    for (i, s) in series[1..].iter().enumerate() {
        assert_eq!(s["session"], i + 1);
        assert_eq!(s["summary"]["count"], 50);
    }
}

#[test]
fn throughput_to_several_echoes_is_summed_and_given_per_port() {
    let list = format!("127.0.0.1:{},127.0.0.1:{}", tcp_echo(Fault::None), tcp_echo(Fault::Change(100)));
    let out = linkperf()
        .args(args("throughput", "1", &["--duration", "300ms", "--interval", "100ms", "--size", "4k"]))
        .output()
        .unwrap();
    // Nothing listens on port 1: a clear failure before anything is measured.
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("could not connect to the echo service at 127.0.0.1:1"));
    let run = passing(
        linkperf()
            .args(["throughput", &list, "--peer", "echo", "--duration", "300ms", "--interval", "100ms", "--size", "4k"])
            .args(["--json", "--no-progress", "--no-store"]),
    );
    let rows = run["throughput"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    let bytes = |r: &serde_json::Value| r["receiver_bytes"].as_u64().unwrap();
    assert_eq!(bytes(&rows[0]), bytes(&rows[1]) + bytes(&rows[2]));
    assert_eq!(rows[2]["stream"], 1);
    assert!(run["warnings"].to_string().contains("1 bytes came back changed"), "{}", run["warnings"]);
}
