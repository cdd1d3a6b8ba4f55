//! `linkperf throughput`: runs the throughput driver and prints its result.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::ThroughputSpec;
use linkperf_net::throughput::run_throughput;

use crate::args::throughput::ThroughputArgs;
use crate::cmd::Prepared;
use crate::output::Measured;

/// Runs the test; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: ThroughputArgs) -> anyhow::Result<ExitCode> {
    if args.line.wants_echo(args.proto == crate::args::value::ProtoArg::Serial)? {
        return crate::cmd::echo::throughput(args);
    }
    let spec = ThroughputSpec::try_from(&args)?;
    if let Some(name) = &spec.congestion {
        linkperf_net::congestion::check_congestion(name)?;
    }
    let mut prepared = Prepared::new(&args.target, spec.proto, &args.output)?;
    let parameters = Parameters::Throughput(spec.clone());
    prepared.begin(&parameters);
    let run = match run_throughput(&prepared.endpoint.target, prepared.key(), &spec, &prepared) {
        Ok(run) => run,
        Err(error) => return Err(prepared.fail(parameters, error)),
    };
    prepared.conclude(parameters, Measured::throughput(run))
}
