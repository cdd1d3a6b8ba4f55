//! Bad input refused before a test starts, with the reason and exit code 2; and text from a peer or an
//! imported file shown with its control characters escaped, never acted on by the terminal.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

mod common;

use std::io::{Read, Write};
use std::path::Path;

use common::{json, linkperf};
use predicates::str::contains;

/// The escape character: none may reach the terminal from a peer or a file.
const ESC: u8 = 0x1b;

#[test]
fn an_unknown_congestion_control_is_refused_naming_the_available_ones() {
    let available = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_available_congestion_control").unwrap();
    let first = available.split_whitespace().next().unwrap().to_string();
    linkperf()
        .args(["throughput", "--congestion", "nonexistent", "--duration", "1s", "--no-store"])
        .assert()
        .code(2)
        .stdout("")
        .stderr(contains("'nonexistent' cannot be used"))
        .stderr(contains(format!("available: {first}")));
    linkperf()
        .args(["latency", "--under-load", "up", "--load-congestion", "nonexistent", "--no-store"])
        .assert()
        .code(2)
        .stderr(contains("available: "));
}

#[test]
fn timeouts_and_intervals_below_their_floor_are_usage_errors() {
    for args in
        [&["latency", "--timeout", "100ns"][..], &["connect", "--timeout", "100ns"], &["idle", "--timeout", "0"]]
    {
        linkperf().args(args).arg("--no-store").assert().code(2).stderr(contains("between 1ms and 1h"));
    }
    linkperf()
        .args(["throughput", "--interval", "100ns", "--no-store"])
        .assert()
        .code(2)
        .stderr(contains("at least 10ms"));
    // An interval whose report would not fit in one message of the protocol.
    linkperf()
        .args(["throughput", "--duration", "1h", "--interval", "10ms", "--streams", "8", "--no-store"])
        .assert()
        .code(2)
        .stderr(contains("too many to report"));
}

#[test]
fn a_since_before_1970_is_an_error_not_a_panic() {
    linkperf().args(["runs", "--since", "99999999d"]).assert().code(2).stderr(contains("before 1970"));
}

fn key_file(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path
}

#[test]
fn shared_short_and_special_key_files_are_refused_on_both_ends() {
    let dir = tempfile::tempdir().unwrap();
    let readable = key_file(dir.path(), "readable", b"0123456789abcdef0123", 0o644);
    let short = key_file(dir.path(), "short", b"k", 0o600);
    let fifo = dir.path().join("fifo");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let cases = [(&readable, "chmod 600"), (&short, "fewer than the 16"), (&fifo, "not a regular file")];
    for (path, said) in cases {
        for command in [&["latency", "--no-store", "--key-file"][..], &["serve", "--port", "0", "--key-file"]] {
            // A FIFO with no writer must not hang start-up: the command's timeout would fail the test.
            linkperf().args(command).arg(path).assert().code(2).stderr(contains(said));
        }
    }
}

/// A result as `--json` prints it, with text a hostile peer or file could carry in every place that
/// reaches a table.
fn hostile_result() -> serde_json::Value {
    let output = linkperf().args(["connect", "--count", "2", "--json", "--no-store"]).assert().success();
    let mut result = json(&output.get_output().stdout);
    result["target"]["host"] = "host\u{1b}]0;pwned\u{7}".into();
    result["endpoints"]["responder"]["hostname"] = "resp\u{1b}[2J\rder".into();
    result["command"][0] = "linkperf\u{1b}[31m".into();
    result["started_at"] = "2026-11-23T00:00:00Z\u{1b}[A".into();
    result["status"] = serde_json::json!({"state": "partial", "error": "gone\u{1b}[8m\u{202e}"});
    result
}

#[test]
fn imported_text_is_shown_escaped_in_every_table() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("results.db");
    let db = db.to_str().unwrap();
    let file = dir.path().join("hostile.json");
    let run = hostile_result();
    let document = serde_json::json!({"linkperf_export": 1, "runs": [
        {"id": 1, "labels": ["red\u{1b}[31m"], "result": run},
        {"id": 2, "labels": ["blue"], "result": run},
    ]});
    std::fs::write(&file, document.to_string()).unwrap();
    let imported = linkperf().args(["import", "--db", db]).arg(&file).assert().success();
    assert!(!imported.get_output().stdout.contains(&ESC));
    for args in [
        &["runs"][..],
        &["show", "1"],
        &["show", "1", "--csv"],
        &["export", "1", "--csv"],
        &["compare", "1", "2"],
        &["compare", "1", "2", "--markdown"],
    ] {
        let output = linkperf().args(args).args(["--db", db]).assert().success();
        let stdout = &output.get_output().stdout;
        assert!(!stdout.contains(&ESC), "linkperf {args:?} printed an escape: {}", String::from_utf8_lossy(stdout));
        assert!(!stdout.contains(&b'\r'), "linkperf {args:?} printed a carriage return");
    }
    let shown = linkperf().args(["show", "1", "--db", db]).assert().success();
    let text = String::from_utf8_lossy(&shown.get_output().stdout).into_owned();
    assert!(text.contains("host\\x1b]0;pwned\\x07") && text.contains("gone\\x1b[8m\\u{202e}"), "{text}");
}

/// A "responder" that answers the hello with an error frame whose text holds escape sequences and a
/// newline followed by a forged line.
fn hostile_responder() -> (u16, std::thread::JoinHandle<()>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let serve = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).unwrap();
        let mut hello = [0u8; 64];
        let _ = stream.read(&mut hello);
        let body = serde_json::json!({"type": "error", "code": "over_limit",
            "message": "busy\u{1b}]0;pwned\u{7}\u{1b}[2J\nerror: forged line"})
        .to_string();
        let mut frame = (body.len() as u32).to_be_bytes().to_vec();
        frame.extend_from_slice(body.as_bytes());
        let _ = stream.write_all(&frame);
    });
    (port, serve)
}

#[test]
fn a_responders_error_text_is_shown_escaped_on_one_line() {
    let (port, serve) = hostile_responder();
    let output = linkperf().args(["latency", "127.0.0.1", "--port", &port.to_string(), "--no-store"]).assert().code(1);
    serve.join().unwrap();
    let stderr = output.get_output().stderr.clone();
    let text = String::from_utf8_lossy(&stderr);
    assert!(!stderr.contains(&ESC), "{text}");
    assert!(text.contains("busy\\x1b]0;pwned\\x07\\x1b[2J\\nerror: forged line"), "{text}");
    assert!(!text.lines().any(|line| line.starts_with("error: forged")), "{text}");
}

#[test]
fn serial_line_settings_without_a_serial_device_are_refused_by_serve() {
    let output = linkperf().args(["serve", "--port", "0", "--baud", "9600"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("set the serial line of `serve --serial PATH`"));
}
