//! `EchoLink`: a channel to a peer that sends back whatever it receives (an RFC 862 echo service, a device
//! server with a loopback plug, a serial line's loopback plug), with no linkperf responder and no control
//! session.
//!
//! A link only moves bytes with a deadline; checking what came back, timing and counting is the echo-peer
//! driver's job (`crate::echo_peer`). Streams (TCP, a serial line) return bytes in whatever fragments the
//! peer's pace gives; a datagram link (UDP) returns one whole datagram per receive.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

/// The most bytes one write of [`EchoLink::send_until`]'s default takes: a write blocks while the device
/// cannot take it, and 64 characters cross even a 300 bit/s line in about 2 s.
const SLICE_BYTES: usize = 64;

/// A channel to an echoing peer.
pub trait EchoLink: Send {
    /// Sends all of `bytes` (one datagram on a datagram link).
    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()>;
    /// Sends as much of `bytes` as the link takes before `deadline` and returns how much that was, so that a
    /// sender stops on time even when the echo is slower than one write (a 1 MiB write to a device server
    /// on a 9600 bit/s line would block for 18 minutes). A datagram link sends the whole datagram. The
    /// default sends slices of 64 bytes, checking the deadline between them.
    fn send_until(&mut self, bytes: &[u8], deadline: Instant) -> std::io::Result<usize> {
        let mut sent = 0;
        for slice in bytes.chunks(SLICE_BYTES) {
            if sent > 0 && Instant::now() >= deadline {
                break;
            }
            self.send(slice)?;
            sent += slice.len();
        }
        Ok(sent)
    }
    /// Waits up to `timeout` for bytes and returns how many were read: `Ok(0)` when none came in time. A
    /// peer that closed the link is an error.
    fn receive(&mut self, buffer: &mut [u8], timeout: Duration) -> std::io::Result<usize>;
    /// Whether each message comes back as one datagram (true) or as a byte stream in fragments (false).
    fn is_datagram(&self) -> bool;
    /// A second handle on the same link, so that one thread can send while another receives.
    fn try_clone(&self) -> std::io::Result<Box<dyn EchoLink>>;
    /// What the link reaches, for messages (an address or a device path).
    fn describe(&self) -> String;
}

/// An echo service over TCP (port 7 on a host that runs one; a device server's TCP-server port).
pub struct TcpEcho {
    stream: TcpStream,
    timeout: Option<Duration>,
    /// Whether a write timeout is set (by `send_until`), to be cleared before a plain `send`.
    write_timeout: bool,
}

impl TcpEcho {
    /// Connects within `timeout`, with Nagle's algorithm off (each message leaves at once).
    pub fn connect(address: SocketAddr, timeout: Duration) -> std::io::Result<Self> {
        let stream = TcpStream::connect_timeout(&address, timeout)?;
        stream.set_nodelay(true)?;
        Ok(Self { stream, timeout: None, write_timeout: false })
    }
}

impl EchoLink for TcpEcho {
    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.write_timeout {
            self.stream.set_write_timeout(None)?;
            self.write_timeout = false;
        }
        self.stream.write_all(bytes)
    }

    fn send_until(&mut self, bytes: &[u8], deadline: Instant) -> std::io::Result<usize> {
        let mut sent = 0;
        while sent < bytes.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            self.stream.set_write_timeout(Some(left.max(Duration::from_millis(1))))?;
            self.write_timeout = true;
            match self.stream.write(&bytes[sent..]) {
                Ok(0) => return Err(std::io::Error::new(ErrorKind::WriteZero, "the echo service takes no more")),
                Ok(n) => sent += n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(sent)
    }

    fn receive(&mut self, buffer: &mut [u8], timeout: Duration) -> std::io::Result<usize> {
        let timeout = timeout.max(Duration::from_micros(1));
        if self.timeout != Some(timeout) {
            self.stream.set_read_timeout(Some(timeout))?;
            self.timeout = Some(timeout);
        }
        match self.stream.read(buffer) {
            Ok(0) => Err(std::io::Error::new(ErrorKind::UnexpectedEof, "the peer closed the connection")),
            Ok(n) => Ok(n),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Ok(0),
            Err(e) if e.kind() == ErrorKind::Interrupted => Ok(0),
            Err(e) => Err(e),
        }
    }

    fn is_datagram(&self) -> bool {
        false
    }

    fn try_clone(&self) -> std::io::Result<Box<dyn EchoLink>> {
        Ok(Box::new(TcpEcho { stream: self.stream.try_clone()?, timeout: None, write_timeout: false }))
    }

    fn describe(&self) -> String {
        self.stream.peer_addr().map(|a| format!("tcp {a}")).unwrap_or_else(|_| "tcp".into())
    }
}

/// An echo service over UDP: each datagram sent comes back as one datagram, or not at all.
pub struct UdpEcho {
    socket: UdpSocket,
    timeout: Option<Duration>,
}

impl UdpEcho {
    /// Opens a socket connected to `address` (only its datagrams are received).
    pub fn connect(address: SocketAddr) -> std::io::Result<Self> {
        let local: SocketAddr =
            if address.is_ipv6() { (std::net::Ipv6Addr::UNSPECIFIED, 0).into() } else { ([0, 0, 0, 0], 0).into() };
        let socket = UdpSocket::bind(local)?;
        socket.connect(address)?;
        Ok(Self { socket, timeout: None })
    }
}

impl EchoLink for UdpEcho {
    fn send_until(&mut self, bytes: &[u8], _deadline: Instant) -> std::io::Result<usize> {
        self.send(bytes).map(|()| bytes.len())
    }

    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        loop {
            match self.socket.send(bytes) {
                Ok(_) => return Ok(()),
                // A refused earlier datagram (ICMP port unreachable) is reported on a later call; the
                // receive side reports it, the send side retries once it is consumed.
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    fn receive(&mut self, buffer: &mut [u8], timeout: Duration) -> std::io::Result<usize> {
        let timeout = timeout.max(Duration::from_micros(1));
        if self.timeout != Some(timeout) {
            self.socket.set_read_timeout(Some(timeout))?;
            self.timeout = Some(timeout);
        }
        match self.socket.recv(buffer) {
            Ok(n) => Ok(n),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => Ok(0),
            Err(e) => Err(e),
        }
    }

    fn is_datagram(&self) -> bool {
        true
    }

    fn try_clone(&self) -> std::io::Result<Box<dyn EchoLink>> {
        Ok(Box::new(UdpEcho { socket: self.socket.try_clone()?, timeout: None }))
    }

    fn describe(&self) -> String {
        self.socket.peer_addr().map(|a| format!("udp {a}")).unwrap_or_else(|_| "udp".into())
    }
}
