//! `linkperf suite` through the real binary: a profile's tables from its runs, the runs kept with the
//! suite's labels, and mistakes in a profile reported before anything runs.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::time::Duration;

use common::{json, linkperf};

const PROFILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/quick-suite.toml");

#[test]
fn a_suite_prints_its_tables_and_keeps_every_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db").display().to_string();
    let output = linkperf().args(["suite", "--profile", PROFILE, "--db", &db, "--label", "first"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("[6/6] linkperf sweep"), "progress names each test: {stderr}");
    let text = String::from_utf8_lossy(&output.stdout);
    for needle in ["Quick suite", "Test  ", "Round trip, 64 B", "TCP throughput", "Size (bytes)", "offered-rate sweep"]
    {
        assert!(text.contains(needle), "{needle} in {text}");
    }
    let row = text.lines().find(|l| l.starts_with("Round trip, 64 B")).unwrap();
    assert!(row.contains("µs") && row.contains("300 round trips"), "{row}");
    let by_size = text.lines().find(|l| l.trim_start().starts_with("1024 ")).unwrap();
    assert_eq!(by_size.split_whitespace().count(), 3, "a size and a cell per column: {by_size}");
    // Every run is kept with the suite's labels: 2 repetitions + 1 + 2 columns + 1.
    let runs = linkperf().args(["runs", "--json", "--label", "suite:quick-suite", "--db", &db]).output().unwrap();
    let runs = json(&runs.stdout);
    assert_eq!(runs.as_array().unwrap().len(), 6, "{runs}");
    assert!(runs[0]["labels"].as_array().unwrap().iter().any(|l| l == "first"));
}

#[test]
fn a_suite_prints_json_and_markdown() {
    let output =
        linkperf().args(["suite", "--profile", PROFILE, "--no-store", "--json", "--repeat", "1"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let document = json(&output.stdout);
    let tables = document["tables"].as_array().unwrap();
    assert_eq!(tables.len(), 3);
    assert_eq!(tables[0]["kind"], "datasheet");
    let rtt = &tables[0]["rows"][0];
    assert!(rtt["min"].as_f64().unwrap() <= rtt["typ"].as_f64().unwrap());
    assert!(rtt["typ"].as_f64().unwrap() <= rtt["max"].as_f64().unwrap());
    assert_eq!(tables[1]["columns"], serde_json::json!(["TCP", "Unix"]));
    assert_eq!(tables[2]["runs"][0]["parameters"]["test"], "sweep");
}

#[test]
fn profiles_are_listed_and_bad_ones_refused_before_running() {
    let list = linkperf().args(["suite", "--list-studies"]).output().unwrap();
    let text = String::from_utf8_lossy(&list.stdout);
    for name in ["datasheet", "radio-datasheet", "ethernet-bringup", "usb-coalescing", "ipc-tables"] {
        assert!(text.contains(name), "{text}");
    }
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "title = \"x\"\n[[section]]\nkind = \"runs\"\ntitle = \"t\"\nrun = [\"latency --sise 64\"]\n")
        .unwrap();
    let output = linkperf().args(["suite", "--no-store", "--profile", bad.to_str().unwrap()]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--sise") && !stderr.contains("[1/"), "{stderr}");
    let unknown = linkperf().args(["suite", "--study", "nope"]).output().unwrap();
    assert_eq!(unknown.status.code(), Some(2));
}

#[test]
fn ctrl_c_stops_the_suite_with_the_tables_so_far() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("slow.toml");
    let row = |test: &str, run: &str| {
        format!("[[section.row]]\ntest = \"{test}\"\nrun = \"{run}\"\nfigure = \"rtt\"\nnote = \"n\"\n")
    };
    let text = format!(
        "title = \"Slow\"\n[[section]]\nkind = \"datasheet\"\ntitle = \"D\"\n{}{}{}",
        row("first", "latency --count 200"),
        row("second", "latency --duration 4s --warmup 0"),
        row("third", "latency --count 200")
    );
    std::fs::write(&profile, text).unwrap();
    let db = dir.path().join("results.db");
    let server = common::Server::start(&[]);
    let child = common::spawnable()
        .args(["suite", "127.0.0.1", "-p", &server.port_arg(), "--profile", profile.to_str().unwrap()])
        .args(["--db", db.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Signalled while the second test (of 4 s) measures: once the responder has received 1000 of its 64-byte
    // probes. (Only the suite gets the signal here; on a terminal its test would get it too and stop at
    // once.)
    let port = server.port;
    let progress = || common::watch::bytes_received_on(port);
    let measuring = common::watch::wait_until_measuring(&db, 2, progress, 64_000, Duration::from_secs(60));
    assert!(measuring, "the second test never measured: {:?}", common::watch::newest_run(&db));
    assert!(std::process::Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap().success());
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("stopped (Ctrl-C)") && !stderr.contains("[3/3]"), "{stderr}");
    let text = String::from_utf8_lossy(&output.stdout);
    for row in ["first", "second"] {
        assert!(text.lines().any(|l| l.starts_with(row)), "{row} was measured: {text}");
    }
}
