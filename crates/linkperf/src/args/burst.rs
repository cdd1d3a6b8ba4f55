//! `linkperf burst`: arguments and their conversion into a `BurstSpec`.

use std::time::Duration;

use clap::Args;
use linkperf_core::BurstSpec;

use super::output::OutputArgs;
use super::target::TargetArgs;
use super::trial::TrialArgs;
use super::value;
use crate::exit::UsageError;

/// The long description shown by `--help`.
pub const LONG_ABOUT: &str = "Back-to-back frames (RFC 2544 section 26.4): the longest burst of datagrams, \
sent one after the other as fast as the sender can, that arrives with none lost. A search over burst \
lengths (the longest first, then halving) finds it; the search is repeated (--repeat) and the lengths are \
reported as min/typ/max, with the rate at which the sender sent them. It measures how much a path can \
absorb at once: the buffers of a switch, a NIC ring, a radio link's queue. Sizes are Ethernet frame sizes \
from header to FCS, as RFC 2544 defines them, or UDP payloads with --payload.";

/// Examples shown after the options in `--help`.
const EXAMPLES: &str = "Examples:
  linkperf burst 198.18.0.2                          1518-byte frames, 5 searches up to 100000 frames
  linkperf burst HOST --size 64,1518 --repeat 10
  linkperf burst HOST --payload 1472 --max-burst 5000 --direction down";

/// Arguments of `linkperf burst`.
#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct BurstArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub sizes: super::trial::FrameArgs,
    /// The longest burst tried, in datagrams.
    #[arg(long, default_value_t = 100_000)]
    pub max_burst: u64,
    /// Searches per size; min/typ/max are over them.
    #[arg(long, default_value_t = 5)]
    pub repeat: u32,
    /// The longest a burst may take to send; a sender slower than that ends the burst short.
    #[arg(short, long, default_value = "2s", value_parser = value::duration)]
    pub duration: Duration,
    #[command(flatten)]
    pub trials: TrialArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The pause after each burst when none is given: the queues have drained by the time the END datagrams
/// (which follow the burst) arrive, so a short pause suffices.
const DEFAULT_SETTLE: Duration = Duration::from_millis(200);

impl BurstArgs {
    /// The spec, with frame sizes mapped to UDP payloads over IPv4 or IPv6.
    pub fn spec(&self, ipv6: bool) -> Result<BurstSpec, UsageError> {
        let (payloads, frames) = self.sizes.payloads(&[1518], ipv6)?;
        if self.trials.streams != 1 {
            return Err(UsageError("a burst is sent on one stream: leave out --streams".into()));
        }
        if !(1..=100_000_000).contains(&self.max_burst) {
            return Err(UsageError("--max-burst is between 1 and 100000000 datagrams".into()));
        }
        if !(1..=1000).contains(&self.repeat) {
            return Err(UsageError("--repeat is between 1 and 1000".into()));
        }
        Ok(BurstSpec {
            trial: self.trials.trial(payloads, self.duration)?,
            frames_bytes: frames,
            max_datagrams: self.max_burst,
            repeat: self.repeat,
            settle_s: self.trials.settle_s(DEFAULT_SETTLE),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(argv: &[&str]) -> Result<BurstSpec, String> {
        crate::args::parse::<BurstArgs>(argv)?.spec(false).map_err(|e| e.0)
    }

    #[test]
    fn defaults_are_five_searches_of_full_frames() {
        let spec = spec(&[]).unwrap();
        assert_eq!((spec.trial.sizes_bytes.clone(), spec.frames_bytes.clone()), (vec![1472], Some(vec![1518])));
        assert_eq!((spec.max_datagrams, spec.repeat, spec.settle_s), (100_000, 5, 0.2));
        assert_eq!(spec.trial_of(10).datagrams, Some(10));
        // 5 searches of at most 18 trials, each up to 2 s + 1.5 s overhead + 0.2 s.
        assert!((spec.time_bound_s() - 90.0 * 3.7).abs() < 1e-6);
    }

    #[test]
    fn impossible_bursts_are_usage_errors() {
        assert!(spec(&["--streams", "2"]).unwrap_err().contains("one stream"));
        assert!(spec(&["--max-burst", "0"]).is_err());
        assert!(spec(&["--repeat", "0"]).is_err());
        assert!(spec(&["--size", "40"]).unwrap_err().contains("smallest frame"));
    }
}
