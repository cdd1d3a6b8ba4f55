//! `Responder`: the server side of every test, serving many clients at once.
//!
//! One TCP listener and one UDP socket share a port (so one firewall opening suffices), and an optional
//! Unix-domain listener serves local clients. Every connection opens with a preamble naming its role. An
//! accept thread per listener (`accept`) answers connection probes and starts data connections whose
//! preamble came with them; one event loop (`event_loop`) waits for every other preamble and serves every
//! control session (the protocol's rules are `linkperf_proto::session`'s); data connections of running
//! tests get a thread each, drawn from the data-path budget (`registry`); one thread echoes UDP. Every deadline is
//! the loop's, and a session's tests are released when it ends however it ends.
//!
//! docs/security.md says what an unauthenticated peer can and cannot make a responder do.

mod accept;
mod bulk;

mod echo;
mod event_loop;
mod gate;
mod log;
mod registry;
mod session;

pub use registry::Budgets;

use std::net::{Ipv6Addr, SocketAddr, TcpListener, UdpSocket};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use linkperf_proto::Limits;
use socket2::{Domain, Protocol, Socket, Type};

use crate::NetError;
use registry::Registry;

/// How a responder is set up.
#[derive(Debug, Clone)]
pub struct ResponderConfig {
    /// TCP and UDP address; port 0 picks a free port (the same for both).
    pub bind: SocketAddr,
    /// Also listen on this Unix-domain socket path.
    pub unix: Option<PathBuf>,
    /// Pre-shared key that clients must prove they hold.
    pub key: Option<Vec<u8>>,
    /// What the responder will serve.
    pub limits: Limits,
    /// Print one line per session on stderr (escaped, rate-limited).
    pub log: bool,
    /// Data paths and buffer memory of all tests together.
    pub budgets: Budgets,
    /// Most connections not yet authenticated, in total.
    pub unauthenticated: usize,
    /// Most connections not yet authenticated from one IP address.
    pub unauthenticated_per_address: usize,
}

impl Default for ResponderConfig {
    fn default() -> Self {
        Self {
            bind: SocketAddr::from((Ipv6Addr::UNSPECIFIED, DEFAULT_PORT)),
            unix: None,
            key: None,
            limits: Limits::default(),
            log: false,
            budgets: Budgets::default(),
            unauthenticated: 1024,
            unauthenticated_per_address: 256,
        }
    }
}

/// The responder's default TCP and UDP port.
pub const DEFAULT_PORT: u16 = 5250;

/// State shared by every thread of a responder.
pub(crate) struct Shared {
    pub config: ResponderConfig,
    pub registry: Registry,
    pub log: log::Log,
}

/// A bound responder, ready to serve.
pub struct Responder {
    tcp: TcpListener,
    udp: UdpSocket,
    unix: Option<UnixListener>,
    shared: Arc<Shared>,
}

/// A responder serving on background threads. Dropping it removes its Unix socket file; the threads end with
/// the process.
pub struct ResponderHandle {
    address: SocketAddr,
    unix: Option<PathBuf>,
}

impl ResponderHandle {
    /// The TCP/UDP address being served.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The Unix socket path being served, if any.
    pub fn unix_path(&self) -> Option<&Path> {
        self.unix.as_deref()
    }
}

impl Drop for ResponderHandle {
    fn drop(&mut self) {
        if let Some(path) = &self.unix {
            let _ = std::fs::remove_file(path);
        }
    }
}

impl Responder {
    /// Binds every socket. With an unspecified IPv6 address, also serves IPv4 (dual stack) and falls back to
    /// IPv4 only where IPv6 is disabled.
    pub fn bind(config: ResponderConfig) -> Result<Self, NetError> {
        let (tcp, udp) = bind_inet(config.bind)?;
        let unix = config.unix.as_deref().map(bind_unix).transpose()?;
        raise_descriptor_limit();
        let shared = Shared { registry: Registry::new(config.budgets), log: log::Log::new(config.log), config };
        Ok(Self { tcp, udp, unix, shared: Arc::new(shared) })
    }

    /// The bound TCP/UDP address.
    pub fn address(&self) -> Result<SocketAddr, NetError> {
        self.tcp.local_addr().map_err(|e| NetError::io("reading the listening address", e))
    }

    /// Serves forever on background threads and returns at once.
    pub fn spawn(self) -> Result<ResponderHandle, NetError> {
        let handle = ResponderHandle { address: self.address()?, unix: self.shared.config.unix.clone() };
        let Responder { tcp, udp, unix, shared } = self;
        spawn_named("udp-echo", {
            let shared = shared.clone();
            move || echo::serve_udp(udp, &shared)
        })?;
        let starting = |e| NetError::io("starting the responder's event loop", e);
        let (to_loop, handoffs) = std::sync::mpsc::channel();
        let (waker, wakes) = std::os::unix::net::UnixStream::pair().map_err(starting)?;
        waker.set_nonblocking(true).map_err(starting)?;
        let control = event_loop::EventLoop::new(shared.clone(), handoffs, wakes).map_err(starting)?;
        spawn_named("control", move || control.run())?;
        if let Some(unix) = unix {
            let (shared, to_loop, waker) = (shared.clone(), to_loop.clone(), waker.try_clone().map_err(starting)?);
            spawn_named("unix-accept", move || {
                accept::accept_loop(accept::Listener::Unix(unix), shared, to_loop, waker)
            })?;
        }
        spawn_named("tcp-accept", move || accept::accept_loop(accept::Listener::Tcp(tcp), shared, to_loop, waker))?;
        Ok(handle)
    }

    /// Serves until the process ends.
    pub fn run(self) -> Result<(), NetError> {
        let _handle = self.spawn()?;
        loop {
            std::thread::park();
        }
    }
}

/// Raises the soft limit on open descriptors to the hard one: every connection, pending or served, holds
/// one, and the caps above are sized for more than the usual soft limit of 1024.
fn raise_descriptor_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
        }
    }
}

pub(crate) fn spawn_named<F>(name: &str, body: F) -> Result<(), NetError>
where
    F: FnOnce() + Send + 'static,
{
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(body)
        .map(|_| ())
        .map_err(|e| NetError::io(format!("starting the {name} thread"), e))
}

fn bind_inet(address: SocketAddr) -> Result<(TcpListener, UdpSocket), NetError> {
    match bind_pair(address) {
        Err(NetError::Bind { source, .. })
            if address.ip() == Ipv6Addr::UNSPECIFIED && source.kind() == std::io::ErrorKind::AddrNotAvailable =>
        {
            bind_pair(SocketAddr::from(([0, 0, 0, 0], address.port())))
        }
        other => other,
    }
}

/// Binds TCP, then UDP on the same port. With port 0 the kernel's free TCP port may be taken for UDP, so a
/// few ports are tried.
fn bind_pair(address: SocketAddr) -> Result<(TcpListener, UdpSocket), NetError> {
    let attempts = if address.port() == 0 { 8 } else { 1 };
    let mut last_error = None;
    for _ in 0..attempts {
        let tcp = bind_tcp(address)?;
        let port = tcp.local_addr().map_err(|e| NetError::io("reading the listening address", e))?.port();
        match bind_udp(SocketAddr::new(address.ip(), port)) {
            Ok(udp) => return Ok((tcp, udp)),
            Err(e) => last_error = Some(e),
        }
    }
    Err(last_error.unwrap_or_else(|| NetError::Invalid("no port could be bound".into())))
}

fn bind_error(address: SocketAddr, what: &str) -> impl Fn(std::io::Error) -> NetError {
    let address = format!("{address} ({what})");
    move |source| NetError::Bind { address: address.clone(), source }
}

fn bind_tcp(address: SocketAddr) -> Result<TcpListener, NetError> {
    // Restarting a responder must not wait for old connections' TIME_WAIT; SO_REUSEADDR does not let two
    // listeners share the port.
    let socket = bind(address, Type::STREAM, Protocol::TCP, "tcp")?;
    socket.listen(1024).map_err(bind_error(address, "tcp"))?;
    Ok(socket.into())
}

fn bind_udp(address: SocketAddr) -> Result<UdpSocket, NetError> {
    // SO_REUSEADDR: UDP throughput streams bind sockets of their own to this port, connected to their client.
    Ok(bind(address, Type::DGRAM, Protocol::UDP, "udp")?.into())
}

/// A socket bound to `address` with SO_REUSEADDR, taking IPv4 too when the address is IPv6.
fn bind(address: SocketAddr, kind: Type, protocol: Protocol, what: &str) -> Result<Socket, NetError> {
    let error = bind_error(address, what);
    let socket = Socket::new(Domain::for_address(address), kind, Some(protocol)).map_err(&error)?;
    if address.is_ipv6() {
        socket.set_only_v6(false).map_err(&error)?;
    }
    socket.set_reuse_address(true).map_err(&error)?;
    socket.bind(&address.into()).map_err(&error)?;
    Ok(socket)
}

fn bind_unix(path: &Path) -> Result<UnixListener, NetError> {
    let error = |source| NetError::Bind { address: path.display().to_string(), source };
    // A stale socket file from a responder that died would block the bind; a live one answers connect.
    let is_socket = std::fs::symlink_metadata(path).is_ok_and(|m| {
        use std::os::unix::fs::FileTypeExt;
        m.file_type().is_socket()
    });
    if is_socket && std::os::unix::net::UnixStream::connect(path).is_err() {
        std::fs::remove_file(path).map_err(error)?;
    }
    UnixListener::bind(path).map_err(error)
}
