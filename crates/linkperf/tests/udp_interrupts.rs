//! Ctrl-C (SIGINT) while UDP flows towards the client, across a shaped link between test hosts: the run is
//! kept, printed and stored with what both ends measured so far, marked partial, and the client exits 1.
//! The client is signalled once its own host has received datagrams of the test (its namespace's UDP
//! counters), never after a fixed time. They need root and iproute2; without them they skip, unless
//! LINKPERF_REQUIRE_NETNS=1 makes that a failure.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::netns::{TestNet, RESPONDER_ADDRESS};
use common::{json, Server};

/// Datagrams the client's namespace has received over UDP (`Udp: InDatagrams` of /proc/net/snmp): only the
/// test's traffic reaches it.
fn datagrams_received(net: &TestNet) -> u64 {
    let output = Command::new("ip").args(["netns", "exec", &net.client, "cat", "/proc/net/snmp"]).output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    let mut udp = text.lines().filter(|l| l.starts_with("Udp:"));
    let (names, values) = (udp.next().unwrap_or_default(), udp.next().unwrap_or_default());
    let at = names.split_whitespace().position(|n| n == "InDatagrams").unwrap();
    values.split_whitespace().nth(at).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// Runs `args` on the client host with a results database of its own, signals it with SIGINT once the
/// client's host has received `datagrams` more UDP datagrams, and returns its printed result, the run as
/// the database kept it, and how long it ran.
fn interrupted(net: &TestNet, args: &[&str], datagrams: u64) -> (serde_json::Value, serde_json::Value, Duration) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let before = datagrams_received(net);
    let started = Instant::now();
    // `ip netns exec` executes the binary in its own process: the signal reaches linkperf itself.
    let child = Command::new("ip")
        .args(["netns", "exec", &net.client, common::binary()])
        .args(args)
        .args(["--json", "--db"])
        .arg(&db)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let flowing = common::wait_until(Duration::from_secs(30), || datagrams_received(net) >= before + datagrams);
    let status = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(status.success());
    let output = child.wait_with_output().unwrap();
    let elapsed = started.elapsed();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(flowing, "no datagrams arrived: {stderr}");
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let printed = json(&output.stdout);
    let list = common::linkperf().args(["runs", "--json", "--db"]).arg(&db).output().unwrap();
    let runs = json(&list.stdout);
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "{runs}");
    assert_eq!(runs[0]["state"], "partial", "{runs}");
    let id = runs[0]["id"].to_string();
    let shown = common::linkperf().args(["show", &id, "--json", "--db"]).arg(&db).output().unwrap();
    (printed, json(&shown.stdout), elapsed)
}

#[test]
fn ctrl_c_during_a_udp_download_keeps_what_both_ends_counted() {
    let Some(net) = TestNet::create() else { return };
    // 2 Mbit/s with a queue of 50 kB; 1 Mbit/s offered: about 85 datagrams a second, none lost.
    net.shape_with_queue("2mbit", "3000", "50000");
    let server = Server::start_in(Some(&net.responder), RESPONDER_ADDRESS, &[]);
    let port = server.port_arg();
    let args = ["throughput", RESPONDER_ADDRESS, "-p", &port, "--proto", "udp", "--direction", "down"];
    let args = [&args[..], &["--rate", "1M", "--duration", "30s"]].concat();
    // Signalled after about 2 s of datagrams.
    let (printed, stored, elapsed) = interrupted(&net, &args, 170);
    assert_eq!(printed["status"]["state"], "partial", "{}", printed["status"]);
    assert_eq!(printed["status"]["error"], "interrupted by the user");
    let sum = &printed["throughput"][0];
    let udp = &sum["udp"];
    eprintln!("stopped after {elapsed:?}: {} bit/s received; udp {udp}", sum["receiver_bps"]);
    // The client's own count (the receiver's) and the responder's (the sender's, from its report) are both
    // kept: the sender stops when the report is asked for, so its count is in the report.
    let (sent, received) = (udp["sent"].as_u64().unwrap(), udp["received"].as_u64().unwrap());
    assert!(received >= 170, "received {received}: {udp}");
    assert!(sent >= received, "sent {sent}, received {received}: {udp}");
    assert!(sum["receiver_bytes"].as_u64().unwrap() > 0 && sum["sender_bytes"].as_u64().unwrap() > 0, "{sum}");
    assert_eq!(sum["complete"], false, "{sum}");
    if udp["stalls"] == 0 {
        // Nothing is lost at half the link's rate; the datagrams still on their way when the receiver
        // stopped (before the sender, which stops at the report) are not counted as lost: 2 to 5 of 176
        // were, before.
        assert_eq!(udp["lost"], 0, "{udp}");
        // The receiver's goodput is the offered 1 Mbit/s (the link has room): within 5 %, the two bins lost
        // at each edge of a window of 2 s or more, and the datagrams' granularity (12 kbit each).
        let goodput = sum["receiver_bps"].as_f64().unwrap();
        assert!((goodput - 1e6).abs() <= 0.05e6, "goodput {goodput}");
    } else {
        // A host too busy to keep the sender's schedule (it re-anchored: 3 times, 4 datagrams lost and
        // 0.66 Mbit/s received at a load average of 15) measures itself, not the link.
        eprintln!("the sender fell behind its schedule: loss and goodput are not checked");
    }
    // Stopped at the signal, not at the end of the 30 s.
    assert!(elapsed < Duration::from_secs(25), "took {elapsed:?}");
    // The database holds the run as printed.
    assert_eq!(stored["status"], printed["status"]);
    assert_eq!(stored["throughput"][0]["udp"]["received"], udp["received"], "{}", stored["throughput"]);
    assert_eq!(stored["throughput"][0]["receiver_bytes"], sum["receiver_bytes"]);
}

#[test]
fn ctrl_c_during_a_download_rate_search_keeps_its_trials() {
    let Some(net) = TestNet::create() else { return };
    // 4 Mbit/s with a queue of 50 kB; trials of 2 s from a bound of 8 Mbit/s, which loses.
    net.shape_with_queue("4mbit", "3000", "50000");
    let server = Server::start_in(Some(&net.responder), RESPONDER_ADDRESS, &[]);
    let port = server.port_arg();
    let args = ["ratesearch", RESPONDER_ADDRESS, "-p", &port, "--payload", "1472", "--direction", "down"];
    let args = [&args[..], &["--max", "8M", "--min", "400k", "--trial", "2s", "--latency-probes", "0"]].concat();
    // Signalled during the second trial: the first (8 Mbit/s for 2 s) brings about 700 datagrams.
    let (printed, stored, elapsed) = interrupted(&net, &args, 900);
    eprintln!("stopped after {elapsed:?}: {}", printed["rate_search"]);
    assert_eq!(printed["status"]["error"], "interrupted by the user");
    let found = &printed["rate_search"][0];
    assert_eq!(found["complete"], false, "{found}");
    let trials = printed["throughput"].as_array().unwrap();
    assert!(!trials.is_empty(), "the trials run before the signal are kept: {printed}");
    // Every kept trial has what its receiver (this host) counted.
    for trial in trials.iter().filter(|t| t["stream"].is_null()) {
        assert!(trial["udp"]["received"].as_u64().unwrap() > 0, "{trial}");
    }
    assert_eq!(stored["rate_search"], printed["rate_search"]);
    assert_eq!(stored["throughput"].as_array().map(Vec::len), Some(trials.len()));
}
