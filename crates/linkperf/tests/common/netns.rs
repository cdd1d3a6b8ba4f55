//! Test hosts: two network namespaces joined by a veth pair, with addresses from 198.18.0.0/15 (the range
//! RFC 2544 reserves for benchmarking), optionally shaped by `tbf` to a known rate. Without root and iproute2
//! a test skips, unless LINKPERF_REQUIRE_NETNS=1 (set by CI) makes that a failure.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use super::json;

pub const RESPONDER_ADDRESS: &str = "198.18.0.2";
pub const CLIENT_ADDRESS: &str = "198.18.0.1";

/// Two namespaces joined by a veth pair; deleted (with the pair) when dropped.
pub struct TestNet {
    pub client: String,
    pub responder: String,
    pub client_dev: String,
    pub responder_dev: String,
}

impl TestNet {
    /// Builds the pair, or returns `None` (after saying so) where namespaces cannot be made.
    pub fn create() -> Option<TestNet> {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let id = format!("{}x{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
        let net = TestNet {
            client: format!("lp-{id}-c"),
            responder: format!("lp-{id}-r"),
            client_dev: format!("lpc{}", &id[id.len().saturating_sub(8)..]),
            responder_dev: format!("lpr{}", &id[id.len().saturating_sub(8)..]),
        };
        if !ip(&["netns", "add", &net.client]) {
            assert!(std::env::var_os("LINKPERF_REQUIRE_NETNS").is_none(), "cannot create network namespaces");
            eprintln!("skipped: cannot create network namespaces (needs root and iproute2)");
            return None;
        }
        let (c, r) = (&net.client, &net.responder);
        let (cd, rd) = (&net.client_dev, &net.responder_dev);
        let steps: [&[&str]; 9] = [
            &["netns", "add", r],
            &["link", "add", cd, "type", "veth", "peer", "name", rd],
            &["link", "set", cd, "netns", c],
            &["link", "set", rd, "netns", r],
            &["-n", c, "addr", "add", &format!("{CLIENT_ADDRESS}/30"), "dev", cd],
            &["-n", r, "addr", "add", &format!("{RESPONDER_ADDRESS}/30"), "dev", rd],
            &["-n", c, "link", "set", cd, "up"],
            &["-n", r, "link", "set", rd, "up"],
            &["-n", r, "link", "set", "lo", "up"],
        ];
        for step in steps {
            assert!(ip(step), "ip {step:?} failed");
        }
        Some(net)
    }

    /// Shapes both directions to `rate` (tc syntax, e.g. `1mbit`) with a bucket of `burst` bytes and a deep
    /// queue (1 MB).
    pub fn shape(&self, rate: &str, burst: &str) {
        self.shape_with_queue(rate, burst, "1000000");
    }

    /// Like `shape`, with a queue of `limit` bytes (replacing the shaper a test set before).
    pub fn shape_with_queue(&self, rate: &str, burst: &str, limit: &str) {
        for (ns, dev) in [(&self.client, &self.client_dev), (&self.responder, &self.responder_dev)] {
            let status = Command::new("tc")
                .args(["-n", ns, "qdisc", "replace", "dev", dev, "root", "tbf", "rate", rate])
                .args(["burst", burst, "limit", limit])
                .status()
                .unwrap();
            assert!(status.success(), "tc tbf on {dev}");
        }
    }

    pub fn client_command(&self, args: &[&str]) -> assert_cmd::Command {
        let mut wrapped = assert_cmd::Command::new("ip");
        wrapped.timeout(std::time::Duration::from_secs(60));
        wrapped.args(["netns", "exec", &self.client, super::binary()]).args(args);
        wrapped.env("LINKPERF_DB", super::test_db());
        wrapped
    }
}

impl Drop for TestNet {
    fn drop(&mut self) {
        ip(&["netns", "del", &self.client]);
        ip(&["netns", "del", &self.responder]);
    }
}

pub fn ip(args: &[&str]) -> bool {
    Command::new("ip").args(args).output().map(|o| o.status.success()).unwrap_or(false)
}

/// Runs a client command that announces the longest it can take (`... done within 1 min 5 s` on stderr);
/// checks that it succeeds within that, and returns its JSON result and how long it took in seconds.
pub fn run_bounded(net: &TestNet, args: &[&str]) -> (serde_json::Value, f64) {
    let started = std::time::Instant::now();
    let output = net.client_command(args).arg("--json").output().unwrap();
    let elapsed = started.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(elapsed <= announced_seconds(&stderr), "took {elapsed} s: {stderr}");
    (json(&output.stdout), elapsed)
}

/// Seconds in an announced bound such as `done within 1 min 5 s`.
pub fn announced_seconds(stderr: &str) -> f64 {
    let line = stderr.lines().find(|l| l.contains("done within ")).unwrap_or_else(|| panic!("no bound in {stderr}"));
    let bound = line.rsplit("done within ").next().unwrap();
    let words: Vec<&str> = bound.split_whitespace().collect();
    words
        .chunks(2)
        .map(|pair| {
            let n: f64 = pair[0].parse().unwrap_or_else(|_| panic!("bound {bound}"));
            match pair[1] {
                "h" => n * 3600.0,
                "min" => n * 60.0,
                _ => n,
            }
        })
        .sum()
}
