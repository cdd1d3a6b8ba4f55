//! `EchoLink`: a channel to a peer that sends back whatever it receives (an RFC 862 echo service, a device
//! server with a loopback plug, a serial line's loopback plug), with no linkperf responder and no control
//! session.
//!
//! A link only moves bytes with a deadline; checking what came back, timing and counting is the echo-peer
//! driver's job (`crate::echo_peer`). Streams (TCP, a serial line) return bytes in whatever fragments the
//! peer's pace gives; a datagram link (UDP) returns one whole datagram per receive.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

/// A channel to an echoing peer.
pub trait EchoLink: Send {
    /// Sends all of `bytes` (one datagram on a datagram link).
    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()>;
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
}

impl TcpEcho {
    /// Connects within `timeout`, with Nagle's algorithm off (each message leaves at once).
    pub fn connect(address: SocketAddr, timeout: Duration) -> std::io::Result<Self> {
        let stream = TcpStream::connect_timeout(&address, timeout)?;
        stream.set_nodelay(true)?;
        Ok(Self { stream, timeout: None })
    }
}

impl EchoLink for TcpEcho {
    fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(bytes)
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
        Ok(Box::new(TcpEcho { stream: self.stream.try_clone()?, timeout: None }))
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
