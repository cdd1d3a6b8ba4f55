//! `suite --study radio-datasheet` across a 250 kbit/s link between test hosts: every row of the profile is
//! printed, each either with figures or with the reason it could not be measured, and the exit code says
//! whether any row is missing its figures.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

mod common;

use std::time::Duration;

use common::netns::{TestNet, RESPONDER_ADDRESS};
use common::{json, Server};

/// The rows of the radio datasheet, as the profile names them (a row may add a suffix, e.g. a flow).
fn profile_rows() -> Vec<String> {
    let text = include_str!("../../../profiles/radio-datasheet.toml");
    text.lines().filter_map(|l| l.strip_prefix("test = \"")).map(|l| l.trim_end_matches('"').to_string()).collect()
}

#[test]
fn every_radio_datasheet_row_on_a_slow_link_has_figures_or_a_reason() {
    let Some(net) = TestNet::create() else { return };
    // 250 kbit/s each way, a bucket of one full-size frame: the radio of study 1.
    net.shape("250kbit", "1600");
    let server = Server::start_in(Some(&net.responder), RESPONDER_ADDRESS, &[]);
    let port = server.port_arg();
    let args = [
        "suite",
        RESPONDER_ADDRESS,
        "--port",
        &port,
        "--study",
        "radio-datasheet",
        "--repeat",
        "1",
        "--link-rate",
        "250k",
        "--max",
        "250k",
        "--json",
        "--no-store",
    ];
    // Every test of the profile bounds its own time; ten minutes is far above their sum at this rate.
    let output = net.client_command(&args).timeout(Duration::from_secs(600)).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let document = json(&output.stdout);
    let rows = document["tables"][0]["rows"].as_array().unwrap_or_else(|| panic!("no rows: {stderr}"));
    for row in rows {
        eprintln!(
            "row: {} | {} | {} | {} | {} | {}",
            row["test"], row["min"], row["typ"], row["max"], row["unit"], row["reason"]
        );
    }
    for wanted in profile_rows() {
        assert!(
            rows.iter().any(|r| r["test"].as_str().unwrap_or_default().starts_with(&wanted)),
            "row '{wanted}' is missing: {stderr}"
        );
    }
    let unmeasured: Vec<&serde_json::Value> = rows.iter().filter(|r| r["typ"].is_null()).collect();
    for row in &unmeasured {
        let reason = row["reason"].as_str().unwrap_or_default();
        assert!(!reason.is_empty(), "a row without figures and without a reason: {row}");
        assert!(stderr.contains(&format!("datasheet row '{}' could not be measured", row["test"].as_str().unwrap())));
    }
    for row in rows.iter().filter(|r| !r["typ"].is_null()) {
        // Rates in the unit their magnitude asks for: on a 250 kbit/s link, no figure in Gbit/s or bit/s.
        assert!(row["unit"] != "Gbit/s" && row["unit"] != "Mbit/s" || row["typ"].as_f64().unwrap() >= 1.0, "{row}");
    }
    let code = output.status.code();
    match unmeasured.is_empty() {
        true => assert_eq!(code, Some(0), "{stderr}"),
        false => assert_eq!(code, Some(1), "{} rows without figures: {stderr}", unmeasured.len()),
    }
}

#[test]
fn a_row_whose_test_fails_is_printed_with_the_reason_and_the_suite_exits_1() {
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("p.toml");
    std::fs::write(
        &profile,
        "title = \"t\"\n[[section]]\nkind = \"datasheet\"\ntitle = \"Datasheet\"\n\
         [[section.row]]\ntest = \"Connection set-up\"\nrun = \"connect --count 5\"\nfigure = \"rtt\"\nnote = \"n\"\n\
         [[section.row]]\ntest = \"TCP one way\"\nrun = \"throughput --duration 1s\"\nfigure = \"goodput\"\nnote = \"m\"\n",
    )
    .unwrap();
    // A port nobody listens on: every test of the suite fails to connect.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let output = common::linkperf()
        .args(["suite", "127.0.0.1", "--port", &port, "--profile"])
        .arg(&profile)
        .args(["--link-rate", "1G", "--no-store"])
        .output()
        .unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for test in ["Connection set-up", "TCP one way"] {
        let row = stdout.lines().find(|l| l.starts_with(test)).unwrap_or_else(|| panic!("no row '{test}': {stdout}"));
        assert!(row.contains("NOT MEASURED") && row.contains("could not connect"), "{row}");
        assert!(stderr.contains(&format!("datasheet row '{test}' could not be measured")), "{stderr}");
    }
    // The link's rate went to the test that takes it, and only there.
    assert!(stderr.contains("linkperf throughput --duration 1s --link-rate 1G"), "{stderr}");
    assert!(!stderr.contains("connect --count 5 --link-rate"), "{stderr}");
}
