//! `linkperf suite`: arguments.

use std::path::PathBuf;

use clap::Args;

use super::output::StoreArgs;
use super::target::TargetArgs;

/// The long description shown by `--help`.
pub const LONG_ABOUT: &str = "A whole characterisation from a profile: each row of the profile runs one \
linkperf test (as many times as it says, for min/typ/max across repetitions), and the suite prints the \
tables that the profile describes: datasheets (Test | Min | Typ | Max | Unit | Notes, each note saying how \
the figure was measured), tables by message size, or the tests' own tables. With no HOST every test runs \
against a responder of its own on loopback, so `linkperf suite` on a fresh machine shows what linkperf \
measures in a few minutes. Every test is kept in the results database, labelled with the profile's name \
and --label. Profiles ship for the default datasheet and for the published studies (--list-studies); the \
format is in docs/suite.md.";

/// Examples shown after the options in `--help`.
const EXAMPLES: &str = "Examples:
  linkperf suite                                   the default datasheet, on loopback
  linkperf suite 198.18.0.2 --label board-a        against a responder on the far host
  linkperf suite HOST --study radio-datasheet --markdown > datasheet.md
  linkperf suite HOST --profile my-link.toml --repeat 5
  linkperf suite HOST --study radio-datasheet --link-rate 250k --max 250k   a slow link
  linkperf suite --study serial-server --device /dev/ttyUSB0 --baud 9600   study 3 on a port of this host
  linkperf suite --list-studies";

/// Arguments of `linkperf suite`.
#[derive(Debug, Clone, Args)]
#[command(after_help = EXAMPLES)]
pub struct SuiteArgs {
    #[command(flatten)]
    pub target: TargetArgs,
    /// A profile file (TOML) to run instead of the default datasheet.
    #[arg(long, value_name = "FILE", conflicts_with = "study")]
    pub profile: Option<PathBuf>,
    /// A profile that ships with linkperf, by name (see --list-studies).
    #[arg(long, value_name = "NAME")]
    pub study: Option<String>,
    /// List the profiles that ship with linkperf, and exit.
    #[arg(long)]
    pub list_studies: bool,
    /// Run every datasheet row this many times, whatever the profile says.
    #[arg(long)]
    pub repeat: Option<u32>,
    /// Print the tables as Markdown.
    #[arg(long, conflicts_with = "json")]
    pub markdown: bool,
    /// Print the tables as JSON.
    #[arg(long)]
    pub json: bool,
    /// Fail the suite (exit 3) when a figure of any of its runs meets this condition, e.g. 'p99 > 2ms' or
    /// 'goodput < 900M' (repeat for several; as a test's --fail-if, applied to every run that has the
    /// figure; a figure no run has fails too).
    #[arg(long = "fail-if", value_name = "CONDITION", value_parser = super::output::gate)]
    pub fail_if: Vec<linkperf_core::gate::Condition>,
    #[command(flatten)]
    pub link: SuiteLinkArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// The link under test, passed to every test of the suite that takes the option and does not set it
/// itself: so that rates, bounds and efficiencies follow the link, not the interface's speed.
#[derive(Debug, Clone, Args)]
pub struct SuiteLinkArgs {
    /// The link's rate (e.g. 250k, 100M): --link-rate of throughput, sweep, ratesearch and burst.
    #[arg(long, value_name = "RATE", value_parser = rate_text)]
    pub link_rate: Option<String>,
    /// Bytes each frame adds to its IP packet on that link: --link-overhead of the same tests.
    #[arg(long, value_name = "BYTES")]
    pub link_overhead: Option<u64>,
    /// The link's IP MTU: --mtu of the same tests.
    #[arg(long, value_name = "BYTES")]
    pub mtu: Option<u64>,
    /// The highest rate a rate search tries: --max of ratesearch.
    #[arg(long, value_name = "RATE", value_parser = rate_text)]
    pub max: Option<String>,
    /// The lowest rate a rate search tries: --min of ratesearch.
    #[arg(long, value_name = "RATE", value_parser = rate_text)]
    pub min: Option<String>,
    /// The serial line behind an echo (study 3): --baud of latency, throughput and idle. With --device, a
    /// list (9600,19200,115200) runs the whole suite once per rate, each run labelled baud:RATE.
    #[arg(long = "baud", value_name = "BAUD[,BAUD...]", value_delimiter = ',')]
    pub bauds: Vec<u32>,
    /// Its data bits: --data-bits of the same tests.
    #[arg(long, value_parser = clap::value_parser!(u8).range(5..=8))]
    pub data_bits: Option<u8>,
    /// Its parity (none, even, odd): --parity of the same tests.
    #[arg(long)]
    pub parity: Option<String>,
    /// Its stop bits: --stop-bits of the same tests.
    #[arg(long, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub stop_bits: Option<u8>,
    /// Its flow control (none, rtscts, xonxoff): --flow of the same tests.
    #[arg(long)]
    pub flow: Option<String>,
    /// Serial ports of this host, looped back (comma-separated): the tests of latency, throughput and idle
    /// run over them (--proto serial --device) instead of against HOST.
    #[arg(long, value_name = "PATHS", conflicts_with = "host")]
    pub device: Option<String>,
    /// The inter-character timeout: --char-timeout of latency, throughput and idle.
    #[arg(long, value_name = "DURATION")]
    pub char_timeout: Option<String>,
    /// The device server's packing, recorded with each test: --pack-length, --pack-idle and
    /// --pack-delimiter of latency, throughput and idle.
    #[arg(long, value_name = "CHARACTERS")]
    pub pack_length: Option<u32>,
    /// See --pack-length.
    #[arg(long, value_name = "DURATION")]
    pub pack_idle: Option<String>,
    /// See --pack-length.
    #[arg(long, value_name = "BYTE")]
    pub pack_delimiter: Option<String>,
}

impl SuiteLinkArgs {
    /// The options as `[flag, value]` pairs, in order.
    pub fn options(&self) -> Vec<[String; 2]> {
        let pair = |flag: &str, value: Option<String>| value.map(|v| [flag.to_string(), v]);
        [
            pair("--link-rate", self.link_rate.clone()),
            pair("--link-overhead", self.link_overhead.map(|b| b.to_string())),
            pair("--mtu", self.mtu.map(|b| b.to_string())),
            pair("--max", self.max.clone()),
            pair("--min", self.min.clone()),
            pair("--baud", self.bauds.first().map(|b| b.to_string())),
            pair("--data-bits", self.data_bits.map(|b| b.to_string())),
            pair("--parity", self.parity.clone()),
            pair("--stop-bits", self.stop_bits.map(|b| b.to_string())),
            pair("--flow", self.flow.clone()),
            pair("--proto", self.device.as_ref().map(|_| "serial".to_string())),
            pair("--device", self.device.clone()),
            pair("--char-timeout", self.char_timeout.clone()),
            pair("--pack-length", self.pack_length.map(|n| n.to_string())),
            pair("--pack-idle", self.pack_idle.clone()),
            pair("--pack-delimiter", self.pack_delimiter.clone()),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// A bit rate, checked and kept as typed (the tests parse it again).
fn rate_text(text: &str) -> Result<String, String> {
    super::value::bit_rate(text).map(|_| text.to_string())
}
