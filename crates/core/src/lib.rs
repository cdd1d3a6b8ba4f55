//! The domain of linkperf: test specifications, units, statistics and the result model.
//!
//! This crate does no I/O: it opens no sockets, reads no clock and knows nothing of the command line, the
//! terminal or a database. Everything here can be tested with known answers.

pub mod compare;
pub mod counters;
pub mod datagram_tracker;
pub mod datasheet;
pub mod delay_trend;
pub mod echo_setup;
#[cfg(any(test, feature = "fixture"))]
pub mod fixture;
pub mod gate;
pub mod histogram;
pub mod host_facts;
pub mod line_budget;
pub mod link_model;
pub mod placement;
pub mod rate_search;
pub mod run_result;
pub mod search;
pub mod serial_line;
pub mod socket_setup;
pub mod spec;
pub mod summary;
pub mod terminal_text;
pub mod test_kind;
pub mod throughput;
pub mod throughput_series;
pub mod units;

pub use histogram::RttHistogram;
pub use host_facts::{HostFacts, InterfaceFacts};
pub use run_result::{RunResult, RunStatus, Series, SCHEMA_VERSION};
pub use spec::{
    BurstSpec, ConnectSpec, Direction, IdleSpec, LatencySpec, Proto, RateSearchSpec, StopCondition, SweepSpec,
    ThroughputSpec, WaitMode,
};
pub use summary::LatencySummary;
pub use test_kind::TestKind;
