//! CPU time of the calling thread, for the cost of a stream (`getrusage(RUSAGE_THREAD)`).

use std::time::Instant;

use linkperf_core::throughput::ThreadCpu;
use nix::sys::resource::{getrusage, UsageWho};

/// A started measurement of the current thread's CPU time.
pub struct CpuClock {
    user_s: f64,
    system_s: f64,
    wall: Instant,
}

impl CpuClock {
    /// Starts measuring the calling thread.
    pub fn start() -> Self {
        let (user_s, system_s) = thread_times();
        Self { user_s, system_s, wall: Instant::now() }
    }

    /// The CPU the calling thread (the same one that started) spent since `start`.
    pub fn stop(self) -> ThreadCpu {
        let (user_s, system_s) = thread_times();
        ThreadCpu {
            user_s: (user_s - self.user_s).max(0.0),
            system_s: (system_s - self.system_s).max(0.0),
            wall_s: self.wall.elapsed().as_secs_f64(),
        }
    }
}

fn thread_times() -> (f64, f64) {
    // getrusage on the calling thread fails only for an invalid `who`, which RUSAGE_THREAD is not on Linux.
    getrusage(UsageWho::RUSAGE_THREAD)
        .map(|u| {
            let seconds = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 / 1e6;
            (seconds(u.user_time()), seconds(u.system_time()))
        })
        .unwrap_or((0.0, 0.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_thread_shows_its_cpu_time() {
        let clock = CpuClock::start();
        let started = Instant::now();
        let mut x = 0u64;
        while started.elapsed().as_millis() < 200 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let cpu = clock.stop();
        assert!(cpu.user_s + cpu.system_s > 0.1, "{cpu:?}");
        assert!(cpu.wall_s >= 0.2);
        assert!(cpu.percent() <= 100.0 * 1.05, "one thread uses at most one core: {cpu:?}");
    }
}
