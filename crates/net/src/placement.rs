//! Pinning threads to CPUs (`linkperf_core::placement`). Linux applies an affinity to the calling thread,
//! and threads inherit their creator's: pin a thread, then spawn the threads that must run there.

use linkperf_core::placement::CpuList;
use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;

use crate::NetError;

/// The CPUs the calling thread may run on now.
pub fn current() -> Result<CpuList, NetError> {
    let set = sched_getaffinity(Pid::from_raw(0)).map_err(|e| NetError::io("reading the CPU affinity", e.into()))?;
    Ok(CpuList::new((0..CpuSet::count()).filter(|&cpu| set.is_set(cpu).unwrap_or(false)).collect()))
}

/// Pins the calling thread (and the threads it spawns from now on) to `cpus`. A CPU this process may not
/// use (absent, offline, or outside its cgroup's set) is an error that names the CPUs online, and leaves
/// the thread where it was.
pub fn pin_current_thread(cpus: &CpuList) -> Result<(), NetError> {
    let refused = || {
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap_or_default();
        NetError::Invalid(format!(
            "CPUs {cpus} are not all ones this process may use (CPUs online: {}; a container or cgroup may allow fewer)",
            online.trim()
        ))
    };
    let before = current()?;
    let mut set = CpuSet::new();
    for &cpu in cpus.cpus() {
        set.set(cpu).map_err(|_| refused())?;
    }
    sched_setaffinity(Pid::from_raw(0), &set).map_err(|_| refused())?;
    // The kernel drops CPUs that the process's cpuset does not allow, as long as one is left: check.
    if current()? != *cpus {
        let _ = sched_setaffinity(Pid::from_raw(0), &to_set(&before));
        return Err(refused());
    }
    Ok(())
}

fn to_set(cpus: &CpuList) -> CpuSet {
    let mut set = CpuSet::new();
    for &cpu in cpus.cpus() {
        let _ = set.set(cpu);
    }
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pinned_thread_and_its_children_run_where_asked() {
        // In a thread of its own, so that the test harness's threads keep their affinity.
        std::thread::spawn(|| {
            let first = current().unwrap().cpus()[0];
            let only: CpuList = first.to_string().parse().unwrap();
            pin_current_thread(&only).unwrap();
            assert_eq!(current().unwrap(), only);
            let child = std::thread::spawn(|| current().unwrap()).join().unwrap();
            assert_eq!(child, only, "a thread spawned after pinning inherits it");
            let absent: CpuList = (linkperf_core::placement::MAX_CPUS - 1).to_string().parse().unwrap();
            let refused = pin_current_thread(&absent).unwrap_err().to_string();
            assert!(refused.contains("are not all ones this process may use"), "{refused}");
            assert_eq!(current().unwrap(), only, "a refused pin leaves the thread where it was");
        })
        .join()
        .unwrap();
    }
}
