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

/// The radio datasheet with its tests shortened (fewer round trips, shorter transfers), so that it runs in
/// about a minute at 250 kbit/s; the rows, their figures and their methods are the profile's. The rate
/// search keeps its 5 s trials: see the sustainable rate's tolerance below.
fn short_radio_profile() -> String {
    include_str!("../../../profiles/radio-datasheet.toml")
        .replace("--count 500", "--count 50")
        .replace("--count 2000", "--count 200")
        .replace("--count 5", "--count 2")
        .replace("--count 200 --rate 10", "--count 20 --rate 10")
        .replace("--interval 500ms --duration 10s", "--interval 500ms --duration 6s")
        .replace("--duration 10s", "--duration 5s")
}

/// The row whose Test starts with `name`.
fn row<'a>(rows: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    rows.iter()
        .find(|r| r["test"].as_str().unwrap_or_default().starts_with(name))
        .unwrap_or_else(|| panic!("no row '{name}' in {rows:?}"))
}

/// A row's figure in bits per second (rates are shown in kbit/s on this link).
fn bps(row: &serde_json::Value, figure: &str) -> f64 {
    assert_eq!(row["unit"], "kbit/s", "{row}");
    row[figure].as_f64().unwrap_or_else(|| panic!("no {figure}: {row}")) * 1e3
}

#[test]
fn the_radio_datasheet_of_a_250_kbit_link_holds_figures_the_link_can_carry() {
    let Some(net) = TestNet::create() else { return };
    // 250 kbit/s, a bucket of one frame and a queue of 30 kB (about 1 s of the link): the radio of study 1
    // behind a deep buffer. tbf counts the IP packet and the 14-byte Ethernet header of each frame, so the
    // link carries at most 250 000 x 1472/1514 = 243.1 kbit/s of UDP payload in 1472-byte datagrams and
    // 250 000 x 1448/1514 = 239.1 kbit/s of TCP payload in full segments (timestamps on).
    net.shape_with_queue("250kbit", "1600", "30000");
    let udp_capacity = 250e3 * 1472.0 / 1514.0;
    let tcp_capacity = 250e3 * 1448.0 / 1514.0;
    let server = Server::start_in(Some(&net.responder), RESPONDER_ADDRESS, &[]);
    let dir = tempfile::tempdir().unwrap();
    let profile = dir.path().join("radio.toml");
    std::fs::write(&profile, short_radio_profile()).unwrap();
    let port = server.port_arg();
    let profile_arg = profile.display().to_string();
    let args = [
        "suite",
        RESPONDER_ADDRESS,
        "--port",
        &port,
        "--profile",
        &profile_arg,
        "--repeat",
        "1",
        "--link-rate",
        "250k",
        "--max",
        "250k",
        "--json",
        "--no-store",
    ];
    // Each test bounds its own time; five minutes is far above their sum at this rate.
    let output = net.client_command(&args).timeout(Duration::from_secs(300)).output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let document = json(&output.stdout);
    let rows = document["tables"][0]["rows"].as_array().unwrap_or_else(|| panic!("no rows: {stderr}")).clone();
    for r in &rows {
        eprintln!("row: {} | {} | {} | {} | {} | {}", r["test"], r["min"], r["typ"], r["max"], r["unit"], r["remark"]);
    }
    assert_eq!(output.status.code(), Some(0), "every row measured: {stderr}");
    for wanted in profile_rows() {
        row(&rows, &wanted);
    }
    // The handshake alone is a strict part of connect + request + first reply byte (about one round trip
    // of two).
    let typ = |name: &str| row(&rows, name)["typ"].as_f64().unwrap();
    assert!(typ("TCP handshake (bare connect)") < typ("Connection establishment latency"));
    for row in &rows {
        // Rates in the unit their magnitude asks for: on a 250 kbit/s link, no figure below 1 Mbit/s or
        // Gbit/s reads in those units.
        let unit = &row["unit"];
        assert!(unit != "Gbit/s" && unit != "Mbit/s" || row["typ"].as_f64().unwrap() >= 1.0, "{row}");
    }

    // The sustainable rate. Above the capacity, a trial's queue grows, but it counts only once it adds two
    // datagram times to the delay (docs/metrics.md, "Delay growth"): over a 5 s trial, a rate 2 x 1472 x 8
    // bits / 5 s = 4.7 kbit/s (1.9 %) above the capacity. The RFC 2544 rate of such a link, 250 kbit/s (the
    // bound, 2.9 % above), is out. Below: the search's precision (1 %) and its step below the capacity
    // estimate (half of it), with room for a trial of 106 datagrams to be a datagram short: 3.5 %.
    let resolution = 2.0 * 1472.0 * 8.0 / 5.0 / udp_capacity;
    let sustainable = bps(row(&rows, "UDP throughput, sustainable"), "typ");
    assert!(sustainable <= udp_capacity * (1.0 + resolution), "sustainable {sustainable:.0} above {udp_capacity:.0}");
    assert!(sustainable >= udp_capacity * 0.965, "sustainable {sustainable:.0} of {udp_capacity:.0}");
    // The RFC 2544 figure comes from the same trials, and the queue can only lift it.
    assert!(bps(row(&rows, "UDP throughput, maximum with 0 % packet loss"), "typ") >= sustainable);

    // Half duplex: each direction over the time its own turns held the link (writing and the drain that
    // follows), so each is near the link's rate, and both ways together cannot exceed it. Above: the bucket
    // (1600 bytes) passes at once at the start of a turn, under 2 % of a turn of at least 1.5 s (0.5 s of
    // writing and the drain of a 30 kB queue). Below: a turn leaves the link idle while the last
    // acknowledgement and the turn's hand-over travel back (tens of ms of a turn of seconds), and while TCP
    // waits out a retransmission timeout when the queue overflowed (a second or more at these round trips:
    // one upload turn measured 175 kbit/s, its direction 196): at least half the link.
    let burst_share = 1600.0 * 8.0 / (tcp_capacity * 1.5);
    for direction in ["(upload)", "(download)", "(both ways)"] {
        let half = row(&rows, &format!("TCP/IP throughput, bidirectional (half duplex) {direction}"));
        let typ = bps(half, "typ");
        assert!(typ <= tcp_capacity * (1.0 + burst_share), "{direction}: {typ:.0} above {tcp_capacity:.0}");
        assert!(typ >= tcp_capacity * 0.5, "{direction}: {typ:.0} of {tcp_capacity:.0}");
    }

    // One way: Min and Max over spans of at least four of the loaded round trips (a 30 kB queue holds 1 s
    // of this link), not over 1 s intervals that see TCP's stalls (35 kbit/s) and the release of data held
    // behind a retransmission (614 kbit/s). Over four round trips such an event moves about a round trip's
    // data in or out of a span: within half the capacity either way.
    for name in ["Peak one-way throughput", "TCP/IP throughput, one way"] {
        let one_way = row(&rows, name);
        let span = one_way["min_max_span_s"].as_f64().unwrap_or(1.0);
        assert!(one_way["remark"].is_string() || span == 1.0, "{one_way}");
        let (min, max) = (bps(one_way, "min"), bps(one_way, "max"));
        assert!(min >= tcp_capacity * 0.5 && max <= tcp_capacity * 1.5, "{name}: {min:.0} - {max:.0} over {span} s");
    }
}
