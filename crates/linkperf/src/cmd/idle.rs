//! `linkperf idle`: runs the idle wake-up driver and prints its result.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::IdleSpec;
use linkperf_net::idle::run_idle;

use crate::args::idle::IdleArgs;
use crate::cmd::Prepared;
use crate::output::Measured;

/// Runs the test; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: IdleArgs) -> anyhow::Result<ExitCode> {
    if args.line.wants_echo(args.proto == crate::args::value::ProtoArg::Serial)? {
        return crate::cmd::echo::idle(args);
    }
    let spec = IdleSpec::try_from(&args)?;
    let mut prepared = Prepared::new(&args.target, spec.proto, &args.output)?;
    let parameters = Parameters::Idle(spec.clone());
    prepared.begin(&parameters);
    let run = match run_idle(&prepared.endpoint.target, prepared.key(), &spec, &prepared) {
        Ok(run) => run,
        Err(error) => return Err(prepared.fail(parameters, error)),
    };
    prepared.conclude(parameters, Measured::series(run))
}
