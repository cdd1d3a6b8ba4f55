//! `NetError`: why a test or the responder could not do what was asked.

use linkperf_proto::{ErrorCode, ProtoError};

impl From<ProtoError> for NetError {
    fn from(error: ProtoError) -> Self {
        NetError::Protocol(error)
    }
}

/// A failure while running a test or serving one. Messages name what was attempted.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// The host name did not resolve.
    #[error("could not resolve host '{host}': {source}")]
    Resolve {
        /// The name.
        host: String,
        /// Why.
        source: std::io::Error,
    },
    /// Connecting failed.
    #[error("could not connect to responder at {address}: {source}")]
    Connect {
        /// Where.
        address: String,
        /// Why.
        source: std::io::Error,
    },
    /// Binding a listening socket failed.
    #[error("could not listen on {address}: {source}")]
    Bind {
        /// Where.
        address: String,
        /// Why.
        source: std::io::Error,
    },
    /// The responder refused a request or reported a failure.
    #[error("responder refused: {message}")]
    Refused {
        /// Category.
        code: ErrorCode,
        /// The responder's explanation.
        message: String,
    },
    /// The responder requires a key and none was given, or the keys differ.
    #[error("{0}")]
    Auth(String),
    /// The peer broke the protocol or the control connection failed. (Not a `source`: the message holds
    /// it already, and a chain of causes would print it twice.)
    #[error("control protocol: {0}")]
    Protocol(ProtoError),
    /// The peer answered, but not as a linkperf responder.
    #[error("{address} did not answer as a linkperf responder ({what}): is another service on that port, or did you mean another --port?")]
    NotResponder {
        /// Where.
        address: String,
        /// What it sent.
        what: String,
    },
    /// A reply did not come in time.
    #[error("no reply within {timeout_s} s ({what})")]
    Timeout {
        /// What was awaited.
        what: String,
        /// The timeout.
        timeout_s: f64,
    },
    /// The peer closed the data connection.
    #[error("the responder closed the data connection{0}")]
    PeerClosed(String),
    /// Any other I/O failure, with what was being done.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// The user stopped the run (Ctrl-C).
    #[error("interrupted by the user")]
    Interrupted,
    /// A test ran but its receiver's figure is missing (no whole fine bin in which every stream moved
    /// data): the run is not complete.
    #[error("the {flow} has no receiver's figure: its receiving end measured no whole interval of data (is the link far slower than the test is long?)")]
    MissingFigure {
        /// The direction without a figure.
        flow: &'static str,
    },
    /// The request is impossible as asked (the message says why).
    #[error("{0}")]
    Invalid(String),
}

impl NetError {
    /// Wraps an I/O error with what was being done.
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        NetError::Io { context: context.into(), source }
    }
}
