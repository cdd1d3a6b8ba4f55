//! Keeping a run in the results database while it is measured: its row when it starts, each series as it
//! is finished, the whole result at the end.
//!
//! The writes happen on a writer thread of their own, fed through a bounded queue, so that a slow or
//! locked database never stalls the measurement: the measuring thread only hands over a copy of what it
//! finished. When the queue is full, a series or interval handed over is not queued; nothing is lost by
//! that, because the final result, which the thread always writes, holds every series and interval again.
//! The store retries writes that other processes hold up (`linkperf_store::Store`).

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;

use linkperf_core::run_result::ThroughputSeries;
use linkperf_core::{RunResult, Series};
use linkperf_net::observer::Measurement;
use linkperf_store::{RunId, Store, StoreError};

/// Writes waiting for the writer thread at most: enough for the series and intervals of a second or two of
/// a test even when each write waits for another process.
const QUEUE: usize = 256;

/// What the measuring thread hands to the writer thread.
enum Job {
    /// The run starts: its row, with these labels.
    Begin(Box<RunResult>, Vec<String>),
    /// A finished latency, connect or idle series.
    Series(Box<Series>),
    /// A finished throughput row.
    Throughput(Box<ThroughputSeries>),
    /// A throughput interval as it ended.
    Interval(String, (f64, f64), f64),
    /// The run's end: the whole result, with the labels to use if its start was never written.
    Finish(Box<RunResult>, Vec<String>),
}

/// The writer thread of a run's database, and the queue that feeds it.
pub struct Recorder {
    queue: SyncSender<Job>,
    writer: JoinHandle<Result<RunId, StoreError>>,
    path: PathBuf,
}

impl Recorder {
    /// A recorder that will keep the run in `store`, written by a thread of its own.
    pub fn new(store: Store) -> Self {
        let path = store.path().to_path_buf();
        let (queue, jobs) = mpsc::sync_channel(QUEUE);
        let writer = std::thread::Builder::new()
            .name("store-writer".into())
            .spawn(move || write_jobs(store, &jobs))
            // Invariant: starting a thread fails only when the system is out of threads or memory, where
            // no test could run either.
            .expect("the store's writer thread starts");
        Self { queue, writer, path }
    }

    /// Records the start of `start` (a result without series) with `labels`. It is written in the
    /// background: the test starts at once, even while other processes hold the database.
    pub fn begin(&mut self, start: &RunResult, labels: &[String]) {
        self.hand_over(Job::Begin(Box::new(start.clone()), labels.to_vec()));
    }

    /// Hands a finished series to the writer. Never waits: when the queue is full it is left to the final
    /// result, which holds it again.
    pub fn keep(&self, item: Measurement<'_>) {
        let job = match item {
            Measurement::Series(series) => Job::Series(Box::new(series.clone())),
            Measurement::Throughput(series) => Job::Throughput(Box::new(series.clone())),
        };
        self.hand_over(job);
    }

    /// Hands an interval reported while the run goes on to the writer, as [`Recorder::keep`] does.
    pub fn keep_interval(&self, what: &str, span: (f64, f64), bps: f64) {
        self.hand_over(Job::Interval(what.to_string(), span, bps));
    }

    fn hand_over(&self, job: Job) {
        match self.queue.try_send(job) {
            Ok(()) | Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {}
        }
    }

    /// Hands over the final result (the whole run, if its start was never written) and waits until the
    /// writer has kept it; returns the run's number and the database.
    pub fn finish(self, result: &RunResult, labels: &[String]) -> Result<(RunId, PathBuf), StoreError> {
        // A blocking send: the end must be queued, whatever the queue holds.
        let _ = self.queue.send(Job::Finish(Box::new(result.clone()), labels.to_vec()));
        drop(self.queue);
        let id = self.writer.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        Ok((id, self.path))
    }
}

/// The writer thread: writes each job in turn. A failure before the end is not reported (the final
/// result writes everything again, as a whole run if its start could not be written); the end's failure is.
fn write_jobs(mut store: Store, jobs: &Receiver<Job>) -> Result<RunId, StoreError> {
    let mut id = None;
    for job in jobs {
        match (job, id) {
            (Job::Begin(start, labels), None) => id = store.begin(&start, &labels).ok(),
            (Job::Series(series), Some(id)) => {
                let _ = store.add_series(id, &series);
            }
            (Job::Throughput(series), Some(id)) => {
                let _ = store.add_throughput(id, &series);
            }
            (Job::Interval(what, span, bps), Some(id)) => {
                let _ = store.add_interval(id, &what, span, bps);
            }
            (Job::Finish(result, _), Some(id)) => return store.finish(id, &result).map(|()| id),
            (Job::Finish(result, labels), None) => return store.insert(&result, &labels),
            _ => {}
        }
    }
    Err(StoreError::Abandoned)
}
