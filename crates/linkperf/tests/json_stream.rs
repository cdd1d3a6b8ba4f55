//! `--json-stream`: newline-delimited JSON written as the run goes, the result document last.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

mod common;

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use common::spawnable;

#[test]
fn events_arrive_while_the_run_goes_and_the_result_comes_last() {
    let mut child = spawnable()
        .args(["throughput", "--duration", "3s", "--interval", "250ms", "--no-store", "--json-stream"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut events: Vec<serde_json::Value> = Vec::new();
    let mut running_at_first_interval = None;
    for line in lines.by_ref() {
        let event: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        if event["event"] == "interval" && running_at_first_interval.is_none() {
            // The first of 12 intervals of a 3 s run: the run has 2.75 s to go.
            running_at_first_interval = Some(child.try_wait().unwrap().is_none());
        }
        events.push(event);
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(running_at_first_interval, Some(true), "intervals are written as measured, not at the end");
    let kinds: Vec<&str> = events.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"phase"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"result"), "{kinds:?}");
    let intervals: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == "interval").collect();
    assert!(intervals.len() >= 10, "{kinds:?}");
    assert!(intervals.windows(2).all(|w| w[1]["end_s"].as_f64() > w[0]["end_s"].as_f64()), "in order");
    assert!(intervals.iter().all(|i| i["bps"].as_f64().unwrap() > 0.0));
    let row = events.iter().find(|e| e["event"] == "throughput").unwrap();
    let result = &events.last().unwrap()["result"];
    assert_eq!(result["schema_version"], 1);
    assert_eq!(&result["throughput"][0], &row["series"], "the row streamed is the row of the result");
}

#[test]
fn json_stream_excludes_the_other_formats() {
    let output = common::linkperf().args(["latency", "--json-stream", "--json", "--no-store"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
}
