//! Ping-pong over UDP: each request is one datagram carrying a probe header, and its reply is the echo.
//!
//! A reply that does not come within the timeout counts as lost and the next request goes out; if the reply
//! arrives later it is recognised by its sequence number, counted as late and discarded, so it is never
//! mistaken for the reply to a later request. With blocking waits the timeout restarts after such a late
//! reply, so a loss is declared at most one timeout late.

use std::io::ErrorKind;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use linkperf_core::WaitMode;
use linkperf_proto::ProbeHeader;

use super::{Exchange, PingPong};
use crate::NetError;

/// A connected UDP socket of one test session.
pub struct UdpPingPong {
    socket: UdpSocket,
    token: u32,
    wait: WaitMode,
    timeout: Duration,
    request: Vec<u8>,
    reply: Vec<u8>,
    late: u64,
}

impl UdpPingPong {
    /// Configures a socket connected to the responder's UDP port.
    pub fn new(
        socket: UdpSocket,
        token: u32,
        wait: WaitMode,
        timeout: Duration,
        max_size: usize,
    ) -> Result<Self, NetError> {
        let setup = |e| NetError::io("configuring the UDP socket", e);
        match wait {
            WaitMode::Block => socket.set_read_timeout(Some(timeout)).map_err(setup)?,
            WaitMode::Spin => socket.set_nonblocking(true).map_err(setup)?,
        }
        let request = (0..max_size).map(|i| (i % 251) as u8).collect();
        // One byte more than the largest request, so an oversized reply is seen as such, not truncated to fit.
        Ok(Self { socket, token, wait, timeout, request, reply: vec![0; max_size + 1], late: 0 })
    }

    /// Classifies a received datagram; `true` when it is the reply awaited.
    fn is_reply(&mut self, length: usize, size: usize, sequence: u64) -> bool {
        match ProbeHeader::read_from(&self.reply[..length]) {
            Some(h) if h.token == self.token && h.sequence == sequence && length == size => true,
            Some(h) if h.token == self.token && h.sequence < sequence => {
                self.late += 1;
                false
            }
            _ => false,
        }
    }
}

impl PingPong for UdpPingPong {
    fn exchange(&mut self, size: usize, sequence: u64) -> Result<Exchange, NetError> {
        ProbeHeader { token: self.token, sequence }.write_to(&mut self.request[..size]);
        if let Err(e) = self.socket.send(&self.request[..size]) {
            return Err(udp_error(e));
        }
        let mut deadline: Option<Instant> = None;
        let mut idle_polls = 0u32;
        loop {
            match self.socket.recv(&mut self.reply) {
                Ok(length) if self.is_reply(length, size, sequence) => return Ok(Exchange::Replied),
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock && self.wait == WaitMode::Spin => {
                    idle_polls = idle_polls.wrapping_add(1);
                    if idle_polls % 1024 == 0 && Instant::now() > *deadline.get_or_insert(Instant::now() + self.timeout)
                    {
                        return Ok(Exchange::Lost);
                    }
                    std::hint::spin_loop();
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => return Ok(Exchange::Lost),
                Err(e) => return Err(udp_error(e)),
            }
        }
    }

    fn late(&self) -> u64 {
        self.late
    }
}

fn udp_error(e: std::io::Error) -> NetError {
    match e.kind() {
        ErrorKind::ConnectionRefused => NetError::PeerClosed(" (its UDP port is closed: ICMP port unreachable)".into()),
        _ => NetError::io("exchanging datagrams with the responder", e),
    }
}
