//! `linkperf burst`: runs the back-to-back burst search and prints its results.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::Proto;
use linkperf_net::burst::run_burst;
use linkperf_net::Target;

use crate::args::burst::BurstArgs;
use crate::cmd::Prepared;
use crate::output::{self, Measured};

/// Runs the searches; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: BurstArgs) -> anyhow::Result<ExitCode> {
    let Prepared { key, endpoint, progress, started_at } = Prepared::new(&args.target, Proto::Udp, &args.output)?;
    // Frame sizes map to UDP payloads by the IP version of the path.
    let ipv6 = matches!(&endpoint.target, Target::Inet(address) if address.ip().to_canonical().is_ipv6());
    let spec = args.spec(ipv6)?;
    let search = run_burst(&endpoint.target, key.as_deref(), &spec, &progress)?;
    progress.finish();
    let (mut measured, error) = Measured::throughput(search.trials);
    measured.bursts = search.results;
    output::conclude(Parameters::Burst(spec), &endpoint, (measured, error), started_at, args.output.format())
}
