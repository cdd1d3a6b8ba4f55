//! `HostFacts`: what identifies an endpoint in a result, so that numbers can be traced to hardware.
//!
//! Only the data lives here; reading it from the running system is the `net` crate's job.

use serde::{Deserialize, Serialize};

/// Facts about one endpoint, as reported by that endpoint.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFacts {
    /// The host name.
    pub hostname: String,
    /// Operating system and kernel release, e.g. `Linux 6.1.0-18-amd64`.
    pub kernel: String,
    /// The CPU model name.
    pub cpu_model: String,
    /// Number of logical CPUs online.
    pub cpus: u32,
}
