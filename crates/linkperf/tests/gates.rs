//! Gates through the real binary: `--fail-if` fails a run with exit 3 and names the figure, and
//! `compare --fail-if-worse [--by]` fails on a regression, so that a pipeline stops on one.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::{json, linkperf};

/// Runs linkperf with `args` and returns its exit code, stdout and stderr.
fn run(args: &[&str]) -> (i32, String, String) {
    let output = linkperf().args(args).output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (output.status.code().unwrap(), text(&output.stdout), text(&output.stderr))
}

#[test]
fn a_met_condition_fails_the_run_with_exit_3_and_names_the_figure() {
    let (code, stdout, stderr) = run(&["latency", "-n", "200", "--no-store", "--fail-if", "p50 > 1ns"]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("gate failed: p50 of latency tcp 64 B is "), "{stderr}");
    assert!(stdout.contains("p50(typ)"), "the figures are printed all the same: {stdout}");

    let (code, _, stderr) =
        run(&["latency", "-n", "200", "--no-store", "--fail-if", "p50 > 1h", "--fail-if", "max>=1h"]);
    assert_eq!(code, 0, "no round trip on loopback takes an hour: {stderr}");
    assert!(!stderr.contains("gate failed"), "{stderr}");
}

#[test]
fn a_gate_on_a_figure_the_run_lacks_fails_rather_than_passes() {
    let (code, _, stderr) = run(&["latency", "-n", "50", "--no-store", "--fail-if", "goodput < 1k"]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("cannot be checked: this run has no goodput figure"), "{stderr}");
}

#[test]
fn a_condition_that_cannot_be_read_is_a_usage_error() {
    for (condition, says) in
        [("p98 > 2ms", "unknown figure 'p98'"), ("p99 2ms", "has no comparison"), ("p99 > 9M", "is not a time")]
    {
        let (code, _, stderr) = run(&["latency", "-n", "10", "--no-store", "--fail-if", condition]);
        assert_eq!(code, 2, "{condition}: {stderr}");
        assert!(stderr.contains(says), "{condition}: {stderr}");
    }
}

#[test]
fn compare_fails_on_a_regression_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db").display().to_string();
    let output =
        linkperf().args(["latency", "-n", "500", "--json", "--db", &db, "--label", "before"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    // The same run with its 99th percentile doubled: the medians are equal (same histogram, so the
    // comparison calls their difference noise); p99 is a single figure, with no noise estimate.
    let mut after = json(&output.stdout);
    let p99 = after["series"][0]["summary"]["p99_us"].as_f64().unwrap();
    after["series"][0]["summary"]["p99_us"] = (p99 * 2.0).into();
    after["started_at"] = "2099-01-01T00:00:00Z".into();
    let file = dir.path().join("after.json");
    std::fs::write(&file, serde_json::to_vec(&after).unwrap()).unwrap();
    let (code, _, stderr) = run(&["import", file.to_str().unwrap(), "--label", "after", "--db", &db]);
    assert_eq!(code, 0, "{stderr}");

    let compare = ["compare", "--label", "before", "--label", "after", "--db", &db];
    assert_eq!(run(&compare).0, 0, "without --fail-if-worse compare only shows");
    let (code, _, stderr) = run(&[&compare[..], &["--fail-if-worse"]].concat());
    assert_eq!(code, 0, "equal medians are noise, and p99 counts only with --by: {stderr}");
    let (code, _, stderr) = run(&[&compare[..], &["--fail-if-worse", "--by", "10"]].concat());
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("worse: p99 of latency tcp 64 B") && stderr.contains("+100.0 %"), "{stderr}");
    let (code, _, stderr) = run(&[&compare[..], &["--fail-if-worse", "--by", "150"]].concat());
    assert_eq!(code, 0, "a 100 % change is within a 150 % margin: {stderr}");
}

#[test]
fn a_suite_fails_its_gate_where_any_run_meets_it() {
    let profile = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/quick-suite.toml");
    let suite = ["suite", "--profile", profile, "--no-store"];
    let (code, _, stderr) = run(&[&suite[..], &["--fail-if", "p50 > 1ns"]].concat());
    assert_eq!(code, 3, "{stderr}");
    assert!(
        stderr.contains("gate failed: p50 of latency tcp 64 B is ") && stderr.contains("latency unix 1 KiB"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&[&suite[..], &["--fail-if", "p50 > 1h", "--fail-if", "goodput < 1k"]].concat());
    assert_eq!(code, 0, "the latency runs have no goodput and the throughput run no p50; neither fails: {stderr}");
}
