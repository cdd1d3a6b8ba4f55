//! Everything in linkperf that touches a socket: the responder, the client side of the control protocol,
//! the transports and the test drivers.
//!
//! Drivers take validated specs from `linkperf-core` and return results in its model; they never format
//! output or parse command lines. Every blocking call here has a timeout, so no peer can hang a test or the
//! responder.

pub mod burst;
pub mod clock;
pub mod congestion;
pub mod connect;
pub mod control;
pub mod counters;
pub mod cpu;
pub mod echo_peer;
pub mod error;
pub mod host;
pub mod idle;
pub mod latency;
pub mod observer;
pub mod placement;
pub mod rate_search;
pub mod responder;
pub mod run;
pub mod stream;
pub mod sweep;
pub mod target;
pub mod tcp_info;
pub mod throughput;
pub mod transport;
pub mod udp_stream;
pub mod under_load;

pub use control::ControlClient;
pub use error::NetError;
pub use observer::{NoProgress, Observer};
pub use responder::{Budgets, Responder, ResponderConfig, ResponderHandle};
pub use target::{Address, SocketOptions, Target};

/// Name and version sent in hellos, e.g. `linkperf 0.1.0`.
pub fn software() -> String {
    format!("linkperf {}", env!("CARGO_PKG_VERSION"))
}

/// A fresh random token or nonce source. Failing to get OS randomness is fatal for a responder.
pub(crate) fn random_bytes<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    // getrandom only fails when the OS has no entropy source at all; there is no sensible way to go on.
    #[allow(clippy::expect_used)]
    getrandom::getrandom(&mut bytes).expect("the operating system provides random bytes");
    bytes
}
