//! Transports for ping-pong tests: one request and its echoed reply per `exchange`.
//!
//! Each transport implements both wait modes: `Block` sleeps in the kernel with a receive timeout, `Spin`
//! polls a non-blocking socket. Neither allocates or formats on the data path.

pub mod echo_link;
pub mod serial;
pub mod stream;
pub mod udp;

use crate::NetError;

/// The outcome of one request/reply exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exchange {
    /// The whole reply arrived.
    Replied,
    /// No reply within the timeout (datagram transports only; streams report a timeout as an error).
    Lost,
}

/// A channel that sends a request of a given size and waits for its echo.
pub trait PingPong: Send {
    /// Sends `size` bytes tagged with `sequence` and waits for the echo.
    fn exchange(&mut self, size: usize, sequence: u64) -> Result<Exchange, NetError>;
    /// Replies that arrived after their exchange had been given up as lost, so far.
    fn late(&self) -> u64 {
        0
    }
}
