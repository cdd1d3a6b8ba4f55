//! Keeping a run in the results database while it is measured: its row when it starts, each series as it
//! is finished, the whole result at the end. A store that fails part-way never stops the measurement.

use std::sync::Mutex;

use linkperf_core::RunResult;
use linkperf_net::observer::Measurement;
use linkperf_store::{RunId, Store, StoreError};

/// The database of a run, and the run's number in it once it has begun.
pub struct Recorder {
    store: Mutex<Store>,
    id: Option<RunId>,
}

impl Recorder {
    /// A recorder that will keep the run in `store`.
    pub fn new(store: Store) -> Self {
        Self { store: Mutex::new(store), id: None }
    }

    /// Records the start of `start` (a result without series) with `labels`.
    pub fn begin(&mut self, start: &RunResult, labels: &[String]) -> Result<(), StoreError> {
        let store = self.store.get_mut().unwrap_or_else(|p| p.into_inner());
        self.id = Some(store.begin(start, labels)?);
        Ok(())
    }

    /// Keeps a finished series at once. A failure here is not reported: `finish` writes everything again.
    pub fn keep(&self, item: Measurement<'_>) {
        let Some(id) = self.id else { return };
        let mut store = self.store.lock().unwrap_or_else(|p| p.into_inner());
        let _ = match item {
            Measurement::Series(series) => store.add_series(id, series),
            Measurement::Throughput(series) => store.add_throughput(id, series),
        };
    }

    /// Keeps an interval reported while the run goes on (a failure is not reported: the final result
    /// holds every interval).
    pub fn keep_interval(&self, what: &str, span: (f64, f64), bps: f64) {
        let Some(id) = self.id else { return };
        let mut store = self.store.lock().unwrap_or_else(|p| p.into_inner());
        let _ = store.add_interval(id, what, span, bps);
    }

    /// Writes the final result (the whole run, if it never began); returns the run's number and the
    /// database.
    pub fn finish(self, result: &RunResult, labels: &[String]) -> Result<(RunId, std::path::PathBuf), StoreError> {
        let mut store = self.store.into_inner().unwrap_or_else(|p| p.into_inner());
        let id = match self.id {
            Some(id) => {
                store.finish(id, result)?;
                id
            }
            None => store.insert(result, labels)?,
        };
        Ok((id, store.path().to_path_buf()))
    }
}
