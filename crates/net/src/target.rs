//! `Target`: where a test's responder is, and how to open connections to it.

use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

use crate::NetError;

/// Where a responder is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Address {
    /// A TCP (and UDP, same port) responder.
    Inet(SocketAddr),
    /// A responder on a Unix-domain socket path.
    Unix(PathBuf),
}

/// A responder's address, and the options of every socket the client opens towards it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Where it is.
    pub address: Address,
    /// How the client's sockets leave this host (source address, interface, marks).
    pub options: SocketOptions,
}

impl Target {
    /// A responder at an IP address, with default socket options.
    pub fn inet(address: SocketAddr) -> Self {
        Target { address: Address::Inet(address), options: SocketOptions::default() }
    }

    /// A responder on a Unix-domain socket path.
    pub fn unix(path: PathBuf) -> Self {
        Target { address: Address::Unix(path), options: SocketOptions::default() }
    }

    /// Resolves a host name or address and port: `HOST`, `HOST:PORT`, `[IPV6]:PORT`, `fe80::1%eth0`
    /// (a port in the text wins over `port`).
    pub fn resolve(text: &str, port: u16) -> Result<Self, NetError> {
        let invalid = |why: String| NetError::Invalid(format!("'{text}': {why}"));
        let (host, port) = split_host_port(text, port).map_err(invalid)?;
        if let Some(address) = literal(host, port) {
            return address.map(Target::inet).map_err(invalid);
        }
        let mut addresses =
            (host, port).to_socket_addrs().map_err(|source| NetError::Resolve { host: host.to_string(), source })?;
        addresses.next().map(Target::inet).ok_or_else(|| NetError::Resolve {
            host: host.to_string(),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no addresses"),
        })
    }

    /// The same target with `options` on every socket.
    pub fn with_options(self, options: SocketOptions) -> Self {
        Target { options, ..self }
    }

    /// The IP address and port, for a responder reached over IP.
    pub fn inet_address(&self) -> Option<SocketAddr> {
        match &self.address {
            Address::Inet(address) => Some(*address),
            Address::Unix(_) => None,
        }
    }

    /// Whether the path is IPv6 (an IPv4-mapped address counts as IPv4).
    pub fn is_ipv6(&self) -> bool {
        self.inet_address().is_some_and(|address| address.ip().to_canonical().is_ipv6())
    }

    /// The address as text.
    pub fn describe(&self) -> String {
        match &self.address {
            Address::Inet(address) => address.to_string(),
            Address::Unix(path) => path.display().to_string(),
        }
    }

    /// Opens a stream connection within `timeout`, with Nagle's algorithm off for TCP and the target's
    /// socket options applied before it connects.
    pub fn connect_stream(&self, timeout: Duration) -> Result<Socket, NetError> {
        let connect_error = |source| NetError::Connect { address: self.describe(), source };
        match &self.address {
            Address::Inet(address) => {
                let socket = Socket::new(Domain::for_address(*address), Type::STREAM, Some(Protocol::TCP))
                    .map_err(connect_error)?;
                self.options.apply(&socket, *address).map_err(connect_error)?;
                socket.connect_timeout(&(*address).into(), timeout).map_err(connect_error)?;
                socket.set_nodelay(true).map_err(connect_error)?;
                Ok(socket)
            }
            Address::Unix(path) => Ok(Socket::from(UnixStream::connect(path).map_err(connect_error)?)),
        }
    }

    /// Opens a UDP socket connected to `peer` (the responder's address or another port of it), with the
    /// target's socket options.
    pub fn connect_udp(&self, peer: SocketAddr) -> std::io::Result<UdpSocket> {
        let socket = Socket::new(Domain::for_address(peer), Type::DGRAM, Some(Protocol::UDP))?;
        self.options.apply(&socket, peer)?;
        socket.connect(&peer.into())?;
        Ok(socket.into())
    }
}

/// Reads a local address to send from: `198.18.0.1`, `198.18.0.1:6000`, `::1`, `[::1]:6000`, and IPv6
/// link-local addresses with their interface, `fe80::1%eth0` or `[fe80::1%eth0]:6000` (a numeric scope
/// works too). No port means any.
pub fn parse_bind(text: &str) -> Result<SocketAddr, NetError> {
    let bad = |why: String| NetError::Invalid(format!("--bind '{text}': {why}"));
    let (host, port) = split_host_port(text, 0).map_err(bad)?;
    literal(host, port).unwrap_or_else(|| Err("not an IP address".into())).map_err(bad)
}

/// A host and its port: `[ADDRESS]:PORT` or `[ADDRESS]`, `HOST:PORT` (one colon: an IPv4 address or a
/// name), or a bare host or IPv6 address, which takes `default_port`.
fn split_host_port(text: &str, default_port: u16) -> Result<(&str, u16), String> {
    let text = text.trim();
    let port = |p: &str| p.parse::<u16>().map_err(|_| format!("the port '{p}' is not a number from 0 to 65535"));
    match text.strip_prefix('[') {
        Some(rest) => {
            let (host, after) = rest.split_once(']').ok_or("a '[' without its ']'")?;
            match after.strip_prefix(':') {
                Some(p) => Ok((host, port(p)?)),
                None if after.is_empty() => Ok((host, default_port)),
                None => Err("write [ADDRESS]:PORT".into()),
            }
        }
        // One colon: IPv4 or a name with a port. More: IPv6 without brackets, so without a port.
        None => match text.split_once(':') {
            Some((host, p)) if !p.contains(':') => Ok((host, port(p)?)),
            _ => Ok((text, default_port)),
        },
    }
}

/// `host` as an IP address literal (IPv6 link-local with a `%IFACE` or numeric scope), or `None` when it
/// is not one (a name).
fn literal(host: &str, port: u16) -> Option<Result<SocketAddr, String>> {
    let (address, scope) = match host.split_once('%') {
        Some((address, scope)) => (address, Some(scope)),
        None => (host, None),
    };
    let ip: std::net::IpAddr = address.parse().ok()?;
    Some(match (ip, scope) {
        (std::net::IpAddr::V6(v6), Some(scope)) => {
            let index = match scope.parse::<u32>() {
                Ok(index) => Ok(index),
                Err(_) => nix::net::if_::if_nametoindex(scope).map_err(|_| format!("no interface named '{scope}'")),
            };
            index.map(|index| SocketAddr::V6(std::net::SocketAddrV6::new(v6, port, 0, index)))
        }
        (std::net::IpAddr::V4(_), Some(_)) => Err("a scope (%IFACE) is for IPv6 link-local addresses".into()),
        (ip, None) => Ok(SocketAddr::new(ip, port)),
    })
}

/// Options of the client's sockets: where they leave from and how their packets are marked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SocketOptions {
    /// The local address (and port, 0 for any) to send from (`--bind`).
    pub bind: Option<SocketAddr>,
    /// The interface to send through (`--bind-dev`, `SO_BINDTODEVICE`).
    pub device: Option<String>,
    /// The IP TOS byte (IPv4) or traffic class (IPv6): DSCP in its upper six bits, ECN in the lower two.
    pub tos: Option<u8>,
}

impl SocketOptions {
    /// Applies the options to `socket`, which will talk to `peer`, before it connects.
    pub fn apply(&self, socket: &Socket, peer: SocketAddr) -> std::io::Result<()> {
        if let Some(device) = &self.device {
            socket.bind_device(Some(device.as_bytes()))?;
        }
        if let Some(tos) = self.tos {
            match peer {
                SocketAddr::V4(_) => socket.set_tos(u32::from(tos))?,
                SocketAddr::V6(_) => socket.set_tclass_v6(u32::from(tos))?,
            }
        }
        if let Some(local) = self.bind {
            if local.is_ipv4() != peer.is_ipv4() {
                let family = |a: SocketAddr| if a.is_ipv4() { "IPv4" } else { "IPv6" };
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("--bind {local} is {} but the responder is {}", family(local), family(peer)),
                ));
            }
            socket.bind(&local.into())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_resolve_without_a_lookup() {
        // Literal addresses only: a name would ask a resolver off this host.
        assert_eq!(Target::resolve("127.0.0.1", 5201).unwrap(), Target::inet("127.0.0.1:5201".parse().unwrap()));
        assert_eq!(Target::resolve("::1", 5201).unwrap(), Target::inet("[::1]:5201".parse().unwrap()));
        assert_eq!(Target::resolve("[::1]:6000", 5201).unwrap(), Target::inet("[::1]:6000".parse().unwrap()));
        assert_eq!(Target::resolve("[::1]", 5201).unwrap(), Target::inet("[::1]:5201".parse().unwrap()));
        assert_eq!(Target::resolve("127.0.0.1:6000", 5201).unwrap(), Target::inet("127.0.0.1:6000".parse().unwrap()));
        assert_eq!(Target::resolve("fe80::1%lo", 5201).unwrap().describe(), "[fe80::1%1]:5201");
        assert!(matches!(Target::resolve("[::1]:x", 5201), Err(NetError::Invalid(_))));
    }

    #[test]
    fn an_ipv4_mapped_address_is_not_ipv6() {
        let inet = |text: &str| Target::inet(text.parse().unwrap());
        assert!(inet("[::1]:1").is_ipv6());
        assert!(!inet("127.0.0.1:1").is_ipv6());
        assert!(!inet("[::ffff:127.0.0.1]:1").is_ipv6(), "IPv4 on the wire");
        assert!(!Target::unix("/run/lp.sock".into()).is_ipv6());
    }

    #[test]
    fn targets_are_described_as_address_or_path() {
        assert_eq!(Target::inet("[::1]:5201".parse().unwrap()).describe(), "[::1]:5201");
        assert_eq!(Target::unix("/run/lp.sock".into()).describe(), "/run/lp.sock");
    }

    #[test]
    fn a_tcp_connection_has_nagle_off_and_a_refused_one_names_the_address() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let target = Target::inet(listener.local_addr().unwrap());
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
    fn bind_addresses_read_in_every_form() {
        let ok = |text: &str| parse_bind(text).unwrap().to_string();
        assert_eq!(ok("198.18.0.1"), "198.18.0.1:0");
        assert_eq!(ok("198.18.0.1:6000"), "198.18.0.1:6000");
        assert_eq!(ok("::1"), "[::1]:0");
        assert_eq!(ok("[::1]:6000"), "[::1]:6000");
        assert_eq!(ok("[fe80::1%1]:7"), "[fe80::1%1]:7");
        assert_eq!(ok("fe80::1%lo"), "[fe80::1%1]:0", "lo is interface 1");
        for bad in ["[::1", "[::1]x", "198.18.0.1:99999", "host.example", "198.18.0.1%lo", "fe80::1%nosuchif0"] {
            assert!(matches!(parse_bind(bad), Err(NetError::Invalid(_))), "{bad}");
        }
    }

    #[test]
    fn a_bound_socket_sends_from_its_address() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let options = SocketOptions { bind: Some("127.0.0.7:0".parse().unwrap()), ..SocketOptions::default() };
        let target = Target::inet(listener.local_addr().unwrap()).with_options(options.clone());
        let _client = target.connect_stream(Duration::from_secs(5)).unwrap();
        let (_, peer) = listener.accept().unwrap();
        assert_eq!(peer.ip().to_string(), "127.0.0.7");
        let echo = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let udp = target.connect_udp(echo.local_addr().unwrap()).unwrap();
        udp.send(b"x").unwrap();
        let (_, from) = echo.recv_from(&mut [0u8; 8]).unwrap();
        assert_eq!(from.ip().to_string(), "127.0.0.7");
        let v6 = Target::inet("[::1]:9".parse().unwrap()).with_options(options);
        let refused = v6.connect_udp("[::1]:9".parse().unwrap()).unwrap_err().to_string();
        assert!(refused.contains("is IPv4 but the responder is IPv6"), "{refused}");
    }

    #[test]
    fn a_unix_socket_connects_by_path() {
        let path = std::env::temp_dir().join(format!("linkperf-target-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let target = Target::unix(path.clone());
        assert!(target.connect_stream(Duration::from_secs(5)).is_ok());
        drop(listener);
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(target.connect_stream(Duration::from_secs(5)), Err(NetError::Connect { .. })));
    }
}
