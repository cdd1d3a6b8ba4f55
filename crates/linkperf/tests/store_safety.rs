//! The results database under stress and in odd states, through the real binary: many runs keeping their
//! results at once, a database locked by another process, runs that fail before measuring, and a database
//! that may only be read.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{binary, json, wait_until, Server};

/// Runs at once in [`concurrent_runs_keep_every_result`]: each is a process with its own embedded
/// responder, opening, writing and finishing its run in one database while the others do.
const CONCURRENT_RUNS: usize = 200;

fn db_in(dir: &Path) -> PathBuf {
    dir.join("results.db")
}

/// `linkperf ARGS --db DB`, with a timeout.
fn linkperf_with(db: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    let mut command = assert_cmd::Command::new(binary());
    command.timeout(Duration::from_secs(120)).args(args).arg("--db").arg(db).assert()
}

/// The stored runs, as `linkperf runs --json` lists them.
fn listed(db: &Path) -> Vec<serde_json::Value> {
    let output = linkperf_with(db, &["runs", "--json", "--limit", "100000"]).success().get_output().stdout.clone();
    json(&output).as_array().expect("runs --json prints an array").clone()
}

#[test]
fn concurrent_runs_keep_every_result() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(dir.path());
    let children: Vec<_> = (0..CONCURRENT_RUNS)
        .map(|_| {
            Command::new(binary())
                .args(["connect", "--count", "3", "--json", "--no-progress", "--db"])
                .arg(&db)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("linkperf starts")
        })
        .collect();
    let mut printed = 0;
    let mut failures = Vec::new();
    for child in children {
        let output = child.wait_with_output().expect("linkperf runs");
        match output.status.success() {
            true if serde_json::from_slice::<serde_json::Value>(&output.stdout).is_ok() => printed += 1,
            _ => failures.push(String::from_utf8_lossy(&output.stderr).into_owned()),
        }
    }
    assert!(failures.is_empty(), "{} of {CONCURRENT_RUNS} runs failed, e.g. {:?}", failures.len(), failures.first());
    let runs = listed(&db);
    let complete = runs.iter().filter(|r| r["state"] == "complete" && r["series"] == 1).count();
    assert_eq!((printed, runs.len(), complete), (CONCURRENT_RUNS, CONCURRENT_RUNS, CONCURRENT_RUNS));
}

#[test]
fn a_locked_database_neither_stalls_nor_loses_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(dir.path());
    linkperf_with(&db, &["connect", "--count", "1", "--json"]).success();
    // Another process holds the write lock for as long as this test likes.
    let mut holder = rusqlite::Connection::open(&db).unwrap();
    let lock = holder.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).unwrap();
    let stdout = dir.path().join("stdout.json");
    let mut child = Command::new(binary())
        .args(["connect", "--count", "3", "--json", "--no-progress", "--db"])
        .arg(&db)
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The run measures and prints while the lock is held: the writes wait on a thread of their own.
    let printed = wait_until(Duration::from_secs(60), || {
        std::fs::read(&stdout).is_ok_and(|out| serde_json::from_slice::<serde_json::Value>(&out).is_ok())
    });
    let still_running = child.try_wait().unwrap().is_none();
    drop(lock);
    let output = child.wait_with_output().unwrap();
    assert!(printed, "nothing printed while the database was locked: {}", String::from_utf8_lossy(&output.stderr));
    assert!(still_running, "the run ended before the lock was released, so it was not kept");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let runs = listed(&db);
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["state"], "complete");
}

#[test]
fn a_run_refused_by_the_responder_is_kept_as_failed_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(dir.path());
    let key = dir.path().join("key");
    std::fs::write(&key, "a key of more than sixteen bytes").unwrap();
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let server = Server::start(&["--key-file", key.to_str().unwrap()]);
    let refused = linkperf_with(&db, &["latency", "127.0.0.1", "--port", &server.port_arg(), "--count", "3"]).code(1);
    let said = String::from_utf8_lossy(&refused.get_output().stderr).into_owned();
    assert!(said.contains("key"), "{said}");
    let runs = listed(&db);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["state"], "failed");
    let shown = linkperf_with(&db, &["show", &runs[0]["id"].to_string()]).success();
    let text = String::from_utf8_lossy(&shown.get_output().stdout).into_owned();
    assert!(text.contains("failed before measuring anything") && text.contains("key"), "{text}");
    assert!(!text.contains("killed"), "{text}");
    let document = json(&linkperf_with(&db, &["show", "--json", &runs[0]["id"].to_string()]).get_output().stdout);
    assert_eq!(document["status"]["state"], "failed");
}

#[test]
fn an_unreachable_responder_is_kept_as_a_failed_run() {
    let dir = tempfile::tempdir().unwrap();
    let db = db_in(dir.path());
    // A port nobody listens on: bound, then closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    linkperf_with(&db, &["connect", "127.0.0.1", "--port", &port, "--count", "1"]).code(1);
    let runs = listed(&db);
    assert_eq!((runs.len(), runs[0]["state"].as_str()), (1, Some("failed")));
    let shown = linkperf_with(&db, &["show", "--json", &runs[0]["id"].to_string()]).success();
    let error = json(&shown.get_output().stdout)["status"]["error"].as_str().unwrap_or_default().to_string();
    assert!(error.contains("could not connect"), "{error}");
}

/// A command that runs as an unprivileged user when this test runs as root (root writes read-only files).
fn as_reader(args: &[&str], db: &Path) -> std::process::Output {
    let root = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap_or(false);
    let mut command = if root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", binary()]);
        c
    } else {
        Command::new(binary())
    };
    command.args(args).arg("--db").arg(db).output().expect("setpriv (util-linux) runs the binary as nobody")
}

#[test]
fn a_read_only_database_can_be_listed_shown_exported_compared_and_reported() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let db = db_in(&data);
    linkperf_with(&db, &["connect", "--count", "2", "--json"]).success();
    linkperf_with(&db, &["connect", "--count", "2", "--json"]).success();
    let set = |path: &Path, mode| std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    set(dir.path(), 0o755);
    set(&db, 0o444);
    set(&data, 0o555);
    let commands: [&[&str]; 6] = [
        &["runs"],
        &["show", "1"],
        &["show", "2", "--json"],
        &["export", "1", "2"],
        &["compare", "1", "2"],
        &["report", "1", "2"],
    ];
    for args in commands {
        let output = as_reader(args, &db);
        assert!(
            output.status.success() && !output.stdout.is_empty(),
            "linkperf {args:?} on a read-only database: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    // A test cannot keep its run there: it says so before it measures anything.
    let test = as_reader(&["connect", "--count", "2"], &db);
    assert_eq!(test.status.code(), Some(1));
    assert!(test.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&test.stderr).contains("is read-only"),
        "{}",
        String::from_utf8_lossy(&test.stderr)
    );
    // Nothing was written: no journal or shared-memory file appeared beside the database.
    let files: Vec<_> = std::fs::read_dir(&data).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(files, vec![std::ffi::OsString::from("results.db")]);
    set(&data, 0o755);
}
