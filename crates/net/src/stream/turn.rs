//! `Turn`: one direction's right to send when the directions of a test take turns (half duplex).
//!
//! A turn is given with [`Turn::give`] and taken away with [`Turn::take`]; senders look at it before each
//! write. Taking the turn away only stops new writes: what the senders already wrote is still in their
//! socket buffers and on the link. [`Turn::wait_drained`] waits until no sender is inside a write and every
//! sending socket has nothing queued, i.e. the peer has acknowledged all of it (TCP) or read all of it (Unix):
//! only then has the turn's data arrived, and the other direction may start without overlapping it. The
//! time that takes is the turn's turnaround (docs/metrics.md).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use socket2::Socket;

/// How often a paused sender checks whether its turn has come, and a drain whether it is complete.
pub const TURN_POLL: Duration = Duration::from_micros(200);

/// The turn of one sending direction on one host.
#[derive(Debug)]
pub struct Turn {
    /// Whether the direction may send now.
    mine: AtomicBool,
    /// Senders between their check of `mine` and the end of their write.
    writing: AtomicUsize,
}

impl Turn {
    /// A turn that starts given (`open`) or taken.
    pub fn new(open: bool) -> Self {
        Self { mine: AtomicBool::new(open), writing: AtomicUsize::new(0) }
    }

    /// Lets the direction send.
    pub fn give(&self) {
        self.mine.store(true, Ordering::SeqCst);
    }

    /// Stops the direction's new writes (writes under way finish).
    pub fn take(&self) {
        self.mine.store(false, Ordering::SeqCst);
    }

    /// Whether the direction may send now.
    pub fn is_mine(&self) -> bool {
        self.mine.load(Ordering::SeqCst)
    }

    /// The flag itself, for senders that only look at it (UDP streams, whose datagrams leave at once).
    pub fn flag(&self) -> &AtomicBool {
        &self.mine
    }

    /// A sender's check before a write: `true` if it may write. A sender that may not is counted out of
    /// `writing` until its next permitted write; `inside` is its own record of being counted in. Counting
    /// in before looking at the flag means that once [`Turn::take`] has returned and `writing` reads zero,
    /// no write of the turn can still start.
    #[inline]
    pub(crate) fn enter(&self, inside: &mut bool) -> bool {
        if !*inside {
            self.writing.fetch_add(1, Ordering::SeqCst);
            *inside = true;
        }
        if self.is_mine() {
            return true;
        }
        self.leave(inside);
        false
    }

    /// A sender that stops writing for good (or pauses) leaves the count.
    pub(crate) fn leave(&self, inside: &mut bool) {
        if std::mem::take(inside) {
            self.writing.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// After [`Turn::take`]: whether no sender is inside a write and every socket of `sockets` has nothing
    /// queued (the turn's data has arrived). Does not block.
    pub fn is_drained(&self, sockets: &[&Socket]) -> bool {
        self.writing.load(Ordering::SeqCst) == 0
            && sockets.iter().all(|s| crate::tcp_info::queued_bytes(s).unwrap_or(0) == 0)
    }

    /// After [`Turn::take`]: waits until no sender is inside a write and every socket of `sockets` has
    /// nothing queued, until `deadline`. Returns how long that took (the turnaround), or `None` if the
    /// deadline came first.
    pub fn wait_drained(&self, sockets: &[&Socket], deadline: Instant) -> Option<Duration> {
        let started = Instant::now();
        loop {
            if self.is_drained(sockets) {
                return Some(started.elapsed());
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(TURN_POLL);
        }
    }
}
