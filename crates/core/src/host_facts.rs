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
    /// The network interface that carried the test's control connection, when known (not over a Unix
    /// socket).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<InterfaceFacts>,
}

/// Facts about a network interface, as far as the system reports them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceFacts {
    /// Its name, e.g. `eth0`.
    pub name: String,
    /// The kernel driver of its device (`virtual` for interfaces without a device, such as lo and veth).
    pub driver: String,
    /// The link speed it reports, in Mbit/s (virtual interfaces report none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbit: Option<u64>,
    /// Its IP MTU in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu_bytes: Option<u64>,
    /// The receive coalescing and queue settings sysfs reports, e.g. `gro_flush_timeout=0`,
    /// `napi_defer_hard_irqs=0`, `tx_queue_len=1000` (offload flags and interrupt moderation need ethtool
    /// and are not read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offloads: Vec<String>,
}
