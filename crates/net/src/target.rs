//! `Target`: where a test's responder is, and how to open connections to it.

use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use socket2::Socket;

use crate::NetError;

/// A responder's address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A TCP (and UDP, same port) responder.
    Inet(SocketAddr),
    /// A responder on a Unix-domain socket path.
    Unix(PathBuf),
}

impl Target {
    /// Resolves a host name or address and port.
    pub fn resolve(host: &str, port: u16) -> Result<Self, NetError> {
        let mut addresses =
            (host, port).to_socket_addrs().map_err(|source| NetError::Resolve { host: host.to_string(), source })?;
        addresses.next().map(Target::Inet).ok_or_else(|| NetError::Resolve {
            host: host.to_string(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no addresses"),
        })
    }

    /// Whether the path is IPv6 (an IPv4-mapped address counts as IPv4).
    pub fn is_ipv6(&self) -> bool {
        matches!(self, Target::Inet(address) if address.ip().to_canonical().is_ipv6())
    }

    /// The address as text.
    pub fn describe(&self) -> String {
        match self {
            Target::Inet(address) => address.to_string(),
            Target::Unix(path) => path.display().to_string(),
        }
    }

    /// Opens a stream connection within `timeout`, with Nagle's algorithm off for TCP.
    pub fn connect_stream(&self, timeout: Duration) -> Result<Socket, NetError> {
        let connect_error = |source| NetError::Connect { address: self.describe(), source };
        match self {
            Target::Inet(address) => {
                let stream = TcpStream::connect_timeout(address, timeout).map_err(connect_error)?;
                stream.set_nodelay(true).map_err(connect_error)?;
                Ok(Socket::from(stream))
            }
            Target::Unix(path) => Ok(Socket::from(UnixStream::connect(path).map_err(connect_error)?)),
        }
    }
}
