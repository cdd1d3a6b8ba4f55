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

    /// The calling thread's CPU time in seconds as /proc counts it (user + system), a source independent of
    /// getrusage. /proc counts in clock ticks of 1/100 s (USER_HZ, 100 on every Linux architecture we run on).
    fn proc_thread_seconds() -> f64 {
        let stat = std::fs::read_to_string("/proc/thread-self/stat").unwrap();
        // The fields after the command name (which may hold spaces) start with the state, field 3; utime and
        // stime are fields 14 and 15.
        let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split_whitespace().collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        ticks as f64 / 100.0
    }

    #[test]
    fn a_busy_thread_shows_its_cpu_time() {
        let clock = CpuClock::start();
        let before = proc_thread_seconds();
        // Spin until the thread has had 0.3 s of CPU by /proc's count, however long a busy host makes that
        // take (bounded: a thread that gets no CPU in 60 s fails here).
        let deadline = Instant::now() + std::time::Duration::from_secs(60);
        let mut x = 0u64;
        while proc_thread_seconds() - before < 0.3 {
            assert!(Instant::now() < deadline, "no CPU for this thread in 60 s");
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        }
        let cpu = clock.stop();
        let by_proc = proc_thread_seconds() - before;
        // Both count the same kernel accounting; /proc rounds to whole ticks at each end (0.01 s each), and
        // the two readings at each end are a few microseconds apart.
        let measured = cpu.user_s + cpu.system_s;
        assert!((measured - by_proc).abs() <= 0.025, "getrusage {measured} s, /proc {by_proc} s: {cpu:?}");
        assert!(cpu.wall_s >= measured * 0.95, "{cpu:?}");
        assert!(cpu.percent() <= 100.0 * 1.05, "one thread uses at most one core: {cpu:?}");
    }
}
