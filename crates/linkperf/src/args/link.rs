//! Argument groups shared by the commands that move bulk data: the link to compare goodput with, and how
//! UDP senders batch datagrams.

use clap::Args;
use linkperf_core::spec::LinkSpec;

use super::value;

/// The link a goodput is compared with.
#[derive(Debug, Clone, Args)]
pub struct LinkArgs {
    /// Compare goodput with a link of this rate (bits per second, e.g. 100M, 1G) [default: the
    /// interface's speed, when it reports one].
    #[arg(long, value_parser = value::bit_rate)]
    pub link_rate: Option<f64>,
    /// Bytes each frame adds to its IP packet on that link: 38 for Ethernet (preamble 8, header 14, FCS 4,
    /// gap 12).
    #[arg(long, default_value_t = linkperf_core::link_model::ETHERNET_OVERHEAD_BYTES)]
    pub link_overhead: u64,
    /// The link's IP MTU [default: the interface's, or 1500].
    #[arg(long)]
    pub mtu: Option<u64>,
}

impl LinkArgs {
    /// The link as given.
    pub fn spec(&self) -> LinkSpec {
        LinkSpec { rate_bps: self.link_rate, overhead_bytes: self.link_overhead, mtu_bytes: self.mtu }
    }
}

/// How UDP senders hand datagrams to the kernel.
#[derive(Debug, Clone, Args)]
pub struct BatchArgs {
    /// UDP: no segmentation offload (GSO) or receive coalescing (GRO): every datagram crosses the stack on
    /// its own (batches go out with sendmmsg; add --batch 1 for one datagram per call).
    #[arg(long)]
    pub no_gso: bool,
    /// UDP: most datagrams per send call (1 disables batching).
    #[arg(long, default_value_t = linkperf_core::spec::DEFAULT_UDP_BATCH)]
    pub batch: u32,
}
