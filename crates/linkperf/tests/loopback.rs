//! Every test over every transport on loopback, against the embedded responder and a real `serve`.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use common::{json, linkperf, Server};

#[test]
fn tcp_latency_reports_every_size_with_the_counts_asked() {
    let output = linkperf()
        .args(["latency", "--size", "1,64,1k,64k", "-n", "200", "--warmup", "5", "--json"])
        .output()
        .expect("runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let result = json(&output.stdout);
    assert_eq!(result["schema_version"], 1);
    assert_eq!(result["status"]["state"], "complete");
    let series = result["series"].as_array().expect("series");
    let sizes: Vec<u64> = series.iter().map(|s| s["size_bytes"].as_u64().expect("size")).collect();
    assert_eq!(sizes, vec![1, 64, 1024, 65536]);
    for s in series {
        let summary = &s["summary"];
        assert_eq!(summary["count"], 200);
        let (min, p50, max) = (
            summary["min_us"].as_f64().unwrap(),
            summary["p50_us"].as_f64().unwrap(),
            summary["max_us"].as_f64().unwrap(),
        );
        assert!(0.0 < min && min <= p50 && p50 <= max, "{summary}");
        assert!(s["transactions_per_s"].as_f64().unwrap() > 0.0);
        assert!(!s["histogram"].as_str().unwrap().is_empty());
    }
    assert!(!result["endpoints"]["responder"]["hostname"].as_str().unwrap().is_empty());
}

#[test]
fn udp_latency_counts_no_loss_on_loopback() {
    let output = linkperf()
        .args(["latency", "--proto", "udp", "--size", "12,1k,16k", "-n", "300", "--wait", "spin", "--json"])
        .output()
        .expect("runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    for s in json(&output.stdout)["series"].as_array().unwrap() {
        assert_eq!(s["summary"]["count"].as_u64().unwrap() + s["lost"].as_u64().unwrap(), 300);
    }
}

#[test]
fn unix_latency_runs_several_sessions_and_aggregates_them() {
    let output = linkperf()
        .args(["latency", "--proto", "unix", "--sessions", "3", "-n", "100", "--json"])
        .output()
        .expect("runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let result = json(&output.stdout);
    let series = result["series"].as_array().unwrap();
    assert_eq!(series.len(), 4, "aggregate and three sessions");
    assert!(series[0]["session"].is_null());
    assert_eq!(series[0]["summary"]["count"], 300);
    for (i, s) in series[1..].iter().enumerate() {
        assert_eq!(s["session"], i as u64 + 1);
        assert_eq!(s["summary"]["count"], 100);
    }
}

#[test]
fn open_loop_latency_keeps_its_schedule() {
    // 200 requests at 1000/s take 0.2 s by the schedule; a closed loop on loopback would take a few ms.
    let output = linkperf().args(["latency", "--rate", "1k", "-n", "200", "--json"]).output().expect("runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let series = &json(&output.stdout)["series"][0];
    let elapsed = series["elapsed_s"].as_f64().unwrap();
    assert!((0.195..1.0).contains(&elapsed), "elapsed {elapsed}");
}

#[test]
fn duration_bounds_a_series() {
    let started = std::time::Instant::now();
    let output = linkperf().args(["latency", "--duration", "300ms", "--json"]).output().expect("runs");
    assert!(output.status.success());
    let elapsed = json(&output.stdout)["series"][0]["elapsed_s"].as_f64().unwrap();
    assert!((0.3..0.5).contains(&elapsed), "elapsed {elapsed}");
    assert!(started.elapsed().as_secs_f64() < 10.0);
}

#[test]
fn connect_measures_every_connection() {
    for proto in ["tcp", "unix"] {
        let output = linkperf().args(["connect", "--proto", proto, "-n", "200", "--json"]).output().expect("runs");
        assert!(output.status.success(), "{proto}: {}", String::from_utf8_lossy(&output.stderr));
        let result = json(&output.stdout);
        assert_eq!(result["parameters"]["test"], "connect");
        assert_eq!(result["series"][0]["summary"]["count"], 200);
    }
}

#[test]
fn a_bare_connect_times_the_handshake_alone() {
    let p50 = |extra: &[&str]| {
        let output = linkperf().args([&["connect", "-n", "500", "--json"][..], extra].concat()).output().expect("runs");
        assert!(output.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&output.stderr));
        let result = json(&output.stdout);
        assert_eq!(result["parameters"]["bare"].as_bool().unwrap_or(false), !extra.is_empty(), "recorded");
        result["series"][0]["summary"]["p50_us"].as_f64().unwrap()
    };
    let (full, bare) = (p50(&[]), p50(&["--bare"]));
    // A bare connection's time is a strict part of a full one's: the rest is a request and its answer, a
    // round trip through the responder, which on loopback costs as much again as the handshake.
    assert!(bare < full, "bare {bare} µs, full {full} µs");
}

#[test]
fn cpu_placement_is_applied_recorded_and_checked() {
    // CPU 0 exists on every host; both ends on it is a valid (if slow) placement.
    let output = linkperf()
        .args(["latency", "-n", "200", "--affinity", "0", "--responder-affinity", "0", "--json", "--no-store"])
        .output()
        .expect("runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let placement = &json(&output.stdout)["endpoints"]["placement"];
    assert_eq!(placement, &serde_json::json!({ "client": [0], "responder": [0] }));
    let table = linkperf().args(["latency", "-n", "50", "--affinity", "0", "--no-store"]).output().expect("runs");
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("pinned:    client on CPUs 0, responder unpinned"), "{text}");
    for (args, says) in [
        (&["--affinity", "8000"][..], "are not all ones this process may use (CPUs online: "),
        (&["--affinity", "2-1"][..], "runs backwards"),
        (&["127.0.0.1", "--responder-affinity", "0"][..], "pin a responder elsewhere with `linkperf serve --affinity"),
    ] {
        let output =
            linkperf().args([&["latency", "-n", "10", "--no-store"][..], args].concat()).output().expect("runs");
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(says),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
}

#[test]
fn serve_affinity_pins_every_responder_thread() {
    let server = Server::start(&["--affinity", "0"]);
    // A test's data threads start after the responder: run one, then read every thread's allowed CPUs.
    let output =
        linkperf().args(["latency", "127.0.0.1", "-p", &server.port_arg(), "-n", "100"]).output().expect("runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(server.log.lock().unwrap()[0].contains(", on CPUs 0"), "serve says where it runs");
    let tasks = std::fs::read_dir(format!("/proc/{}/task", server.child.id())).unwrap();
    for task in tasks {
        let status = std::fs::read_to_string(task.unwrap().path().join("status")).unwrap();
        let allowed = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")).unwrap();
        assert_eq!(allowed.split_whitespace().nth(1), Some("0"), "{allowed}");
    }
}

#[test]
fn table_and_csv_name_their_units() {
    let table = linkperf().args(["latency", "-n", "50"]).output().expect("runs");
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(text.contains("round-trip times in µs"), "{text}");
    assert!(text.contains("p50(typ)"), "{text}");
    let csv = linkperf().args(["latency", "-n", "50", "--csv"]).output().expect("runs");
    let text = String::from_utf8_lossy(&csv.stdout);
    assert!(text.starts_with("test,proto,size_bytes,session,count,min_us"), "{text}");
    assert_eq!(text.lines().count(), 2);
}

#[test]
fn a_real_responder_serves_every_proto_and_logs_each_session() {
    let socket = tempfile::tempdir().unwrap();
    let path = socket.path().join("lp.sock");
    let server = Server::start(&["--unix", path.to_str().unwrap()]);
    for proto in ["tcp", "udp"] {
        let output = linkperf()
            .args(["latency", "127.0.0.1", "-p", &server.port_arg(), "--proto", proto, "-n", "100", "--json"])
            .output()
            .expect("runs");
        assert!(output.status.success(), "{proto}: {}", String::from_utf8_lossy(&output.stderr));
    }
    let output = linkperf()
        .args(["latency", "--unix", path.to_str().unwrap(), "--proto", "unix", "-n", "100"])
        .output()
        .expect("runs");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(server.wait_for_log("1 tests", std::time::Duration::from_secs(5)), "{:?}", server.log.lock().unwrap());
}

#[test]
fn throughput_runs_every_direction_and_reports_both_ends() {
    for (proto, direction) in [("tcp", "up"), ("tcp", "down"), ("unix", "bidir")] {
        let output = linkperf()
            .args(["throughput", "--proto", proto, "--direction", direction, "-P", "2", "--duration", "1s"])
            .args(["--interval", "250ms", "--json"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{proto} {direction}: {}", String::from_utf8_lossy(&output.stderr));
        let result = json(&output.stdout);
        let series = result["throughput"].as_array().unwrap();
        let flows = if direction == "bidir" { 2 } else { 1 };
        assert_eq!(series.len(), flows * 3, "a sum and two streams per flow");
        for s in series {
            let (received, sent) = (s["receiver_bps"].as_f64().unwrap(), s["sender_bps"].as_f64().unwrap());
            assert!(received > 0.0 && sent > 0.0, "{s}");
            // Nothing is lost inside one host: the two ends agree to within the edges of their windows.
            assert!((received - sent).abs() / sent < 0.1, "{proto} {direction}: received {received}, sent {sent}");
        }
        let sum = &series[0];
        assert!(sum["stream"].is_null());
        for end in ["sender_cpu", "receiver_cpu"] {
            let cost = &sum[end];
            assert!(cost["cpu_s_per_gb"].as_f64().unwrap() > 0.0, "{end}: {cost}");
            let busiest = cost["busiest_thread_percent"].as_f64().unwrap();
            assert!(busiest > 0.0 && busiest <= 110.0, "{end}: a thread uses at most about one core: {cost}");
        }
        // 1 s in 250 ms intervals, and perhaps a fifth for bytes still in flight at the end.
        let intervals = sum["intervals"].as_array().unwrap().len();
        assert!((4..=5).contains(&intervals), "{intervals} intervals");
        // The sum's window is the time in which every stream of its flow ran: within each stream's own.
        let window = sum["window_s"].as_f64().unwrap();
        for s in series.iter().filter(|s| !s["stream"].is_null() && s["flow"] == sum["flow"]) {
            assert!(window > 0.0 && window <= s["window_s"].as_f64().unwrap() + 1e-9, "{sum}\n{s}");
        }
    }
}

#[test]
fn throughput_sizes_give_one_row_each_with_time_per_message() {
    let output = linkperf()
        .args(["throughput", "--size", "64,64k", "--duration", "500ms", "--interval", "100ms", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let result = json(&output.stdout);
    let series = result["throughput"].as_array().unwrap();
    let sizes: Vec<u64> = series.iter().map(|s| s["size_bytes"].as_u64().unwrap()).collect();
    assert_eq!(sizes, vec![64, 65536]);
    for s in series {
        let (bps, us) = (s["receiver_bps"].as_f64().unwrap(), s["us_per_message"].as_f64().unwrap());
        let size = s["size_bytes"].as_f64().unwrap();
        assert!((us - size * 8.0 / bps * 1e6).abs() < 1e-6 * us, "µs per message is the size at the goodput");
        assert!(s["tcp"]["mss_bytes"].as_u64().unwrap() > 0, "TCP state of the sender");
    }
}

#[test]
fn udp_throughput_at_a_modest_rate_loses_nothing_on_loopback() {
    // GSO batches up, sendmmsg batches down, and one datagram per call.
    for (direction, batching) in
        [("up", &[][..]), ("down", &["--no-gso"][..]), ("up", &["--no-gso", "--batch", "1"][..])]
    {
        let output = linkperf()
            .args(["throughput", "--proto", "udp", "--direction", direction, "--rate", "100M", "--duration", "1s"])
            .args(["--interval", "250ms", "--json"])
            .args(batching)
            .output()
            .unwrap();
        assert!(output.status.success(), "{direction}: {}", String::from_utf8_lossy(&output.stderr));
        let result = json(&output.stdout);
        let sum = &result["throughput"][0];
        let udp = &sum["udp"];
        assert_eq!(udp["lost"], 0, "{direction}: {udp}");
        assert_eq!(udp["sent"], udp["received"], "{direction}: {udp}");
        assert_eq!(udp["duplicates"], 0);
        // The sender paces to 100 Mbit/s and never above: after a stall it re-anchors its schedule rather than
        // bursting, so no host, however busy, makes it exceed the rate (1 %: the edges of the sender's window).
        // How close it comes from below depends on the host's load here, which these tests share; that the
        // pacing holds the rate is tested on a shaped link (netns.rs, udp_loss_appears_only_above_...).
        let sent_bps = sum["sender_bps"].as_f64().unwrap();
        assert!(sent_bps <= 100e6 * 1.01, "{direction}: sent {sent_bps}");
        assert!(udp["jitter_us"].as_f64().unwrap() >= 0.0);
    }
}

#[test]
fn alternating_directions_take_turns_every_interval() {
    for extra in [&[][..], &["--proto", "udp", "--rate", "200M"][..]] {
        let output = linkperf()
            .args(["throughput", "--direction", "alternate", "--duration", "2s", "--interval", "250ms", "--json"])
            .args(extra)
            .output()
            .unwrap();
        assert!(output.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&output.stderr));
        assert_takes_turns(&json(&output.stdout));
    }
}

fn assert_takes_turns(result: &serde_json::Value) {
    let sums: Vec<&serde_json::Value> =
        result["throughput"].as_array().unwrap().iter().filter(|s| s["stream"].is_null()).collect();
    assert_eq!(sums.len(), 2, "an upload and a download sum");
    for sum in sums {
        // Each receiver's clock starts at its direction's first byte, so its own turns are the even
        // intervals; in the odd ones only what was still buffered at the turn arrives.
        // Without turns both halves would be alike; with them, the own turns carry most of the data. (Over
        // the first three pairs together: on a busy host one turn can carry over more than usual.)
        let bytes: Vec<u64> =
            sum["intervals"].as_array().unwrap().iter().map(|i| i["bytes"].as_u64().unwrap()).collect();
        let pairs: Vec<&[u64]> = bytes.chunks(2).filter(|p| p.len() == 2).take(3).collect();
        assert_eq!(pairs.len(), 3, "{}: {bytes:?}", sum["flow"]);
        let own: u64 = pairs.iter().map(|p| p[0]).sum();
        let other: u64 = pairs.iter().map(|p| p[1]).sum();
        // Without turns the two halves would carry about the same; measured with turns: 4 to 20 times more on
        // an idle host, 3.98 with this host's 2 cores loaded 3-fold. Twice is far from both.
        assert!(own > 2 * other, "{}: {bytes:?}", sum["flow"]);
    }
}

#[test]
fn idle_measures_one_series_per_gap_after_the_gap() {
    for extra in [&[][..], &["--keepalive", "10ms", "--proto", "tcp"][..]] {
        let output = linkperf().args(["idle", "--gaps", "0,50ms", "-n", "3", "--json"]).args(extra).output().unwrap();
        assert!(output.status.success(), "{extra:?}: {}", String::from_utf8_lossy(&output.stderr));
        let result = json(&output.stdout);
        assert_eq!(result["parameters"]["test"], "idle");
        let series = result["series"].as_array().unwrap();
        let gaps: Vec<f64> = series.iter().map(|s| s["gap_s"].as_f64().unwrap()).collect();
        assert_eq!(gaps, vec![0.0, 0.05]);
        for s in series {
            assert_eq!(s["summary"]["count"].as_u64().unwrap() + s["lost"].as_u64().unwrap(), 3);
        }
        // Three messages, each after 50 ms of silence.
        assert!(series[1]["elapsed_s"].as_f64().unwrap() >= 0.15, "{}", series[1]);
    }
}

#[test]
fn a_sweep_has_one_row_per_step_at_its_offered_rate() {
    let output = linkperf()
        .args(["sweep", "--rates", "20M,40M,80M", "--duration", "500ms", "--settle", "100ms", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stderr).contains("sweep: 3 steps"), "the bound is announced");
    let result = json(&output.stdout);
    assert_eq!(result["parameters"]["test"], "sweep");
    let rows = result["throughput"].as_array().unwrap();
    assert_eq!(rows.len(), 3, "one row per step: {rows:?}");
    for (row, offered) in rows.iter().zip([20e6, 40e6, 80e6]) {
        assert_eq!(row["udp"]["offered_bps"].as_f64(), Some(offered));
        let sent = row["sender_bps"].as_f64().unwrap();
        // A paced sender never goes over its rate (2 %: the edges of a short step's window); how close it
        // comes from below depends on this shared host's load, and is tested on a shaped link (netns.rs).
        assert!(sent <= offered * 1.02, "sent {sent} at {offered}: {row}");
        assert!(row["udp"]["received"].as_u64().unwrap() > 0);
        assert!(row["responder_counters"].is_object(), "the receiver's counters are kept per step");
    }
}

#[test]
fn a_rate_search_beyond_the_sender_reports_its_trials_and_no_rate() {
    // 400 to 1000 Gbit/s of 1472-byte datagrams (34 to 85 million a second) is beyond any one sender on
    // loopback (a few Gbit/s here), so every trial fails as sender-limited: the search must say so, not
    // report a rate. (A rate found, and the latency at it: netns.rs, ratesearch_finds_the_shaped_...)
    let output = linkperf()
        .args(["ratesearch", "--payload", "1472", "--min", "400G", "--max", "1000G", "--trial", "200ms"])
        .args(["--settle", "100ms", "--precision", "10%", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("ratesearch: 1 size(s)") && stderr.contains("done within"), "{stderr}");
    let result = json(&output.stdout);
    let found = &result["rate_search"][0];
    let trials = result["throughput"].as_array().unwrap();
    assert_eq!(found["trials"].as_u64(), Some(trials.len() as u64), "every trial is kept: {found}");
    assert_eq!(trials[0]["udp"]["offered_bps"].as_f64(), Some(1e12), "the first trial is at the maximum");
    assert_eq!(found["complete"], true, "{found}");
    assert!(found["rate_bps"].is_null() && found["packets_per_s"].is_null(), "{found}");
    assert_eq!(found["sender_limited"], true, "{found}");
    for trial in trials {
        let (sent, offered) = (trial["sender_bps"].as_f64().unwrap(), trial["udp"]["offered_bps"].as_f64().unwrap());
        assert!(offered >= 400e9 && sent < offered * 0.98, "{trial}");
    }
}

#[test]
fn latency_under_load_measures_each_size_idle_then_beside_the_load() {
    let output = linkperf()
        .args(["latency", "--under-load", "up", "--duration", "500ms", "--size", "64,1k", "--json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let result = json(&output.stdout);
    let series = result["series"].as_array().unwrap();
    let shape: Vec<(u64, Option<&str>)> =
        series.iter().map(|s| (s["size_bytes"].as_u64().unwrap(), s["load"].as_str())).collect();
    assert_eq!(shape, vec![(64, None), (64, Some("upload")), (1024, None), (1024, Some("upload"))]);
    assert!(series.iter().all(|s| s["summary"]["count"].as_u64().unwrap() > 0));
    let load = result["throughput"].as_array().unwrap();
    assert_eq!(load.len(), 2, "one load per size: {load:?}");
    // The load runs 2 s before and after the 0.5 s series.
    for row in load {
        assert!(row["receiver_bps"].as_f64().unwrap() > 0.0 && row["window_s"].as_f64().unwrap() > 4.0, "{row}");
    }
}

#[test]
fn the_largest_udp_datagram_depends_on_the_ip_version() {
    // 65527 bytes of payload fit a datagram over IPv6, not over IPv4 (65507).
    let server = common::Server::start_in(None, "::1", &[]);
    let port = server.port_arg();
    let v6 = linkperf()
        .args(["throughput", "::1", "-p", &port, "--proto", "udp", "--size", "65527", "-d", "1", "--json"])
        .output()
        .unwrap();
    assert!(v6.status.success(), "{}", String::from_utf8_lossy(&v6.stderr));
    assert!(json(&v6.stdout)["throughput"][0]["udp"]["received"].as_u64().unwrap() > 0);
    let v4 = linkperf().args(["throughput", "--proto", "udp", "--size", "65527", "-d", "1"]).output().unwrap();
    assert_eq!(v4.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&v4.stderr).contains("at most 65507 bytes over IPv4"));
}
