//! `linkperf serve`'s safe defaults, seen from the client: spinning needs `--allow-spin`, a keyed
//! responder discloses its host only to key holders, and a responder's error text is printed escaped.

mod common;

use common::{linkperf, Server};
use predicates::prelude::PredicateBooleanExt;
use predicates::str::contains;

#[test]
fn spinning_is_served_only_when_the_operator_allows_it() {
    let strict = Server::start(&[]);
    linkperf()
        .args(["latency", "127.0.0.1", "-p", &strict.port_arg(), "--wait", "spin", "-n", "20", "--no-store"])
        .assert()
        .code(1)
        .stderr(contains("does not spin").and(contains("--allow-spin")));
    let lenient = Server::start(&["--allow-spin"]);
    linkperf()
        .args(["latency", "127.0.0.1", "-p", &lenient.port_arg(), "--wait", "spin", "-n", "20", "--no-store"])
        .assert()
        .success();
}

#[test]
fn an_unpaced_udp_upload_is_served_under_the_default_rate_limit() {
    // The default --max-rate bounds what the responder sends; what the client sends is its own.
    let server = Server::start(&[]);
    linkperf()
        .args(["throughput", "127.0.0.1", "-p", &server.port_arg(), "--proto", "udp", "-d", "1", "--no-store"])
        .assert()
        .success();
}

#[test]
fn the_rate_limit_can_be_lifted_and_is_checked_as_a_rate() {
    let lifted = Server::start(&["--max-rate", "none"]);
    linkperf()
        .args(["throughput", "127.0.0.1", "-p", &lifted.port_arg(), "--proto", "udp", "--rate", "2G"])
        .args(["-d", "1", "--no-store"])
        .assert()
        .success();
    linkperf().args(["serve", "--max-rate", "fast"]).assert().code(2);
}

#[test]
fn an_absurd_interval_is_refused_not_a_crash() {
    let server = Server::start(&[]);
    let port = server.port_arg();
    // The client refuses an interval below 10 ms itself, as a usage error ...
    linkperf()
        .args(["throughput", "127.0.0.1", "-p", &port, "-d", "1", "--interval", "100us", "--no-store"])
        .assert()
        .code(2)
        .stderr(contains("at least 10ms"));
    // ... and the responder refuses, with its reason, what the client lets through but its own limits do
    // not: more than 100 000 intervals in one test (the raw-wire bombs are in tests/hostile.rs).
    linkperf()
        .args(["throughput", "127.0.0.1", "-p", &port, "-d", "1001", "--interval", "10ms", "--no-store"])
        .assert()
        .code(1)
        .stderr(contains("responder refused: 100100 intervals in one test"));
    // The responder is still serving.
    linkperf().args(["latency", "127.0.0.1", "-p", &port, "-n", "20", "--no-store"]).assert().success();
}
