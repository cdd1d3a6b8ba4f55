//! The results database against real SQLite files: round trips, migration of an old database, a run cut
//! off part-way, concurrent writers, and the filters of `linkperf runs`.

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use linkperf_core::fixture;
use linkperf_core::{RunResult, RunStatus};
use linkperf_store::{RunFilter, Store};

fn temp_db() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested").join("results.db");
    (dir, path)
}

/// The JSON of a result: what must survive a round trip exactly.
fn as_json(run: &RunResult) -> serde_json::Value {
    serde_json::to_value(run).unwrap()
}

#[test]
fn every_result_type_round_trips_exactly() {
    let (_dir, path) = temp_db();
    let mut store = Store::open(&path).unwrap();
    let mut partial = fixture::throughput_run();
    partial.status = RunStatus::Partial { error: "the responder closed the data connection".into() };
    let runs = [
        fixture::latency_run(),
        fixture::throughput_run(),
        fixture::sweep_run(),
        fixture::ratesearch_run(),
        fixture::burst_run(),
        fixture::under_load_run(),
        partial,
    ];
    for run in &runs {
        let id = store.insert(run, &["a".into(), "b".into()]).unwrap();
        let stored = store.run(id).unwrap();
        assert_eq!(as_json(&stored.result), as_json(run), "{}", run.parameters.test_name());
        assert_eq!(stored.labels, vec!["a".to_string(), "b".to_string()]);
    }
}

#[test]
fn a_run_cut_off_part_way_keeps_its_finished_series() {
    let (_dir, path) = temp_db();
    let run = fixture::latency_run();
    let id = {
        let mut store = Store::open(&path).unwrap();
        let id = store.begin(&RunResult { series: Vec::new(), ..run.clone() }, &[]).unwrap();
        store.add_series(id, &run.series[0]).unwrap();
        store.add_series(id, &run.series[1]).unwrap();
        id
        // Dropped without `finish`, as when the process is killed.
    };
    let stored = Store::open(&path).unwrap().run(id).unwrap();
    assert_eq!(stored.result.series, run.series[..2].to_vec());
    assert!(matches!(&stored.result.status, RunStatus::Partial { error } if error.contains("without finishing")));
    let listed = Store::open(&path).unwrap().list(&RunFilter::default()).unwrap();
    assert_eq!((listed[0].state.as_str(), listed[0].series), ("running", 2));
}

#[test]
fn the_intervals_of_a_run_that_never_finished_are_summarised() {
    let (_dir, path) = temp_db();
    let mut store = Store::open(&path).unwrap();
    let run = fixture::throughput_run();
    let id = store.begin(&RunResult { throughput: Vec::new(), ..run.clone() }, &[]).unwrap();
    for (k, mbit) in [900.0, 950.0, 1000.0].into_iter().enumerate() {
        store.add_interval(id, "upload, read by the responder", (k as f64, k as f64 + 1.0), mbit * 1e6).unwrap();
    }
    let unfinished = store.run(id).unwrap().result;
    let line = unfinished.warnings.iter().find(|w| w.starts_with("never finished")).expect("a summary");
    assert!(line.contains("3 intervals of the upload, read by the responder"), "{line}");
    assert!(line.contains("0.00 - 3.00 s: 950.00 Mbit/s") && line.contains("from 900.00 to 1000.00"), "{line}");
    store.finish(id, &run).unwrap();
    assert_eq!(store.run(id).unwrap().result.warnings, run.warnings, "a finished run has its own intervals");
}

#[test]
fn finishing_a_run_replaces_the_series_stored_along_the_way() {
    let (_dir, path) = temp_db();
    let mut store = Store::open(&path).unwrap();
    let run = fixture::throughput_run();
    let id = store.begin(&run, &[]).unwrap();
    store.add_throughput(id, &run.throughput[0]).unwrap();
    store.finish(id, &run).unwrap();
    assert_eq!(as_json(&store.run(id).unwrap().result), as_json(&run));
}

#[test]
fn a_database_of_schema_version_1_migrates_on_open() {
    let (_dir, path) = temp_db();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let old = rusqlite_connection(&path);
    old.execute_batch(include_str!("fixtures/store-v1.sql")).unwrap();
    drop(old);
    let store = Store::open(&path).unwrap();
    assert_eq!(store.schema_version().unwrap(), 3);
    let stored = store.run(1).unwrap();
    assert_eq!(stored.labels, vec!["before".to_string(), "board-a".to_string()]);
    assert_eq!(stored.result.status, RunStatus::Complete);
    let sizes: Vec<Option<u64>> = stored.result.series.iter().map(|s| s.size_bytes).collect();
    assert_eq!(sizes, vec![Some(64), Some(1024)]);
    assert!(stored.result.series.iter().all(|s| s.summary.as_ref().is_some_and(|m| m.count == 200)));
    // And it takes new runs at the new version.
    let mut store = store;
    let id = store.insert(&fixture::ratesearch_run(), &[]).unwrap();
    assert_eq!(store.run(id).unwrap().result.rate_search, fixture::ratesearch_run().rate_search);
}

fn rusqlite_connection(path: &std::path::Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

#[test]
fn a_database_from_a_newer_version_is_refused_with_a_reason() {
    let (_dir, path) = temp_db();
    drop(Store::open(&path).unwrap());
    rusqlite_connection(&path).pragma_update(None, "user_version", 99).unwrap();
    let error = Store::open(&path).err().unwrap().to_string();
    assert!(error.contains("schema version 99") && error.contains("newer"), "{error}");
}

#[test]
fn concurrent_writers_lose_nothing() {
    let (_dir, path) = temp_db();
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                // Each opens the (new) database itself, as separate processes would.
                let mut store = Store::open(&path).unwrap();
                for _ in 0..25 {
                    store.insert(&fixture::latency_run(), &[format!("writer-{w}")]).unwrap();
                }
            })
        })
        .collect();
    writers.into_iter().for_each(|w| w.join().unwrap());
    let store = Store::open(&path).unwrap();
    assert_eq!(store.list(&RunFilter::default()).unwrap().len(), 100);
    let one = RunFilter { label: Some("writer-2".into()), ..RunFilter::default() };
    assert_eq!(store.list(&one).unwrap().len(), 25);
}

#[test]
fn runs_are_listed_newest_first_and_filtered() {
    let (_dir, path) = temp_db();
    let mut store = Store::open(&path).unwrap();
    let mut old = fixture::latency_run();
    old.started_at = "2026-01-01T00:00:00Z".into();
    let a = store.insert(&old, &["before".into()]).unwrap();
    let b = store.insert(&fixture::throughput_run(), &["after".into()]).unwrap();
    let ids = |filter: RunFilter| store.list(&filter).unwrap().iter().map(|r| r.id).collect::<Vec<_>>();
    assert_eq!(ids(RunFilter::default()), vec![b, a]);
    assert_eq!(ids(RunFilter { label: Some("before".into()), ..Default::default() }), vec![a]);
    assert_eq!(ids(RunFilter { test: Some("throughput".into()), ..Default::default() }), vec![b]);
    assert_eq!(ids(RunFilter { since: Some("2026-06-01T00:00:00Z".into()), ..Default::default() }), vec![b]);
    assert_eq!(ids(RunFilter { host: Some("bench".into()), ..Default::default() }), vec![b, a]);
    assert_eq!(ids(RunFilter { host: Some("nowhere".into()), ..Default::default() }), Vec::<i64>::new());
    assert_eq!(ids(RunFilter { limit: Some(1), ..Default::default() }), vec![b]);
    assert!(matches!(store.run(999), Err(linkperf_store::StoreError::NoSuchRun(999))));
}
