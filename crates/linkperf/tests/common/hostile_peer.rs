//! The hostile peer's tools: raw wire bytes, a control session driven by hand, a legitimate client running
//! in a loop beside an attack, and a watch over the responder process's resources (/proc).
//!
//! Everything that knows the wire format is in [`wire`], written from docs/protocol.md as raw bytes and JSON
//! (not through `linkperf_proto`'s types), so that an attack can send what those types would refuse to
//! build. A protocol version bump changes [`wire::PROTOCOL_VERSION`], and nothing else unless the messages
//! change shape.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The wire format, as raw bytes and JSON.
pub mod wire {
    use serde_json::{json, Value};

    /// The protocol version the hostile peer speaks: the one line to change when the version is bumped.
    pub const PROTOCOL_VERSION: u16 = 1;

    /// Roles of the preamble.
    pub const CONTROL: u8 = 1;
    pub const DATA: u8 = 2;
    pub const CONNECT_PROBE: u8 = 3;

    /// UDP stream control sequence numbers.
    pub const REGISTER: u64 = u64::MAX;
    pub const ACK: u64 = u64::MAX - 1;
    pub const END: u64 = u64::MAX - 2;

    /// The 12-byte preamble of a connection.
    pub fn preamble(role: u8, token: u32) -> Vec<u8> {
        let mut bytes = b"LKPF".to_vec();
        bytes.extend_from_slice(&PROTOCOL_VERSION.to_be_bytes());
        bytes.extend_from_slice(&[role, 0]);
        bytes.extend_from_slice(&token.to_be_bytes());
        bytes
    }

    /// One control frame: a 4-byte big-endian length, then the JSON body.
    pub fn frame(body: &Value) -> Vec<u8> {
        let body = serde_json::to_vec(body).unwrap();
        let mut bytes = (body.len() as u32).to_be_bytes().to_vec();
        bytes.extend_from_slice(&body);
        bytes
    }

    /// A hello's nonce: the protocol asks for 8 to 128 hex digits (a shorter one ends the session at once,
    /// before any attack could begin).
    pub const NONCE: &str = "00112233445566778899aabbccddeeff";

    /// A client's hello, claiming `hostname`.
    pub fn hello(hostname: &str, nonce: &str) -> Value {
        json!({
            "type": "hello",
            "software": "hostile-peer 0",
            "host": {"hostname": hostname, "kernel": "Linux 0", "cpu_model": "none", "cpus": 1},
            "nonce": nonce,
        })
    }

    /// A throughput test request over `proto` with ordinary values, changed by `overrides`.
    pub fn throughput(proto: &str, overrides: Value) -> Value {
        let mut request = json!({
            "type": "test_request", "test": "throughput", "proto": proto, "connections": 1,
            "write_bytes": 1200, "duration_s": 2.0, "interval_s": 1.0, "buffer_bytes": null,
            "congestion": null, "discard": false, "rate_bps": null, "gso": false, "batch": 1,
            "alternating": false, "datagrams": null,
        });
        merge(&mut request, overrides);
        request
    }

    /// A latency test request over `proto` with ordinary values, changed by `overrides`.
    pub fn latency(proto: &str, overrides: Value) -> Value {
        let mut request = json!({
            "type": "test_request", "test": "latency", "proto": proto, "max_message_bytes": 64,
            "connections": 1, "wait": "block", "planned_duration_s": 5.0,
        });
        merge(&mut request, overrides);
        request
    }

    /// `{"type":"test_done","token"}`.
    pub fn test_done(token: u32) -> Value {
        json!({"type": "test_done", "token": token})
    }

    /// The data header of a throughput stream: 0 the client sends (upload), 1 the responder sends.
    pub fn stream_header(download: bool, index: u16) -> [u8; 4] {
        let index = index.to_be_bytes();
        [u8::from(download), 0, index[0], index[1]]
    }

    /// A UDP datagram header: token, sequence, send time.
    pub fn stream_probe(token: u32, sequence: u64) -> Vec<u8> {
        let mut bytes = token.to_be_bytes().to_vec();
        bytes.extend_from_slice(&sequence.to_be_bytes());
        bytes.extend_from_slice(&0u32.to_be_bytes());
        bytes
    }

    /// The REGISTER datagram of a UDP throughput stream.
    pub fn register(token: u32, download: bool, index: u16) -> Vec<u8> {
        let mut bytes = stream_probe(token, REGISTER);
        bytes.extend_from_slice(&stream_header(download, index));
        bytes
    }

    /// A UDP latency datagram: token, sequence, then padding to `size` bytes.
    pub fn latency_probe(token: u32, sequence: u64, size: usize) -> Vec<u8> {
        let mut bytes = token.to_be_bytes().to_vec();
        bytes.extend_from_slice(&sequence.to_be_bytes());
        bytes.resize(size.max(12), 0);
        bytes
    }

    fn merge(base: &mut Value, overrides: Value) {
        if let (Value::Object(base), Value::Object(overrides)) = (base, overrides) {
            base.extend(overrides);
        }
    }
}

/// A TCP connection to `port` on 127.0.0.1 from `source` (another loopback address, so that the attacker
/// is not the legitimate client's address).
pub fn connect_from(source: Ipv4Addr, port: u16) -> std::io::Result<TcpStream> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    socket.bind(&SocketAddr::from((source, 0)).into())?;
    socket.connect_timeout(&SocketAddr::from(([127, 0, 0, 1], port)).into(), Duration::from_secs(5))?;
    Ok(socket.into())
}

/// The address attackers connect from by default.
pub const ATTACKER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 66);

/// A control session driven by hand.
pub struct Peer {
    pub stream: TcpStream,
}

impl Peer {
    /// A control connection with its preamble sent.
    pub fn control(port: u16, source: Ipv4Addr) -> std::io::Result<Peer> {
        let mut stream = connect_from(source, port)?;
        stream.write_all(&wire::preamble(wire::CONTROL, 0))?;
        Ok(Peer { stream })
    }

    /// Greets (and authenticates with `key`, when the responder asks); returns the welcome.
    pub fn handshake(&mut self, hostname: &str, key: Option<&[u8]>) -> std::io::Result<Value> {
        let nonce = wire::NONCE;
        self.send(&wire::hello(hostname, nonce))?;
        let welcome = self.recv(Duration::from_secs(10))?;
        assert_eq!(welcome["type"], "welcome", "{welcome}");
        if let (Some(key), Some(challenge)) = (key, welcome["challenge"].as_str()) {
            let proof = linkperf_proto::auth::proof(key, linkperf_proto::auth::Side::Client, challenge, nonce);
            self.send(&json!({"type": "auth", "proof": proof}))?;
            let ok = self.recv(Duration::from_secs(10))?;
            assert_eq!(ok["type"], "auth_ok", "{ok}");
        }
        Ok(welcome)
    }

    /// A session from `source`, greeted and authenticated.
    pub fn session(port: u16, source: Ipv4Addr, key: Option<&[u8]>) -> Peer {
        let mut peer = Peer::control(port, source).expect("control connection");
        peer.handshake("hostile-peer", key).expect("handshake");
        peer
    }

    /// Sends one message.
    pub fn send(&mut self, message: &Value) -> std::io::Result<()> {
        self.stream.write_all(&wire::frame(message))
    }

    /// Receives one message, waiting at most `timeout`.
    pub fn recv(&mut self, timeout: Duration) -> std::io::Result<Value> {
        self.stream.set_read_timeout(Some(timeout))?;
        let mut header = [0u8; 4];
        self.stream.read_exact(&mut header)?;
        let length = u32::from_be_bytes(header);
        if length > 16 << 20 {
            return Err(std::io::Error::new(ErrorKind::InvalidData, format!("a {length}-byte frame")));
        }
        let mut body = vec![0u8; length as usize];
        self.stream.read_exact(&mut body)?;
        serde_json::from_slice(&body).map_err(|e| std::io::Error::new(ErrorKind::InvalidData, e))
    }

    /// Sends a test request and returns the reply (`test_accepted` or `error`), skipping interval reports.
    pub fn request(&mut self, request: &Value) -> Value {
        self.send(request).expect("request sent");
        loop {
            let reply = self.recv(Duration::from_secs(10)).expect("a reply to the request");
            if reply["type"] != "interval" {
                return reply;
            }
        }
    }
}

/// What a reply to a test request means for an attack.
#[derive(Debug)]
pub enum Reply {
    /// The test was accepted with this token: the attack goes on.
    Accepted(u32),
    /// The responder refused it, for a reason other than a malformed request (the fix may refuse).
    Refused(String),
}

/// Reads a reply; a request refused as malformed means the hostile peer's JSON is stale, not that the
/// responder defended itself, so that fails the test.
pub fn reply(reply: &Value) -> Reply {
    match reply["type"].as_str() {
        Some("test_accepted") => Reply::Accepted(reply["token"].as_u64().expect("token") as u32),
        Some("error") => {
            assert_ne!(reply["code"], "malformed", "the hostile peer's request is out of date: {reply}");
            Reply::Refused(reply.to_string())
        }
        _ => panic!("unexpected reply {reply}"),
    }
}

/// A key file readable by its owner only, holding a 32-byte key.
pub fn key_file(dir: &Path) -> (PathBuf, Vec<u8>) {
    use std::os::unix::fs::PermissionsExt;
    let key = b"hostile-suite-key-0123456789abcd".to_vec();
    let path = dir.join("key");
    std::fs::write(&path, &key).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    (path, key)
}

/// One sample of a process's resources, from /proc.
#[derive(Debug, Clone, Copy, Default)]
pub struct Sample {
    /// Resident memory (VmRSS), in KiB.
    pub rss_kib: u64,
    /// Threads.
    pub threads: u64,
    /// Open file descriptors.
    pub fds: u64,
    /// CPU time used so far (user + system, all threads, living or ended), in clock ticks of 1/100 s.
    pub cpu_ticks: u64,
}

/// Samples process `pid`; `None` once it is gone (or a zombie).
pub fn sample(pid: u32) -> Option<Sample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|v| v.parse::<u64>().ok())
    };
    if status.lines().any(|l| l.starts_with("State:") && l.contains('Z')) {
        return None;
    }
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64;
    // Fields 14 and 15 of /proc/PID/stat, counted after the command name's closing parenthesis.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    Some(Sample { rss_kib: field("VmRSS:")?, threads: field("Threads:")?, fds, cpu_ticks: ticks(11) + ticks(12) })
}

/// The most a responder may hold while under attack; the responder's own budgets must fit under these.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    pub rss_kib: u64,
    pub threads: u64,
    pub fds: u64,
}

/// Above this the watch kills the responder, so that a memory bomb cannot take the test machine with it
/// (the test then fails: the responder died).
const KILL_RSS_KIB: u64 = 2 << 20;
/// Address space the responder may map: a second fence behind the watch, for an allocation too fast for
/// it. Roomy enough for a few thousand thread stacks.
const ADDRESS_SPACE_BYTES: u64 = 6 << 30;

/// A background watch over a responder process: peak memory, threads and descriptors, and whether it died.
pub struct Watch {
    pid: u32,
    stop: Arc<AtomicBool>,
    peaks: Arc<Mutex<Peaks>>,
    thread: Option<JoinHandle<()>>,
}

/// What a watch saw.
#[derive(Debug, Clone, Copy, Default)]
pub struct Peaks {
    pub rss_kib: u64,
    pub threads: u64,
    pub fds: u64,
    pub samples: u64,
    /// The responder was gone at some sample.
    pub died: bool,
    /// The watch killed it for using more than `KILL_RSS_KIB`.
    pub killed_for_memory: bool,
}

impl Watch {
    /// Fences the responder's address space and starts sampling it every 5 ms.
    pub fn start(pid: u32) -> Watch {
        let fenced = std::process::Command::new("prlimit")
            .args(["--pid", &pid.to_string(), &format!("--as={ADDRESS_SPACE_BYTES}")])
            .status();
        assert!(fenced.is_ok_and(|s| s.success()), "prlimit could not fence the responder's memory");
        let stop = Arc::new(AtomicBool::new(false));
        let peaks = Arc::new(Mutex::new(Peaks::default()));
        let thread = std::thread::spawn({
            let (stop, peaks) = (stop.clone(), peaks.clone());
            move || {
                while !stop.load(Ordering::Relaxed) {
                    if !Self::observe(pid, &peaks) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(5));
                }
            }
        });
        Watch { pid, stop, peaks, thread: Some(thread) }
    }

    /// Takes one sample into `peaks`; `false` once the process is gone.
    fn observe(pid: u32, peaks: &Mutex<Peaks>) -> bool {
        let mut peaks = peaks.lock().unwrap();
        let Some(now) = sample(pid) else {
            peaks.died = true;
            return false;
        };
        peaks.samples += 1;
        peaks.rss_kib = peaks.rss_kib.max(now.rss_kib);
        peaks.threads = peaks.threads.max(now.threads);
        peaks.fds = peaks.fds.max(now.fds);
        if now.rss_kib > KILL_RSS_KIB {
            peaks.killed_for_memory = true;
            let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        }
        true
    }

    /// What was seen so far.
    pub fn peaks(&self) -> Peaks {
        *self.peaks.lock().unwrap()
    }

    /// The current sample, if the responder lives.
    pub fn now(&self) -> Option<Sample> {
        sample(self.pid)
    }

    /// Stops watching and checks the peaks against `bounds` and that the responder is alive.
    pub fn finish(mut self, bounds: Bounds) -> Peaks {
        Self::observe(self.pid, &self.peaks);
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        let peaks = self.peaks();
        eprintln!("responder peaks: {peaks:?}");
        assert!(
            !peaks.killed_for_memory,
            "the responder went past {} MiB and was killed: {peaks:?}",
            KILL_RSS_KIB >> 10
        );
        assert!(!peaks.died, "the responder died: {peaks:?}");
        assert!(peaks.rss_kib <= bounds.rss_kib, "RSS {} KiB > {} KiB", peaks.rss_kib, bounds.rss_kib);
        assert!(peaks.threads <= bounds.threads, "{} threads > {}", peaks.threads, bounds.threads);
        assert!(peaks.fds <= bounds.fds, "{} open fds > {}", peaks.fds, bounds.fds);
        peaks
    }

    /// How busy the responder's busiest thread is over `window`: the share of samples (every 10 ms) in
    /// which it was running or waiting to run. A thread that spins or computes without end is at about 1
    /// whatever the machine's load (a share of CPU time would fall with the load); one that waits for
    /// the network is at about 0.
    pub fn busiest_thread_over(&self, window: Duration) -> f64 {
        let mut runnable: std::collections::HashMap<String, u32> = std::collections::HashMap::new();
        let mut samples = 0u32;
        let end = Instant::now() + window;
        // A share needs a window: this measures, it does not wait for something to happen.
        while Instant::now() < end {
            samples += 1;
            for tid in std::fs::read_dir(format!("/proc/{}/task", self.pid)).into_iter().flatten().flatten() {
                let stat = std::fs::read_to_string(tid.path().join("stat")).unwrap_or_default();
                if stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('R')) {
                    *runnable.entry(tid.file_name().to_string_lossy().into_owned()).or_default() += 1;
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        runnable.values().max().map_or(0.0, |&n| f64::from(n) / f64::from(samples.max(1)))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One run of the legitimate client.
#[derive(Debug, Clone)]
pub struct LegitRun {
    pub started: Instant,
    pub took: Duration,
    pub ok: bool,
    pub stderr: String,
}

/// The real client, `linkperf latency 127.0.0.1 -p PORT`, run again and again beside an attack.
pub struct Legit {
    stop: Arc<AtomicBool>,
    runs: Arc<Mutex<Vec<LegitRun>>>,
    thread: Option<JoinHandle<()>>,
}

impl Legit {
    /// Starts the loop; with `key_file`, the client authenticates.
    pub fn start(port: u16, key_file: Option<&Path>) -> Legit {
        let stop = Arc::new(AtomicBool::new(false));
        let runs = Arc::new(Mutex::new(Vec::new()));
        let key_file = key_file.map(Path::to_path_buf);
        let thread = std::thread::spawn({
            let (stop, runs) = (stop.clone(), runs.clone());
            move || {
                while !stop.load(Ordering::Relaxed) {
                    let run = Self::run_once(port, key_file.as_deref());
                    runs.lock().unwrap().push(run);
                    // Paces the loop (a run takes ~0.02 s): ten tries a second show service throughout
                    // without loading the machine with process starts.
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        });
        Legit { stop, runs, thread: Some(thread) }
    }

    fn run_once(port: u16, key_file: Option<&Path>) -> LegitRun {
        let mut command = crate::common::linkperf();
        command.timeout(LEGIT_BOUND * 3).args(["latency", "127.0.0.1", "-p", &port.to_string()]);
        command.args(["--count", "20", "--warmup", "0", "--no-store", "--no-progress"]);
        if let Some(path) = key_file {
            command.arg("--key-file").arg(path);
        }
        let started = Instant::now();
        let output = command.output();
        let took = started.elapsed();
        match output {
            Ok(output) => LegitRun {
                started,
                took,
                ok: output.status.success(),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            },
            Err(e) => LegitRun { started, took, ok: false, stderr: e.to_string() },
        }
    }

    /// How many runs have ended so far.
    pub fn runs_so_far(&self) -> usize {
        self.runs.lock().unwrap().len()
    }

    /// Waits for at least `n` runs to end (they were served or not), for at most `timeout`.
    pub fn wait_for_runs(&self, n: usize, timeout: Duration) -> bool {
        crate::common::wait_until(timeout, || self.runs_so_far() >= n)
    }

    /// Stops the loop (after the run in progress) and checks that every run was served within
    /// [`LEGIT_BOUND`]; at least `at_least` runs must have ended.
    pub fn finish(mut self, at_least: usize) -> Vec<LegitRun> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        let runs = self.runs.lock().unwrap().clone();
        let summary: Vec<String> =
            runs.iter().map(|r| format!("{}{:.2}s", if r.ok { "" } else { "FAILED " }, r.took.as_secs_f64())).collect();
        eprintln!("legitimate client runs: {summary:?}");
        assert!(runs.len() >= at_least, "only {} legitimate runs ended, expected {at_least}", runs.len());
        for run in &runs {
            assert!(run.ok, "a legitimate client was not served: {}", run.stderr.trim());
            assert!(run.took <= LEGIT_BOUND, "a legitimate client waited {:.1} s", run.took.as_secs_f64());
        }
        runs
    }
}

impl Drop for Legit {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// How long one legitimate run may take under attack. An unloaded run (20 round trips on loopback, one
/// process start) takes about 0.05 s; 5 s leaves a hundredfold margin for a shared, loaded CI machine, and a
/// starved responder (a blocked accept loop, a full session table) takes 20 s or never answers.
pub const LEGIT_BOUND: Duration = Duration::from_secs(5);

/// Whether a connection is closed by the peer, without blocking: end of stream or a reset. Bytes the peer
/// sent (an error frame) are read and dropped.
pub fn closed_by_peer(stream: &mut TcpStream) -> bool {
    let _ = stream.set_nonblocking(true);
    let mut buffer = [0u8; 4096];
    let closed = loop {
        match stream.read(&mut buffer) {
            Ok(0) => break true,
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => break false,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => break true,
        }
    };
    let _ = stream.set_nonblocking(false);
    closed
}

/// A loopback address other than 127.0.0.1, as an `IpAddr`.
pub fn loopback(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}
