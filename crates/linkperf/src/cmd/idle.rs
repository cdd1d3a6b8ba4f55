//! `linkperf idle`: runs the idle wake-up driver and prints its result.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::IdleSpec;
use linkperf_net::idle::run_idle;

use crate::args::idle::IdleArgs;
use crate::cmd::endpoint;
use crate::output::{self, Measured};
use crate::progress::Progress;

/// Runs the test; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: IdleArgs) -> anyhow::Result<ExitCode> {
    let spec = IdleSpec::try_from(&args)?;
    let key = args.target.key()?;
    let endpoint = endpoint::resolve(&args.target, spec.proto)?;
    let progress = Progress::new(!args.output.no_progress);
    let started_at = std::time::SystemTime::now();
    let run = run_idle(&endpoint.target, key.as_deref(), &spec, &progress)?;
    progress.finish();
    output::conclude(Parameters::Idle(spec), &endpoint, Measured::series(run), started_at, args.output.format())
}
