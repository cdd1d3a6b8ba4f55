//! Driver statistics (the set `ethtool -S` shows) read through the ethtool ioctl, on a veth pair made for
//! the test in the root namespace (no traffic is sent). Skipped without the rights to make one, unless
//! LINKPERF_REQUIRE_NETNS=1 (set by CI) makes that a failure.

use std::process::Command;

/// Deletes the pair when the test ends, whatever its outcome.
struct Veth(String);

impl Drop for Veth {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["link", "del", &self.0]).status();
    }
}

#[test]
fn a_veth_interface_shows_its_driver_statistics() {
    let name = format!("lpn{}", std::process::id() % 100_000);
    let made = Command::new("ip")
        .args(["link", "add", &name, "type", "veth", "peer", "name", &format!("{name}p")])
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        assert!(std::env::var_os("LINKPERF_REQUIRE_NETNS").is_none(), "cannot create a veth pair");
        eprintln!("skipped: cannot create a veth pair (needs root and iproute2)");
        return;
    }
    let _veth = Veth(name.clone());
    let counters = linkperf_net::counters::nic_counters(&name);
    let names: Vec<&str> = counters.iter().map(|c| c.name.as_str()).collect();
    // veth's statistics set: its peer's index and per-queue XDP and drop counters.
    assert!(names.contains(&"peer_ifindex") && names.contains(&"rx_queue_0_drops"), "{names:?}");
    let snapshot = linkperf_net::counters::snapshot(Some(&name));
    assert_eq!(snapshot.nic.len(), counters.len(), "a snapshot of the interface carries them");
    assert!(linkperf_net::counters::nic_counters("lo").is_empty(), "loopback's driver has none");
    assert!(linkperf_net::counters::nic_counters("no-such-if0").is_empty(), "an unknown name reads as none");
}
