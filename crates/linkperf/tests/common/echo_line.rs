//! Echoes for the tests of echo peers and serial lines (`tests/echo_peer.rs`, `tests/serial.rs`): a TCP echo
//! and a UDP echo on 127.0.0.1 with faults, and a line simulator on a pty (or behind a TCP port) that stands
//! for a serial line with a loopback plug; a null-modem cable between two ptys; the arguments of a test
//! against them. Used by `#[path]` from those files (each uses part of it).
//!
//! The simulator holds the pty's master side. It takes bytes off the line no faster than the line carries
//! them (one character every `bits_per_character / baud` seconds: while it has not taken them, they stay in
//! the pty and the sender's writes block, as a UART's would) and sends each back one character time plus
//! a fixed per-character delay after it went out. So the echo's steady rate is exactly the line's
//! character rate, and a lone byte comes back after exactly `character time + delay`.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The arguments of a `test` against an echo: the target's, then the output's (JSON, no progress, not kept),
/// then `extra`.
pub fn echo_args<'a>(test: &'a str, target: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![test];
    v.extend_from_slice(target);
    v.extend_from_slice(&["--json", "--no-progress", "--no-store"]);
    v.extend_from_slice(extra);
    v
}

/// What an echo (the TCP echo, the simulated line) does to the byte at a position of the stream.
#[derive(Clone, Copy)]
pub enum Fault {
    /// Nothing: every byte back as it came.
    None,
    /// Flips a bit of the byte at this position of the stream.
    Change(u64),
    /// Swallows the byte at this position of the stream.
    Drop(u64),
    /// Never sends anything back.
    Silent,
    /// Flips a bit of every byte (as a line at the wrong rate or framing garbles every character).
    ChangeAll,
}

impl Fault {
    /// What comes back for byte `b` at `position` of the stream: itself, changed, or nothing.
    pub fn apply(self, position: u64, b: u8) -> Option<u8> {
        match self {
            Fault::Change(at) if at == position => Some(b ^ 0x01),
            Fault::ChangeAll => Some(b ^ 0x01),
            Fault::Drop(at) if at == position => None,
            Fault::Silent => None,
            _ => Some(b),
        }
    }
}

/// A TCP echo on 127.0.0.1 serving one connection at a time in a thread; its port.
pub fn tcp_echo(fault: Fault) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            std::thread::spawn(move || {
                let mut buffer = [0u8; 16 * 1024];
                let mut position = 0u64;
                while let Ok(n) = stream.read(&mut buffer) {
                    if n == 0 {
                        return;
                    }
                    let mut out: Vec<u8> = Vec::with_capacity(n);
                    for &b in &buffer[..n] {
                        out.extend(fault.apply(position, b));
                        position += 1;
                    }
                    if stream.write_all(&out).is_err() {
                        return;
                    }
                }
            });
        }
    });
    port
}

/// A UDP echo on 127.0.0.1 that drops datagram number `drop_nth` (from 1, 0 for none); its port and the
/// count of datagrams it saw.
pub fn udp_echo(drop_nth: u64) -> (u16, Arc<AtomicU64>) {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    let port = socket.local_addr().unwrap().port();
    let seen = Arc::new(AtomicU64::new(0));
    let counter = seen.clone();
    std::thread::spawn(move || {
        let mut buffer = [0u8; 65536];
        while let Ok((n, from)) = socket.recv_from(&mut buffer) {
            let number = counter.fetch_add(1, Ordering::SeqCst) + 1;
            if number != drop_nth {
                let _ = socket.send_to(&buffer[..n], from);
            }
        }
    });
    (port, seen)
}

/// A simulated serial line with a loopback plug, on a pty pair.
pub struct Line {
    /// The pty's device path (what linkperf opens).
    pub path: PathBuf,
    /// The slave side, kept open so that the line stays up between runs (and to read its settings).
    pub slave: OwnedFd,
    stop: Arc<AtomicBool>,
    /// Bytes taken off the line so far.
    pub taken: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Line {
    /// A line carrying a character of `bits` bits every `bits / baud` s, echoing each after `delay` more.
    pub fn start(baud: u32, bits: u32, delay: Duration, fault: Fault) -> Line {
        let pty = nix::pty::openpty(None, None).unwrap();
        let path = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd())).unwrap();
        let flags = nix::fcntl::fcntl(pty.master.as_fd(), nix::fcntl::FcntlArg::F_GETFL).unwrap();
        let nonblocking = nix::fcntl::OFlag::from_bits_truncate(flags) | nix::fcntl::OFlag::O_NONBLOCK;
        nix::fcntl::fcntl(pty.master.as_fd(), nix::fcntl::FcntlArg::F_SETFL(nonblocking)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let taken = Arc::new(AtomicU64::new(0));
        let character = Duration::from_secs_f64(f64::from(bits) / f64::from(baud));
        let (s, t) = (stop.clone(), taken.clone());
        let master = File::from(pty.master);
        let thread = std::thread::spawn(move || simulate(master, (character, delay, fault), s, t));
        Line { path, slave: pty.slave, stop, taken, thread: Some(thread) }
    }

    pub fn device(&self) -> &str {
        self.path.to_str().unwrap()
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A simulated line behind a TCP port on 127.0.0.1 (a device server with a loopback plug); its port.
/// Serves one connection at a time until the test process ends.
pub fn tcp_line(baud: u32, bits: u32, delay: Duration) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let character = Duration::from_secs_f64(f64::from(bits) / f64::from(baud));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let stream = stream.unwrap();
            stream.set_nonblocking(true).unwrap();
            stream.set_nodelay(true).unwrap();
            let never = Arc::new(AtomicBool::new(false));
            simulate(stream, (character, delay, Fault::None), never, Arc::new(AtomicU64::new(0)));
        }
    });
    port
}

/// The line: takes bytes at the character rate, sends each back a character time plus `delay` later.
/// Ends when `stop` is set or the other side closes.
pub fn simulate<S: Read + Write + AsFd>(
    mut master: S,
    (character, delay, fault): (Duration, Duration, Fault),
    stop: Arc<AtomicBool>,
    taken: Arc<AtomicU64>,
) {
    let mut echoes: VecDeque<(Instant, u8)> = VecDeque::new();
    let mut next_slot = Instant::now();
    let mut busy = false;
    let mut position = 0u64;
    let mut buffer = [0u8; 4096];
    while !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        let ready = echoes.iter().take_while(|e| e.0 <= now).count();
        let due: Vec<u8> = echoes.drain(..ready).map(|e| e.1).collect();
        if !due.is_empty() {
            master.write_all(&due).unwrap();
        }
        let idle = !busy;
        if idle {
            next_slot = next_slot.max(now);
        }
        if next_slot <= now {
            // The characters the line could have carried by now, from the first free slot.
            let room = ((now - next_slot).as_secs_f64() / character.as_secs_f64()) as usize + 1;
            let want = room.min(buffer.len());
            let n = match master.read(&mut buffer[..want]) {
                Ok(0) => return,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => 0,
                Err(e) if e.raw_os_error() == Some(libc_eio()) => 0,
                Err(e) => panic!("pty master: {e}"),
            };
            if idle && n > 0 {
                // A byte found on an idle line went out no earlier than it was read: one that arrived
                // between `now` and the read must not be sent back early.
                next_slot = next_slot.max(Instant::now());
            }
            for &b in &buffer[..n] {
                let slot = next_slot;
                next_slot += character;
                if let Some(back) = fault.apply(position, b) {
                    echoes.push_back((slot + character + delay, back));
                }
                position += 1;
            }
            taken.fetch_add(n as u64, Ordering::SeqCst);
            busy = n > 0 && n == want;
        }
        wait(&master, busy.then_some(next_slot), echoes.front().map(|e| e.0));
    }
}

/// EIO: what a pty master reads while no one has the slave open.
pub fn libc_eio() -> i32 {
    5
}

/// Sleeps until the next slot or echo; when idle, until a byte arrives (or 10 ms, to see `stop`).
pub fn wait(master: &impl AsFd, slot: Option<Instant>, echo: Option<Instant>) {
    let next = [slot, echo].into_iter().flatten().min();
    let now = Instant::now();
    match next {
        Some(t) if t <= now => {}
        // A precise sleep for what is near; poll's milliseconds for what is further (a byte may arrive).
        Some(t) if t - now < Duration::from_millis(2) || slot.is_some() => {
            std::thread::sleep(t - now);
        }
        other => {
            use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
            let millis = other.map_or(10, |t| ((t - now).as_millis() as u16).saturating_sub(1).min(10));
            let mut fds = [PollFd::new(master.as_fd(), PollFlags::POLLIN)];
            let _ = poll(&mut fds, PollTimeout::from(millis));
        }
    }
}

/// A null-modem cable between two pty pairs: what is written on one slave is read on the other, unpaced.
/// Returns the two device paths (the slaves stay open in the returned guard).
pub fn cable() -> (PathBuf, PathBuf, Vec<OwnedFd>) {
    let a = nix::pty::openpty(None, None).unwrap();
    let b = nix::pty::openpty(None, None).unwrap();
    let path = |fd: &OwnedFd| std::fs::read_link(format!("/proc/self/fd/{}", fd.as_raw_fd())).unwrap();
    let (path_a, path_b) = (path(&a.slave), path(&b.slave));
    let (mut a_in, mut b_out) = (File::from(a.master), File::from(b.master));
    let (mut a_out, mut b_in) = (a_in.try_clone().unwrap(), b_out.try_clone().unwrap());
    let pass = |from: &mut File, to: &mut File| {
        let mut buffer = [0u8; 4096];
        while let Ok(n) = from.read(&mut buffer) {
            if n == 0 || to.write_all(&buffer[..n]).is_err() {
                return;
            }
        }
    };
    std::thread::spawn(move || pass(&mut a_in, &mut b_out));
    std::thread::spawn(move || pass(&mut b_in, &mut a_out));
    (path_a, path_b, vec![a.slave, b.slave])
}

/// Runs `command` to its end, checks that it succeeded (showing its stderr if not), and returns its JSON.
pub fn passing(command: &mut assert_cmd::Command) -> serde_json::Value {
    passing_said(command).0
}

/// As [`passing`], with what it said on stderr.
pub fn passing_said(command: &mut assert_cmd::Command) -> (serde_json::Value, String) {
    let out = command.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{stderr}");
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}
