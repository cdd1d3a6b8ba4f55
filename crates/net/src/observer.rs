//! `Observer`: how drivers report progress without knowing about terminals.

/// Receives progress from a running test. Called from the measuring threads, at most a few times per second
/// per thread, never per transaction.
pub trait Observer: Sync {
    /// A new phase starts (e.g. one message size); `total` is its length in transactions or in milliseconds,
    /// as `unit` says.
    fn phase(&self, _label: &str, _total: u64, _unit: ProgressUnit) {}
    /// `done` more units of the current phase are complete.
    fn advance(&self, _done: u64) {}
    /// A measured interval arrived while the test runs (`what` names it, e.g. `upload at the responder`),
    /// with its goodput in bits per second.
    fn interval(&self, _what: &str, _start_s: f64, _end_s: f64, _bps: f64) {}
    /// A series (or throughput row) is complete: it will not change, and may be kept at once, so that a run
    /// cut short later still has it. Called between series, never while one is timed.
    fn measured(&self, _item: Measurement<'_>) {}
    /// Names the current step of a long phase without restarting its progress.
    fn relabel(&self, _label: &str) {}
    /// A message for the person running the test, e.g. how long the run will take at most.
    fn announce(&self, _message: &str) {}
    /// Whether the user asked to stop. Checked a few times per second; a driver that sees `true` ends its
    /// series as incomplete and returns what it measured.
    fn cancelled(&self) -> bool {
        false
    }
}

/// A finished piece of a run, as passed to [`Observer::measured`].
#[derive(Debug, Clone, Copy)]
pub enum Measurement<'a> {
    /// A latency, connect or idle series.
    Series(&'a linkperf_core::Series),
    /// A throughput row.
    Throughput(&'a linkperf_core::run_result::ThroughputSeries),
}

/// What an `Observer`'s totals count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProgressUnit {
    /// Transactions (count-bounded phases).
    Transactions,
    /// Milliseconds (time-bounded phases).
    Milliseconds,
}

/// An observer that ignores everything.
pub struct NoProgress;

impl Observer for NoProgress {}

/// Forwards everything but live intervals: for runs of many short trials, where each trial's intervals
/// would only be noise.
pub struct WithoutIntervals<'a>(pub &'a dyn Observer);

impl Observer for WithoutIntervals<'_> {
    fn phase(&self, label: &str, total: u64, unit: ProgressUnit) {
        self.0.phase(label, total, unit);
    }
    fn advance(&self, done: u64) {
        self.0.advance(done);
    }
    fn measured(&self, item: Measurement<'_>) {
        self.0.measured(item);
    }
    fn relabel(&self, label: &str) {
        self.0.relabel(label);
    }
    fn announce(&self, message: &str) {
        self.0.announce(message);
    }
    fn cancelled(&self) -> bool {
        self.0.cancelled()
    }
}

/// Forwards only cancellation: for work running beside another that reports the progress.
pub struct CancelOnly<'a>(pub &'a dyn Observer);

impl Observer for CancelOnly<'_> {
    fn cancelled(&self) -> bool {
        self.0.cancelled()
    }
}
