//! The progress bar: on stderr, only when stderr is a terminal, and only once a run has lasted a second,
//! so short runs and pipelines stay clean.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use linkperf_net::observer::{Observer, ProgressUnit};

/// How long a run goes before the bar appears.
const SHOW_AFTER: Duration = Duration::from_secs(1);

/// An `Observer` drawing an indicatif bar.
pub struct Progress {
    bar: ProgressBar,
    enabled: bool,
    started: Instant,
}

impl Progress {
    /// A bar that will show if `allowed` and stderr is a terminal.
    pub fn new(allowed: bool) -> Self {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden());
        Self { bar, enabled: allowed && std::io::stderr().is_terminal(), started: Instant::now() }
    }

    /// Removes the bar before results are printed.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }

    fn reveal(&self) {
        if self.enabled && self.bar.is_hidden() && self.started.elapsed() >= SHOW_AFTER {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
        }
    }
}

impl Observer for Progress {
    fn phase(&self, label: &str, total: u64, unit: ProgressUnit) {
        let template = match unit {
            ProgressUnit::Transactions => "{prefix:>8} [{bar:30}] {pos}/{len} ({eta} left)",
            ProgressUnit::Milliseconds => "{prefix:>8} [{bar:30}] {elapsed} ({eta} left)",
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            self.bar.set_style(style.progress_chars("=> "));
        }
        self.bar.set_prefix(label.to_string());
        self.bar.set_length(total);
        self.bar.set_position(0);
        self.reveal();
    }

    fn advance(&self, done: u64) {
        self.bar.inc(done);
        self.reveal();
    }
}
