//! `linkperf sweep`: runs the offered-rate sweep and prints its rows.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::{Proto, SweepSpec};
use linkperf_net::sweep::run_sweep;

use crate::args::sweep::SweepArgs;
use crate::cmd::Prepared;
use crate::output::Measured;

/// Runs the sweep; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: SweepArgs) -> anyhow::Result<ExitCode> {
    let spec = SweepSpec::try_from(&args)?;
    let mut prepared = Prepared::new(&args.target, Proto::Udp, &args.output)?;
    let parameters = Parameters::Sweep(spec.clone());
    prepared.begin(&parameters);
    let run = match run_sweep(&prepared.endpoint.target, prepared.key(), &spec, &prepared) {
        Ok(run) => run,
        Err(error) => return Err(prepared.fail(parameters, error)),
    };
    prepared.conclude(parameters, Measured::throughput(run))
}
