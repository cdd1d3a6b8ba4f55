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
    /// Whether the user asked to stop. Checked a few times per second; a driver that sees `true` ends its
    /// series as incomplete and returns what it measured.
    fn cancelled(&self) -> bool {
        false
    }
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
