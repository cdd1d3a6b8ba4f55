//! `Refusal`: why a responder will not serve a request, as a closed set of reasons.
//!
//! A refusal is decided once, at the protocol boundary (a test request parsed into a `TestPlan`, a session
//! over one of its caps, a budget of the whole responder spent), and then travels as a value: the client
//! gets its `Display` text in an `error` frame, the log prints the same text, and tests match the variant.
//! This module decides nothing itself; `limits` and `session` do.

use std::fmt;

use linkperf_core::Proto;

use crate::ErrorCode;

/// A number of a request that must be finite and above zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// A test's planned length (`planned_duration_s`).
    PlannedDuration,
    /// A throughput test's `duration_s`.
    Duration,
    /// A throughput test's `interval_s`.
    Interval,
    /// A UDP throughput test's `rate_bps`.
    Rate,
}

impl Field {
    /// The field's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            Field::PlannedDuration => "planned_duration_s",
            Field::Duration => "duration_s",
            Field::Interval => "interval_s",
            Field::Rate => "rate_bps",
        }
    }
}

/// A resource of the whole responder, shared by every session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// Authenticated control sessions (`serve --max-sessions`).
    Sessions,
    /// Threads for measurement data paths.
    Threads,
    /// Memory for echo and stream buffers.
    BufferMemory,
    /// Open connections (file descriptors).
    Connections,
    /// Threads for data connections of one session.
    SessionThreads,
    /// Buffer memory of one session's data connections.
    SessionBufferMemory,
    /// Places to wait for a session slot when every slot is held.
    SessionWaiters,
    /// Places to wait for a session slot, for clients from one address.
    AddressWaiters,
}

impl Budget {
    fn describe(self) -> &'static str {
        match self {
            Budget::Sessions => "sessions",
            Budget::Threads => "threads for data connections",
            Budget::BufferMemory => "buffer memory",
            Budget::Connections => "connections",
            Budget::SessionThreads => "threads for one session's data connections",
            Budget::SessionBufferMemory => "buffer memory of one session",
            Budget::SessionWaiters => "places to wait for a session",
            Budget::AddressWaiters => "places to wait for a session from one address",
        }
    }
}

/// Why a request, a session or a connection is refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// A duration, interval or rate is not a finite number above zero (a duration, at least 1 ns).
    NotPositive {
        /// Which number.
        field: Field,
    },
    /// The test would run longer than `serve --max-duration`.
    TooLong {
        /// The test's planned length, in seconds.
        planned_s: f64,
        /// The responder's limit, in seconds.
        limit_s: f64,
    },
    /// The test would run past what is left of the session's time (`--max-duration` bounds a session's
    /// chained tests too).
    SessionTimeLeft {
        /// The test's planned length, in seconds.
        planned_s: f64,
        /// What is left of the session, in seconds.
        left_s: f64,
    },
    /// A reporting interval below [`crate::limits::MIN_INTERVAL`].
    IntervalTooShort {
        /// The requested interval, in seconds.
        interval_s: f64,
    },
    /// A reporting interval above [`crate::limits::MAX_INTERVAL`].
    IntervalTooLong {
        /// The requested interval, in seconds.
        interval_s: f64,
    },
    /// More intervals in the test than [`crate::limits::MAX_INTERVALS`].
    TooManyIntervals {
        /// Duration / interval.
        intervals: f64,
    },
    /// A UDP rate below the floor: [`crate::limits::MIN_RATE_BPS`], or so low that one datagram would take
    /// longer than [`crate::limits::MAX_DATAGRAM_GAP`].
    RateTooLow {
        /// The requested rate per stream, bits per second.
        rate_bps: f64,
        /// The lowest rate for this datagram size.
        floor_bps: f64,
    },
    /// A UDP rate above [`crate::limits::MAX_RATE_BPS`], beyond any link.
    RateTooHigh {
        /// The requested rate per stream, bits per second.
        rate_bps: f64,
    },
    /// The UDP rate of the test (per stream x streams) exceeds `serve --max-rate`.
    RateOverLimit {
        /// The test's total rate, bits per second.
        total_bps: f64,
        /// The limit, bits per second.
        limit_bps: f64,
    },
    /// An unpaced burst larger than one second at `--max-rate`.
    BurstOverLimit {
        /// The burst's payload, all streams, in bits.
        bits: f64,
        /// The limit, bits per second.
        limit_bps: f64,
    },
    /// Messages larger than `serve --max-size`.
    MessageTooLarge {
        /// The requested size, bytes.
        bytes: u64,
        /// The limit, bytes.
        limit: u64,
    },
    /// A message or write of zero bytes.
    EmptyMessage,
    /// A UDP datagram larger than an IPv6 datagram can carry.
    DatagramTooLarge {
        /// The requested size, bytes.
        bytes: u64,
    },
    /// A UDP datagram smaller than the header the test needs.
    DatagramTooSmall {
        /// The requested size, bytes.
        bytes: u64,
        /// The smallest size.
        min: u64,
    },
    /// Zero connections, or more than `limit` in one test.
    Connections {
        /// The requested count.
        requested: u32,
        /// The most allowed.
        limit: u32,
    },
    /// More connections than the session has left.
    SessionConnections {
        /// The requested count.
        requested: u32,
        /// What the session has left.
        left: u32,
    },
    /// A socket buffer size outside [`crate::limits::MIN_BUFFER_BYTES`] ..= [`crate::limits::MAX_BUFFER_BYTES`].
    BufferSize {
        /// The requested size, bytes.
        bytes: u64,
    },
    /// A congestion-control name that is not 1 to 15 letters, digits, `-` or `_`.
    CongestionName,
    /// More datagrams per send call than [`crate::limits::MAX_BATCH`].
    Batch {
        /// The requested batch.
        batch: u32,
    },
    /// A burst of zero datagrams, or more than [`crate::limits::MAX_DATAGRAMS`].
    Datagrams {
        /// The requested count.
        count: u64,
    },
    /// `wait: spin` on a responder that does not allow it (`serve --allow-spin`).
    SpinNotAllowed,
    /// A transport the test cannot use.
    Transport {
        /// The test.
        test: &'static str,
        /// The transport asked for.
        proto: Proto,
    },
    /// The session has run as many tests as one session may.
    TooManyTests {
        /// The cap.
        limit: u32,
    },
    /// The session already has as many tests open at once as it may.
    TooManyOpenTests {
        /// The cap.
        limit: u32,
    },
    /// Every session slot stayed held (by busy sessions, or sessions idle for less than the time after
    /// which one makes room) for as long as the client could wait: its handshake deadline.
    NoSlotFreed {
        /// The responder's slots (`serve --max-sessions`).
        limit: u32,
        /// How long the client waited, in seconds.
        waited_s: f64,
    },
    /// A budget of the whole responder is spent.
    BudgetSpent {
        /// Which one.
        budget: Budget,
        /// Its size.
        limit: u64,
    },
}

impl Refusal {
    /// The `error` frame's category for this refusal.
    pub fn code(&self) -> ErrorCode {
        match self {
            Refusal::Transport { .. } | Refusal::SpinNotAllowed => ErrorCode::Unsupported,
            _ => ErrorCode::OverLimit,
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::limits::{
            MAX_BATCH, MAX_BUFFER_BYTES, MAX_DATAGRAMS, MAX_INTERVAL, MAX_INTERVALS, MIN_BUFFER_BYTES,
        };
        use crate::limits::{MAX_RATE_BPS, MAX_UDP_PAYLOAD_IPV6, MIN_INTERVAL};
        match self {
            Refusal::NotPositive { field } => {
                write!(f, "durations (of 1 ns or more), intervals and rates must be finite and above zero ({})", field.name())
            }
            Refusal::TooLong { planned_s, limit_s } => write!(
                f,
                "the test would run {planned_s:.0} s, this responder allows at most {limit_s:.0} s (serve --max-duration)"
            ),
            Refusal::SessionTimeLeft { planned_s, left_s } => write!(
                f,
                "the test would run {planned_s:.0} s, this session has {left_s:.0} s left of the responder's limit (serve --max-duration): open a new session"
            ),
            Refusal::IntervalTooShort { interval_s } => write!(
                f,
                "an interval of {interval_s} s is too short: this responder reports intervals of {} ms or more",
                MIN_INTERVAL.as_millis()
            ),
            Refusal::IntervalTooLong { interval_s } => {
                write!(f, "an interval of {interval_s} s is too long: at most {} s", MAX_INTERVAL.as_secs())
            }
            Refusal::TooManyIntervals { intervals } => write!(
                f,
                "{intervals:.0} intervals in one test, at most {MAX_INTERVALS}: use a longer --interval"
            ),
            Refusal::RateTooLow { rate_bps, floor_bps } => write!(
                f,
                "a rate of {rate_bps} bit/s is below this datagram size's floor of {floor_bps:.0} bit/s (one datagram a second)"
            ),
            Refusal::RateTooHigh { rate_bps } => {
                write!(f, "a rate of {:.1} Gbit/s is beyond {:.0} Gbit/s", rate_bps / 1e9, MAX_RATE_BPS / 1e9)
            }
            Refusal::RateOverLimit { total_bps, limit_bps } => write!(
                f,
                "{:.1} Mbit/s of UDP exceeds this responder's limit of {:.1} Mbit/s (serve --max-rate)",
                total_bps / 1e6,
                limit_bps / 1e6
            ),
            Refusal::BurstOverLimit { bits, limit_bps } => write!(
                f,
                "a burst of {:.1} Mbit exceeds one second at this responder's limit of {:.1} Mbit/s (serve --max-rate)",
                bits / 1e6,
                limit_bps / 1e6
            ),
            Refusal::MessageTooLarge { bytes, limit } => {
                write!(f, "messages of {bytes} bytes exceed this responder's limit of {limit} bytes")
            }
            Refusal::EmptyMessage => write!(f, "messages of 0 bytes cannot be measured"),
            Refusal::DatagramTooLarge { bytes } => {
                write!(f, "a UDP datagram carries at most {MAX_UDP_PAYLOAD_IPV6} bytes, not {bytes}")
            }
            Refusal::DatagramTooSmall { bytes, min } => {
                write!(f, "UDP datagrams of this test carry a {min}-byte header: use --size {min} or more, not {bytes}")
            }
            Refusal::Connections { requested, limit } => write!(
                f,
                "{requested} connections requested (sessions x sizes), this responder allows 1 to {limit}"
            ),
            Refusal::SessionConnections { requested, left } => write!(
                f,
                "{requested} connections requested, this session has {left} left: open a new session"
            ),
            Refusal::BufferSize { bytes } => write!(
                f,
                "a socket buffer of {bytes} bytes is outside {MIN_BUFFER_BYTES} to {MAX_BUFFER_BYTES} bytes"
            ),
            Refusal::CongestionName => {
                write!(f, "a congestion control name is 1 to 15 letters, digits, '-' or '_'")
            }
            Refusal::Batch { batch } => write!(f, "batches of {batch} datagrams, at most {MAX_BATCH}"),
            Refusal::Datagrams { count } => write!(f, "a burst of {count} datagrams, allowed 1 to {MAX_DATAGRAMS}"),
            Refusal::SpinNotAllowed => write!(
                f,
                "this responder does not spin (it costs a core per connection): use --wait block, or serve --allow-spin"
            ),
            Refusal::Transport { test, proto } => write!(f, "{test} needs a connection-oriented transport, not {}", proto.name()),
            Refusal::TooManyTests { limit } => {
                write!(f, "this session has run {limit} tests, the most one session may: open a new session")
            }
            Refusal::TooManyOpenTests { limit } => {
                write!(f, "this session has {limit} tests open, the most at once: finish one first")
            }
            Refusal::NoSlotFreed { limit, waited_s } => write!(
                f,
                "the responder serves at most {limit} sessions at once and none came free in the {waited_s:.1} s this client waited; try again later"
            ),
            Refusal::BudgetSpent { budget: budget @ (Budget::SessionWaiters | Budget::AddressWaiters), limit } => write!(
                f,
                "every session slot of the responder is held and its {} are taken ({limit} at most); try again later",
                budget.describe()
            ),
            Refusal::BudgetSpent { budget: Budget::Sessions, limit } => {
                write!(f, "the responder serves at most {limit} sessions at once; try again later")
            }
            Refusal::BudgetSpent { budget: budget @ (Budget::SessionThreads | Budget::SessionBufferMemory), limit } => {
                write!(f, "this session holds the {} it may ({limit} at most); finish a test first", budget.describe())
            }
            Refusal::BudgetSpent { budget, limit } => write!(
                f,
                "the responder's {} are spent ({limit} at most, all sessions together); try again later",
                budget.describe()
            ),
        }
    }
}
