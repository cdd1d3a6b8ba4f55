//! The command-line grammar: one subcommand per test, each with its own `Args` struct in `args/`.

use clap::{Parser, Subcommand};

use crate::args::burst::BurstArgs;
use crate::args::connect::ConnectArgs;
use crate::args::idle::IdleArgs;
use crate::args::latency::LatencyArgs;
use crate::args::ratesearch::RateSearchArgs;
use crate::args::serve::ServeArgs;
use crate::args::stored::{CompareArgs, ExportArgs, ImportArgs, ReportArgs, RunsArgs, ShowArgs};
use crate::args::suite::SuiteArgs;
use crate::args::sweep::SweepArgs;
use crate::args::throughput::ThroughputArgs;

/// Characterise a communication link: latency, connection set-up, throughput, loss, RFC 2544 rates.
///
/// Every test runs against a responder (`linkperf serve`) on the far host; with no HOST, a test starts a
/// responder of its own on loopback, so `linkperf suite` shows a whole datasheet on a fresh machine with no
/// set-up. Every run is kept in a results database (`linkperf runs`, `compare`, `report`). Figures are
/// defined in docs/metrics.md.
#[derive(Debug, Parser)]
#[command(name = "linkperf", version, about, long_about, max_term_width = 100)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a responder that serves tests to many clients at once.
    #[command(long_about = crate::args::serve::LONG_ABOUT)]
    Serve(ServeArgs),
    /// Round-trip latency of request/response messages (ping-pong), per message size.
    #[command(long_about = crate::args::latency::LONG_ABOUT)]
    Latency(LatencyArgs),
    /// Connection-establishment latency: connect, request, first byte of the response.
    #[command(long_about = crate::args::connect::LONG_ABOUT)]
    Connect(ConnectArgs),
    /// Idle wake-up penalty: the round trip of the first message after each idle gap.
    #[command(long_about = crate::args::idle::LONG_ABOUT)]
    Idle(IdleArgs),
    /// Throughput: bulk transfer one way or both, over parallel streams, per write size.
    #[command(long_about = crate::args::throughput::LONG_ABOUT)]
    Throughput(ThroughputArgs),
    /// Offered-rate sweep: UDP loss, jitter and drops at each offered rate (RFC 2544 26.3).
    #[command(long_about = crate::args::sweep::LONG_ABOUT)]
    Sweep(SweepArgs),
    /// Zero-loss rate: the highest UDP rate without loss per frame size, and the latency at it (RFC 2544).
    #[command(long_about = crate::args::ratesearch::LONG_ABOUT)]
    Ratesearch(RateSearchArgs),
    /// Back-to-back frames: the longest burst that arrives whole, min/typ/max (RFC 2544 26.4).
    #[command(long_about = crate::args::burst::LONG_ABOUT)]
    Burst(BurstArgs),
    /// A whole characterisation from a profile, printed as a datasheet (Test | Min | Typ | Max | Unit | Notes).
    #[command(long_about = crate::args::suite::LONG_ABOUT)]
    Suite(SuiteArgs),
    /// List the runs kept in the results database.
    Runs(RunsArgs),
    /// Print a kept run again, as a table, JSON or CSV.
    Show(ShowArgs),
    /// Write kept runs as one JSON document (or CSV), for another machine or a spreadsheet.
    Export(ExportArgs),
    /// Read runs from files written by `export` or by a test's --json into the results database.
    Import(ImportArgs),
    /// Compare kept runs: every matching figure side by side, with the change and whether it is beyond noise.
    Compare(CompareArgs),
    /// An HTML page of kept runs, with a datasheet and charts (SVG), for sharing; several runs overlay.
    Report(ReportArgs),
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_grammar_is_consistent() {
        Cli::command().debug_assert();
    }
}
