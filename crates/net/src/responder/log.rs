//! `Log`: the responder's lines on stderr, escaped and rate-limited.
//!
//! Every line passes through `printable`, so a peer's host name or error text cannot forge a line or send
//! terminal escapes, and no line exceeds a few hundred characters. Lines come in two classes: session lines
//! (one per authenticated session) and junk lines (connections closed before they became anything). Within
//! each window of [`WINDOW`], the first few of each class are printed and the rest counted, and one summary
//! line per window tells how many were left out, so a flood of junk costs one line per window, not one line
//! per connection.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use linkperf_proto::printable;

/// The length of a rate-limiting window.
pub(crate) const WINDOW: Duration = Duration::from_secs(10);
/// Junk lines printed per window before they are only counted.
const JUNK_LINES: u32 = 5;
/// Session lines printed per window before they are only counted.
const SESSION_LINES: u32 = 100;
/// The longest line printed, in characters.
const MAX_LINE_CHARS: usize = 400;

/// What a junk connection was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Junk {
    /// It sent no whole preamble in time, or closed first.
    NoPreamble,
    /// Its preamble was not linkperf's, or of another version.
    NotLinkperf,
    /// It was closed to make room under the cap on unauthenticated connections.
    Evicted,
    /// A data connection or probe with a token it does not hold (unknown, expired, another address's, or
    /// over a budget).
    Refused,
    /// A control session that ended before it was authenticated and admitted.
    Handshake,
}

impl Junk {
    const ALL: [Junk; 5] = [Junk::NoPreamble, Junk::NotLinkperf, Junk::Evicted, Junk::Refused, Junk::Handshake];

    fn describe(self) -> &'static str {
        match self {
            Junk::NoPreamble => "without a preamble",
            Junk::NotLinkperf => "not linkperf",
            Junk::Evicted => "evicted unauthenticated",
            Junk::Refused => "refused data or probe",
            Junk::Handshake => "ended in the handshake",
        }
    }
}

/// The responder's log.
pub(crate) struct Log {
    enabled: bool,
    window: Mutex<Window>,
}

struct Window {
    start: Instant,
    junk_printed: u32,
    sessions_printed: u32,
    junk_left_out: [u64; 5],
    sessions_left_out: u64,
}

impl Log {
    /// A log that prints when `enabled`.
    pub fn new(enabled: bool) -> Self {
        let window = Window {
            start: Instant::now(),
            junk_printed: 0,
            sessions_printed: 0,
            junk_left_out: [0; 5],
            sessions_left_out: 0,
        };
        Self { enabled, window: Mutex::new(window) }
    }

    /// A session's line (or any line worth seeing that is not junk).
    pub fn session(&self, line: &str) {
        self.print_within(line, SESSION_LINES, |w| &mut w.sessions_printed, |w| w.sessions_left_out += 1);
    }

    /// A junk connection: printed while few, counted when many.
    pub fn junk(&self, kind: Junk, line: &str) {
        self.print_within(line, JUNK_LINES, |w| &mut w.junk_printed, |w| w.junk_left_out[kind as usize] += 1);
    }

    /// Prints `line` while the window's count of its class (`printed`) is below `limit`; past it, the line
    /// is only counted (`left_out`), for the window's summary.
    fn print_within(
        &self,
        line: &str,
        limit: u32,
        printed: fn(&mut Window) -> &mut u32,
        left_out: impl FnOnce(&mut Window),
    ) {
        if !self.enabled {
            return;
        }
        let mut window = self.lock();
        window.roll(Instant::now());
        let count = printed(&mut window);
        if *count < limit {
            *count += 1;
            print(line);
        } else {
            left_out(&mut window);
        }
    }

    /// Prints the summary of a window that has ended, if anything was left out of it.
    pub fn flush(&self, now: Instant) {
        if self.enabled {
            self.lock().roll(now);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Window> {
        self.window.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Window {
    /// Starts a new window once this one is over, summarising what it left out.
    fn roll(&mut self, now: Instant) {
        if now.duration_since(self.start) < WINDOW {
            return;
        }
        let junk: u64 = self.junk_left_out.iter().sum();
        if junk > 0 || self.sessions_left_out > 0 {
            let kinds: Vec<String> = Junk::ALL
                .iter()
                .filter(|k| self.junk_left_out[**k as usize] > 0)
                .map(|k| format!("{} {}", self.junk_left_out[*k as usize], k.describe()))
                .collect();
            print(&format!(
                "{junk} more connections closed in the last {:.0} s ({}), {} more session lines left out",
                now.duration_since(self.start).as_secs_f64(),
                if kinds.is_empty() { "none".into() } else { kinds.join(", ") },
                self.sessions_left_out
            ));
        }
        *self =
            Window { start: now, junk_printed: 0, sessions_printed: 0, junk_left_out: [0; 5], sessions_left_out: 0 };
    }
}

fn print(line: &str) {
    eprintln!("linkperf serve: {}", printable(line, MAX_LINE_CHARS));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_junk_prints_a_few_lines_and_counts_the_rest() {
        let log = Log::new(true);
        for _ in 0..1000 {
            log.junk(Junk::NoPreamble, "connection from 127.0.0.1:1 closed before its preamble");
        }
        log.junk(Junk::Evicted, "connection from 127.0.0.1:2 closed (Evicted)");
        let window = log.lock();
        assert_eq!(window.junk_printed, JUNK_LINES);
        assert_eq!(window.junk_left_out[Junk::NoPreamble as usize], 1000 - u64::from(JUNK_LINES));
        assert_eq!(window.junk_left_out[Junk::Evicted as usize], 1);
    }

    #[test]
    fn a_window_that_ended_starts_afresh() {
        let log = Log::new(true);
        for _ in 0..10 {
            log.junk(Junk::NotLinkperf, "junk");
        }
        let later = log.lock().start + WINDOW;
        log.flush(later);
        let window = log.lock();
        assert_eq!((window.junk_printed, window.junk_left_out), (0, [0; 5]));
        assert_eq!(window.start, later);
    }
}
