//! The accept threads: one per listener, blocked in `accept`, so that a connection probe (a timed
//! measurement) is answered by a thread woken directly by its connection, as fast as the kernel allows.
//!
//! An accept thread serves whatever arrives with its preamble whole: it answers probes, hands data
//! connections of running tests to threads of their own, and closes junk. A control connection, or one
//! whose preamble has not come yet, goes to the event loop, which alone waits on peers. The thread waits
//! for a late preamble only briefly, from a budget of a small share of its time (preambles that come
//! within 100 us, as a client's do, cost nothing), so that no number of silent or slow connections can hold
//! it up: beyond that share, connections go to the event loop at once.
//! Measured on loopback: answering probes from the event loop's epoll wake-ups made connection setup
//! 14 us slower at the median (82 us to 96 us) than this.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpListener;
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

use linkperf_core::Proto;
use linkperf_proto::{Preamble, ProtoError, Role, PREAMBLE_BYTES};
use socket2::Socket;

use super::log::Junk;
use super::session::Peer;
use super::Shared;

/// The longest a new connection's preamble is waited for on the accept thread.
const INLINE_WAIT: Duration = Duration::from_millis(1);
/// A wait for a preamble that ends within this is not charged to the budget.
const FREE_WAIT: Duration = Duration::from_micros(100);
/// The share of an accept thread's time that waits for preambles may take.
const INLINE_SHARE: f64 = 0.05;
/// The most a wait can cost: its timeout rounded up to a scheduler tick (at HZ=100).
const WORST_WAIT: Duration = Duration::from_millis(10);
/// The most waiting saved up.
const INLINE_BUDGET_MAX: Duration = Duration::from_millis(20);
/// How long accepting pauses after a failure (out of descriptors, most likely).
const ACCEPT_PAUSE: Duration = Duration::from_millis(50);

/// A listening socket.
pub(super) enum Listener {
    /// TCP, dual stack where possible.
    Tcp(TcpListener),
    /// A Unix-domain socket.
    Unix(UnixListener),
}

impl Listener {
    fn accept(&self) -> std::io::Result<(Socket, Peer)> {
        match self {
            Listener::Tcp(listener) => listener.accept().map(|(s, peer)| (Socket::from(s), Peer::Inet(peer))),
            Listener::Unix(listener) => listener.accept().map(|(s, _)| (Socket::from(s), Peer::Unix)),
        }
    }
}

/// A connection for the event loop: a control session, or one whose preamble is not whole yet.
pub(super) struct Handoff {
    /// The connection.
    pub socket: Socket,
    /// Its peer.
    pub peer: Peer,
    /// When it was accepted (deadlines count from then).
    pub accepted: Instant,
    /// What came of its preamble.
    pub bytes: [u8; PREAMBLE_BYTES],
    /// How many of `bytes` came.
    pub filled: usize,
}

/// Accepts forever, serving what it can and handing the rest to the event loop (woken by `waker`).
pub(super) fn accept_loop(listener: Listener, shared: Arc<Shared>, loop_: Sender<Handoff>, waker: UnixStream) {
    let mut inline = Inline { budget: INLINE_BUDGET_MAX, refilled: Instant::now() };
    loop {
        let (socket, peer) = match listener.accept() {
            Ok(accepted) => accepted,
            Err(e) if e.kind() == ErrorKind::Interrupted || e.kind() == ErrorKind::ConnectionAborted => continue,
            Err(e) => {
                shared.log.session(&format!("accept failed: {e}; pausing"));
                std::thread::sleep(ACCEPT_PAUSE);
                continue;
            }
        };
        let accepted = Instant::now();
        if let Peer::Inet(_) = peer {
            // Echo replies and probe answers must leave at once; a failure only costs latency.
            let _ = socket.set_nodelay(true);
        }
        let mut bytes = [0u8; PREAMBLE_BYTES];
        let filled = match inline.read_preamble(&socket, &mut bytes, accepted) {
            Ok(filled) => filled,
            Err(()) => {
                shared.log.junk(Junk::NoPreamble, &format!("connection from {peer} closed before its preamble"));
                continue;
            }
        };
        let socket =
            if filled == PREAMBLE_BYTES { serve_preamble(socket, peer, &bytes, &shared) } else { Some(socket) };
        if let Some(socket) = socket {
            if loop_.send(Handoff { socket, peer, accepted, bytes, filled }).is_err() {
                return;
            }
            // A full pipe means the loop has wake-ups pending already.
            let _ = (&waker).write(&[1]);
        }
    }
}

/// Serves a connection whose preamble is whole: answers a probe, starts a data connection's thread,
/// closes junk. Returns the socket of a control connection, which is the event loop's.
pub(super) fn serve_preamble(
    socket: Socket,
    peer: Peer,
    bytes: &[u8; PREAMBLE_BYTES],
    shared: &Arc<Shared>,
) -> Option<Socket> {
    let proto = if matches!(peer, Peer::Inet(_)) { Proto::Tcp } else { Proto::Unix };
    match Preamble::decode(bytes) {
        Ok(Preamble { role: Role::Control, .. }) => return Some(socket),
        Ok(Preamble { role: Role::ConnectProbe, token, .. }) => {
            if let Err(why) = super::echo::answer_probe(&socket, token, proto, peer.ip(), shared) {
                shared.log.junk(Junk::Refused, &format!("probe from {peer}: {why}"));
            }
        }
        Ok(Preamble { role: Role::Data, token, .. }) => {
            match super::echo::admit_data(&socket, token, proto, peer.ip(), shared) {
                Ok(entry) => {
                    let shared_ = shared.clone();
                    let started = super::spawn_named("data", move || {
                        super::echo::serve_data(socket, entry, token, proto, &shared_);
                    });
                    if let Err(e) = started {
                        shared.log.session(&format!("data connection from {peer}: {e}"));
                    }
                }
                Err(why) => shared.log.junk(Junk::Refused, &format!("data connection from {peer}: {why}")),
            }
        }
        Err(e) => {
            if let ProtoError::VersionMismatch { .. } = e {
                let message = linkperf_proto::Message::Error {
                    code: linkperf_proto::ErrorCode::VersionMismatch,
                    message: format!("{e}: run the same linkperf version on both ends"),
                };
                let _ = (&socket).write_all(&linkperf_proto::frame::encode_frame(&message));
            }
            shared.log.junk(Junk::NotLinkperf, &format!("connection from {peer}: {e}; closed"));
        }
    }
    None
}

/// The accept thread's budget for waiting on late preambles.
struct Inline {
    budget: Duration,
    refilled: Instant,
}

impl Inline {
    /// Reads a new connection's preamble, waiting for it up to `INLINE_WAIT` (a tick at most) if it is
    /// not there yet (a client writes it right after its connect returns, which is when `accept` wakes).
    fn read_preamble(&mut self, socket: &Socket, bytes: &mut [u8], now: Instant) -> Result<usize, ()> {
        let earned = now.saturating_duration_since(self.refilled).mul_f64(INLINE_SHARE);
        self.budget = (self.budget + earned).min(INLINE_BUDGET_MAX);
        self.refilled = now;
        let mut filled = read_without_waiting(socket, bytes)?;
        // A blocking receive, not poll: woken by the data itself, it answers about 12 us sooner on
        // loopback. The kernel rounds its timeout up to a scheduler tick, so a wait may cost up to
        // `WORST_WAIT`, and is only started when the budget holds that much.
        if filled == bytes.len() || self.budget < WORST_WAIT || socket.set_read_timeout(Some(INLINE_WAIT)).is_err() {
            return Ok(filled);
        }
        while filled < bytes.len() {
            match (&*socket).read(&mut bytes[filled..]) {
                Ok(0) => return Err(()),
                Ok(n) => filled += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => break,
                Err(_) => return Err(()),
            }
        }
        // A preamble that came within `FREE_WAIT` cost nothing that matters (the client wrote it with its
        // connect); slower or missing ones are paid for.
        let waited = Instant::now().saturating_duration_since(now);
        let charged = if filled == bytes.len() { waited.saturating_sub(FREE_WAIT) } else { waited };
        self.budget = self.budget.saturating_sub(charged);
        Ok(filled)
    }
}

/// Reads into `bytes` what the socket holds now, without waiting and without changing the socket's mode:
/// the number of bytes read, or `Err` if the peer closed or the connection failed first.
pub(super) fn read_without_waiting(socket: &Socket, bytes: &mut [u8]) -> Result<usize, ()> {
    use nix::sys::socket::{recv, MsgFlags};
    use std::os::fd::AsRawFd;
    let mut filled = 0;
    while filled < bytes.len() {
        match recv(socket.as_raw_fd(), &mut bytes[filled..], MsgFlags::MSG_DONTWAIT) {
            Ok(0) => return Err(()),
            Ok(n) => filled += n,
            Err(nix::errno::Errno::EINTR) => {}
            Err(nix::errno::Errno::EAGAIN) => break,
            Err(_) => return Err(()),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waiting_for_preambles_is_bounded_by_a_share_of_the_time() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let socket = Socket::from(ours);
        let t0 = Instant::now();
        let mut inline = Inline { budget: INLINE_BUDGET_MAX, refilled: t0 };
        let mut bytes = [0u8; PREAMBLE_BYTES];
        // A silent peer: each wait is about INLINE_WAIT, and the budget runs out after a few of them.
        let mut waits = 0;
        while inline.budget >= WORST_WAIT && waits < 100 {
            assert_eq!(inline.read_preamble(&socket, &mut bytes, inline.refilled), Ok(0));
            waits += 1;
        }
        let most = (INLINE_BUDGET_MAX.as_micros() / INLINE_WAIT.as_micros()) as usize;
        assert!((1..=most).contains(&waits), "{waits}");
        // A preamble that is there is read without a wait, budget or not.
        (&theirs).write_all(&[7u8; PREAMBLE_BYTES]).unwrap();
        assert_eq!(inline.read_preamble(&socket, &mut bytes, inline.refilled), Ok(PREAMBLE_BYTES));
        drop(theirs);
    }
}
