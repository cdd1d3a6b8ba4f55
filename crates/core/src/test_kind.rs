//! The kinds of test, without their parameters: what renderers match on, exhaustively, so that a new kind
//! of test cannot be forgotten by one of them.

use crate::run_result::Parameters;

/// A kind of test, one per subcommand that measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TestKind {
    /// Request/response round trips.
    Latency,
    /// Connection establishment.
    Connect,
    /// Bulk transfer.
    Throughput,
    /// Round trips after idle gaps.
    Idle,
    /// Paced UDP at a list of offered rates.
    Sweep,
    /// The highest offered rate without loss.
    Ratesearch,
    /// The longest back-to-back burst without loss.
    Burst,
}

impl TestKind {
    /// Every kind, in the order of the subcommands.
    pub const ALL: [TestKind; 7] = [
        TestKind::Latency,
        TestKind::Connect,
        TestKind::Throughput,
        TestKind::Idle,
        TestKind::Sweep,
        TestKind::Ratesearch,
        TestKind::Burst,
    ];
}

impl Parameters {
    /// The kind of test these parameters are for.
    pub fn kind(&self) -> TestKind {
        match self {
            Parameters::Latency(_) => TestKind::Latency,
            Parameters::Connect(_) => TestKind::Connect,
            Parameters::Throughput(_) => TestKind::Throughput,
            Parameters::Idle(_) => TestKind::Idle,
            Parameters::Sweep(_) => TestKind::Sweep,
            Parameters::Ratesearch(_) => TestKind::Ratesearch,
            Parameters::Burst(_) => TestKind::Burst,
        }
    }
}
