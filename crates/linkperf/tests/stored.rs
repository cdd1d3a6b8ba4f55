//! The results database through the real binary: runs kept as printed, listed, shown, exported and
//! imported; a killed run keeping its finished series; `--no-store`; an unusable database.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::time::Duration;

use common::{json, linkperf};

/// A database of its own for one test.
fn fresh_db() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db").display().to_string();
    (dir, path)
}

fn run_json(args: &[&str]) -> serde_json::Value {
    let output = linkperf().args(args).output().unwrap();
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    json(&output.stdout)
}

#[test]
fn a_run_is_kept_as_it_was_printed_and_shown_again() {
    let (_dir, db) = fresh_db();
    let printed = run_json(&["latency", "-n", "200", "--size", "64,1k", "--json", "--db", &db, "--label", "board-a"]);
    let runs = run_json(&["runs", "--json", "--db", &db]);
    assert_eq!(runs.as_array().unwrap().len(), 1);
    assert_eq!(runs[0]["labels"][0], "board-a");
    assert_eq!(runs[0]["state"], "complete");
    let id = runs[0]["id"].to_string();
    assert_eq!(run_json(&["show", &id, "--json", "--db", &db]), printed, "show prints what the run printed");
    let table = linkperf().args(["show", &id, "--db", &db]).output().unwrap();
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("labels: board-a") && text.contains("p50(typ)"), "{text}");
}

#[test]
fn runs_are_selected_by_label_test_and_time() {
    let (_dir, db) = fresh_db();
    run_json(&["latency", "-n", "50", "--json", "--db", &db, "--label", "before"]);
    run_json(&["connect", "-n", "50", "--json", "--db", &db, "--label", "after"]);
    let count = |extra: &[&str]| {
        let args: Vec<&str> = ["runs", "--json", "--db", &db].iter().copied().chain(extra.iter().copied()).collect();
        run_json(&args).as_array().unwrap().len()
    };
    assert_eq!(count(&[]), 2);
    assert_eq!(count(&["--label", "before"]), 1);
    assert_eq!(count(&["--test", "connect"]), 1);
    assert_eq!(count(&["--since", "1h"]), 2);
    assert_eq!(count(&["--since", "2099-01-01"]), 0);
    assert_eq!(count(&["--host", "embedded"]), 2);
}

#[test]
fn exported_runs_import_into_another_database_unchanged() {
    let (_dir, db) = fresh_db();
    let (_other_dir, other) = fresh_db();
    let printed = run_json(&["throughput", "-d", "1", "-P", "2", "--json", "--db", &db, "--label", "x"]);
    let export = linkperf().args(["export", "1", "--db", &db]).output().unwrap();
    assert!(export.status.success());
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), &export.stdout).unwrap();
    let path = file.path().display().to_string();
    let imported = linkperf().args(["import", &path, "--label", "copied", "--db", &other]).output().unwrap();
    assert!(imported.status.success(), "{}", String::from_utf8_lossy(&imported.stderr));
    assert_eq!(run_json(&["show", "1", "--json", "--db", &other]), printed);
    let runs = run_json(&["runs", "--json", "--db", &other]);
    assert_eq!(runs[0]["labels"], serde_json::json!(["copied", "x"]));
    // A result printed by --json imports too.
    std::fs::write(file.path(), serde_json::to_vec(&printed).unwrap()).unwrap();
    assert!(linkperf().args(["import", &path, "--db", &other]).output().unwrap().status.success());
    assert_eq!(run_json(&["runs", "--json", "--db", &other]).as_array().unwrap().len(), 2);
    let csv = linkperf().args(["export", "1", "--csv", "--db", &db]).output().unwrap();
    let text = String::from_utf8_lossy(&csv.stdout);
    assert!(
        text.starts_with("run,labels,test,proto,phase") && text.contains("\n1,\"[\"\"x\"\"]\",throughput,"),
        "{text}"
    );
}

#[test]
fn a_killed_run_keeps_the_series_it_had_finished() {
    let (_dir, db) = fresh_db();
    let mut child = common::spawnable()
        .args(["latency", "--size", "64,128,256,512,1k", "--duration", "1s", "--json", "--db", &db])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once two sizes of 1 s each are kept, with three still to measure.
    let path = std::path::Path::new(&db);
    assert!(common::watch::wait_for_series(path, 2, Duration::from_secs(30)), "{:?}", common::watch::newest_run(path));
    child.kill().unwrap();
    child.wait().unwrap();
    let runs = run_json(&["runs", "--json", "--db", &db]);
    assert_eq!(runs[0]["state"], "running", "never finished: {runs}");
    let kept = runs[0]["series"].as_u64().unwrap();
    assert!((2..5).contains(&kept), "{runs}");
    let shown = run_json(&["show", "1", "--json", "--db", &db]);
    assert!(shown["status"]["error"].as_str().unwrap().contains("without finishing"), "{shown}");
    assert_eq!(shown["series"][0]["size_bytes"], 64);
    let table = linkperf().args(["runs", "--db", &db]).output().unwrap();
    assert!(String::from_utf8_lossy(&table.stdout).contains("unfinished"));
}

#[test]
fn no_store_keeps_nothing_and_an_unusable_database_stops_before_measuring() {
    let (dir, db) = fresh_db();
    let output = linkperf().args(["latency", "-n", "20", "--json", "--no-store"]).env("LINKPERF_DB", &db).output();
    assert!(output.unwrap().status.success());
    assert!(!std::path::Path::new(&db).exists());
    let not_a_db = dir.path().join("notes.txt");
    std::fs::write(&not_a_db, "this is not a database").unwrap();
    let output = linkperf().args(["latency", "-n", "20", "--db", not_a_db.to_str().unwrap()]).output().unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--no-store"), "{stderr}");
    assert!(output.stdout.is_empty(), "nothing was measured");
    let missing = linkperf().args(["runs", "--db", "/nonexistent/results.db"]).output().unwrap();
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no results database"));
}

#[test]
fn compare_puts_matching_figures_side_by_side_with_a_verdict() {
    let (_dir, db) = fresh_db();
    run_json(&["latency", "-n", "2000", "--size", "64,1k", "--json", "--db", &db, "--label", "block"]);
    run_json(&["latency", "-n", "2000", "--size", "64", "--wait", "spin", "--json", "--db", &db, "--label", "spin"]);
    let output = linkperf().args(["compare", "--label", "block", "--label", "spin", "--db", &db]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("run 1 (block)") && text.contains("run 2 vs run 1"), "{text}");
    let p50 = text.lines().find(|l| l.starts_with("latency tcp 64 B") && l.contains("p50")).unwrap();
    assert!(p50.contains(" %"), "{p50}");
    let json = run_json(&["compare", "1", "2", "--json", "--db", &db]);
    let rows = json["rows"].as_array().unwrap();
    let missing = rows.iter().find(|r| r["subject"] == "latency tcp 1 KiB").unwrap();
    assert!(missing["values"][1].is_null(), "run 2 has no 1 KiB size: {missing}");
    // Which verdict two loopback runs get depends on the host; that the verdict follows the interval does
    // not. (The verdicts themselves, on links of known rates: netns.rs, compare_calls_...)
    let p50 = rows.iter().find(|r| r["subject"] == "latency tcp 64 B" && r["name"] == "p50").unwrap();
    let delta = &p50["deltas"][1];
    let (low, high) = (delta["interval"][0].as_f64().unwrap(), delta["interval"][1].as_f64().unwrap());
    let difference = delta["difference"].as_f64().unwrap();
    assert!(low <= difference && difference <= high, "{delta}");
    assert_eq!(delta["verdict"], if low > 0.0 || high < 0.0 { "real" } else { "noise" }, "{delta}");
    let p99 = rows.iter().find(|r| r["subject"] == "latency tcp 64 B" && r["name"] == "p99").unwrap();
    assert_eq!(p99["deltas"][1]["verdict"], "untested", "a tail has no interval: {p99}");
    for bad in [&["compare", "1"][..], &["compare", "1", "2", "--baseline", "9"], &["compare", "--label", "none", "1"]]
    {
        let output = linkperf().args(bad).args(["--db", &db]).output().unwrap();
        assert_eq!(output.status.code(), Some(2), "{bad:?}: {}", String::from_utf8_lossy(&output.stderr));
    }
}

#[test]
fn a_long_test_killed_part_way_keeps_its_intervals() {
    let (_dir, db) = fresh_db();
    let mut child = common::spawnable()
        .args(["throughput", "--duration", "30s", "--interval", "500ms", "--json", "--db", &db])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Killed once the upload's first intervals are kept (an interval is 0.5 s of the 30 s).
    assert!(
        common::wait_until(Duration::from_secs(30), || {
            let shown = linkperf().args(["show", "1", "--json", "--db", &db]).output().unwrap();
            String::from_utf8_lossy(&shown.stdout).contains("intervals of the upload")
        }),
        "no interval was kept"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    let shown = run_json(&["show", "1", "--json", "--db", &db]);
    let warnings = shown["warnings"].as_array().unwrap();
    let line = warnings
        .iter()
        .filter_map(|w| w.as_str())
        .find(|w| w.starts_with("never finished"))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(line.contains("intervals of the upload"), "{line}");
}
