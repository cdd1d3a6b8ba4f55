//! `linkperf latency`: runs the latency driver and prints its result.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::LatencySpec;
use linkperf_net::under_load::run_latency_under_load;

use crate::args::latency::LatencyArgs;
use crate::cmd::Prepared;
use crate::output::Measured;

/// Runs the test; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: LatencyArgs) -> anyhow::Result<ExitCode> {
    if args.line.wants_echo(args.proto == crate::args::value::ProtoArg::Serial)? {
        return crate::cmd::echo::latency(args);
    }
    let spec = LatencySpec::try_from(&args)?;
    if let Some(name) = spec.load.as_ref().and_then(|load| load.congestion.as_ref()) {
        linkperf_net::congestion::check_congestion(name)?;
    }
    let mut prepared = Prepared::new(&args.target, spec.proto, &args.output)?;
    let parameters = Parameters::Latency(spec.clone());
    prepared.begin(&parameters);
    // Without --under-load this is the plain latency test.
    let run = match run_latency_under_load(&prepared.endpoint.target, prepared.key(), &spec, &prepared) {
        Ok(run) => run,
        Err(error) => return Err(prepared.fail(parameters, error)),
    };
    let (mut measured, error) = Measured::series(run.latency);
    measured.throughput = run.load;
    prepared.conclude(parameters, (measured, error))
}
