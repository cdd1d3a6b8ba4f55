//! One module per subcommand: each wires validated arguments to a driver and the result to a renderer.

pub mod burst;
pub mod connect;
pub mod echo;
pub mod endpoint;
pub mod idle;
pub mod latency;
pub mod ratesearch;
pub mod serve;
pub mod stored;

pub mod sweep;
pub mod throughput;

use std::io::IsTerminal;
use std::process::ExitCode;

use linkperf_core::run_result::Parameters;
use linkperf_core::Proto;
use linkperf_net::observer::{Measurement, Observer, ProgressUnit};
use linkperf_net::NetError;
use linkperf_store::Store;

use crate::args::output::OutputArgs;
use crate::args::target::TargetArgs;
use crate::output::Measured;
use crate::progress::Progress;
use crate::record::Recorder;

/// What every test command sets up before it runs its driver: the key, the responder, the progress bar,
/// the start time and the results database. It is the driver's observer: it shows progress and keeps each
/// finished series.
pub struct Prepared {
    /// The pre-shared key, if one was given.
    pub key: Option<Vec<u8>>,
    /// The responder to test against.
    pub endpoint: endpoint::Endpoint,
    /// The progress display.
    pub progress: Progress,
    /// When the run started.
    pub started_at: std::time::SystemTime,
    /// Where the run is kept (the database is opened before anything is measured).
    recorder: Option<Recorder>,
    labels: Vec<String>,
    format: linkperf_report::Format,
    gates: Vec<linkperf_core::gate::Condition>,
    /// Events as they happen on stdout (`--json-stream`).
    stream: Option<crate::output::EventStream>,
}

impl Prepared {
    /// Reads the key, opens the results database (unless `--no-store`), finds (or starts) the responder
    /// for `proto`, and starts the clock.
    pub fn new(target: &TargetArgs, proto: Proto, output: &OutputArgs) -> anyhow::Result<Self> {
        let key = target.key()?;
        let endpoint = endpoint::resolve(target, proto, output.placement.responder_affinity.as_ref())?;
        Self::with_endpoint(endpoint, key, output)
    }

    /// As [`Prepared::new`], for an endpoint found otherwise (an echo service, a serial device).
    pub fn with_endpoint(
        mut endpoint: endpoint::Endpoint,
        key: Option<Vec<u8>>,
        output: &OutputArgs,
    ) -> anyhow::Result<Self> {
        // Pinned before any measuring thread starts: they inherit it.
        if let Some(cpus) = &output.placement.affinity {
            linkperf_net::placement::pin_current_thread(cpus)?;
            endpoint.placement.client = Some(cpus.clone());
        }
        let recorder = match output.store.path() {
            Some(path) => Some(Recorder::new(Store::open(&path).map_err(|e| {
                anyhow::anyhow!("{e}\nhint: give another file with --db PATH, or run with --no-store")
            })?)),
            None => None,
        };
        Ok(Self {
            key,
            endpoint,
            progress: Progress::new(!output.no_progress),
            started_at: std::time::SystemTime::now(),
            recorder,
            labels: output.store.labels.clone(),
            format: output.format(),
            gates: output.fail_if.clone(),
            stream: output.json_stream.then(crate::output::EventStream::default),
        })
    }

    /// The key, as drivers take it.
    pub fn key(&self) -> Option<&[u8]> {
        self.key.as_deref()
    }

    /// Records in the database that a run with `parameters` starts (written in the background: the test
    /// starts at once).
    pub fn begin(&mut self, parameters: &Parameters) {
        if let Some(recorder) = self.recorder.as_mut() {
            let start =
                crate::output::build(parameters.clone(), &self.endpoint, Measured::default(), None, self.started_at);
            recorder.begin(&start, &self.labels);
        }
    }

    /// The run failed before measuring anything (refused, not authenticated, unreachable): keeps it as a
    /// failed run with the reason, and returns the error for the caller to print. A failure to keep it is
    /// added to the error, never put in its place.
    pub fn fail(self, parameters: Parameters, error: NetError) -> anyhow::Error {
        self.progress.finish();
        let mut result = crate::output::build(parameters, &self.endpoint, Measured::default(), None, self.started_at);
        result.status = linkperf_core::RunStatus::Failed { error: error.to_string() };
        let kept = self.recorder.map(|recorder| recorder.finish(&result, &self.labels));
        if let Some(Err(e)) = kept {
            eprintln!("error: the failed run was not kept: {}", crate::output::safe_value(&e.to_string()));
        }
        anyhow::Error::new(error)
    }

    /// Prints the run's result, keeps it, and returns the exit code: 0, or 1 (with the error on stderr)
    /// when the run stopped early or could not be kept.
    pub fn conclude(
        self,
        parameters: Parameters,
        (measured, error): (Measured, Option<NetError>),
    ) -> anyhow::Result<ExitCode> {
        self.progress.finish();
        let result = crate::output::build(parameters, &self.endpoint, measured, error.as_ref(), self.started_at);
        match &self.stream {
            Some(stream) => stream.result(&result)?,
            None => crate::output::emit(&result, self.format)?,
        }
        let labels = self.labels;
        let kept = self.recorder.map(|recorder| recorder.finish(&result, &labels));
        let mut code = ExitCode::SUCCESS;
        let incomplete = result.series.iter().filter(|s| !s.complete).count();
        if let Some(error) = error {
            eprintln!("error: the run stopped early: {}", crate::output::safe_value(&error.to_string()));
            code = ExitCode::from(crate::exit::FAILURE);
        } else if incomplete > 0 {
            // E.g. a UDP series that spent most of its time waiting for replies across a path that was down.
            eprintln!("error: the run is incomplete: {incomplete} series did not measure the path for their whole time (marked * in the table; see the warnings)");
            code = ExitCode::from(crate::exit::FAILURE);
        }
        match kept {
            Some(Ok((id, path))) if std::io::stderr().is_terminal() => {
                eprintln!("kept as run {id} in {} (linkperf show {id})", path.display());
            }
            Some(Err(e)) => {
                eprintln!("error: the run was not kept: {}", crate::output::safe_value(&e.to_string()));
                code = ExitCode::from(crate::exit::FAILURE);
            }
            _ => {}
        }
        let failed = linkperf_core::gate::check(&self.gates, &result);
        for failure in &failed {
            eprintln!("gate failed: {}", crate::output::safe_value(&failure.to_string()));
        }
        if !failed.is_empty() && code == ExitCode::SUCCESS {
            code = ExitCode::from(crate::exit::GATE);
        }
        Ok(code)
    }
}

impl Observer for Prepared {
    fn phase(&self, label: &str, total: u64, unit: ProgressUnit) {
        self.progress.phase(label, total, unit);
        if let Some(stream) = &self.stream {
            stream.phase(label);
        }
    }
    fn advance(&self, done: u64) {
        self.progress.advance(done);
    }
    fn interval(&self, what: &str, start_s: f64, end_s: f64, bps: f64) {
        self.progress.interval(what, start_s, end_s, bps);
        if let Some(stream) = &self.stream {
            stream.interval(what, start_s, end_s, bps);
        }
        if let Some(recorder) = &self.recorder {
            recorder.keep_interval(what, (start_s, end_s), bps);
        }
    }
    fn measured(&self, item: Measurement<'_>) {
        if let Some(stream) = &self.stream {
            stream.measured(&item);
        }
        if let Some(recorder) = &self.recorder {
            recorder.keep(item);
        }
    }
    fn relabel(&self, label: &str) {
        self.progress.relabel(label);
    }
    fn announce(&self, message: &str) {
        self.progress.announce(message);
        if let Some(stream) = &self.stream {
            stream.note(message);
        }
    }
    fn cancelled(&self) -> bool {
        self.progress.cancelled()
    }
}
