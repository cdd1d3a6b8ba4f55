//! Ping-pong over a byte stream (TCP or a Unix-domain socket).
//!
//! The request is written with non-blocking sends and the echo is read as it comes, so a message larger
//! than the socket buffers never deadlocks: whenever the send buffer is full, the client reads echoed bytes,
//! which lets the responder go on reading. For messages that fit the buffers this costs exactly one send and
//! as few receives as the transport needs.

use std::io::{ErrorKind, Read};
use std::time::{Duration, Instant};

use linkperf_core::WaitMode;
use socket2::Socket;

use super::{Exchange, PingPong};
use crate::NetError;

/// A stream data connection, preamble already sent.
pub struct StreamPingPong {
    socket: Socket,
    wait: WaitMode,
    timeout: Duration,
    request: Vec<u8>,
    reply: Vec<u8>,
}

impl StreamPingPong {
    /// Configures `socket` for `wait` and buffers for messages up to `max_size` bytes.
    pub fn new(socket: Socket, wait: WaitMode, timeout: Duration, max_size: usize) -> Result<Self, NetError> {
        let setup = |e| NetError::io("configuring the data connection", e);
        match wait {
            WaitMode::Block => socket.set_read_timeout(Some(timeout)).map_err(setup)?,
            WaitMode::Spin => socket.set_nonblocking(true).map_err(setup)?,
        }
        // The request's content does not matter to the measurement; a fixed pattern makes captures readable.
        let request = (0..max_size).map(|i| (i % 251) as u8).collect();
        Ok(Self { socket, wait, timeout, request, reply: vec![0; max_size] })
    }

    fn timed_out(&self) -> NetError {
        NetError::Timeout { what: "stream echo".into(), timeout_s: self.timeout.as_secs_f64() }
    }
}

impl PingPong for StreamPingPong {
    fn exchange(&mut self, size: usize, _sequence: u64) -> Result<Exchange, NetError> {
        let (mut sent, mut received) = (0usize, 0usize);
        let mut deadline: Option<Instant> = None;
        let mut idle_polls = 0u32;
        while received < size {
            if sent < size {
                match self.socket.send_with_flags(&self.request[sent..size], libc::MSG_DONTWAIT) {
                    Ok(n) => sent += n,
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
                    Err(e) => return Err(peer_error(e)),
                }
            }
            if received == sent {
                // The send buffer is full of bytes the peer has already echoed: let it drain.
                std::thread::yield_now();
                continue;
            }
            match (&self.socket).read(&mut self.reply[received..size]) {
                Ok(0) => return Err(NetError::PeerClosed(String::new())),
                Ok(n) => received += n,
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
