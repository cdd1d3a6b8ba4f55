//! `linkperf ratesearch`: arguments and their conversion into a `RateSearchSpec`.

use std::time::Duration;

use clap::Args;
use linkperf_core::rate_search::RFC2544_FRAME_SIZES;
use linkperf_core::RateSearchSpec;

use super::output::OutputArgs;
use super::target::TargetArgs;
use super::trial::TrialArgs;
use super::value;
use crate::exit::UsageError;

/// The long description shown by `--help`.
pub const LONG_ABOUT: &str = "Zero-loss and sustainable rates (RFC 2544 section 26.1): for each frame size, \
a binary search over offered UDP rates for the highest at which a trial loses at most --loss percent of its \
datagrams (0 by default: the \"maximum rate with 0 % loss\" of a datasheet), and in the same trials the \
sustainable rate: the highest that also grew no queue (a deep buffer lets a trial pass above the link's rate \
for its length; the growth of the one-way delay gives that away). Sizes are Ethernet frame sizes from header \
to FCS, as RFC 2544 defines them (a 64-byte frame carries 18 bytes of UDP payload over IPv4), or UDP \
payloads with --payload. Every trial is printed; then both rates per size in Mbit/s of payload, frames per \
second, a capacity estimate with its method, and with --link-rate a percentage of the link's maximum; then \
the round-trip latency of probes sent beside a last trial at the rate (section 26.2), paced to at most a \
tenth of it. A trial whose sender sent fewer datagrams than its schedule held is marked sender-limited: it \
counts as not reached, never as loss on the link. The upper bound is --max, else the payload rate of \
--link-rate, else measured: trains of back-to-back datagrams, whose arrival rate shows what the path carries \
(an interface's reported speed only caps it). The longest the run can take is printed before the search \
starts, and Ctrl-C stops it with the best rates found so far.";

/// Examples shown after the options in `--help`.
const EXAMPLES: &str = "Examples:
  linkperf ratesearch 198.18.0.2                      the RFC 2544 frame sizes, 10 s trials
  linkperf ratesearch HOST --size 64,1518 --link-rate 1G      % of a gigabit link
  linkperf ratesearch HOST --payload 1472 --max 100M --trial 2s --precision 0.5%
  linkperf ratesearch HOST --loss 0.1 --direction bidir       0.1 % tolerated, both ways at once";

/// Arguments of `linkperf ratesearch`.
#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct RateSearchArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub sizes: super::trial::FrameArgs,
    /// Most loss a passing trial may have, in percent of the datagrams sent.
    #[arg(long, default_value_t = 0.0)]
    pub loss: f64,
    /// Length of each trial.
    #[arg(long, default_value = "10s", value_parser = value::duration)]
    pub trial: Duration,
    /// Lowest rate searched (bits per second of UDP payload) [default: 1/100 of the highest].
    #[arg(long, value_parser = value::bit_rate)]
    pub min: Option<f64>,
    /// Highest rate searched [default: the payload rate of --link-rate, else measured by trains of
    /// back-to-back datagrams].
    #[arg(long, value_parser = value::bit_rate)]
    pub max: Option<f64>,
    /// How close the search gets: the rate found is within this fraction of the lowest failing rate.
    #[arg(long, default_value = "1%", value_parser = percent)]
    pub precision: f64,
    /// Round-trip probes per second beside a last trial at the rate found (0: no latency trial).
    #[arg(long, default_value_t = 100.0)]
    pub latency_probes: f64,
    #[command(flatten)]
    pub trials: TrialArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Parses `1%`, `0.5 %` or `1` (percent) into a fraction.
fn percent(text: &str) -> Result<f64, String> {
    let number = text.trim().trim_end_matches('%').trim();
    let value: f64 = number.parse().map_err(|_| format!("'{text}' is not a percentage, e.g. 1%"))?;
    if !(value > 0.0 && value <= 50.0) {
        return Err(format!("'{text}' is out of range: between 0 and 50 %"));
    }
    Ok(value / 100.0)
}

impl RateSearchArgs {
    /// The spec, with frame sizes mapped to UDP payloads over IPv4 or IPv6.
    pub fn spec(&self, ipv6: bool) -> Result<RateSearchSpec, UsageError> {
        let (payloads, frames) = self.sizes.payloads(&RFC2544_FRAME_SIZES, ipv6)?;
        if !(0.0..100.0).contains(&self.loss) {
            return Err(UsageError("--loss is a percentage from 0 up to (not including) 100".into()));
        }
        if let (Some(min), Some(max)) = (self.min, self.max) {
            if min >= max {
                return Err(UsageError(format!("--min ({min} bit/s) must be below --max ({max} bit/s)")));
            }
        }
        let streams = f64::from(self.trials.streams.max(1));
        for (what, rate) in [("--min", self.min), ("--max", self.max)] {
            if let Some(problem) = rate.and_then(|r| linkperf_core::spec::udp_rate_problem(what, r / streams)) {
                return Err(UsageError(problem));
            }
        }
        if !(0.0..=100_000.0).contains(&self.latency_probes) {
            return Err(UsageError("--latency-probes is between 0 and 100000 per second".into()));
        }
        Ok(RateSearchSpec {
            trial: self.trials.trial(payloads, self.trial)?,
            frames_bytes: frames,
            loss_tolerance_percent: self.loss,
            min_bps: self.min,
            max_bps: self.max,
            precision: self.precision,
            settle_s: self.trials.settle_s(Duration::from_secs(1)),
            latency_probes_per_s: self.latency_probes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(argv: &[&str], ipv6: bool) -> Result<RateSearchSpec, String> {
        crate::args::parse::<RateSearchArgs>(argv)?.spec(ipv6).map_err(|e| e.0)
    }

    #[test]
    fn defaults_are_the_rfc_2544_frames_with_no_loss() {
        let spec = spec(&[], false).unwrap();
        assert_eq!(spec.frames_bytes, Some(RFC2544_FRAME_SIZES.to_vec()));
        assert_eq!(spec.trial.sizes_bytes, vec![18, 82, 210, 466, 978, 1234, 1472]);
        assert_eq!((spec.loss_tolerance_percent, spec.precision, spec.trial.duration_s), (0.0, 0.01, 10.0));
        assert_eq!((spec.min_bps, spec.max_bps), (None, None));
    }

    #[test]
    fn payloads_and_ipv6_frames() {
        let spec6 = spec(&["--size", "128,1518"], true).unwrap();
        assert_eq!(spec6.trial.sizes_bytes, vec![62, 1452]);
        let raw = spec(&["--payload", "1472", "--precision", "0.5%", "--max", "100M"], false).unwrap();
        assert_eq!((raw.trial.sizes_bytes.clone(), raw.frames_bytes), (vec![1472], None));
        assert_eq!((raw.precision, raw.max_bps), (0.005, Some(100e6)));
    }

    #[test]
    fn impossible_searches_are_usage_errors() {
        assert!(spec(&["--size", "64"], true).unwrap_err().contains("smallest frame is 82 bytes"));
        assert!(spec(&["--size", "60"], false).unwrap_err().contains("smallest frame is 62 bytes"));
        assert!(spec(&["--payload", "8"], false).unwrap_err().contains("16-byte header"));
        assert!(spec(&["--loss", "100"], false).is_err());
        assert!(spec(&["--min", "10M", "--max", "5M"], false).unwrap_err().contains("below --max"));
        assert!(spec(&["--precision", "0"], false).is_err());
        assert!(spec(&["--size", "64", "--payload", "18"], false).is_err());
        assert!(spec(&["--min", "0.001", "--max", "1M"], false).unwrap_err().contains("at least 100 bit/s"));
    }
}
