//! `linkperf latency`: runs the latency driver and prints its result.

use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::LatencySpec;
use linkperf_net::latency::run_latency;

use crate::args::latency::LatencyArgs;
use crate::cmd::endpoint;
use crate::exit::{self, UsageError};
use crate::output::{self, Measured};
use crate::progress::Progress;

/// Runs the test; prints what was measured even when it stopped early (then exits 1).
pub fn run(args: LatencyArgs) -> anyhow::Result<ExitCode> {
    let spec = LatencySpec::try_from(&args)?;
    let key = args.target.key()?;
    let endpoint = endpoint::resolve(&args.target, spec.proto)?;
    let progress = Progress::new(!args.output.no_progress);
    let started_at = std::time::SystemTime::now();
    let run = run_latency(&endpoint.target, key.as_deref(), &spec, &progress, &mut |_| {}).map_err(|e| match e {
        linkperf_net::NetError::Invalid(message) => anyhow::Error::new(UsageError(message)),
        other => anyhow::Error::new(other),
    })?;
    progress.finish();
    let measured = Measured { responder: run.responder, series: run.series, ..Measured::default() };
    let result = output::build(Parameters::Latency(spec), &endpoint, measured, run.error.as_ref(), started_at);
    output::emit(&result, args.output.format())?;
    finish(run.error)
}

/// Exit code of a run that printed its results: 0, or 1 with the error that stopped it.
pub fn finish(error: Option<linkperf_net::NetError>) -> anyhow::Result<ExitCode> {
    match error {
        None => Ok(ExitCode::SUCCESS),
        Some(error) => {
            eprintln!("error: the run stopped early: {error}");
            Ok(ExitCode::from(exit::FAILURE))
        }
    }
}
