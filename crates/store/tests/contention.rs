//! Many writers on one database at once, each with its own connection as separate processes would have:
//! every run must be kept, none lost to "database is locked".

#![allow(clippy::unwrap_used)] // test code: a failed unwrap is a failed test

use linkperf_core::fixture;
use linkperf_core::RunResult;
use linkperf_store::{RunFilter, Store};

/// Writers at once: far more than SQLite's busy handler alone serves within its timeout when each one
/// opens, begins, adds series and finishes.
const WRITERS: usize = 200;

#[test]
fn two_hundred_concurrent_writers_lose_no_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    let start = std::sync::Arc::new(std::sync::Barrier::new(WRITERS));
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (path, start) = (path.clone(), start.clone());
            std::thread::spawn(move || -> Result<(), String> {
                start.wait();
                let run = fixture::latency_run();
                let mut store = Store::open(&path).map_err(|e| format!("open: {e}"))?;
                let id = store
                    .begin(&RunResult { series: Vec::new(), ..run.clone() }, &[format!("w{w}")])
                    .map_err(|e| format!("begin: {e}"))?;
                for series in &run.series {
                    store.add_series(id, series).map_err(|e| format!("series: {e}"))?;
                }
                store.finish(id, &run).map_err(|e| format!("finish: {e}"))
            })
        })
        .collect();
    let failures: Vec<String> = writers.into_iter().filter_map(|w| w.join().unwrap().err()).collect();
    assert!(failures.is_empty(), "{} of {WRITERS} writers failed, e.g. {:?}", failures.len(), failures.first());
    let store = Store::open(&path).unwrap();
    let kept = store.list(&RunFilter::default()).unwrap();
    assert_eq!(kept.len(), WRITERS);
    let run_series = fixture::latency_run().series.len() as u32;
    let bad: Vec<_> = kept.iter().filter(|r| r.state != "complete" || r.series != run_series).collect();
    assert!(bad.is_empty(), "{} runs not complete, e.g. {:?}", bad.len(), bad.first());
}

#[test]
fn a_write_waits_out_a_lock_held_longer_than_sqlites_own_wait() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("results.db");
    drop(Store::open(&path).unwrap());
    let (locked, release) = (std::sync::mpsc::channel(), std::sync::mpsc::channel::<()>());
    let holder = {
        let path = path.clone();
        std::thread::spawn(move || {
            let mut connection = rusqlite::Connection::open(&path).unwrap();
            let transaction = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).unwrap();
            locked.0.send(()).unwrap();
            // Held until the writer has been refused by SQLite's own wait at least once.
            release.1.recv().unwrap();
            drop(transaction);
        })
    };
    locked.1.recv().unwrap();
    let writer = {
        let path = path.clone();
        std::thread::spawn(move || Store::open(&path).unwrap().insert(&fixture::latency_run(), &[]))
    };
    // SQLite alone waits 2 s (BUSY_TIMEOUT); the lock is held past that before it is released.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
    while std::time::Instant::now() < deadline && !writer.is_finished() {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!writer.is_finished(), "the write ended while the database was locked: {:?}", writer.join());
    release.0.send(()).unwrap();
    holder.join().unwrap();
    let id = writer.join().unwrap().unwrap();
    assert_eq!(Store::open(&path).unwrap().run(id).unwrap().result, fixture::latency_run());
}
