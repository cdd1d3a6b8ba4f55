//! `linkperf sweep`: arguments and their conversion into a `SweepSpec`.

use std::time::Duration;

use clap::Args;
use linkperf_core::{Direction, SweepSpec};

use super::output::OutputArgs;
use super::target::TargetArgs;
use super::trial::TrialArgs;
use super::value;
use crate::exit::UsageError;

/// The long description shown by `--help`.
pub const LONG_ABOUT: &str = "Offered-rate sweep (frame loss rate, RFC 2544 section 26.3): the same UDP \
trial at each offered rate in turn, from --from to --to in steps of --step (or at each of --rates). One row \
per step: the rate offered, the rate the sender achieved, the rate received, loss, jitter, out-of-order \
datagrams, and the hosts' drop counters over the step (the receiver's socket buffer and interface, the \
sender's), and the growth of the one-way delay with the queue it implies. The first step whose queue grows \
or loses is marked as the knee. It shows where a link or a receiver starts to queue and to lose, and whether \
its received rate holds or collapses beyond that. Rates are bits per second of UDP payload.";

/// Examples shown after the options in `--help`.
const EXAMPLES: &str = "Examples:
  linkperf sweep 198.18.0.2 --from 50M --to 1G --step 50M
  linkperf sweep HOST --from 10M --to 100M --step 10M --direction down --duration 5s
  linkperf sweep HOST --rates 1M,2M,5M,10M,20M --size 64 --sequential    upload, then download, per step
  linkperf sweep --from 1G --to 10G --step 1G                              loopback";

/// Arguments of `linkperf sweep`.
#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct SweepArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// The first offered rate (bits per second of UDP payload, e.g. 50M).
    #[arg(long, value_parser = value::bit_rate, required_unless_present = "rates", requires_all = ["to", "step"])]
    pub from: Option<f64>,
    /// The last offered rate.
    #[arg(long, value_parser = value::bit_rate, requires = "from")]
    pub to: Option<f64>,
    /// The step between offered rates.
    #[arg(long, value_parser = value::bit_rate, requires = "from")]
    pub step: Option<f64>,
    /// The offered rates, listed (e.g. 1M,10M,100M), instead of --from/--to/--step.
    #[arg(long, value_delimiter = ',', value_parser = value::bit_rate, conflicts_with = "from")]
    pub rates: Vec<f64>,
    /// UDP payload of each datagram, in bytes (1472 fills a 1500-byte IPv4 packet).
    #[arg(short, long, default_value = "1472", value_parser = value::size)]
    pub size: u64,
    /// Length of each step's trial.
    #[arg(short, long, default_value = "2s", value_parser = value::duration)]
    pub duration: Duration,
    /// At each step, upload then download (overrides --direction).
    #[arg(long)]
    pub sequential: bool,
    #[command(flatten)]
    pub trial: TrialArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The most steps a sweep may have.
const MAX_STEPS: usize = 1000;

impl TryFrom<&SweepArgs> for SweepSpec {
    type Error = UsageError;

    fn try_from(args: &SweepArgs) -> Result<Self, UsageError> {
        let rates = match (args.from, args.to, args.step) {
            (Some(from), Some(to), Some(step)) => {
                if to < from {
                    return Err(UsageError(format!("--to ({to} bit/s) is below --from ({from} bit/s)")));
                }
                let steps = ((to - from) / step + 1e-9).floor() as usize + 1;
                if steps > MAX_STEPS {
                    return Err(UsageError(format!(
                        "{steps} steps is too many: at most {MAX_STEPS}; use a larger --step"
                    )));
                }
                (0..steps).map(|k| from + k as f64 * step).collect()
            }
            _ => args.rates.clone(),
        };
        if rates.is_empty() || rates.len() > MAX_STEPS {
            return Err(UsageError(format!("give 1 to {MAX_STEPS} rates (--rates, or --from, --to and --step)")));
        }
        let streams = f64::from(args.trial.streams.max(1));
        if let Some(problem) =
            rates.iter().find_map(|&r| linkperf_core::spec::udp_rate_problem("a sweep's rate", r / streams))
        {
            return Err(UsageError(problem));
        }
        let mut trial = args.trial.trial(vec![args.size], args.duration)?;
        if args.sequential {
            trial.phases = vec![Direction::Upload, Direction::Download];
        }
        Ok(SweepSpec { trial, rates_bps: rates, settle_s: args.trial.settle_s(Duration::from_secs(1)) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(argv: &[&str]) -> Result<SweepSpec, String> {
        SweepSpec::try_from(&crate::args::parse::<SweepArgs>(argv)?).map_err(|e| e.0)
    }

    #[test]
    fn steps_run_from_the_first_rate_to_the_last() {
        let spec = spec(&["--from", "50M", "--to", "1G", "--step", "50M"]).unwrap();
        assert_eq!(spec.rates_bps.len(), 20);
        assert_eq!((spec.rates_bps[0], spec.rates_bps[19]), (50e6, 1e9));
        assert_eq!(spec.trial.sizes_bytes, vec![1472]);
        assert_eq!((spec.trial.duration_s, spec.settle_s), (2.0, 1.0));
        assert_eq!(spec.trial.phases, vec![Direction::Upload]);
        assert_eq!(spec.trial.rate, None);
        let listed = self::spec(&["--rates", "1M,5M", "--sequential"]).unwrap();
        assert_eq!(listed.rates_bps, vec![1e6, 5e6]);
        assert_eq!(listed.trial.phases, vec![Direction::Upload, Direction::Download]);
        // 20 trials of 2 s, with 1.5 s of overhead, the control messages' 80 kbit at the slowest step
        // (50 Mbit/s) and 1 s of settling each.
        assert!((spec.time_bound_s() - 20.0 * (4.5 + 80e3 / 50e6)).abs() < 1e-9, "{}", spec.time_bound_s());
    }

    #[test]
    fn impossible_sweeps_are_usage_errors() {
        assert!(spec(&[]).is_err(), "no rates");
        assert!(spec(&["--from", "10M"]).is_err(), "no --to and --step");
        assert!(spec(&["--from", "10M", "--to", "1M", "--step", "1M"]).unwrap_err().contains("below --from"));
        assert!(spec(&["--from", "1k", "--to", "10G", "--step", "1k"]).unwrap_err().contains("too many"));
        assert!(spec(&["--rates", "10M", "--size", "8"]).unwrap_err().contains("16-byte header"));
        assert!(spec(&["--rates", "10kpps"]).is_err(), "bits per second only");
        assert!(spec(&["--rates", "10M", "--duration", "10ms"]).is_err());
        assert!(spec(&["--rates", "0.001"]).unwrap_err().contains("at least 100 bit/s"), "no season-long gaps");
    }
}
