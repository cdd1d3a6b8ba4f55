//! Waiting for instants on the monotonic clock, precisely enough for pacing and open-loop schedules.

use std::time::{Duration, Instant};

/// How far ahead of a due time a wait stops sleeping and starts spinning: sleeps overshoot by tens of
/// microseconds, so the last stretch is spun.
const SPIN_MARGIN: Duration = Duration::from_micros(200);

/// Returns at `due` (or at once if it has passed): sleeps most of the way, then spins.
pub fn wait_until(due: Instant) {
    let now = Instant::now();
    if due > now + SPIN_MARGIN {
        std::thread::sleep(due - now - SPIN_MARGIN);
    }
    while Instant::now() < due {
        std::hint::spin_loop();
    }
}
