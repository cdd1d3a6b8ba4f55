//! `linkperf throughput`: runs the throughput driver and prints its result.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::ThroughputSpec;
use linkperf_net::throughput::run_throughput;

use crate::args::throughput::ThroughputArgs;
use crate::cmd::endpoint;
use crate::output::{self, Measured};
use crate::progress::Progress;

/// Runs the test; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: ThroughputArgs) -> anyhow::Result<ExitCode> {
    let spec = ThroughputSpec::try_from(&args)?;
    let key = args.target.key()?;
    let endpoint = endpoint::resolve(&args.target, spec.proto)?;
    let progress = Progress::new(!args.output.no_progress);
    let started_at = std::time::SystemTime::now();
    let run = run_throughput(&endpoint.target, key.as_deref(), &spec, &progress)?;
    progress.finish();
    output::conclude(
        Parameters::Throughput(spec),
        &endpoint,
        Measured::throughput(run),
        started_at,
        args.output.format(),
    )
}
