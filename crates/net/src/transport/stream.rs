//! Ping-pong over a byte stream (TCP or a Unix-domain socket).
//!
//! The connection announced its message size when it opened, so the responder returns each request only
//! once all of it has arrived. The client therefore writes the whole request, then reads the whole reply;
//! neither side ever waits on the other while holding unsent data, whatever the message size.

use std::io::{ErrorKind, Read, Write};
use std::time::{Duration, Instant};

use linkperf_core::WaitMode;
use socket2::Socket;

use super::{Exchange, PingPong};
use crate::NetError;

/// A stream data connection, preamble and message size already sent.
pub struct StreamPingPong {
    socket: Socket,
    wait: WaitMode,
    timeout: Duration,
    request: Vec<u8>,
    reply: Vec<u8>,
}

impl StreamPingPong {
    /// Configures `socket` for `wait`, with buffers for messages of `size` bytes.
    pub fn new(socket: Socket, wait: WaitMode, timeout: Duration, size: usize) -> Result<Self, NetError> {
        let setup = |e| NetError::io("configuring the data connection", e);
        match wait {
            WaitMode::Block => {
                socket.set_read_timeout(Some(timeout)).map_err(setup)?;
                socket.set_write_timeout(Some(timeout)).map_err(setup)?;
            }
            WaitMode::Spin => socket.set_nonblocking(true).map_err(setup)?,
        }
        // The request's content does not matter to the measurement; a fixed pattern makes captures readable.
        let request = (0..size).map(|i| (i % 251) as u8).collect();
        Ok(Self { socket, wait, timeout, request, reply: vec![0; size] })
    }

    fn timed_out(&self) -> NetError {
        NetError::Timeout { what: "stream echo".into(), timeout_s: self.timeout.as_secs_f64() }
    }

    /// Moves bytes with `step` (one send or receive) until `total` are done, polling when spinning.
    fn complete(
        &mut self,
        total: usize,
        mut step: impl FnMut(&mut Self, usize) -> std::io::Result<usize>,
    ) -> Result<(), NetError> {
        let (mut done, mut idle_polls) = (0usize, 0u32);
        let mut deadline: Option<Instant> = None;
        while done < total {
            match step(self, done) {
                Ok(0) => return Err(NetError::PeerClosed(String::new())),
                Ok(n) => done += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock && self.wait == WaitMode::Spin => {
                    // Checking the clock on every empty poll would double the cost of a poll.
                    idle_polls = idle_polls.wrapping_add(1);
                    if idle_polls % 1024 == 0 && Instant::now() > *deadline.get_or_insert(Instant::now() + self.timeout)
                    {
                        return Err(self.timed_out());
                    }
                    std::hint::spin_loop();
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(self.timed_out())
                }
                Err(e) => return Err(peer_error(e)),
            }
        }
        Ok(())
    }
}

impl PingPong for StreamPingPong {
    fn exchange(&mut self, size: usize, _sequence: u64) -> Result<Exchange, NetError> {
        self.complete(size, |s, done| (&s.socket).write(&s.request[done..size]))?;
        self.complete(size, |s, done| (&s.socket).read(&mut s.reply[done..size]))?;
        Ok(Exchange::Replied)
    }
}

fn peer_error(e: std::io::Error) -> NetError {
    match e.kind() {
        ErrorKind::ConnectionReset | ErrorKind::BrokenPipe | ErrorKind::ConnectionAborted => {
            NetError::PeerClosed(format!(" ({e})"))
        }
        _ => NetError::io("exchanging data with the responder", e),
    }
}
