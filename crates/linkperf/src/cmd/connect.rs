//! `linkperf connect`: runs the connection-establishment driver and prints its result.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::ConnectSpec;
use linkperf_net::connect::run_connect;

use crate::args::connect::ConnectArgs;
use crate::cmd::Prepared;
use crate::output::Measured;

/// Runs the test; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: ConnectArgs) -> anyhow::Result<ExitCode> {
    let spec = ConnectSpec::try_from(&args)?;
    let mut prepared = Prepared::new(&args.target, spec.proto, &args.output)?;
    let parameters = Parameters::Connect(spec.clone());
    prepared.begin(&parameters);
    let run = match run_connect(&prepared.endpoint.target, prepared.key(), &spec, &prepared) {
        Ok(run) => run,
        Err(error) => return Err(prepared.fail(parameters, error)),
    };
    prepared.conclude(parameters, Measured::series(run))
}
