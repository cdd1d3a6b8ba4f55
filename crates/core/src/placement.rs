//! CPU placement: which CPUs a test's threads may run on (`--affinity`, `--responder-affinity`,
//! `serve --affinity`). On a small host, where the scheduler puts the two ends of a round trip moves it by
//! more than any protocol does; pinning makes runs comparable, and the run records what was asked.

use serde::{Deserialize, Serialize};

/// A set of CPUs, as Linux numbers them, sorted and without repeats.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CpuList(Vec<usize>);

/// Why a CPU list could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpuListError {
    /// Not a number or a range.
    #[error("'{0}' is not a CPU list: give CPU numbers and ranges, e.g. 0, 2,3 or 0-3")]
    Malformed(String),
    /// A range that runs backwards.
    #[error("'{0}' runs backwards: write the lower CPU first, e.g. 0-3")]
    Backwards(String),
    /// More CPUs than any host has.
    #[error("CPU {0} is beyond the {MAX_CPUS} CPUs this program can pin")]
    TooHigh(usize),
}

/// The highest CPU number plus one that a list may name (Linux's default `CONFIG_NR_CPUS` limit).
pub const MAX_CPUS: usize = 8192;

impl CpuList {
    /// The list of `cpus` (sorted, repeats dropped).
    pub fn new(mut cpus: Vec<usize>) -> Self {
        cpus.sort_unstable();
        cpus.dedup();
        CpuList(cpus)
    }

    /// The CPUs, in increasing order.
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }
}

impl std::str::FromStr for CpuList {
    type Err = CpuListError;

    /// Reads `0`, `0,2`, `0-3`, `0-1,4` (the format of `taskset -c` and `/sys/.../cpulist`).
    fn from_str(text: &str) -> Result<Self, CpuListError> {
        let malformed = || CpuListError::Malformed(text.to_string());
        let number = |part: &str| part.trim().parse::<usize>().map_err(|_| malformed());
        let mut cpus = Vec::new();
        for part in text.split(',') {
            let (low, high) = match part.split_once('-') {
                Some((low, high)) => (number(low)?, number(high)?),
                None => (number(part)?, number(part)?),
            };
            if high < low {
                return Err(CpuListError::Backwards(part.trim().to_string()));
            }
            if high >= MAX_CPUS {
                return Err(CpuListError::TooHigh(high));
            }
            cpus.extend(low..=high);
        }
        Ok(CpuList::new(cpus))
    }
}

impl std::fmt::Display for CpuList {
    /// The compact form: `0-3,6`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i];
            while i + 1 < self.0.len() && self.0[i + 1] == self.0[i] + 1 {
                i += 1;
            }
            parts.push(if self.0[i] == start { start.to_string() } else { format!("{start}-{}", self.0[i]) });
            i += 1;
        }
        write!(f, "{}", parts.join(","))
    }
}

/// Where each end's threads were allowed to run, as asked (`None`: wherever the scheduler put them).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// The client's measuring threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<CpuList>,
    /// The responder's threads (an embedded responder, or `serve --affinity`, as the responder reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub responder: Option<CpuList>,
}

impl Placement {
    /// Whether nothing was pinned.
    pub fn is_unpinned(&self) -> bool {
        self.client.is_none() && self.responder.is_none()
    }
}

impl std::fmt::Display for Placement {
    /// `client on CPUs 0, responder on CPUs 1`, `unpinned`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let end = |cpus: &Option<CpuList>| cpus.as_ref().map_or("unpinned".to_string(), |c| format!("on CPUs {c}"));
        write!(f, "client {}, responder {}", end(&self.client), end(&self.responder))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_as_taskset_writes_them() {
        let list: CpuList = "3, 0-1,1".parse().unwrap();
        assert_eq!(list.cpus(), [0, 1, 3]);
        assert_eq!(list.to_string(), "0-1,3");
        assert_eq!("5".parse::<CpuList>().unwrap().to_string(), "5");
        assert!(matches!("a".parse::<CpuList>(), Err(CpuListError::Malformed(_))));
        assert!(matches!("".parse::<CpuList>(), Err(CpuListError::Malformed(_))));
        assert!(matches!("3-1".parse::<CpuList>(), Err(CpuListError::Backwards(_))));
        assert!(matches!("0-99999".parse::<CpuList>(), Err(CpuListError::TooHigh(99999))));
    }

    #[test]
    fn a_placement_says_where_each_end_ran() {
        let placement = Placement { client: Some("0".parse().unwrap()), responder: None };
        assert_eq!(placement.to_string(), "client on CPUs 0, responder unpinned");
        assert!(Placement::default().is_unpinned());
    }
}
