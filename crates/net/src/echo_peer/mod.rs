//! Tests against a peer that only echoes: an RFC 862 echo service, a serial device server with a loopback
//! plug on its port, a serial line's own loopback plug. No linkperf responder and no control session: the
//! client knows what it sent, so it checks every byte that comes back and times only intact echoes.
//!
//! Figures are defined in docs/metrics.md ("Echo peers", "Serial line rate").

pub mod idle;
pub mod latency;
pub mod payload;
pub mod serve;
pub mod throughput;

/// Words every warning about bytes that came back changed holds (the binary's hints look for them).
pub const CHANGED_WARNING: &str = "came back changed";

pub use idle::run_echo_idle;
pub use latency::{run_echo_latency, EchoTimeouts};
pub use payload::Payload;
pub use throughput::run_echo_throughput;
