//! `linkperf ratesearch`: runs the zero-loss rate search and prints its trials and results.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::Proto;
use linkperf_net::rate_search::run_rate_search;
use linkperf_net::Target;

use crate::args::ratesearch::RateSearchArgs;
use crate::cmd::Prepared;
use crate::output::{self, Measured};

/// Runs the search; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: RateSearchArgs) -> anyhow::Result<ExitCode> {
    let Prepared { key, endpoint, progress, started_at } = Prepared::new(&args.target, Proto::Udp, &args.output)?;
    // Frame sizes map to UDP payloads by the IP version of the path.
    let ipv6 = matches!(&endpoint.target, Target::Inet(address) if address.ip().to_canonical().is_ipv6());
    let spec = args.spec(ipv6)?;
    let search = run_rate_search(&endpoint.target, key.as_deref(), &spec, &progress)?;
    progress.finish();
    let (mut measured, error) = Measured::throughput(search.trials);
    measured.rate_search = search.results;
    output::conclude(Parameters::Ratesearch(spec), &endpoint, (measured, error), started_at, args.output.format())
}
