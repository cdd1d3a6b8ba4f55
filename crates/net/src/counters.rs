//! Reads the host's kernel counters (see `linkperf_core::counters`) and finds the interface that carries
//! a connection.

use std::net::{IpAddr, SocketAddr};

use linkperf_core::counters::{
    parse_net_dev, parse_snmp, parse_softnet_dropped, HostCounters, NicCounter, MAX_NIC_COUNTERS,
};

/// The name of the interface holding `address`, or `None` (a Unix socket, or an address not found).
pub fn interface_for(address: Option<SocketAddr>) -> Option<String> {
    let ip = match address?.ip() {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(IpAddr::V6(v6)),
        v4 => v4,
    };
    nix::ifaddrs::getifaddrs().ok()?.find_map(|ifaddr| {
        let address = ifaddr.address?;
        let found = match (address.as_sockaddr_in(), address.as_sockaddr_in6()) {
            (Some(v4), _) => IpAddr::V4(v4.ip()) == ip,
            (_, Some(v6)) => IpAddr::V6(v6.ip()) == ip,
            _ => false,
        };
        found.then_some(ifaddr.interface_name)
    })
}

/// An interface's speed in bits per second and its MTU, where the kernel reports them (virtual interfaces
/// such as loopback and veth report no speed).
pub fn interface_link(interface: &str) -> (Option<f64>, Option<u64>) {
    let read = |file: &str| std::fs::read_to_string(format!("/sys/class/net/{interface}/{file}")).ok();
    let speed = read("speed").and_then(|s| s.trim().parse::<i64>().ok()).filter(|&mbit| mbit > 0);
    let mtu = read("mtu").and_then(|s| s.trim().parse::<u64>().ok());
    (speed.map(|mbit| mbit as f64 * 1e6), mtu)
}

/// The counters now, with the row of `interface` if given.
pub fn snapshot(interface: Option<&str>) -> HostCounters {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let snmp = read("/proc/net/snmp");
    let counter = |protocol: &str, name: &str| parse_snmp(&snmp, protocol, name).unwrap_or(0);
    HostCounters {
        interface: interface.and_then(|name| parse_net_dev(&read("/proc/net/dev"), name)),
        udp_in_errors: counter("Udp", "InErrors"),
        udp_rcvbuf_errors: counter("Udp", "RcvbufErrors"),
        udp_sndbuf_errors: counter("Udp", "SndbufErrors"),
        tcp_retrans_segs: counter("Tcp", "RetransSegs"),
        softnet_dropped: parse_softnet_dropped(&read("/proc/net/softnet_stat")),
        nic: interface.map(nic_counters).unwrap_or_default(),
    }
}

/// The driver statistics of `interface` (`ethtool -S`, through the ethtool ioctl), or none when the driver
/// has none (loopback) or they cannot be read.
pub fn nic_counters(interface: &str) -> Vec<NicCounter> {
    use below_ethtool::EthtoolReadable;
    let stats = below_ethtool::Ethtool::new(interface).and_then(|ethtool| ethtool.stats()).unwrap_or_default();
    stats.into_iter().take(MAX_NIC_COUNTERS).map(|(name, value)| NicCounter { name, value }).collect()
}

/// A snapshot to be compared with a later one.
#[derive(Debug)]
pub struct CounterWatch {
    interface: Option<String>,
    before: HostCounters,
}

impl CounterWatch {
    /// Takes the first snapshot, for the interface holding `local` (the local end of a connection).
    pub fn start(local: Option<SocketAddr>) -> Self {
        let interface = interface_for(local);
        let before = snapshot(interface.as_deref());
        Self { interface, before }
    }

    /// The interface watched, if found.
    pub fn interface(&self) -> Option<&str> {
        self.interface.as_deref()
    }

    /// What changed since `start`.
    pub fn delta(&self) -> HostCounters {
        HostCounters::delta(&self.before, &snapshot(self.interface.as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_addresses_belong_to_lo() {
        assert_eq!(interface_for(Some("127.0.0.1:5250".parse().unwrap())).as_deref(), Some("lo"));
        assert_eq!(interface_for(Some("[::ffff:127.0.0.1]:5250".parse().unwrap())).as_deref(), Some("lo"));
        assert_eq!(interface_for(None), None);
    }

    #[test]
    fn loopback_has_an_mtu_and_no_speed_and_an_unknown_interface_has_neither() {
        let (speed, mtu) = interface_link("lo");
        assert_eq!(speed, None, "virtual interfaces report no speed");
        assert!(mtu.is_some_and(|mtu| mtu >= 1280), "{mtu:?}");
        assert_eq!(interface_link("no-such-if0"), (None, None));
    }

    #[test]
    fn a_watch_finds_the_interface_of_its_address() {
        assert_eq!(CounterWatch::start(Some("127.0.0.1:1".parse().unwrap())).interface(), Some("lo"));
        let unix = CounterWatch::start(None);
        assert_eq!(unix.interface(), None);
        assert_eq!(unix.delta().interface, None, "no interface row without an interface");
    }

    #[test]
    fn traffic_shows_in_the_deltas() {
        let watch = CounterWatch::start(Some("127.0.0.1:1".parse().unwrap()));
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let peer = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        for _ in 0..10 {
            socket.send_to(b"x", peer.local_addr().unwrap()).unwrap();
        }
        let delta = watch.delta();
        assert!(delta.interface.unwrap().rx_packets >= 10);
    }
}
