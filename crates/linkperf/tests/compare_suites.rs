//! Before/after of whole suites (`compare --label before --label after` where each label marks a suite's
//! runs): every test matched with its counterpart, repetitions pooled, and a change of the link shown as a
//! real change of the figures it affects.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

mod common;

use std::time::Duration;

use common::netns::{TestNet, RESPONDER_ADDRESS};
use common::{json, linkperf, Server};

const QUICK: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/quick-suite.toml");

/// The rows of `compare --json` with their subject, figure, verdict and change in percent.
fn rows(document: &serde_json::Value) -> Vec<(String, String, String, f64)> {
    document["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let delta = &r["deltas"][1];
            (
                r["subject"].as_str().unwrap().to_string(),
                r["name"].as_str().unwrap().to_string(),
                delta["verdict"].as_str().unwrap_or("-").to_string(),
                delta["percent"].as_f64().unwrap_or(f64::NAN),
            )
        })
        .collect()
}

#[test]
fn labelled_suites_are_compared_test_by_test() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db").display().to_string();
    for label in ["before", "after"] {
        let output = linkperf().args(["suite", "--profile", QUICK, "--db", &db, "--label", label]).output().unwrap();
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    }
    let output =
        linkperf().args(["compare", "--label", "before", "--label", "after", "--json", "--db", &db]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let document = json(&output.stdout);
    // The quick suite runs six tests (the round trip twice): each side pools all six, not its newest run.
    for side in 0..2 {
        assert_eq!(document["runs"][side]["set"].as_array().unwrap().len(), 6, "{document}");
        assert_eq!(document["runs"][side]["test"], "suite:quick-suite");
    }
    let rows = rows(&document);
    for subject in
        ["latency tcp 64 B", "throughput tcp upload", "latency unix 1 KiB", "sweep udp upload 1472 B at 10 Mbit/s"]
    {
        assert!(rows.iter().any(|r| r.0.starts_with(subject)), "no {subject} row: {rows:?}");
    }
    // The round trip ran twice a side: its figures are judged by the repetitions, tails included.
    let p99 = rows.iter().find(|r| r.0 == "latency tcp 64 B" && r.1 == "p99").unwrap();
    assert!(p99.2 == "real" || p99.2 == "noise", "a repeated test's p99 gets a verdict: {p99:?}");

    let text = linkperf().args(["compare", "--label", "before", "--label", "after", "--db", &db]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("baseline: label before: 6 runs of suite:quick-suite"), "{text}");
    assert!(text.contains("after vs before"), "{text}");

    // The report of both labels carries the same comparison as a section of its page.
    let page = dir.path().join("report.html");
    let report = ["report", "--label", "before", "--label", "after", "--db", &db, "--html", page.to_str().unwrap()];
    let output = linkperf().args(report).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    let section = &html[html.find("<h2>Before and after</h2>").expect("a comparison section")..];
    assert!(section.contains("<table id=\"comparison\">") && section.contains("<th>after vs before</th>"));
    assert!(section.contains("<td>latency tcp 64 B</td>"), "{section}");
}

#[test]
fn a_slower_link_shows_as_a_real_loss_of_goodput_in_a_whole_suite() {
    let Some(net) = TestNet::create() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db").display().to_string();
    let profile = dir.path().join("link.toml");
    std::fs::write(
        &profile,
        r#"title = "Link"
repeat = 3

[[section]]
kind = "datasheet"
title = "Link"

[[section.row]]
test = "Round trip, 64 B"
run = "latency --size 64 --count 300"
figure = "rtt"
note = "300 round trips"

[[section.row]]
test = "TCP throughput"
run = "throughput --duration 1s --interval 250ms"
figure = "goodput"
note = "1 s"
"#,
    )
    .unwrap();
    let server = Server::start_in(Some(&net.responder), RESPONDER_ADDRESS, &[]);
    let port = server.port_arg();
    // 12 Mbit/s, then 6 Mbit/s: the goodput halves.
    for (rate, label) in [("12mbit", "before"), ("6mbit", "after")] {
        net.shape(rate, "16kb");
        let args = [
            "suite",
            RESPONDER_ADDRESS,
            "--port",
            &port,
            "--profile",
            profile.to_str().unwrap(),
            "--db",
            &db,
            "--label",
            label,
        ];
        let output = net.client_command(&args).timeout(Duration::from_secs(120)).output().unwrap();
        assert!(output.status.success(), "{label}: {}", String::from_utf8_lossy(&output.stderr));
    }
    let compare = ["compare", "--label", "before", "--label", "after", "--db", &db];
    let table = net.client_command(&compare).output().unwrap();
    eprintln!("{}", String::from_utf8_lossy(&table.stdout));
    let output = net.client_command(&[&compare[..], &["--json"]].concat()).output().unwrap();
    let rows = rows(&json(&output.stdout));
    let goodput = rows.iter().find(|r| r.1 == "goodput").unwrap_or_else(|| panic!("{rows:?}"));
    assert_eq!(goodput.2, "real", "{goodput:?}");
    // Half the rate: -50 %, within 5 points (TCP's ramp-up in a 1 s run and the shaper's burst).
    assert!((goodput.3 + 50.0).abs() < 5.0, "{goodput:?}");
    let gate = net.client_command(&[&compare[..], &["--fail-if-worse"]].concat()).output().unwrap();
    assert_eq!(gate.status.code(), Some(3), "{}", String::from_utf8_lossy(&gate.stderr));
    assert!(String::from_utf8_lossy(&gate.stderr).contains("worse: goodput of throughput tcp upload"));
}
