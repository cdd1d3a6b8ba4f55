//! The end of a sending stream: half-close, then wait for what is still queued to arrive.
//!
//! When a sender's time is up, its socket may still hold much data: the send buffer and what is in flight.
//! On a fast path that is milliseconds; on a slow link with a large buffer it is many seconds (a 512 KiB
//! buffer at 250 kbit/s is 17 s). The sender half-closes and waits for the peer to close, which the
//! receiver does once it has read everything; the wait is sized to what is queued at the rate the peer
//! has been acknowledging ([`drain_budget`]), not to a constant, and gives up early if nothing moves for
//! the stall time.

use std::io::{ErrorKind, Read};
use std::time::{Duration, Instant};

use linkperf_core::throughput::StreamRecord;
use socket2::Socket;

/// The longest a drain may take, however much is queued and however slow the link: the receiver's figure
/// does not depend on the drain (it is taken over the receiver's own window), so this only bounds how long
/// a run waits to see the last of its data arrive.
pub const DRAIN_CAP: Duration = Duration::from_secs(120);

/// What the drain budget allows beyond the queued bytes' transmission time: round trips, a delayed
/// acknowledgement and the receiver's closing.
const DRAIN_SLACK: Duration = Duration::from_secs(1);

/// How a drain ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drained {
    /// How long the sender waited after its last write.
    pub waited: Duration,
    /// Whether the peer closed (it read everything) before the budget ran out.
    pub complete: bool,
}

/// How long the data still queued may take to arrive: twice its transmission time at `rate_bytes_per_s`
/// (what the peer has acknowledged per second so far), plus four round trips and one second, at most
/// [`DRAIN_CAP`]. Twice, because the measured rate averages over the stream's start (slow start, an empty
/// queue) and the link may slow down.
pub fn drain_budget(queued_bytes: u64, rate_bytes_per_s: f64, srtt: Duration) -> Duration {
    let transmission_s = if rate_bytes_per_s > 0.0 { queued_bytes as f64 / rate_bytes_per_s } else { f64::INFINITY };
    let slack = srtt.saturating_mul(4).saturating_add(DRAIN_SLACK);
    match Duration::try_from_secs_f64(2.0 * transmission_s) {
        Ok(transmission) => transmission.saturating_add(slack).min(DRAIN_CAP),
        Err(_) if queued_bytes == 0 => slack.min(DRAIN_CAP),
        Err(_) => DRAIN_CAP,
    }
}

/// Half-closes a sending stream whose record is `sent`, then waits for the peer's close for the
/// [`drain_budget`] of what is queued, or until nothing has moved for `stall`.
pub fn finish_sending(mut socket: &Socket, sent: &StreamRecord, stall: Duration) -> Drained {
    let started = Instant::now();
    let (written_bytes, sending) = (sent.bytes, Duration::from_nanos(sent.last_ns.saturating_sub(sent.first_ns)));
    let _ = socket.shutdown(std::net::Shutdown::Write);
    let delivery = crate::tcp_info::delivery(socket);
    let queued = crate::tcp_info::queued_bytes(socket).unwrap_or(0);
    // The acknowledged rate where TCP tells it, else (a Unix socket) the rate of the writes.
    let moved = delivery.map_or(written_bytes, |d| d.acked_bytes);
    let rate = moved as f64 / sending.as_secs_f64().max(1e-3);
    let budget = drain_budget(queued, rate, delivery.map_or(Duration::ZERO, |d| d.srtt));
    let _ = socket.set_read_timeout(Some(super::TICK.min(budget.max(Duration::from_millis(1)))));
    let (mut last_queued, mut moved_at) = (queued, started);
    loop {
        match socket.read(&mut [0u8; 64]) {
            // The peer closed (or, against the protocol, sent something): it has read everything.
            Ok(_) => return Drained { waited: started.elapsed(), complete: true },
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(_) => return Drained { waited: started.elapsed(), complete: false },
        }
        let now = Instant::now();
        let queued = crate::tcp_info::queued_bytes(socket).unwrap_or(0);
        if queued < last_queued {
            (last_queued, moved_at) = (queued, now);
        }
        if now.duration_since(started) >= budget || now.duration_since(moved_at) >= stall {
            return Drained { waited: now.duration_since(started), complete: false };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_follows_the_queued_bytes_at_the_measured_rate() {
        // 512 KiB queued at 250 kbit/s (31 250 B/s): 16.8 s to send, 33.6 s allowed, plus slack.
        let budget = drain_budget(512 * 1024, 31_250.0, Duration::from_millis(100));
        assert!((budget.as_secs_f64() - (2.0 * 524_288.0 / 31_250.0 + 0.4 + 1.0)).abs() < 1e-6, "{budget:?}");
        // The same at 1 Gbit/s: about a second, all slack.
        let fast = drain_budget(512 * 1024, 125e6, Duration::from_micros(50));
        assert!(fast < Duration::from_millis(1100), "{fast:?}");
    }

    #[test]
    fn the_budget_is_bounded_whatever_the_rate() {
        assert_eq!(drain_budget(1 << 30, 1.0, Duration::ZERO), DRAIN_CAP);
        assert_eq!(drain_budget(1, 0.0, Duration::ZERO), DRAIN_CAP);
        assert_eq!(drain_budget(0, 0.0, Duration::ZERO), DRAIN_SLACK);
        assert_eq!(drain_budget(u64::MAX, f64::MIN_POSITIVE, Duration::MAX), DRAIN_CAP);
    }
}
