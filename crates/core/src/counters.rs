//! Kernel counters that explain a throughput result: the interface's packets, drops, errors and overruns
//! (`/proc/net/dev`), UDP and TCP error counters (`/proc/net/snmp`) and the packets dropped by a full
//! per-CPU backlog (`/proc/net/softnet_stat`). Parsed here from the files' text; read by the `net` crate.
//!
//! Counters are host-wide (per network namespace), so a delta counts every program's traffic, not only the
//! test's: a quiet host is assumed, and attributions derived from them are upper bounds.

use serde::{Deserialize, Serialize};

/// One interface's counters, as in `/proc/net/dev`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceCounters {
    /// Interface name.
    pub name: String,
    /// Packets received.
    pub rx_packets: u64,
    /// Receive errors.
    pub rx_errors: u64,
    /// Packets dropped on receive (no buffer, filtered, ...).
    pub rx_dropped: u64,
    /// Receive FIFO overruns.
    pub rx_fifo: u64,
    /// Packets sent.
    pub tx_packets: u64,
    /// Transmit errors.
    pub tx_errors: u64,
    /// Packets dropped on transmit.
    pub tx_dropped: u64,
}

/// One counter of an interface's driver statistics (the set `ethtool -S` shows: pause frames, MAC and FIFO
/// errors, per-queue drops; the names are the driver's own).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NicCounter {
    /// The driver's name for it, e.g. `rx_pause`, `rx_queue_0_drops`.
    pub name: String,
    /// Its value (in a delta: how much it grew).
    pub value: u64,
}

/// At most this many driver counters are kept per snapshot (a 64-queue NIC lists a few thousand; the
/// receive-drop and pause counters that explain a result come first in every driver seen so far).
pub const MAX_NIC_COUNTERS: usize = 4096;

/// The counters of one host at one instant (or the difference of two snapshots).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostCounters {
    /// The interface that carries the test's traffic, when it could be found.
    pub interface: Option<InterfaceCounters>,
    /// UDP datagrams that could not be delivered (`Udp: InErrors`).
    pub udp_in_errors: u64,
    /// UDP datagrams dropped because a receiving socket's buffer was full (`Udp: RcvbufErrors`).
    pub udp_rcvbuf_errors: u64,
    /// UDP datagrams not sent because a sending socket's buffer was full (`Udp: SndbufErrors`).
    pub udp_sndbuf_errors: u64,
    /// TCP segments retransmitted (`Tcp: RetransSegs`).
    pub tcp_retrans_segs: u64,
    /// Packets dropped because a CPU's input backlog was full (`/proc/net/softnet_stat`, all CPUs).
    pub softnet_dropped: u64,
    /// The interface's driver statistics (ethtool's statistics set) where the driver has them; in a delta,
    /// only the counters that changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nic: Vec<NicCounter>,
}

impl HostCounters {
    /// `after` minus `before`, field by field, never negative (a counter reset reads as zero).
    pub fn delta(before: &HostCounters, after: &HostCounters) -> HostCounters {
        let d = |a: u64, b: u64| a.saturating_sub(b);
        let interface = match (&after.interface, &before.interface) {
            (Some(a), Some(b)) if a.name == b.name => Some(InterfaceCounters {
                name: a.name.clone(),
                rx_packets: d(a.rx_packets, b.rx_packets),
                rx_errors: d(a.rx_errors, b.rx_errors),
                rx_dropped: d(a.rx_dropped, b.rx_dropped),
                rx_fifo: d(a.rx_fifo, b.rx_fifo),
                tx_packets: d(a.tx_packets, b.tx_packets),
                tx_errors: d(a.tx_errors, b.tx_errors),
                tx_dropped: d(a.tx_dropped, b.tx_dropped),
            }),
            _ => None,
        };
        HostCounters {
            interface,
            udp_in_errors: d(after.udp_in_errors, before.udp_in_errors),
            udp_rcvbuf_errors: d(after.udp_rcvbuf_errors, before.udp_rcvbuf_errors),
            udp_sndbuf_errors: d(after.udp_sndbuf_errors, before.udp_sndbuf_errors),
            tcp_retrans_segs: d(after.tcp_retrans_segs, before.tcp_retrans_segs),
            softnet_dropped: d(after.softnet_dropped, before.softnet_dropped),
            nic: after
                .nic
                .iter()
                .filter_map(|a| {
                    let before = before.nic.iter().find(|b| b.name == a.name).map_or(0, |b| b.value);
                    let grew = d(a.value, before);
                    (grew > 0).then(|| NicCounter { name: a.name.clone(), value: grew })
                })
                .collect(),
        }
    }

    /// Packets dropped on receive at this host below the sockets: the interface's drops, FIFO overruns and
    /// errors (`/proc/net/dev`) or the driver's own receive-drop counters ([`Self::nic_receive_drops`]),
    /// whichever is larger (they often count the same packets: never their sum), plus the backlog drops.
    pub fn receive_drops(&self) -> u64 {
        let kernel = self.interface.as_ref().map_or(0, |i| i.rx_dropped + i.rx_fifo + i.rx_errors);
        kernel.max(self.nic_receive_drops()) + self.softnet_dropped
    }

    /// Packets the receiving NIC dropped by its driver's own count: the sum of the driver counters whose
    /// name says a receive drop (`rx` and one of `drop`, `miss`, `fifo`, `over`, `no_buf`, `nobuf`). Names
    /// vary by driver; this reads the common ones (docs/metrics.md, "NIC statistics").
    pub fn nic_receive_drops(&self) -> u64 {
        self.nic.iter().filter(|c| is_receive_drop(&c.name)).map(|c| c.value).sum()
    }
}

/// Whether a driver counter named `name` counts packets dropped on receive.
fn is_receive_drop(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let receive = name.starts_with("rx") || name.contains("_rx") || name.contains("rx_");
    let drop = ["drop", "miss", "fifo", "over", "no_buf", "nobuf"].iter().any(|w| name.contains(w));
    // Totals of good traffic never name a drop; XDP verdicts do ("xdp_drops") and are drops all the same.
    receive && drop
}

/// The row of `name` in the text of `/proc/net/dev`.
pub fn parse_net_dev(text: &str, name: &str) -> Option<InterfaceCounters> {
    text.lines().skip(2).find_map(|line| {
        let (interface, numbers) = line.split_once(':')?;
        if interface.trim() != name {
            return None;
        }
        let v: Vec<u64> = numbers.split_whitespace().map(|n| n.parse().unwrap_or(0)).collect();
        // Receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes packets errs drop ...
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        Some(InterfaceCounters {
            name: name.to_string(),
            rx_packets: at(1),
            rx_errors: at(2),
            rx_dropped: at(3),
            rx_fifo: at(4),
            tx_packets: at(9),
            tx_errors: at(10),
            tx_dropped: at(11),
        })
    })
}

/// A named counter of a protocol (`Udp`, `Tcp`) in the text of `/proc/net/snmp`, where each protocol has a
/// line of names followed by a line of values.
pub fn parse_snmp(text: &str, protocol: &str, counter: &str) -> Option<u64> {
    let prefix = format!("{protocol}:");
    let mut lines = text.lines().filter(|l| l.starts_with(&prefix));
    let names = lines.next()?;
    let values = lines.next()?;
    let index = names.split_whitespace().position(|n| n == counter)?;
    values.split_whitespace().nth(index)?.parse().ok()
}

/// Packets dropped by full input backlogs, summed over CPUs, from the text of `/proc/net/softnet_stat`
/// (hexadecimal columns; the second is the drop count).
pub fn parse_softnet_dropped(text: &str) -> u64 {
    text.lines()
        .filter_map(|line| line.split_whitespace().nth(1))
        .filter_map(|hex| u64::from_str_radix(hex, 16).ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nic(counters: &[(&str, u64)]) -> HostCounters {
        let nic = counters.iter().map(|&(name, value)| NicCounter { name: name.into(), value }).collect();
        HostCounters { nic, ..HostCounters::default() }
    }

    #[test]
    fn a_delta_keeps_the_driver_counters_that_changed() {
        let before = nic(&[("peer_ifindex", 7), ("rx_pause", 10), ("rx_queue_0_drops", 3), ("tx_bytes", 100)]);
        let after =
            nic(&[("peer_ifindex", 7), ("rx_pause", 14), ("rx_queue_0_drops", 3), ("tx_bytes", 90), ("new", 5)]);
        let delta = HostCounters::delta(&before, &after);
        let changed: Vec<(&str, u64)> = delta.nic.iter().map(|c| (c.name.as_str(), c.value)).collect();
        // A counter that went down (reset) reads as no change; one that appeared counts from zero.
        assert_eq!(changed, [("rx_pause", 4), ("new", 5)]);
    }

    #[test]
    fn receive_drops_are_read_from_the_drivers_names() {
        let counters = nic(&[
            ("rx_queue_0_drops", 1),
            ("rx_missed_errors", 10),
            ("rx_fifo_errors", 100),
            ("rx_no_buffer_count", 1000),
            ("port.rx_dropped", 10_000),
            ("rx_packets", 5),
            ("tx_dropped", 7),
            ("rx_pause", 3),
        ]);
        assert_eq!(counters.nic_receive_drops(), 11_111, "transmit drops, pause frames and packets are not");
    }

    const NET_DEV: &str = "Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 4801 543    0    0    0     0          0         0 4801 543    0    0    0     0       0          0
  eth0: 9000 3900000 7 12 782502 0 0 0 5000 2000000 1 3 0 0 0 0
";

    const SNMP: &str = "Tcp: RtoAlgorithm RtoMin RtoMax MaxConn ActiveOpens PassiveOpens AttemptFails EstabResets CurrEstab InSegs OutSegs RetransSegs InErrs OutRsts InCsumErrors
Tcp: 1 200 120000 -1 117678 117635 17 180 0 34833419 34830496 1465 0 150 0
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 19553735 0 42 19553800 40 2 0 0 0
";

    #[test]
    fn net_dev_rows_are_read_by_name() {
        let eth0 = parse_net_dev(NET_DEV, "eth0").unwrap();
        assert_eq!((eth0.rx_packets, eth0.rx_errors, eth0.rx_dropped, eth0.rx_fifo), (3_900_000, 7, 12, 782_502));
        assert_eq!((eth0.tx_packets, eth0.tx_errors, eth0.tx_dropped), (2_000_000, 1, 3));
        assert_eq!(parse_net_dev(NET_DEV, "lo").unwrap().rx_packets, 543);
        assert_eq!(parse_net_dev(NET_DEV, "wlan0"), None);
    }

    #[test]
    fn snmp_counters_are_read_by_name() {
        assert_eq!(parse_snmp(SNMP, "Udp", "RcvbufErrors"), Some(40));
        assert_eq!(parse_snmp(SNMP, "Udp", "InErrors"), Some(42));
        assert_eq!(parse_snmp(SNMP, "Tcp", "RetransSegs"), Some(1465));
        assert_eq!(parse_snmp(SNMP, "Udp", "NoSuchCounter"), None);
        assert_eq!(parse_snmp("", "Udp", "InErrors"), None);
    }

    #[test]
    fn softnet_drops_are_summed_over_cpus() {
        let text = "01929466 00000000 00000001\n01b88876 0000001a 00000005\n";
        assert_eq!(parse_softnet_dropped(text), 26);
        assert_eq!(parse_softnet_dropped("garbage"), 0);
    }

    #[test]
    fn deltas_never_go_negative() {
        let before = HostCounters { udp_rcvbuf_errors: 10, tcp_retrans_segs: 5, ..HostCounters::default() };
        let after = HostCounters { udp_rcvbuf_errors: 25, tcp_retrans_segs: 1, ..HostCounters::default() };
        let delta = HostCounters::delta(&before, &after);
        assert_eq!((delta.udp_rcvbuf_errors, delta.tcp_retrans_segs), (15, 0));
    }
}
