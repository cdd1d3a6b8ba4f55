//! `linkperf throughput`: runs the throughput driver and prints its result.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::ThroughputSpec;
use linkperf_net::throughput::run_throughput;

use crate::args::throughput::ThroughputArgs;
use crate::cmd::Prepared;
use crate::output::{self, Measured};

/// Runs the test; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: ThroughputArgs) -> anyhow::Result<ExitCode> {
    let spec = ThroughputSpec::try_from(&args)?;
    let Prepared { key, endpoint, progress, started_at } = Prepared::new(&args.target, spec.proto, &args.output)?;
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
