//! Suite profiles: the TOML files that say what a suite runs and which tables it prints. The profiles that
//! ship are compiled in (`--study NAME`); `--profile FILE` reads another. The format is documented in
//! docs/suite.md.

use serde::Deserialize;

use linkperf_core::datasheet::{Figure, SizeFigure};
use linkperf_core::units::RateUnit;

use crate::exit::UsageError;

/// The profiles that ship with linkperf, by name: the default, and one per study of STUDIES.md that the
/// transports built so far allow.
pub const BUILT_IN: &[(&str, &str)] = &[
    ("datasheet", include_str!("../../../../profiles/datasheet.toml")),
    ("radio-datasheet", include_str!("../../../../profiles/radio-datasheet.toml")),
    ("ethernet-bringup", include_str!("../../../../profiles/ethernet-bringup.toml")),
    ("usb-coalescing", include_str!("../../../../profiles/usb-coalescing.toml")),
    ("ipc-tables", include_str!("../../../../profiles/ipc-tables.toml")),
    ("serial-server", include_str!("../../../../profiles/serial-server.toml")),
];

/// A suite: its title and sections.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The heading of the output.
    pub title: String,
    /// One line on what it measures.
    #[serde(default)]
    pub description: String,
    /// How many times each datasheet row's command runs (min/typ/max across them), unless the row says.
    #[serde(default = "one")]
    pub repeat: u32,
    /// The sections, in order.
    #[serde(rename = "section")]
    pub sections: Vec<Section>,
}

fn one() -> u32 {
    1
}

/// A section of a suite: one table.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Section {
    /// `Test | Min | Typ | Max | Unit | Notes`.
    Datasheet {
        /// Its heading.
        title: String,
        /// Its rows.
        #[serde(rename = "row")]
        rows: Vec<Row>,
    },
    /// One row per message size, one column per command.
    BySize {
        /// Its heading.
        title: String,
        /// What the cells show.
        figure: SizeFigure,
        /// How it was measured.
        #[serde(default)]
        note: String,
        /// The columns.
        #[serde(rename = "column")]
        columns: Vec<Column>,
    },
    /// The commands' own tables.
    Runs {
        /// Its heading.
        title: String,
        /// The commands.
        run: Vec<String>,
    },
}

/// A datasheet row: a command and the figure read from its result.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// The Test column.
    pub test: String,
    /// The linkperf command, without the host (e.g. `latency --size 64 --count 10000`).
    pub run: String,
    /// Which figure of its result.
    pub figure: Figure,
    /// The unit of rates (goodput, zero-loss rate): `bit/s`, `kbit/s`, `Mbit/s`, `Gbit/s`, `MB/s` (10^6
    /// bytes) or `MiB/s` (2^20 bytes) [default: the bit-rate unit each row's typical value asks for].
    #[serde(default)]
    pub unit: Option<String>,
    /// The Notes column: how it was measured.
    pub note: String,
    /// Repetitions of this row, instead of the profile's.
    #[serde(default)]
    pub repeat: Option<u32>,
}

/// A column of a by-size table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    /// Its heading.
    pub heading: String,
    /// The linkperf command, without the host.
    pub run: String,
}

/// The test commands a suite may run.
const TESTS: &[&str] = &["latency", "connect", "idle", "throughput", "sweep", "ratesearch", "burst"];
/// Options the suite sets itself.
const RESERVED: &[&str] =
    &["--json", "--csv", "--db", "--no-store", "--label", "--port", "-p", "--key-file", "--unix", "--no-progress"];

impl Profile {
    /// Parses a profile and checks every command in it, so that a mistake shows before anything runs.
    pub fn parse(text: &str, origin: &str) -> Result<Self, UsageError> {
        let profile: Profile =
            toml::from_str(text).map_err(|e| UsageError(format!("profile {origin} cannot be read: {e}")))?;
        if profile.sections.is_empty() {
            return Err(UsageError(format!("profile {origin} has no [[section]]")));
        }
        if profile.repeat == 0 {
            return Err(UsageError(format!("profile {origin}: repeat must be at least 1")));
        }
        for row in profile.sections.iter().flat_map(|s| match s {
            Section::Datasheet { rows, .. } => rows.as_slice(),
            _ => &[],
        }) {
            if let Some(unit) = row.unit.as_deref().filter(|u| RateUnit::parse(u).is_none()) {
                let names: Vec<&str> = RateUnit::ALL.iter().map(|u| u.name()).collect();
                return Err(UsageError(format!("profile {origin}: unit '{unit}' is none of {}", names.join(", "))));
            }
        }
        for command in profile.commands() {
            check_command(command).map_err(|e| UsageError(format!("profile {origin}: `{command}`: {}", e.0)))?;
        }
        Ok(profile)
    }

    /// A built-in profile by name.
    pub fn built_in(name: &str) -> Result<Self, UsageError> {
        let (_, text) = BUILT_IN.iter().find(|(n, _)| *n == name).ok_or_else(|| {
            let names: Vec<&str> = BUILT_IN.iter().map(|(n, _)| *n).collect();
            UsageError(format!("no study profile '{name}' (there are: {})", names.join(", ")))
        })?;
        Self::parse(text, name)
    }

    /// Every command of the profile, in order.
    pub fn commands(&self) -> Vec<&str> {
        self.sections
            .iter()
            .flat_map(|section| -> Vec<&str> {
                match section {
                    Section::Datasheet { rows, .. } => rows.iter().map(|r| r.run.as_str()).collect(),
                    Section::BySize { columns, .. } => columns.iter().map(|c| c.run.as_str()).collect(),
                    Section::Runs { run, .. } => run.iter().map(String::as_str).collect(),
                }
            })
            .collect()
    }
}

/// A command's words.
pub fn words(command: &str) -> Vec<&str> {
    command.split_whitespace().collect()
}

/// Whether a command runs over a Unix socket on this host (and so takes no host).
pub fn is_local(command: &str) -> bool {
    words(command).windows(2).any(|w| w == ["--proto", "unix"])
}

/// A command must be a test, leave the host and the output to the suite, and parse.
fn check_command(command: &str) -> Result<(), UsageError> {
    let words = words(command);
    let Some(test) = words.first() else { return Err(UsageError("an empty command".into())) };
    if !TESTS.contains(test) {
        return Err(UsageError(format!("'{test}' is not a test (one of: {})", TESTS.join(", "))));
    }
    if let Some(word) = words.iter().find(|w| RESERVED.contains(w)) {
        return Err(UsageError(format!("{word} is set by the suite; leave it out")));
    }
    if words.get(1).is_some_and(|w| !w.starts_with('-')) {
        return Err(UsageError("give no host in a profile: the suite adds its own".into()));
    }
    use clap::Parser;
    crate::cli::Cli::try_parse_from(std::iter::once("linkperf").chain(words.iter().copied())).map(|_| ()).map_err(|e| {
        UsageError(e.to_string().lines().next().unwrap_or_default().trim_start_matches("error: ").to_string())
    })
}

/// Whether `words` (a test and its options) parse as a linkperf command.
pub fn parses<'a>(words: impl Iterator<Item = &'a str>) -> bool {
    use clap::Parser;
    crate::cli::Cli::try_parse_from(std::iter::once("linkperf").chain(words)).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_profile_parses_and_its_commands_are_valid() {
        for (name, _) in BUILT_IN {
            let profile = Profile::built_in(name).unwrap_or_else(|e| panic!("{name}: {}", e.0));
            assert!(!profile.commands().is_empty(), "{name}");
        }
    }

    #[test]
    fn mistakes_in_a_profile_are_reported_before_anything_runs() {
        let bad = |run: &str| {
            let text = format!(
                "title = \"t\"\n[[section]]\nkind = \"datasheet\"\ntitle = \"s\"\n[[section.row]]\ntest = \"x\"\nrun = \"{run}\"\nfigure = \"rtt\"\nnote = \"n\"\n"
            );
            Profile::parse(&text, "test.toml").err().map(|e| e.0).unwrap_or_default()
        };
        assert!(bad("latency --size 64").is_empty(), "{}", bad("latency --size 64"));
        assert!(bad("serve").contains("not a test"));
        assert!(bad("latency --json").contains("set by the suite"));
        assert!(bad("latency 198.18.0.2").contains("no host"));
        assert!(bad("latency --sise 64").contains("--sise"), "{}", bad("latency --sise 64"));
        let unknown =
            Profile::parse("title = \"t\"\nrepeats = 3\n[[section]]\nkind = \"runs\"\ntitle = \"s\"\nrun = []", "x");
        assert!(unknown.unwrap_err().0.contains("repeats"));
        assert!(Profile::parse("title = \"t\"\nsection = []", "x").unwrap_err().0.contains("no [[section]]"));
        assert!(Profile::built_in("nope").unwrap_err().0.contains("datasheet"));
    }

    #[test]
    fn unix_commands_run_locally() {
        assert!(is_local("latency --proto unix --size 64"));
        assert!(!is_local("latency --proto udp"));
    }
}
