//! `linkperf latency`: runs the latency driver and prints its result.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::LatencySpec;
use linkperf_net::latency::run_latency;

use crate::args::latency::LatencyArgs;
use crate::cmd::Prepared;
use crate::output::{self, Measured};

/// Runs the test; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: LatencyArgs) -> anyhow::Result<ExitCode> {
    let spec = LatencySpec::try_from(&args)?;
    let Prepared { key, endpoint, progress, started_at } = Prepared::new(&args.target, spec.proto, &args.output)?;
    let run = run_latency(&endpoint.target, key.as_deref(), &spec, &progress)?;
    progress.finish();
    output::conclude(Parameters::Latency(spec), &endpoint, Measured::series(run), started_at, args.output.format())
}
