//! One module per subcommand: each wires validated arguments to a driver and the result to a renderer.

pub mod burst;
pub mod connect;
pub mod endpoint;
pub mod idle;
pub mod latency;
pub mod ratesearch;
pub mod serve;
pub mod sweep;
pub mod throughput;

use linkperf_core::Proto;

use crate::args::output::OutputArgs;
use crate::args::target::TargetArgs;
use crate::progress::Progress;

/// What every test command sets up before it runs its driver: the key, the responder, the progress bar and
/// the start time.
pub struct Prepared {
    /// The pre-shared key, if one was given.
    pub key: Option<Vec<u8>>,
    /// The responder to test against.
    pub endpoint: endpoint::Endpoint,
    /// The progress display.
    pub progress: Progress,
    /// When the run started.
    pub started_at: std::time::SystemTime,
}

impl Prepared {
    /// Reads the key, finds (or starts) the responder for `proto`, and starts the clock.
    pub fn new(target: &TargetArgs, proto: Proto, output: &OutputArgs) -> anyhow::Result<Self> {
        let key = target.key()?;
        let endpoint = endpoint::resolve(target, proto)?;
        Ok(Self {
            key,
            endpoint,
            progress: Progress::new(!output.no_progress),
            started_at: std::time::SystemTime::now(),
        })
    }
}
