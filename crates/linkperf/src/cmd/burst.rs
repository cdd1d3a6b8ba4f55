//! `linkperf burst`: runs the back-to-back burst search and prints its results.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::Proto;
use linkperf_net::burst::run_burst;

use crate::args::burst::BurstArgs;
use crate::cmd::Prepared;
use crate::output::Measured;

/// Runs the searches; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: BurstArgs) -> anyhow::Result<ExitCode> {
    let mut prepared = Prepared::new(&args.target, Proto::Udp, &args.output)?;
    // Frame sizes map to UDP payloads by the IP version of the path.
    let spec = args.spec(prepared.endpoint.target.is_ipv6())?;
    let parameters = Parameters::Burst(spec.clone());
    prepared.begin(&parameters);
    let search = match run_burst(&prepared.endpoint.target, prepared.key(), &spec, &prepared) {
        Ok(search) => search,
        Err(error) => return Err(prepared.fail(parameters, error)),
    };
    let (mut measured, error) = Measured::throughput(search.trials);
    measured.bursts = search.results;
    prepared.conclude(parameters, (measured, error))
}
