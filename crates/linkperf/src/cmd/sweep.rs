//! `linkperf sweep`: runs the offered-rate sweep and prints its rows.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::{Proto, SweepSpec};
use linkperf_net::sweep::run_sweep;

use crate::args::sweep::SweepArgs;
use crate::cmd::Prepared;
use crate::output::{self, Measured};

/// Runs the sweep; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let spec = SweepSpec::try_from(&args)?;
    let Prepared { key, endpoint, progress, started_at } = Prepared::new(&args.target, Proto::Udp, &args.output)?;
    let run = run_sweep(&endpoint.target, key.as_deref(), &spec, &progress)?;
    progress.finish();
    output::conclude(Parameters::Sweep(spec), &endpoint, Measured::throughput(run), started_at, args.output.format())
}
