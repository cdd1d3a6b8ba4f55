//! The data side of the responder: reading each connection's preamble, echoing stream bytes and UDP
//! datagrams of running tests, and answering connection probes.
//!
//! Echo is message-level, as in every request/response benchmark: a stream data connection announces its
//! message size after the preamble, and the responder returns each message only once all of it has arrived,
//! so on a slow link the round trip covers the whole request's transfer and then the whole reply's. A UDP
//! datagram is a whole message by nature.

use std::io::{ErrorKind, Read, Write};
use std::net::UdpSocket;
use std::sync::Arc;
use std::time::{Duration, Instant};

use linkperf_core::{Proto, WaitMode};
use linkperf_proto::{
    ErrorCode, Message, Preamble, ProbeHeader, ProtoError, Role, StreamHeader, MESSAGE_SIZE_BYTES, PREAMBLE_BYTES,
};
use socket2::Socket;

use super::registry::TestKind;
use super::Shared;

/// How long the accept thread waits for a preamble before handing the connection to a thread of its own.
const INLINE_PREAMBLE_WAIT: Duration = Duration::from_millis(20);
/// How long any connection may take to send its preamble.
const PREAMBLE_TIMEOUT: Duration = Duration::from_secs(5);
/// How often idle data threads check that their test is still running.
const LIVENESS_TICK: Duration = Duration::from_millis(250);

/// Reads a new connection's preamble and serves it. Runs on the accept thread: well-behaved clients send
/// their preamble with the connection, so it is usually read at once; a slow one is moved to a thread.
pub(super) fn dispatch(socket: Socket, peer: String, shared: &Arc<Shared>) {
    let mut bytes = [0u8; PREAMBLE_BYTES];
    let _ = socket.set_read_timeout(Some(INLINE_PREAMBLE_WAIT));
    let filled = read_some(&socket, &mut bytes, 0);
    if filled == PREAMBLE_BYTES {
        return route(socket, peer, &bytes, shared);
    }
    let shared = shared.clone();
    let _ = super::spawn_named("preamble", move || {
        let _ = socket.set_read_timeout(Some(PREAMBLE_TIMEOUT));
        if read_some(&socket, &mut bytes, filled) == PREAMBLE_BYTES {
            route(socket, peer, &bytes, &shared);
        } else {
            log(&shared, &format!("connection from {peer} sent no preamble; closed"));
        }
    });
}

/// Fills `bytes` from `filled` on, until full, closed, failed or timed out; returns how many are filled.
fn read_some(mut socket: &Socket, bytes: &mut [u8], mut filled: usize) -> usize {
    while filled < bytes.len() {
        match socket.read(&mut bytes[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    filled
}

fn route(socket: Socket, peer: String, bytes: &[u8; PREAMBLE_BYTES], shared: &Arc<Shared>) {
    let proto = if socket.local_addr().ok().and_then(|a| a.as_socket()).is_some() { Proto::Tcp } else { Proto::Unix };
    match Preamble::decode(bytes) {
        Ok(Preamble { role: Role::Control, .. }) => {
            let shared = shared.clone();
            let _ = super::spawn_named("session", move || super::session::run(socket, peer, &shared));
        }
        Ok(Preamble { role: Role::ConnectProbe, token, .. }) => answer_probe(&socket, token, proto, shared),
        Ok(Preamble { role: Role::Data, token, .. }) => {
            let shared = shared.clone();
            let _ = super::spawn_named("echo", move || echo_stream(socket, token, proto, &shared));
        }
        Err(e @ ProtoError::VersionMismatch { .. }) => {
            log(shared, &format!("connection from {peer}: {e}; closed"));
            let message = Message::Error {
                code: ErrorCode::VersionMismatch,
                message: format!("{e}: run the same linkperf version on both ends"),
            };
            let _ = linkperf_proto::write_frame(&mut &socket, &message);
        }
        Err(e) => log(shared, &format!("connection from {peer}: {e}; closed")),
    }
}

fn answer_probe(mut socket: &Socket, token: u32, proto: Proto, shared: &Shared) {
    match shared.registry.attach_stream(token, proto, Instant::now(), None) {
        Ok(entry) if entry.kind == TestKind::ConnectProbe => {
            let _ = socket.write_all(&[1]);
        }
        _ => {}
    }
    // Dropping the socket closes it: the probe's response is this one byte.
}

fn echo_stream(socket: Socket, token: u32, proto: Proto, shared: &Shared) {
    serve_data(&socket, token, proto, shared);
    // The registry holds a duplicate of this socket (to cut it when the test is released), so dropping ours
    // would not close the connection: shut it down explicitly.
    let _ = socket.shutdown(std::net::Shutdown::Both);
}

/// Serves a data connection by its test's kind: echo for latency, sink or source for throughput.
fn serve_data(socket: &Socket, token: u32, proto: Proto, shared: &Shared) {
    let entry = match shared.registry.attach_stream(token, proto, Instant::now(), Some(socket)) {
        Ok(entry) if entry.kind != TestKind::ConnectProbe => entry,
        _ => return,
    };
    let _ = socket.set_read_timeout(Some(PREAMBLE_TIMEOUT));
    let mut header = [0u8; MESSAGE_SIZE_BYTES];
    if read_some(socket, &mut header, 0) != MESSAGE_SIZE_BYTES {
        return;
    }
    let live = || shared.registry.is_live(token, proto, Instant::now());
    if let Some(state) = &entry.bulk {
        if let Some(header) = StreamHeader::decode(header) {
            super::bulk::serve_stream(socket, header, state, live);
        }
        return;
    }
    let size = u32::from_be_bytes(header) as u64;
    if size == 0 || size > entry.max_message_bytes {
        return;
    }
    let _ = echo_messages(socket, size as usize, entry.wait, live);
}

/// Returns each message of `size` bytes once all of it has arrived, until the client closes, the test ends
/// or the connection fails.
fn echo_messages(socket: &Socket, size: usize, wait: WaitMode, live: impl Fn() -> bool) -> std::io::Result<()> {
    match wait {
        WaitMode::Block => socket.set_read_timeout(Some(LIVENESS_TICK))?,
        WaitMode::Spin => socket.set_nonblocking(true)?,
    }
    let mut message = vec![0u8; size];
    while receive_message(socket, &mut message, wait, &live)? {
        match wait {
            WaitMode::Block => (&*socket).write_all(&message)?,
            WaitMode::Spin => write_all_spinning(socket, &message)?,
        }
    }
    Ok(())
}

/// Fills `message`; `false` when the client closed between messages or the test is no longer live.
fn receive_message(
    mut socket: &Socket,
    message: &mut [u8],
    wait: WaitMode,
    live: &impl Fn() -> bool,
) -> std::io::Result<bool> {
    let mut filled = 0;
    let mut spins = 0u32;
    let mut next_check = Instant::now() + LIVENESS_TICK;
    while filled < message.len() {
        match socket.read(&mut message[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
            Ok(n) => filled += n,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if e.kind() == ErrorKind::WouldBlock && wait == WaitMode::Spin => {
                // Spinning: reading the clock on every empty poll would double its cost; every 1024th is enough.
                spins = spins.wrapping_add(1);
                if spins % 1024 == 0 && Instant::now() > next_check {
                    if !live() {
                        return Ok(false);
                    }
                    next_check = Instant::now() + LIVENESS_TICK;
                }
                std::hint::spin_loop();
            }
            Err(e) if is_timeout(&e) => {
                if !live() {
                    return Ok(false);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Writes everything on a non-blocking socket, polling while the send buffer is full.
pub(crate) fn write_all_spinning(mut socket: &Socket, mut bytes: &[u8]) -> std::io::Result<()> {
    while !bytes.is_empty() {
        match socket.write(bytes) {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted => std::hint::spin_loop(),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Echoes datagrams of running UDP latency tests to their sender, and sets up UDP throughput streams on
/// their registration, forever. Spins while any running UDP test asked
/// for it, blocks (with a short timeout, to notice that change) otherwise.
pub(super) fn serve_udp(socket: UdpSocket, shared: &std::sync::Arc<Shared>) {
    let mut buffer = vec![0u8; 65_536];
    let mut spinning = false;
    let mut admitted_token = AdmittedToken::default();
    let _ = socket.set_read_timeout(Some(LIVENESS_TICK));
    loop {
        match socket.recv_from(&mut buffer) {
            Ok((n, peer)) => {
                let datagram = &buffer[..n];
                if let Some((probe, header)) = crate::udp_stream::registration(datagram) {
                    if let Ok(local) = socket.local_addr() {
                        super::bulk::register_udp(local, peer, probe.token, header, shared);
                    }
                    continue;
                }
                let admitted = ProbeHeader::read_from(datagram).is_some_and(|h| admitted_token.admits(h.token, shared));
                if admitted {
                    let _ = socket.send_to(datagram, peer);
                }
                follow_wait_mode(&socket, shared, &mut spinning);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::TimedOut => {
                // An empty poll while spinning is no sign of idleness; a receive timeout is.
                if !spinning {
                    admitted_token = AdmittedToken::default();
                }
                follow_wait_mode(&socket, shared, &mut spinning);
            }
            Err(_) => std::hint::spin_loop(),
        }
    }
}

/// The last token found live, so that a stream of datagrams of one test does not take the registry's lock
/// and read the clock for each one. It is checked again every `RECHECK_EVERY` datagrams and whenever a
/// blocking receive times out, so a released token is echoed at most that many more times.
#[derive(Default)]
struct AdmittedToken {
    token: Option<u32>,
    uses: u32,
}

impl AdmittedToken {
    const RECHECK_EVERY: u32 = 256;

    fn admits(&mut self, token: u32, shared: &Shared) -> bool {
        if self.token == Some(token) && self.uses < Self::RECHECK_EVERY {
            self.uses += 1;
            return true;
        }
        let live = shared.registry.is_live(token, Proto::Udp, Instant::now());
        *self = AdmittedToken { token: live.then_some(token), uses: 0 };
        live
    }
}

/// Switches the UDP socket between blocking and spinning when the running tests' wishes change. Checked
/// after every datagram too, since a busy socket never times out.
fn follow_wait_mode(socket: &UdpSocket, shared: &Shared, spinning: &mut bool) {
    let should_spin = shared.registry.udp_should_spin();
    if should_spin != *spinning {
        *spinning = should_spin;
        let _ = socket.set_nonblocking(should_spin);
    }
}

pub(super) fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

pub(super) fn log(shared: &Shared, line: &str) {
    if shared.config.log {
        eprintln!("linkperf serve: {line}");
    }
}
