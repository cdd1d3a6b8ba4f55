//! The data side of the responder: admitting data connections and probes whose preamble the event loop
//! read, echoing stream bytes (on a thread per connection, from the data-path budget) and UDP datagrams
//! of running tests, and answering connection probes.
//!
//! Echo is message-level, as in every request/response benchmark: a stream data connection announces its
//! message size after the preamble, and the responder returns each message only once all of it has arrived,
//! so on a slow link the round trip covers the whole request's transfer and then the whole reply's. A UDP
//! datagram is a whole message by nature.

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, UdpSocket};
use std::time::{Duration, Instant};

use linkperf_core::{Proto, WaitMode};
use linkperf_proto::{ProbeHeader, StreamHeader, MESSAGE_SIZE_BYTES};
use socket2::Socket;

use super::registry::{canonical, NotAdmitted, TestEntry, TestKind};
use super::Shared;

/// How long a data connection may take to send its data header after its preamble.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// How often idle data threads check that their test is still running.
const LIVENESS_TICK: Duration = Duration::from_millis(250);

/// Answers a connection probe of a running connect test from the test's own address with one byte; the
/// caller then closes the connection (its closing is the rest of the answer).
pub(super) fn answer_probe(
    mut socket: &Socket,
    token: u32,
    proto: Proto,
    from: Option<IpAddr>,
    shared: &Shared,
) -> Result<(), NotAdmitted> {
    match shared.registry.attach_from(token, proto, Instant::now(), None, from)? {
        entry if entry.kind == TestKind::ConnectProbe => {
            let _ = socket.write_all(&[1]);
            Ok(())
        }
        _ => Err(NotAdmitted::UnknownToken),
    }
}

/// Admits a data connection of a running test from the test's own address, holding a data path of the
/// budget; `serve_data` then serves it on a thread of its own.
pub(super) fn admit_data(
    socket: &Socket,
    token: u32,
    proto: Proto,
    from: Option<IpAddr>,
    shared: &Shared,
) -> Result<TestEntry, NotAdmitted> {
    match shared.registry.attach_from(token, proto, Instant::now(), Some(socket), from)? {
        entry if entry.kind != TestKind::ConnectProbe => Ok(entry),
        _ => Err(NotAdmitted::UnknownToken),
    }
}

/// Serves an admitted data connection until it ends, then shuts it down.
pub(super) fn serve_data(socket: Socket, entry: TestEntry, token: u32, proto: Proto, shared: &Shared) {
    serve_admitted(&socket, &entry, token, proto, shared);
    // The registry holds a duplicate of this socket (to cut it when the test is released), so dropping ours
    // would not close the connection: shut it down explicitly.
    let _ = socket.shutdown(std::net::Shutdown::Both);
}

/// Serves a data connection by its test's kind: echo for latency, sink or source for throughput.
fn serve_admitted(socket: &Socket, entry: &TestEntry, token: u32, proto: Proto, shared: &Shared) {
    let _ = socket.set_nonblocking(false);
    let _ = socket.set_read_timeout(Some(HEADER_TIMEOUT));
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
                    // Only the control session's own address may set up a stream: a spoofed registration
                    // would make the responder send a download to a third address.
                    let from_owner = shared.registry.admits_from(probe.token, Some(peer.ip()));
                    if let (true, Ok(local)) = (from_owner, socket.local_addr()) {
                        super::bulk::register_udp(local, peer, probe.token, header, shared);
                    }
                    continue;
                }
                let admitted = ProbeHeader::read_from(datagram)
                    .is_some_and(|h| admitted_token.admits(h.token, canonical(peer.ip()), shared));
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

/// The last token and sender found live, so that a stream of datagrams of one test does not take the
/// registry's lock and read the clock for each one. It is checked again every `RECHECK_EVERY` datagrams
/// and whenever a blocking receive times out, so a released token is echoed at most that many more times;
/// a datagram from any other address is checked against the registry, which echoes only to the address
/// of the control session that owns the token.
#[derive(Default)]
struct AdmittedToken {
    admitted: Option<(u32, IpAddr)>,
    uses: u32,
}

impl AdmittedToken {
    const RECHECK_EVERY: u32 = 256;

    fn admits(&mut self, token: u32, from: IpAddr, shared: &Shared) -> bool {
        if self.admitted == Some((token, from)) && self.uses < Self::RECHECK_EVERY {
            self.uses += 1;
            return true;
        }
        let live = shared.registry.is_live(token, Proto::Udp, Instant::now())
            && shared.registry.admits_from(token, Some(from));
        *self = AdmittedToken { admitted: live.then_some((token, from)), uses: 0 };
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

/// A line in the responder's log (escaped and rate-limited there).
pub(super) fn log(shared: &Shared, line: &str) {
    shared.log.session(line);
}
