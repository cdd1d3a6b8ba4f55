//! The linkperf wire protocol: connection preambles, control messages and their framing, authentication
//! proofs, server limits and the UDP probe header.
//!
//! This crate opens no sockets and reads no clock: it encodes and decodes bytes, and works over any
//! `Read`/`Write`. Callers pass in nonces and times; the responder's control session (`session`) is a state
//! machine fed with bytes and instants. The protocol is specified in docs/protocol.md; every
//! change that an older peer could not read bumps [`PROTOCOL_VERSION`].

pub mod auth;
pub mod ending;
pub mod error;
pub mod frame;
pub mod limits;
pub mod message;
pub mod preamble;
pub mod printable;
pub mod probe;
pub mod refusal;
pub mod session;
pub mod slots;
pub mod test_plan;

pub use ending::{AuthFailure, Ending, Violation};
pub use error::ProtoError;
pub use frame::{read_frame, read_frame_up_to, write_frame, FrameReader, MAX_CLIENT_FRAME_BYTES, MAX_FRAME_BYTES};
pub use limits::Limits;
pub use message::{ErrorCode, Message, TestRequest, CAPABILITIES};
pub use preamble::{Preamble, Role, StreamHeader, MESSAGE_SIZE_BYTES, PREAMBLE_BYTES};
pub use printable::printable;
pub use probe::{ProbeHeader, StreamProbe, PROBE_HEADER_BYTES, STREAM_PROBE_BYTES};
pub use refusal::{Budget, Field, Refusal};
pub use test_plan::{PlannedTest, TestPlan, ThroughputPlan};

/// The protocol version this build speaks.
pub const PROTOCOL_VERSION: u16 = 1;
