//! `linkperf latency`: runs the latency driver and prints its result.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::LatencySpec;
use linkperf_net::latency::run_latency;

use crate::args::latency::LatencyArgs;
use crate::cmd::endpoint;
use crate::exit::UsageError;
use crate::output::{self, Measured};
use crate::progress::Progress;

/// Runs the test; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: LatencyArgs) -> anyhow::Result<ExitCode> {
    let spec = LatencySpec::try_from(&args)?;
    let key = args.target.key()?;
    let endpoint = endpoint::resolve(&args.target, spec.proto)?;
    let progress = Progress::new(!args.output.no_progress);
    let started_at = std::time::SystemTime::now();
    let run = run_latency(&endpoint.target, key.as_deref(), &spec, &progress, &mut |_| {}).map_err(|e| match e {
        linkperf_net::NetError::Invalid(message) => anyhow::Error::new(UsageError(message)),
        other => anyhow::Error::new(other),
    })?;
    progress.finish();
    output::conclude(Parameters::Latency(spec), &endpoint, Measured::series(run), started_at, args.output.format())
}
