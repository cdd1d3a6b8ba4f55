//! `EventLoop`: the responder's control plane on one thread. One epoll set holds every connection whose
//! preamble has not yet come and every control session; nothing in it ever waits on a peer, so no number
//! of silent or slow connections can hold up the others.
//!
//! - The accept threads (`accept`) serve probes and data connections whose preamble came with them, and
//!   hand the rest here through a channel (waking the loop through a socket pair): control connections,
//!   and connections still owing their preamble, which wait in the epoll set at most `PREAMBLE_TIMEOUT`.
//! - Connections that are not yet authenticated (no preamble yet, or a control session in its handshake)
//!   pass a `Gate` with a total cap and a cap per source address; at a cap the oldest of them that made
//!   the least progress is closed to make room, so a flood evicts itself rather than the clients behind it.
//! - An authenticated client claims a session slot from `Slots` (`linkperf_proto::slots`); when all are
//!   held it waits, its handshake held here and its deadline kept by its session, until a slot is
//!   released or a session has idled long enough to make room. Waiting costs no thread.
//! - A data connection whose token is valid, from its session's address, within the budgets, gets a
//!   thread of its own (its measurement needs one); nothing else does.
//! - Deadlines are kept in one ordered set of (instant, connection) pairs.

use std::collections::{BTreeSet, HashMap};
use std::io::{ErrorKind, Read};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::sync::mpsc::Receiver;
use std::sync::Arc;
use std::time::{Duration, Instant};

use linkperf_proto::session::{ControlSession, SessionConfig};
use linkperf_proto::slots::{Claim, SlotConfig, Slots};
use linkperf_proto::{Ending, PREAMBLE_BYTES};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use socket2::{Socket, TcpKeepalive};

use super::accept::Handoff;
use super::gate::Gate;
use super::log::Junk;
use super::session::{ControlConn, Peer};
use super::Shared;

/// How long any connection may take to send its preamble.
const PREAMBLE_TIMEOUT: Duration = Duration::from_secs(5);
/// Most handed-over connections taken between two looks at the epoll set.
const HANDOFF_BATCH: usize = 16;
/// The epoll id of the accept threads' waker; connections have ids from 1 on.
const WAKER_ID: u64 = 0;
/// The timer id of the slots: when an idle session becomes evictable for a waiting client.
const SLOTS_TIMER: u64 = u64::MAX;
/// TCP keepalive of control connections: a vanished client is noticed within about 10 + 3 x 5 s.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_PROBES: u32 = 3;

/// A connection before its preamble is whole.
struct Pending {
    socket: Socket,
    peer: Peer,
    accepted: Instant,
    bytes: [u8; PREAMBLE_BYTES],
    filled: usize,
    registered: bool,
}

enum Conn {
    Pending(Pending),
    Control(Box<ControlConn>),
}

/// The control plane.
pub(super) struct EventLoop {
    epoll: Epoll,
    shared: Arc<Shared>,
    /// Connections from the accept threads, and the socket they wake the loop through.
    handoffs: Receiver<Handoff>,
    waker: UnixStream,
    conns: HashMap<u64, Conn>,
    next_id: u64,
    timers: BTreeSet<(Instant, u64)>,
    wakes: HashMap<u64, Instant>,
    gate: Gate,
    /// The session slots and the clients waiting for one.
    slots: Slots,
    /// Connections whose epoll interest includes writing.
    writing: std::collections::HashSet<u64>,
}

impl EventLoop {
    /// A loop fed by the accept threads through `handoffs`, woken through `waker`.
    pub fn new(shared: Arc<Shared>, handoffs: Receiver<Handoff>, waker: UnixStream) -> std::io::Result<Self> {
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
        waker.set_nonblocking(true)?;
        epoll.add(waker.as_fd(), EpollEvent::new(EpollFlags::EPOLLIN, WAKER_ID))?;
        let gate = Gate::new(shared.config.unauthenticated, shared.config.unauthenticated_per_address);
        let slots = Slots::new(SlotConfig::new(shared.config.limits.max_sessions));
        Ok(Self {
            epoll,
            shared,
            handoffs,
            waker,
            conns: HashMap::new(),
            next_id: WAKER_ID + 1,
            timers: BTreeSet::new(),
            wakes: HashMap::new(),
            gate,
            slots,
            writing: std::collections::HashSet::new(),
        })
    }

    /// Serves forever.
    pub fn run(mut self) {
        let mut events = vec![EpollEvent::empty(); 256];
        let mut more_handoffs = false;
        loop {
            let timeout = if more_handoffs { EpollTimeout::ZERO } else { self.next_timeout(Instant::now()) };
            let ready = match self.epoll.wait(&mut events, timeout) {
                Ok(n) => n,
                Err(nix::errno::Errno::EINTR) => 0,
                Err(e) => {
                    self.shared.log.session(&format!("waiting for events failed: {e}"));
                    std::thread::sleep(Duration::from_millis(50));
                    0
                }
            };
            let now = Instant::now();
            let mut woken = more_handoffs;
            for event in &events[..ready] {
                match event.data() {
                    WAKER_ID => woken = true,
                    id => self.on_event(id, event.events(), now),
                }
            }
            more_handoffs = woken && self.take_handoffs(Instant::now());
            self.fire_timers(Instant::now());
            self.grant_waiting(Instant::now());
            self.shared.log.flush(Instant::now());
        }
    }

    fn next_timeout(&self, now: Instant) -> EpollTimeout {
        let next = self.timers.first().map(|(at, _)| *at);
        // Wake at least once a log window, so that a summary of junk is printed even when all is quiet.
        let wait = next.map_or(super::log::WINDOW, |at| at.saturating_duration_since(now)).min(super::log::WINDOW);
        // Round up: waking a little early would only spin until the deadline.
        let millis = wait.as_micros().div_ceil(1000);
        EpollTimeout::try_from(millis as u64).unwrap_or(EpollTimeout::MAX)
    }

    /// Takes the connections the accept threads handed over, a batch at a time: between batches the loop
    /// reads the preambles that have come meanwhile, so that a burst of silent connections cannot evict a
    /// client's connection before its preamble, sent right behind its connect, is read. Returns whether
    /// more are waiting.
    fn take_handoffs(&mut self, now: Instant) -> bool {
        let mut drained = [0u8; 256];
        while matches!((&self.waker).read(&mut drained), Ok(n) if n > 0) {}
        for _ in 0..HANDOFF_BATCH {
            match self.handoffs.try_recv() {
                Ok(handoff) => self.on_handoff(handoff, now),
                Err(_) => return false,
            }
        }
        true
    }

    /// A connection from an accept thread: a control session to open, or a preamble to wait for.
    fn on_handoff(&mut self, handoff: Handoff, now: Instant) {
        let Handoff { socket, peer, accepted, bytes, filled } = handoff;
        let id = self.next_id;
        self.next_id += 1;
        let pending = Pending { socket, peer, accepted, bytes, filled, registered: false };
        if filled == PREAMBLE_BYTES {
            return self.open_session(id, pending, now);
        }
        let _ = pending.socket.set_nonblocking(true);
        for evicted in self.gate.enter(id, peer.ip()) {
            self.close_junk(evicted, Junk::Evicted, None);
        }
        self.conns.insert(id, Conn::Pending(pending));
        self.set_timer(id, Some(accepted + PREAMBLE_TIMEOUT));
        self.on_pending(id, now);
    }

    /// Reads what there is of a preamble, and routes the connection once it is whole.
    fn on_pending(&mut self, id: u64, now: Instant) {
        let Some(Conn::Pending(pending)) = self.conns.get_mut(&id) else { return };
        loop {
            match (&pending.socket).read(&mut pending.bytes[pending.filled..]) {
                Ok(0) => return self.close_junk(id, Junk::NoPreamble, Some("closed before its preamble")),
                Ok(n) => {
                    pending.filled += n;
                    if pending.filled == PREAMBLE_BYTES {
                        let Some(Conn::Pending(pending)) = self.conns.remove(&id) else { return };
                        return self.route(id, pending, now);
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => return self.close_junk(id, Junk::NoPreamble, Some("failed before its preamble")),
            }
        }
        if !pending.registered {
            let interest = EpollEvent::new(EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP, id);
            if self.epoll.add(pending.socket.as_fd(), interest).is_err() {
                return self.close_junk(id, Junk::NoPreamble, Some("could not be watched"));
            }
            pending.registered = true;
        }
    }

    fn route(&mut self, id: u64, pending: Pending, now: Instant) {
        self.forget(id, &pending.socket, pending.registered);
        let Pending { socket, peer, accepted, bytes, .. } = pending;
        if let Some(socket) = super::accept::serve_preamble(socket, peer, &bytes, &self.shared) {
            // A control connection: back into the loop as a session (no longer registered).
            let pending = Pending { socket, peer, accepted, bytes, filled: PREAMBLE_BYTES, registered: false };
            self.open_session(id, pending, now);
        }
    }

    fn open_session(&mut self, id: u64, pending: Pending, now: Instant) {
        let config = &self.shared.config;
        let auth =
            config.key.as_ref().map(|key| (key.clone(), linkperf_proto::auth::nonce_from(&crate::random_bytes())));
        let capabilities = linkperf_proto::CAPABILITIES.iter().map(|c| c.to_string()).collect();
        let session_config = SessionConfig::new(config.limits.clone(), auth, crate::software(), capabilities);
        let session = ControlSession::new(session_config, pending.accepted);
        if let Peer::Inet(_) = pending.peer {
            let keepalive = TcpKeepalive::new()
                .with_time(KEEPALIVE_IDLE)
                .with_interval(KEEPALIVE_INTERVAL)
                .with_retries(KEEPALIVE_PROBES);
            let _ = pending.socket.set_tcp_keepalive(&keepalive);
        }
        if !pending.registered {
            // Came by the fast path: not yet in the gate, nor non-blocking, nor watched.
            let _ = pending.socket.set_nonblocking(true);
            for evicted in self.gate.enter(id, pending.peer.ip()) {
                self.close_junk(evicted, Junk::Evicted, None);
            }
            let interest = EpollEvent::new(EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP, id);
            if self.epoll.add(pending.socket.as_fd(), interest).is_err() {
                self.gate.leave(id);
                return;
            }
        }
        self.gate.greeting(id);
        let conn = ControlConn::new(id, pending.socket, pending.peer, session, pending.accepted);
        self.conns.insert(id, Conn::Control(Box::new(conn)));
        self.on_control(id, EpollFlags::EPOLLIN, now);
    }

    fn on_event(&mut self, id: u64, flags: EpollFlags, now: Instant) {
        match self.conns.get(&id) {
            Some(Conn::Pending(_)) => self.on_pending(id, now),
            Some(Conn::Control(_)) => self.on_control(id, flags, now),
            None => {}
        }
    }

    fn on_control(&mut self, id: u64, flags: EpollFlags, now: Instant) {
        let Some(Conn::Control(conn)) = self.conns.get_mut(&id) else { return };
        if flags.intersects(EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP | EpollFlags::EPOLLHUP | EpollFlags::EPOLLERR)
        {
            conn.on_readable(now);
        }
        self.after(id, now);
    }

    /// Carries out a control connection's actions, then closes it or updates its interest and timer.
    fn after(&mut self, id: u64, now: Instant) {
        let Some(Conn::Control(conn)) = self.conns.get_mut(&id) else { return };
        let (slots, address) = (&mut self.slots, conn.peer.ip());
        let mut evict = None;
        let mut claim = || {
            let claim = slots.claim(id, address, now);
            if let Claim::Granted { evict: Some(victim) } = claim {
                evict = Some(victim);
            }
            claim
        };
        let ending = conn.drive(now, &self.shared, &mut claim);
        if let Some(victim) = evict {
            self.evict(victim, now);
        }
        let Some(Conn::Control(conn)) = self.conns.get_mut(&id) else { return };
        if conn.admitted || conn.session.is_waiting() {
            // Authenticated: bounded by the slots and their waiting room, no longer by the gate.
            self.gate.leave(id);
        }
        if let Some(ending) = ending {
            let Some(Conn::Control(conn)) = self.conns.remove(&id) else { return };
            self.slots.release(id);
            let line = conn.log_line(&ending);
            if conn.admitted {
                self.shared.log.session(&line);
            } else {
                self.shared.log.junk(Junk::Handshake, &line);
            }
            self.forget(id, &conn.socket, true);
            return;
        }
        if conn.admitted {
            self.slots.set_idle(id, conn.session.idle_since());
        }
        let (wants_write, wake) = (conn.wants_write(), conn.next_wake());
        let socket_fd = conn.socket.as_fd();
        if wants_write != self.writing.contains(&id) {
            let mut flags = EpollFlags::EPOLLIN | EpollFlags::EPOLLRDHUP;
            if wants_write {
                flags |= EpollFlags::EPOLLOUT;
                self.writing.insert(id);
            } else {
                self.writing.remove(&id);
            }
            let _ = self.epoll.modify(socket_fd, &mut EpollEvent::new(flags, id));
        }
        self.set_timer(id, wake);
    }

    /// Closes an idle session whose slot went to a newcomer.
    fn evict(&mut self, victim: u64, now: Instant) {
        if let Some(Conn::Control(idle)) = self.conns.get_mut(&victim) {
            idle.session.close(Ending::Evicted);
        }
        self.after(victim, now);
    }

    /// Gives the slots that came free (released, or held by a session idle long enough) to the clients
    /// waiting, in order, and sets the wake-up for the next session to become evictable.
    fn grant_waiting(&mut self, now: Instant) {
        while let Some(grant) = self.slots.poll_grant(now) {
            if let Some(victim) = grant.evict {
                self.evict(victim, now);
            }
            match self.conns.get_mut(&grant.id) {
                Some(Conn::Control(conn)) => {
                    conn.admit(now);
                    self.after(grant.id, now);
                }
                // Gone since it began to wait (its close releases it too): the slot is free again.
                _ => self.slots.release(grant.id),
            }
        }
        self.set_timer(SLOTS_TIMER, self.slots.poll_timeout());
    }

    fn fire_timers(&mut self, now: Instant) {
        while let Some(&(at, id)) = self.timers.first() {
            if at > now {
                return;
            }
            self.timers.remove(&(at, id));
            self.wakes.remove(&id);
            // SLOTS_TIMER has no connection: the grants follow in `grant_waiting`.
            match self.conns.get_mut(&id) {
                Some(Conn::Pending(_)) => self.close_junk(id, Junk::NoPreamble, Some("sent no preamble in time")),
                Some(Conn::Control(conn)) => {
                    conn.on_timer(now, &self.shared);
                    self.after(id, now);
                }
                None => {}
            }
        }
    }

    fn set_timer(&mut self, id: u64, at: Option<Instant>) {
        if let Some(old) = self.wakes.remove(&id) {
            self.timers.remove(&(old, id));
        }
        if let Some(at) = at {
            self.timers.insert((at, id));
            self.wakes.insert(id, at);
        }
    }

    /// Closes a connection that never became a session or data path.
    fn close_junk(&mut self, id: u64, kind: Junk, why: Option<&str>) {
        let (socket, peer, registered) = match self.conns.remove(&id) {
            Some(Conn::Pending(p)) => (p.socket, p.peer, p.registered),
            Some(Conn::Control(c)) => {
                let line = c.log_line(&linkperf_proto::Ending::Refused(linkperf_proto::Refusal::BudgetSpent {
                    budget: linkperf_proto::Budget::Connections,
                    limit: self.shared.config.unauthenticated as u64,
                }));
                self.shared.registry.release_session(id);
                self.slots.release(id);
                self.forget(id, &c.socket, true);
                return self.shared.log.junk(kind, &line);
            }
            None => return,
        };
        self.forget(id, &socket, registered);
        if let Some(why) = why {
            self.shared.log.junk(kind, &format!("connection from {peer} {why}; closed"));
        } else {
            self.shared.log.junk(kind, &format!("connection from {peer} closed ({kind:?})"));
        }
    }

    /// Drops a connection's bookkeeping (the caller drops or hands over its socket).
    fn forget(&mut self, id: u64, socket: &Socket, registered: bool) {
        if registered {
            let _ = self.epoll.delete(socket.as_fd());
        }
        self.gate.leave(id);
        self.set_timer(id, None);
        self.writing.remove(&id);
    }
}
