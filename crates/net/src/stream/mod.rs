//! The stream data path (TCP and Unix sockets), one engine for both ends of a throughput test: the client's
//! drivers (`crate::throughput`) and the responder (`crate::responder`) both send, receive, meter, take
//! turns and end their streams here, so that a fix to any of these lands once and is tested once.
//!
//! What lives here and nowhere else:
//! - [`send`] and [`receive`]: the per-write and per-read loops, with their meters (`StreamMeter`).
//! - [`Turn`]: half-duplex turn-taking, and [`Turn::wait_drained`], which ends a turn only once the data
//!   written in it has arrived.
//! - [`end`]: the end of a sending stream: half-close, then wait for what is still queued to arrive, for a
//!   time sized to the bytes queued at the rate measured ([`end::drain_budget`]).
//! - [`configure`]: socket options both ends apply to a data connection.
//!
//! It deliberately knows nothing of control sessions, observers or reports: the caller passes a `stop`
//! check (progress and cancellation on the client, the test's liveness on the responder) and maps the
//! [`Ending`] to its own errors. UDP streams live in `crate::udp_stream`.

pub mod end;
mod intake;
mod receive;
mod send;
mod turn;

use std::sync::atomic::AtomicU64;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use linkperf_core::throughput::StreamRecord;
use socket2::Socket;

pub use intake::Intake;
pub use receive::{receive, ReceivePlan};
pub use send::{send, SendPlan};
pub use turn::{Turn, TURN_POLL};

/// How long a blocked read or write waits before its loop looks at the clock and its `stop` check again.
pub const TICK: Duration = Duration::from_millis(250);

/// Bytes the kernel may hold unsent per socket while the directions take turns (`TCP_NOTSENT_LOWAT`): a
/// turn's end then leaves at most this much (beyond what is in flight) to drain into the next turn.
pub const TURN_NOTSENT_BYTES: u32 = 16 * 1024;

/// `at` + `by`, or a century after `at` if that overflows the clock: durations that come from a request are
/// bounded by its limits, but an instant computed from one must never panic.
pub fn later(at: Instant, by: Duration) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
    at.checked_add(by.min(CENTURY)).unwrap_or(at)
}

/// The clock of one host's streams of a test: its origin is the first instant any of them moved a byte (or
/// an instant set beforehand), and every meter of that host counts from it.
#[derive(Debug, Default)]
pub struct Origin(OnceLock<Instant>);

impl Origin {
    /// An origin set at the first byte moved.
    pub fn unset() -> Self {
        Self(OnceLock::new())
    }

    /// An origin fixed at `at`.
    pub fn at(at: Instant) -> Self {
        let origin = Self::unset();
        let _ = origin.0.set(at);
        origin
    }

    /// The origin, if set.
    pub fn get(&self) -> Option<Instant> {
        self.0.get().copied()
    }

    /// The cell itself, for code that sets it by its own rule (UDP streams).
    pub fn cell(&self) -> &OnceLock<Instant> {
        &self.0
    }

    /// Nanoseconds from the origin to `now`, setting the origin at `now` if it is not set yet.
    #[inline]
    pub fn since(&self, now: Instant) -> u64 {
        let origin = *self.0.get_or_init(|| now);
        u64::try_from(now.saturating_duration_since(origin).as_nanos()).unwrap_or(u64::MAX)
    }
}

/// What a stream end shares with the other streams of its test on the same host.
#[derive(Clone, Copy)]
pub struct Shared<'a> {
    /// The clock of the host's meters.
    pub origin: &'a Origin,
    /// Where a receiver adds the bytes it reads, for live interval reports.
    pub moved: Option<&'a AtomicU64>,
    /// The sending direction's turn, when the directions alternate.
    pub turn: Option<&'a Turn>,
}

/// How a stream end stopped.
#[derive(Debug)]
pub enum Ending {
    /// It ran its course: the sender for its duration, the receiver to the end of the stream.
    Completed,
    /// Its `stop` check asked it to stop (the user cancelled, or the test was released or reported).
    Stopped,
    /// Nothing moved for this long.
    Stalled(Duration),
    /// The socket failed.
    Failed(std::io::Error),
}

/// What one stream end measured, and how it stopped.
#[derive(Debug)]
pub struct Outcome {
    /// The stream end's record.
    pub record: StreamRecord,
    /// How it stopped.
    pub ending: Ending,
}

/// What a data connection's socket is asked for, on either end.
#[derive(Debug, Clone, Copy, Default)]
pub struct StreamOptions<'a> {
    /// Send and receive buffer size to request.
    pub buffer_bytes: Option<u64>,
    /// TCP congestion control to request.
    pub congestion: Option<&'a str>,
    /// Whether the directions take turns (keeps the unsent backlog small, [`TURN_NOTSENT_BYTES`]).
    pub alternating: bool,
}

/// Applies `options` to a stream socket. All are requests: the kernel may cap a buffer (at
/// `net.core.wmem_max`/`rmem_max`), and a Unix socket has no congestion control; a refused congestion
/// control shows in the report's `congestion`.
pub fn configure(socket: &Socket, options: &StreamOptions) {
    // Bulk data wants Nagle's algorithm: without it, the tail of every write that is not a whole number of
    // segments leaves as a small segment of its own. (Connections start with it off, for latency tests.)
    let _ = socket.set_nodelay(false);
    if let Some(bytes) = options.buffer_bytes {
        let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        let _ = socket.set_send_buffer_size(bytes);
        let _ = socket.set_recv_buffer_size(bytes);
    }
    if let Some(name) = options.congestion {
        let _ = socket.set_tcp_congestion(name.as_bytes());
    }
    if options.alternating {
        crate::tcp_info::set_notsent_lowat(socket, TURN_NOTSENT_BYTES);
    }
}

#[cfg(test)]
mod tests;
