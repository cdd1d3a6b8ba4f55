//! Watching a running `linkperf` from outside, so that a test acts on it (kills it, signals it, cuts its
//! link) once it has reached a given point, never after a fixed time: neither flaky on a slow machine nor
//! slow on a fast one.

use std::path::Path;
use std::time::Duration;

/// The newest run in the results database `db`: its number, its state (`running`, `complete`, ...) and how
/// many series (sizes, trials, steps) it has kept so far; `None` before a run has begun there.
pub fn newest_run(db: &Path) -> Option<(i64, String, u64)> {
    let output = std::process::Command::new(super::binary()).args(["runs", "--json", "--db"]).arg(db).output().ok()?;
    if !output.status.success() {
        return None; // no database yet
    }
    let runs: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
    let newest = runs.as_array()?.iter().max_by_key(|r| r["id"].as_i64())?;
    Some((newest["id"].as_i64()?, newest["state"].as_str()?.to_string(), newest["series"].as_u64()?))
}

/// Waits until the newest run in `db` has kept at least `series` series while still running.
pub fn wait_for_series(db: &Path, series: u64, timeout: Duration) -> bool {
    super::wait_until(timeout, || newest_run(db).is_some_and(|(_, state, kept)| state == "running" && kept >= series))
}

/// Bytes that a responder listening on TCP `port` of this host has received over its open connections (the
/// kernel's count, `bytes_received` of tcp_info, read with `ss` from iproute2).
pub fn bytes_received_on(port: u16) -> u64 {
    let output = std::process::Command::new("ss")
        .args(["-tinH", "state", "established", &format!("( sport = :{port} )")])
        .output()
        .expect("ss (iproute2) runs");
    let text = String::from_utf8_lossy(&output.stdout);
    text.split_whitespace().filter_map(|word| word.strip_prefix("bytes_received:")?.parse::<u64>().ok()).sum()
}

/// Connections that a responder on TCP `port` of this host closed first and that still wait in TIME_WAIT:
/// each is a connection a connect test made (they stay 60 s).
pub fn closed_on(port: u16) -> u64 {
    let output = std::process::Command::new("ss")
        .args(["-tanH", "state", "time-wait", &format!("( sport = :{port} )")])
        .output()
        .expect("ss (iproute2) runs");
    String::from_utf8_lossy(&output.stdout).lines().count() as u64
}

/// Waits until run number `run` (1 in a fresh database) is running in `db`, and then until `progress`
/// (a count that only grows, such as [`bytes_received_on`]) has grown by `by`.
///
/// A run is in the database once its responder has answered, so what moves after that is the test's own
/// traffic; with `--warmup 0` a latency or connect test measures from its first round trip.
pub fn wait_until_measuring(
    db: &Path,
    run: i64,
    mut progress: impl FnMut() -> u64,
    by: u64,
    timeout: Duration,
) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    if !super::wait_until(timeout, || newest_run(db).is_some_and(|(id, state, _)| id >= run && state == "running")) {
        return false;
    }
    let begun = progress();
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    super::wait_until(left, || progress() >= begun + by)
}
