//! `linkperf ratesearch`: runs the zero-loss rate search and prints its trials and results.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::Proto;
use linkperf_net::rate_search::run_rate_search;

use crate::args::ratesearch::RateSearchArgs;
use crate::cmd::Prepared;
use crate::output::Measured;

/// Runs the search; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: RateSearchArgs) -> anyhow::Result<ExitCode> {
    let mut prepared = Prepared::new(&args.target, Proto::Udp, &args.output)?;
    // Frame sizes map to UDP payloads by the IP version of the path.
    let spec = args.spec(prepared.endpoint.target.is_ipv6())?;
    let parameters = Parameters::Ratesearch(spec.clone());
    prepared.begin(&parameters);
    let search = match run_rate_search(&prepared.endpoint.target, prepared.key(), &spec, &prepared) {
        Ok(search) => search,
        Err(error) => return Err(prepared.fail(parameters, error)),
    };
    let (mut measured, error) = Measured::throughput(search.trials);
    measured.rate_search = search.results;
    prepared.conclude(parameters, (measured, error))
}
