//! The progress bar: on stderr, only when stderr is a terminal, and only once a run has lasted a second,
//! so short runs and pipelines stay clean.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use linkperf_net::observer::{Observer, ProgressUnit};

/// Set by the first Ctrl-C: the drivers stop and the results so far are printed.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether the user pressed Ctrl-C.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Installs the Ctrl-C handler: the first press asks the running test to stop and print what it measured;
/// a second press quits at once.
pub fn handle_interrupts() {
    let result = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::SeqCst) {
            // Quitting skips destructors: serial ports get their settings back here.
            linkperf_net::transport::serial::restore_all();
            std::process::exit(130);
        }
        eprintln!("\nstopping: results so far follow (Ctrl-C again to quit at once)");
    });
    // Without a handler Ctrl-C still ends the program, only without the partial results.
    if let Err(e) = result {
        eprintln!("warning: Ctrl-C will not print partial results: {e}");
    }
}

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

    /// Intervals measured at the far end are printed above the bar as they arrive (on a terminal only, so
    /// that they never mix with results on stdout).
    fn interval(&self, what: &str, start_s: f64, end_s: f64, bps: f64) {
        if self.enabled {
            if self.bar.is_hidden() {
                self.bar.set_draw_target(ProgressDrawTarget::stderr());
            }
            let rate = linkperf_core::units::format_bit_rate(bps);
            self.bar.println(format!("  {start_s:>7.2} - {end_s:>7.2} s {rate:>15}  ({what})"));
        }
    }

    fn relabel(&self, label: &str) {
        self.bar.set_prefix(label.to_string());
    }

    /// Printed on stderr whether or not it is a terminal: these are promises (such as the longest a run
    /// will take) that a log should keep too.
    fn announce(&self, message: &str) {
        // A driver's message may quote the responder: shown, never acted on by the terminal.
        self.bar.suspend(|| eprintln!("{}", crate::output::safe_text(message.as_bytes())));
    }

    fn cancelled(&self) -> bool {
        INTERRUPTED.load(Ordering::Relaxed)
    }
}
