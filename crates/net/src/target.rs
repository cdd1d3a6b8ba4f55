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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_resolve_without_a_lookup() {
        // Literal addresses only: a name would ask a resolver off this host.
        assert_eq!(Target::resolve("127.0.0.1", 5201).unwrap(), Target::Inet("127.0.0.1:5201".parse().unwrap()));
        assert_eq!(Target::resolve("::1", 5201).unwrap(), Target::Inet("[::1]:5201".parse().unwrap()));
    }

    #[test]
    fn an_ipv4_mapped_address_is_not_ipv6() {
        let inet = |text: &str| Target::Inet(text.parse().unwrap());
        assert!(inet("[::1]:1").is_ipv6());
        assert!(!inet("127.0.0.1:1").is_ipv6());
        assert!(!inet("[::ffff:127.0.0.1]:1").is_ipv6(), "IPv4 on the wire");
        assert!(!Target::Unix("/run/lp.sock".into()).is_ipv6());
    }

    #[test]
    fn targets_are_described_as_address_or_path() {
        assert_eq!(Target::Inet("[::1]:5201".parse().unwrap()).describe(), "[::1]:5201");
        assert_eq!(Target::Unix("/run/lp.sock".into()).describe(), "/run/lp.sock");
    }

    #[test]
    fn a_tcp_connection_has_nagle_off_and_a_refused_one_names_the_address() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let target = Target::Inet(listener.local_addr().unwrap());
        let socket = target.connect_stream(Duration::from_secs(5)).unwrap();
        assert!(socket.nodelay().unwrap(), "Nagle's algorithm would delay small messages");
        drop(listener);
        match target.connect_stream(Duration::from_secs(5)) {
            Err(NetError::Connect { address, source }) => {
                assert_eq!(address, target.describe());
                assert_eq!(source.kind(), std::io::ErrorKind::ConnectionRefused);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_unix_socket_connects_by_path() {
        let path = std::env::temp_dir().join(format!("linkperf-target-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let target = Target::Unix(path.clone());
        assert!(target.connect_stream(Duration::from_secs(5)).is_ok());
        drop(listener);
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(target.connect_stream(Duration::from_secs(5)), Err(NetError::Connect { .. })));
    }
}
