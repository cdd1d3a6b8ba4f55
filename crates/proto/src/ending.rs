//! `Ending`: why a control session ended, as a closed set of reasons for the log, the tests and the
//! `error` frame the client reads.

use std::fmt;

use crate::{ErrorCode, Refusal};

/// How a peer broke the protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// A frame announced more bytes than the responder accepts.
    Oversized(u32),
    /// A frame's body was not a message (the decoder's explanation; the log escapes it).
    Malformed(String),
    /// A message came out of order.
    Unexpected {
        /// What the session was waiting for.
        expected: &'static str,
        /// The `type` of what came.
        got: &'static str,
    },
    /// A `hello` whose nonce is not 8 to 128 hex digits.
    BadNonce,
    /// A request named a token this session does not hold.
    UnknownToken(u32),
    /// The peer sent far more than it was asked for while a reply was pending.
    TooMuchInput,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Oversized(n) => write!(f, "frame of {n} bytes exceeds the maximum frame size"),
            Violation::Malformed(why) => write!(f, "malformed message: {why}"),
            Violation::Unexpected { expected, got } => write!(f, "expected {expected}, got {got}"),
            Violation::BadNonce => write!(f, "a hello's nonce is 8 to 128 hex digits"),
            Violation::UnknownToken(token) => write!(f, "no test with token {token:08x} in this session"),
            Violation::TooMuchInput => write!(f, "too much input while a reply was pending"),
        }
    }
}

/// Why the authentication failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    /// The proof did not verify.
    WrongKey,
    /// The client sent something other than a proof.
    NoProof,
}

/// Why a control session ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The client closed the connection after its handshake.
    ClosedByClient,
    /// The client closed the connection before the handshake was complete.
    ClosedDuringHandshake,
    /// Greeting and authentication did not complete within the handshake deadline.
    HandshakeTimeout,
    /// No test open and no message for the idle timeout.
    Idle,
    /// The responder was full and this session, with no test open, had been idle the longest: it was
    /// closed to make room for a new client.
    Evicted,
    /// The session (its tests chained) ran past `--max-duration`.
    Overran {
        /// The limit, in seconds.
        limit_s: f64,
    },
    /// The key was missing or wrong.
    AuthFailed(AuthFailure),
    /// The session could not be served (no slot, a budget spent).
    Refused(Refusal),
    /// The peer broke the protocol.
    Violation(Violation),
    /// The connection failed (reset, keepalive gave up, a write failed).
    ConnectionLost(std::io::ErrorKind),
}

impl Ending {
    /// The `error` frame the client gets for this ending, if it gets one.
    pub fn error(&self) -> Option<(ErrorCode, String)> {
        let code = match self {
            Ending::ClosedByClient | Ending::ClosedDuringHandshake | Ending::ConnectionLost(_) => return None,
            Ending::HandshakeTimeout => return None,
            Ending::Idle | Ending::Evicted | Ending::Overran { .. } => ErrorCode::OverLimit,
            Ending::AuthFailed(_) => ErrorCode::AuthFailed,
            Ending::Refused(refusal) => refusal.code(),
            Ending::Violation(Violation::Oversized(_)) => ErrorCode::Oversized,
            // Well-formed requests sent faster than they are answered spend a budget (of pending input):
            // over a limit, not malformed.
            Ending::Violation(Violation::TooMuchInput) => ErrorCode::OverLimit,
            Ending::Violation(_) => ErrorCode::Malformed,
        };
        let text = match self {
            Ending::Refused(refusal) => refusal.to_string(),
            other => other.to_string(),
        };
        Some((code, text))
    }
}

impl fmt::Display for Ending {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ending::ClosedByClient => write!(f, "closed by client"),
            Ending::ClosedDuringHandshake => write!(f, "closed by client during the handshake"),
            Ending::HandshakeTimeout => write!(f, "no handshake in time"),
            Ending::Idle => write!(f, "the session was idle too long"),
            Ending::Evicted => {
                write!(
                    f,
                    "the responder is full and this session was the one idle the longest: closed for a new client"
                )
            }
            Ending::Overran { limit_s } => {
                write!(f, "the test ran past this responder's limit of {limit_s:.0} s (serve --max-duration)")
            }
            Ending::AuthFailed(AuthFailure::WrongKey) => {
                write!(f, "wrong key: use the same --key-file as the responder")
            }
            Ending::AuthFailed(AuthFailure::NoProof) => {
                write!(f, "this responder requires a shared key (--key-file)")
            }
            Ending::Refused(refusal) => write!(f, "refused: {refusal}"),
            Ending::Violation(violation) => write!(f, "{violation}"),
            Ending::ConnectionLost(kind) => write!(f, "connection lost ({kind})"),
        }
    }
}
