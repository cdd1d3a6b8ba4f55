//! `Message`: the control messages, in the order a session uses them.
//!
//! ```text
//! client                                  responder
//!   Hello { software, host, nonce }  ->
//!                                    <-   Welcome { software, host, challenge? }
//!   Auth { proof }                   ->   (only when a challenge was sent)
//!                                    <-   AuthOk { proof }
//!   TestRequest                      ->
//!                                    <-   TestAccepted { token }  |  Error
//!   ... data connections / datagrams carrying the token ...
//!                                    <-   Interval { token, .. }   (throughput, as each interval ends)
//!   Turn { token, flow }             ->   (alternating throughput, at each turn)
//!                                    <-   Turn { token, upload }   (once the download's data has arrived)
//!   ReportRequest { token }          ->   (throughput)
//!                                    <-   Report { streams, counters }
//!   TestDone { token }               ->
//! ```
//! Either side may send `Error` at any time; the responder closes the session after sending one.

use linkperf_core::throughput::StreamRecord;
use linkperf_core::{HostFacts, Proto, WaitMode};
use serde::{Deserialize, Serialize};

/// A control message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Message {
    /// The client introduces itself.
    Hello {
        /// Software name and version, e.g. `linkperf 0.1.0`.
        software: String,
        /// The client's host facts.
        host: HostFacts,
        /// A fresh random nonce (hex), used by the responder's proof of the shared key.
        nonce: String,
    },
    /// The responder introduces itself.
    Welcome {
        /// Software name and version.
        software: String,
        /// The responder's host facts.
        host: HostFacts,
        /// A fresh random nonce (hex) when the responder requires a shared key, else absent.
        challenge: Option<String>,
        /// The tests this responder serves, by name (`latency`, `connect`, ...), so a client can explain
        /// what an older responder lacks instead of failing obscurely.
        #[serde(default)]
        capabilities: Vec<String>,
    },
    /// The client's proof that it holds the shared key.
    Auth {
        /// HMAC-SHA256 proof, hex (see `auth`).
        proof: String,
    },
    /// The key was accepted; the responder's own proof follows, so the client knows it reached the right
    /// responder (mutual authentication). Empty when no key is in use.
    AuthOk {
        /// HMAC-SHA256 proof, hex, or empty.
        proof: String,
        /// The responder's host facts, which a keyed responder discloses only once the client proved it
        /// holds the key (its `welcome` then carries empty ones). Absent from older responders.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        host: Option<HostFacts>,
    },
    /// The client asks for a test.
    TestRequest(TestRequest),
    /// The responder accepted a test: data connections and datagrams carry this token.
    TestAccepted {
        /// Identifies the test's data traffic.
        token: u32,
    },
    /// The client asks for the responder's measurements of a throughput test's streams, once its own streams
    /// have ended.
    ReportRequest {
        /// The test's token.
        token: u32,
    },
    /// The responder's measurements of every stream of a throughput test.
    Report {
        /// One record per stream the responder took part in.
        streams: Vec<StreamRecord>,
        /// The responder host's kernel counters over the test (from its request to this report).
        #[serde(default)]
        counters: Option<linkperf_core::counters::HostCounters>,
    },
    /// Throughput: what the responder's receiving streams of a test read in one interval, all streams
    /// together, sent as each interval ends (responder to client).
    Interval {
        /// The test's token.
        token: u32,
        /// Start of the interval, in seconds since the responder's first byte of the test.
        start_s: f64,
        /// End of the interval.
        end_s: f64,
        /// Payload bytes read in it.
        bytes: u64,
    },
    /// Alternating throughput: from now on only `flow` may send (the responder's download streams pause
    /// while it is `upload`). A responder with the `drained-turns` capability answers a turn given to
    /// `upload` with the same message once its download data has been acknowledged (the turn's end).
    Turn {
        /// The test's token.
        token: u32,
        /// The direction whose turn it is.
        flow: linkperf_core::throughput::Flow,
    },
    /// The client finished a test; the responder releases its token.
    TestDone {
        /// The token of the finished test.
        token: u32,
    },
    /// Something went wrong; the text is meant for the user.
    Error {
        /// Machine-readable category.
        code: ErrorCode,
        /// Human-readable explanation, lowercase, with a hint where one helps.
        message: String,
    },
}

impl Message {
    /// The message's `type` tag, for logs and errors (never the peer's text).
    pub fn kind(&self) -> &'static str {
        match self {
            Message::Hello { .. } => "hello",
            Message::Welcome { .. } => "welcome",
            Message::Auth { .. } => "auth",
            Message::AuthOk { .. } => "auth_ok",
            Message::TestRequest(_) => "test_request",
            Message::TestAccepted { .. } => "test_accepted",
            Message::ReportRequest { .. } => "report_request",
            Message::Report { .. } => "report",
            Message::Interval { .. } => "interval",
            Message::Turn { .. } => "turn",
            Message::TestDone { .. } => "test_done",
            Message::Error { .. } => "error",
        }
    }
}

/// What a client asks the responder to serve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "test", rename_all = "snake_case")]
pub enum TestRequest {
    /// Ping-pong: the responder returns every message (stream) or datagram (UDP) once it is whole.
    Latency {
        /// Transport of the data traffic.
        proto: Proto,
        /// Largest message the client will send, in bytes.
        max_message_bytes: u64,
        /// Number of data connections (or UDP sockets) the client will open over the whole test: one per
        /// session and message size for streams, one per session for UDP.
        connections: u32,
        /// How the responder should wait for data.
        wait: WaitMode,
        /// The test's planned length in seconds, when the client knows it.
        planned_duration_s: Option<f64>,
    },
    /// Bulk transfer: each data connection carries one direction, named in its data header.
    Throughput {
        /// Transport of the data connections.
        proto: Proto,
        /// Data connections the client will open over the whole test.
        connections: u32,
        /// Bytes per write when the responder sends.
        write_bytes: u64,
        /// How long the responder sends, per connection, in seconds.
        duration_s: f64,
        /// Reporting interval, in seconds.
        interval_s: f64,
        /// Socket buffer size to request, in bytes.
        buffer_bytes: Option<u64>,
        /// TCP congestion control for the responder's sending sockets.
        #[serde(default)]
        congestion: Option<String>,
        /// The responder's receiving sockets discard data in the kernel instead of copying it out.
        #[serde(default)]
        discard: bool,
        /// UDP: the rate at which the responder sends each stream, in bits per second of UDP payload
        /// (`None`: as fast as it can).
        #[serde(default)]
        rate_bps: Option<f64>,
        /// UDP: whether the responder uses GSO when sending and GRO when receiving.
        #[serde(default)]
        gso: bool,
        /// UDP: most datagrams per send call on the responder.
        #[serde(default)]
        batch: u32,
        /// The directions take turns: the responder's download streams wait for a `Turn` to send.
        #[serde(default)]
        alternating: bool,
        /// UDP: each stream sends at most this many datagrams, unpaced, then ends (a burst).
        #[serde(default)]
        datagrams: Option<u64>,
    },
    /// Connection-establishment probes: the responder answers each with one byte and closes.
    Connect {
        /// Transport of the probes.
        proto: Proto,
        /// The test's planned length in seconds, when the client knows it.
        planned_duration_s: Option<f64>,
    },
}

/// The tests this build's responder serves, as named in `TestRequest`'s `test` tag, and the features it has
/// (`udp-bursts`: it honours `datagrams` in throughput requests).
pub const CAPABILITIES: &[&str] = &["latency", "connect", "throughput", "udp-bursts", "drained-turns"];

impl TestRequest {
    /// The test's name, as in its `test` tag and in `Welcome::capabilities`.
    pub fn name(&self) -> &'static str {
        match self {
            TestRequest::Latency { .. } => "latency",
            TestRequest::Connect { .. } => "connect",
            TestRequest::Throughput { .. } => "throughput",
        }
    }

    /// The transport the test's data uses.
    pub fn proto(&self) -> Proto {
        match self {
            TestRequest::Latency { proto, .. }
            | TestRequest::Connect { proto, .. }
            | TestRequest::Throughput { proto, .. } => *proto,
        }
    }
}

/// Categories of `Error` messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The peer speaks another protocol version.
    VersionMismatch,
    /// A frame could not be decoded, or a message came out of order.
    Malformed,
    /// A frame exceeded the maximum size.
    Oversized,
    /// The responder requires a key and the proof was missing or wrong.
    AuthFailed,
    /// A request exceeds the responder's limits.
    OverLimit,
    /// The responder does not offer the requested transport or test.
    Unsupported,
    /// Something failed inside the responder.
    Internal,
}
