//! Reads this host's facts (name, kernel, CPU) from the running system, for the result's endpoints.
//!
//! Anything unreadable becomes `unknown` rather than an error: facts describe a result, they never stop one.

use linkperf_core::{HostFacts, InterfaceFacts};

/// Facts about the host this process runs on.
pub fn local_host_facts() -> HostFacts {
    HostFacts { hostname: hostname(), kernel: kernel(), cpu_model: cpu_model(), cpus: cpus(), interface: None }
}

/// This host's facts, with the interface that holds `local` (a connection's local address).
pub fn host_facts_for(local: Option<std::net::SocketAddr>) -> HostFacts {
    HostFacts {
        interface: crate::counters::interface_for(local).map(|name| interface_facts(&name)),
        ..local_host_facts()
    }
}

/// What `/sys/class/net/NAME` tells of an interface.
pub fn interface_facts(name: &str) -> InterfaceFacts {
    let dir = format!("/sys/class/net/{name}");
    let read = |file: &str| read_trimmed(&format!("{dir}/{file}"));
    let driver = std::fs::read_link(format!("{dir}/device/driver"))
        .ok()
        .and_then(|link| link.file_name().map(|n| n.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "virtual".to_string());
    let offloads = ["gro_flush_timeout", "napi_defer_hard_irqs", "tx_queue_len"]
        .iter()
        .filter_map(|file| read(file).map(|value| format!("{file}={value}")))
        .collect();
    InterfaceFacts {
        name: name.to_string(),
        driver,
        speed_mbit: read("speed").and_then(|s| s.parse::<i64>().ok()).filter(|&s| s > 0).map(|s| s as u64),
        mtu_bytes: read("mtu").and_then(|s| s.parse().ok()),
        offloads,
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}

fn hostname() -> String {
    read_trimmed("/proc/sys/kernel/hostname").or_else(|| read_trimmed("/etc/hostname")).unwrap_or_else(unknown)
}

fn kernel() -> String {
    let os = read_trimmed("/proc/sys/kernel/ostype").unwrap_or_else(|| std::env::consts::OS.to_string());
    match read_trimmed("/proc/sys/kernel/osrelease") {
        Some(release) => format!("{os} {release}"),
        None => os,
    }
}

fn cpu_model() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    // x86 names it "model name"; many ARM kernels give "Hardware" or "Processor" or only "CPU part".
    ["model name", "Hardware", "Processor", "cpu model"]
        .iter()
        .find_map(|key| {
            cpuinfo.lines().find_map(|line| {
                let (name, value) = line.split_once(':')?;
                (name.trim() == *key && !value.trim().is_empty()).then(|| value.trim().to_string())
            })
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string())
}

/// The host's CPUs online, whatever this thread is pinned to (`/sys/devices/system/cpu/online`; where that
/// cannot be read, the CPUs this process may use).
fn cpus() -> u32 {
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").ok();
    let listed = online.and_then(|text| text.trim().parse::<linkperf_core::placement::CpuList>().ok());
    match listed {
        Some(list) if !list.cpus().is_empty() => list.cpus().len() as u32,
        _ => std::thread::available_parallelism().map(|n| n.get() as u32).unwrap_or(1),
    }
}

fn unknown() -> String {
    "unknown".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_facts_are_filled_in() {
        let facts = local_host_facts();
        assert!(!facts.hostname.is_empty());
        assert!(!facts.kernel.is_empty());
        assert!(!facts.cpu_model.is_empty());
        assert!(facts.cpus >= 1);
    }

    #[test]
    fn the_loopback_interface_is_described() {
        let facts = host_facts_for(Some("127.0.0.1:5250".parse().unwrap()));
        let lo = facts.interface.expect("loopback holds 127.0.0.1");
        assert_eq!((lo.name.as_str(), lo.driver.as_str()), ("lo", "virtual"));
        assert!(lo.mtu_bytes.is_some_and(|mtu| mtu > 0));
        assert_eq!(host_facts_for(None).interface, None);
    }
}
