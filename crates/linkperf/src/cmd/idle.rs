//! `linkperf idle`: runs the idle wake-up driver and prints its result.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::IdleSpec;
use linkperf_net::idle::run_idle;

use crate::args::idle::IdleArgs;
use crate::cmd::Prepared;
use crate::output::{self, Measured};

/// Runs the test; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: IdleArgs) -> anyhow::Result<ExitCode> {
    let spec = IdleSpec::try_from(&args)?;
    let Prepared { key, endpoint, progress, started_at } = Prepared::new(&args.target, spec.proto, &args.output)?;
    let run = run_idle(&endpoint.target, key.as_deref(), &spec, &progress)?;
    progress.finish();
    output::conclude(Parameters::Idle(spec), &endpoint, Measured::series(run), started_at, args.output.format())
}
