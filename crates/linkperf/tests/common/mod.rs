//! Helpers shared by the integration tests: the real binary, and a real responder process.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod netns;
pub mod watch;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The path of the built binary.
pub fn binary() -> &'static str {
    env!("CARGO_BIN_EXE_linkperf")
}

/// The results database of this test process: tests never write to the user's own.
pub fn test_db() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("linkperf-tests-{}", std::process::id())).join("results.db")
}

/// A `linkperf` command with a timeout, so that no test can hang, keeping runs in [`test_db`].
pub fn linkperf() -> assert_cmd::Command {
    let mut command = assert_cmd::Command::new(binary());
    command.timeout(Duration::from_secs(60)).env("LINKPERF_DB", test_db());
    command
}

/// The binary as a plain process (to be signalled or killed), keeping runs in [`test_db`].
pub fn spawnable() -> Command {
    let mut command = Command::new(binary());
    command.env("LINKPERF_DB", test_db());
    command
}

/// A `linkperf serve` process; killed when dropped.
pub struct Server {
    pub child: Child,
    pub port: u16,
    pub log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts a responder on 127.0.0.1 with a free port, plus `extra` arguments, in namespace `netns` if set.
    pub fn start_in(netns: Option<&str>, bind: &str, extra: &[&str]) -> Server {
        let mut command = match netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, binary()]);
                c
            }
            None => Command::new(binary()),
        };
        command.args(["serve", "--bind", bind, "--port", "0"]).args(extra);
        let mut child = command.stderr(Stdio::piped()).stdout(Stdio::null()).spawn().expect("serve starts");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr piped")).lines();
        let first = lines.next().expect("serve prints a line").expect("utf-8");
        let port = first
            .split("listening on ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|address| address.rsplit(':').next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("no port in {first:?}"));
        let log = Arc::new(Mutex::new(vec![first]));
        let sink = log.clone();
        std::thread::spawn(move || lines.map_while(Result::ok).for_each(|l| sink.lock().expect("lock").push(l)));
        Server { child, port, log }
    }

    /// Starts a responder on loopback.
    pub fn start(extra: &[&str]) -> Server {
        Self::start_in(None, "127.0.0.1", extra)
    }

    /// The port as an argument.
    pub fn port_arg(&self) -> String {
        self.port.to_string()
    }

    /// Waits until the log holds a line containing `needle`, for at most `timeout`.
    pub fn wait_for_log(&self, needle: &str, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if self.log.lock().expect("lock").iter().any(|l| l.contains(needle)) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Parses a command's stdout as a JSON result.
pub fn json(output: &[u8]) -> serde_json::Value {
    serde_json::from_slice(output).unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(output)))
}

/// Polls `condition` every 10 ms until it holds or `timeout` passes; returns whether it held. Tests wait for
/// a condition this way, never for a fixed time: neither flaky on a slow machine nor slow on a fast one.
pub fn wait_until(timeout: Duration, mut condition: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + timeout;
    loop {
        if condition() {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
