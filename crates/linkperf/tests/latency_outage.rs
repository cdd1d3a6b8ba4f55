//! A UDP latency run across a path that drops everything for part of the run must say that it is
//! incomplete, not report "complete" with a handful of lost requests (each lost request costs a whole
//! timeout in which nothing else is sent).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::netns::{TestNet, RESPONDER_ADDRESS};
use common::{json, wait_until, Server};

/// `ip ARGS` in namespace `ns`; whether it succeeded.
fn ip_in(ns: &str, args: &[&str]) -> bool {
    Command::new("ip").args(["-n", ns]).args(args).status().is_ok_and(|s| s.success())
}

/// UDP datagrams the responder's host has received (`Udp: InDatagrams` of its namespace).
fn received(net: &TestNet) -> u64 {
    let snmp = Command::new("ip").args(["netns", "exec", &net.responder, "cat", "/proc/net/snmp"]).output().unwrap();
    let text = String::from_utf8_lossy(&snmp.stdout);
    let mut udp = text.lines().filter(|l| l.starts_with("Udp:"));
    let (names, values) = (udp.next().unwrap_or_default(), udp.next().unwrap_or_default());
    let column = names.split_whitespace().position(|n| n == "InDatagrams").unwrap_or(usize::MAX);
    values.split_whitespace().nth(column).and_then(|v| v.parse().ok()).unwrap_or(0)
}

#[test]
fn a_udp_latency_run_across_an_outage_is_incomplete_and_says_why() {
    let Some(net) = TestNet::create() else { return };
    let server = Server::start_in(Some(&net.responder), RESPONDER_ADDRESS, &[]);
    let before = received(&net);
    let child = Command::new("ip")
        .args(["netns", "exec", &net.client, common::binary(), "latency", RESPONDER_ADDRESS, "--port"])
        .arg(server.port_arg())
        .args(["--proto", "udp", "--duration", "10s", "--timeout", "1s", "--json", "--no-store"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the series runs, the outage: the responder's replies are discarded (a blackhole route back to the
    // client), so every request goes unanswered; the TCP control session is idle meanwhile and waits it out.
    assert!(wait_until(Duration::from_secs(30), || received(&net) >= before + 100), "the series never started");
    let outage = ["route", "add", "blackhole", "198.18.0.1/32"];
    assert!(ip_in(&net.responder, &outage));
    let during = received(&net);
    // The path comes back once four requests (4 s of timeouts, 40 % of the series) have gone unanswered.
    let unanswered = wait_until(Duration::from_secs(30), || received(&net) >= during + 4);
    assert!(ip_in(&net.responder, &["route", "del", "blackhole", "198.18.0.1/32"]));
    assert!(unanswered, "the requests never reached the responder");
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("incomplete"), "{stderr}");
    let result = json(&output.stdout);
    let series = &result["series"][0];
    assert_eq!(series["complete"], false);
    assert!(series["lost"].as_u64().unwrap() >= 4, "{series}");
    // The series measured again once the path was back.
    assert!(series["summary"]["count"].as_u64().unwrap_or(0) > 0, "{series}");
    let warnings = result["warnings"].to_string();
    assert!(warnings.contains("waiting for replies that never came"), "{warnings}");
}
