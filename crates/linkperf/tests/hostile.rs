//! The hostile peer (issue 9): each test starts its own `linkperf serve` on 127.0.0.1, plays one attack an
//! unauthenticated peer can make from another loopback address, and checks that
//! - a legitimate client (the real binary, `linkperf latency`, run again and again) is served throughout,
//!   each run within `LEGIT_BOUND`;
//! - the responder stays alive, and its memory, threads and descriptors stay under [`BOUNDS`] (sampled from
//!   /proc every few milliseconds);
//! - nothing reaches a third address that the responder was steered at.
//!
//! Every attack is bounded in time and every wait is a poll with a deadline. The wire bytes come from
//! `hostile_peer::wire`, the one place that knows the protocol's layout.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a failed unwrap is a failed test

mod common;
#[path = "common/hostile_peer.rs"]
mod hostile_peer;

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpStream, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use common::Server;
use hostile_peer::{connect_from, reply, wire, Bounds, Legit, Peer, Reply, Sample, Watch, ATTACKER};
use serde_json::json;

/// What a responder may hold at most while it is attacked. It idles at about 6 MB, 3 threads and 10
/// descriptors; these leave room for the legitimate client's sessions and for the budgets the responder
/// grants (its buffer-memory budget, its thread budget, its cap on connections awaiting a handshake), which
/// must fit under them. An attack that is not bounded goes far past them (1 GB, 2000 threads, every fd).
/// Descriptors: the responder's cap on connections awaiting a handshake is 1024 (docs/security.md), and a
/// flood held open may fill it by design; the rest leaves room for the sessions and data paths of a test.
const BOUNDS: Bounds = Bounds { rss_kib: 256 << 10, threads: 64, fds: 1024 + 256 };
/// A connection that has not completed its handshake is dropped within this long, however slowly it sends.
const HANDSHAKE_BOUND: Duration = Duration::from_secs(10);
/// The most a responder thread may be busy (running or runnable) while the attacker idles: a spinning or
/// endlessly computing thread is busy in nearly every sample, a waiting one in nearly none.
const IDLE_ATTACK_BUSY: f64 = 0.5;

/// A responder under attack, its watch, and the legitimate client's loop.
struct Scene {
    server: Server,
    watch: Watch,
    legit: Legit,
    /// The responder's resources before the attack, with no client.
    idle: Sample,
    /// The directory of the key file of a keyed responder, kept while it runs.
    _key_dir: Option<tempfile::TempDir>,
}

impl Scene {
    /// Starts a responder with `extra` arguments, and the legitimate client (with `key_file`), once served.
    fn start(extra: &[&str], key_file: Option<&Path>) -> Scene {
        let server = Server::start(extra);
        let watch = Watch::start(server.child.id());
        let idle = watch.now().expect("the responder runs");
        let legit = Legit::start(server.port, key_file);
        assert!(legit.wait_for_runs(1, Duration::from_secs(20)), "no legitimate run ended before the attack");
        Scene { server, watch, legit, idle, _key_dir: None }
    }

    /// A responder that requires a key (`--key-file`), whose legitimate client holds it; and the key.
    fn keyed() -> (Scene, Vec<u8>) {
        let dir = tempfile::tempdir().unwrap();
        let (key_path, key) = hostile_peer::key_file(dir.path());
        let scene = Scene::start(&["--key-file", key_path.to_str().unwrap()], Some(&key_path));
        (Scene { _key_dir: Some(dir), ..scene }, key)
    }

    fn port(&self) -> u16 {
        self.server.port
    }

    /// Holds the attack until the legitimate client has tried `n` more times (bounded).
    fn hold_for_legit_runs(&self, n: usize) {
        let target = self.legit.runs_so_far() + n;
        self.legit.wait_for_runs(target, hostile_peer::LEGIT_BOUND * (n as u32 + 1));
    }

    /// Ends the scene: the legitimate client was served throughout (at least `runs` runs) and the
    /// responder stayed within bounds.
    fn check(self, runs: usize) -> (hostile_peer::Peaks, Server, Sample) {
        let Scene { server, watch, legit, idle, .. } = self;
        legit.finish(runs);
        (watch.finish(BOUNDS), server, idle)
    }
}

/// A control session from the attacker's address that asks for `request`; `None` when it is refused.
fn attacker_test(port: u16, request: &serde_json::Value) -> (Peer, Option<u32>) {
    let mut peer = Peer::session(port, ATTACKER, None);
    let token = match reply(&peer.request(request)) {
        Reply::Accepted(token) => Some(token),
        Reply::Refused(reason) => {
            eprintln!("refused: {reason}");
            None
        }
    };
    (peer, token)
}

/// A data connection of test `token` from the attacker, with its 4-byte data header.
fn data_connection(port: u16, token: u32, header: [u8; 4]) -> TcpStream {
    let mut stream = connect_from(ATTACKER, port).expect("data connection");
    stream.write_all(&wire::preamble(wire::DATA, token)).unwrap();
    stream.write_all(&header).unwrap();
    stream
}

/// Asks for a throughput test with a 1 ns interval and, if it is granted, moves data on its connection
/// (`download`: from the responder) for 2 s, a `step` at a time (`false`: the connection ended), while the
/// legitimate client runs.
fn interval_bomb(download: bool, mut step: impl FnMut(&mut TcpStream) -> bool) {
    let scene = Scene::start(&[], None);
    let request = wire::throughput("tcp", json!({"interval_s": 1e-9, "duration_s": 5.0}));
    let (_peer, token) = attacker_test(scene.port(), &request);
    if let Some(token) = token {
        let mut data = data_connection(scene.port(), token, wire::stream_header(download, 0));
        data.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until && !scene.watch.peaks().died && step(&mut data) {}
    }
    scene.hold_for_legit_runs(1);
    scene.check(1);
}

#[test]
fn an_interval_bomb_on_upload_neither_crashes_nor_bloats_the_responder() {
    // One byte every 10 ms: each lands 10^7 one-nanosecond bins further on.
    interval_bomb(false, |data| {
        let sent = data.write_all(&[0]).is_ok();
        std::thread::sleep(Duration::from_millis(10));
        sent
    });
}

#[test]
fn an_interval_bomb_on_download_neither_crashes_nor_bloats_the_responder() {
    let mut buffer = vec![0u8; 64 * 1024];
    interval_bomb(true, |data| !matches!(data.read(&mut buffer), Ok(0)));
}

/// A prime number of nanoseconds near 2^53 that survives the trip through JSON's f64 seconds and back
/// (`(s * 1e9) as u64`): the responder's search for a bin length dividing the interval finds no divisor and
/// walks billions of candidates. (Primality checked by a Miller-Rabin test with the first 12 primes as
/// bases, which is deterministic below 3.3e24.)
const PRIME_INTERVAL_NS: u64 = 9_007_199_254_740_881;

#[test]
fn a_prime_nanosecond_interval_does_not_pin_a_core() {
    let interval_s = PRIME_INTERVAL_NS as f64 / 1e9;
    assert_eq!((interval_s * 1e9) as u64, PRIME_INTERVAL_NS, "the interval must reach the responder whole");
    let scene = Scene::start(&[], None);
    let request = wire::throughput("tcp", json!({"interval_s": interval_s, "duration_s": 5.0}));
    let (_peer, token) = attacker_test(scene.port(), &request);
    let _data = token.map(|token| data_connection(scene.port(), token, wire::stream_header(false, 0)));
    assert_no_thread_kept_busy(&scene.watch);
    scene.check(1);
}

/// Checks over 2 s that no responder thread is kept busy by an attacker that sends nothing.
fn assert_no_thread_kept_busy(watch: &Watch) {
    let busy = watch.busiest_thread_over(Duration::from_secs(2));
    eprintln!("busiest responder thread while the attacker idles: runnable in {:.0} % of samples", busy * 100.0);
    assert!(busy < IDLE_ATTACK_BUSY, "a responder thread is kept busy ({:.0} % of samples)", busy * 100.0);
}

#[test]
fn spin_is_not_granted_to_an_unauthenticated_peer() {
    let scene = Scene::start(&[], None);
    let (_peer, token) = attacker_test(scene.port(), &wire::latency("tcp", json!({"wait": "spin"})));
    let _data = token.map(|token| data_connection(scene.port(), token, 64u32.to_be_bytes()));
    assert_no_thread_kept_busy(&scene.watch);
    scene.check(1);
}

#[test]
fn silent_connections_at_100_per_second_starve_no_client() {
    let scene = Scene::start(&[], None);
    let start = Instant::now();
    let mut held = Vec::new();
    for i in 0..500u32 {
        // Paces the flood: 100 connections per second for 5 s, all held open.
        let due = start + Duration::from_millis(10) * i;
        std::thread::sleep(due.saturating_duration_since(Instant::now()));
        if let Ok(stream) = connect_from(ATTACKER, scene.port()) {
            held.push(stream);
        }
    }
    eprintln!("{} silent connections opened in {:.1} s", held.len(), start.elapsed().as_secs_f64());
    scene.hold_for_legit_runs(1);
    scene.check(2);
}

#[test]
fn a_thousand_silent_connections_at_once_starve_no_client() {
    let scene = Scene::start(&[], None);
    // From ten addresses, so that a cap per address alone does not turn the flood away.
    let held: Vec<TcpStream> = (0..1000u32)
        .filter_map(|i| connect_from(Ipv4Addr::new(127, 0, 0, 66 + (i % 10) as u8), scene.port()).ok())
        .collect();
    eprintln!("{} silent connections held", held.len());
    scene.hold_for_legit_runs(2);
    scene.check(2);
}

/// Sends `bytes` on each connection one byte per second (slower than any per-read timeout can catch)
/// until the responder has closed them all or `HANDSHAKE_BOUND` and a margin have passed; returns how
/// long each one stayed open (`None`: still open at the end).
fn trickle(mut connections: Vec<(TcpStream, Instant)>, bytes: &[u8]) -> Vec<Option<Duration>> {
    let mut closed: Vec<Option<Duration>> = vec![None; connections.len()];
    let end = Instant::now() + HANDSHAKE_BOUND + Duration::from_secs(3);
    for k in 0.. {
        for (i, (stream, opened)) in connections.iter_mut().enumerate() {
            if closed[i].is_some() {
                continue;
            }
            let byte = bytes.get(k).map_or(&[][..], std::slice::from_ref);
            if hostile_peer::closed_by_peer(stream) || stream.write_all(byte).is_err() {
                closed[i] = Some(opened.elapsed());
            }
        }
        if closed.iter().all(Option::is_some) || Instant::now() > end {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let open = closed.iter().filter(|c| c.is_none()).count();
    let slowest = closed.iter().flatten().max().copied().unwrap_or_default();
    eprintln!("{open} of {} trickling connections still open; slowest closed after {slowest:?}", closed.len());
    closed
}

fn assert_all_dropped_in_time(closed: &[Option<Duration>]) {
    let open = closed.iter().filter(|c| c.is_none()).count();
    let slowest = closed.iter().flatten().max().copied().unwrap_or_default();
    assert_eq!(open, 0, "{open} connections still trickling after {HANDSHAKE_BOUND:?}");
    assert!(slowest <= HANDSHAKE_BOUND + Duration::from_secs(1), "a trickling connection lasted {slowest:?}");
}

#[test]
fn a_trickled_preamble_is_dropped_within_the_handshake_deadline() {
    let scene = Scene::start(&[], None);
    let mut bytes = wire::preamble(wire::CONTROL, 0);
    bytes.extend(wire::frame(&wire::hello("slowloris", wire::NONCE)));
    let connections: Vec<(TcpStream, Instant)> =
        (0..64).map(|_| (connect_from(ATTACKER, scene.port()).unwrap(), Instant::now())).collect();
    let closed = trickle(connections, &bytes);
    let (_, server, _) = scene.check(2);
    drop(server);
    assert_all_dropped_in_time(&closed);
}

#[test]
fn a_trickled_auth_frame_is_dropped_within_the_handshake_deadline() {
    let (scene, _key) = Scene::keyed();
    let auth = wire::frame(&json!({"type": "auth", "proof": "00".repeat(32)}));
    let connections: Vec<(TcpStream, Instant)> = (0..64)
        .filter_map(|_| {
            let opened = Instant::now();
            let mut peer = Peer::control(scene.port(), ATTACKER).ok()?;
            peer.send(&wire::hello("slowloris", wire::NONCE)).ok()?;
            // A responder may turn it away at once: then it holds nothing.
            peer.recv(Duration::from_secs(5)).ok()?;
            Some((peer.stream, opened))
        })
        .collect();
    let closed = trickle(connections, &auth);
    scene.check(2);
    assert_all_dropped_in_time(&closed);
}

/// Opens up to `n` sessions from the attacker that send a hello (and nothing more), keeping those the
/// responder answered.
fn hello_then_silence(port: u16, n: usize) -> Vec<Peer> {
    (0..n)
        .filter_map(|_| {
            let mut peer = Peer::control(port, ATTACKER).ok()?;
            peer.send(&wire::hello("idler", wire::NONCE)).ok()?;
            let welcome = peer.recv(Duration::from_secs(5)).ok()?;
            (welcome["type"] == "welcome").then_some(peer)
        })
        .collect()
}

/// 64 sessions from the attacker that say hello and nothing more, held while the legitimate client runs
/// twice: it must be served each time.
fn sixty_four_idlers_beside_the_client(scene: Scene) {
    let held = hello_then_silence(scene.port(), 64);
    eprintln!("{} sessions said hello and fell silent", held.len());
    scene.hold_for_legit_runs(2);
    scene.check(2);
}

/// Without a key a hello is all it takes to hold a slot, so the 64 idlers take every slot; none is evicted
/// before it has idled 1 s (a client between two tests must keep its slot), so the legitimate client waits
/// for the first to become evictable, within its handshake deadline, and is served, not refused.
#[test]
fn hello_then_silence_on_every_slot_locks_no_client_out() {
    sixty_four_idlers_beside_the_client(Scene::start(&[], None));
}

/// With a key, the idlers never authenticate, so they take no slot at all.
#[test]
fn sessions_that_never_authenticate_hold_no_slot() {
    sixty_four_idlers_beside_the_client(Scene::keyed().0);
}

#[test]
fn echo_connections_asking_16_mib_buffers_stay_within_the_memory_budget() {
    const SIZE: usize = 16 << 20;
    let scene = Scene::start(&[], None);
    let request =
        wire::latency("tcp", json!({"max_message_bytes": SIZE, "connections": 64, "planned_duration_s": 10.0}));
    let (_peer, token) = attacker_test(scene.port(), &request);
    let held: Vec<TcpStream> = match token {
        None => Vec::new(),
        Some(token) => std::thread::scope(|s| {
            let attackers: Vec<_> = (0..64)
                .map(|_| {
                    s.spawn(|| {
                        let mut stream = data_connection(scene.port(), token, (SIZE as u32).to_be_bytes());
                        // All of a message but its last byte: the responder holds a whole buffer, never echoes.
                        stream.set_write_timeout(Some(Duration::from_secs(2))).unwrap();
                        let _ = stream.write_all(&vec![7u8; SIZE - 1]);
                        stream
                    })
                })
                .collect();
            attackers.into_iter().map(|a| a.join().unwrap()).collect()
        }),
    };
    eprintln!("{} echo connections held", held.len());
    scene.hold_for_legit_runs(1);
    scene.check(1);
}

#[test]
fn two_thousand_test_requests_in_one_session_stay_within_budgets() {
    let scene = Scene::start(&[], None);
    let mut peer = Peer::session(scene.port(), ATTACKER, None);
    let request = wire::frame(&wire::throughput("tcp", json!({"duration_s": 30.0})));
    let replies = std::thread::scope(|s| {
        let mut writer = peer.stream.try_clone().unwrap();
        s.spawn(move || {
            for _ in 0..2000 {
                if writer.write_all(&request).is_err() {
                    break;
                }
            }
        });
        let (mut accepted, mut refused) = (0, 0);
        let deadline = Instant::now() + Duration::from_secs(20);
        while accepted + refused < 2000 && Instant::now() < deadline {
            match peer.recv(Duration::from_secs(5)) {
                Ok(message) if message["type"] == "interval" => {}
                Ok(message) => match reply(&message) {
                    Reply::Accepted(_) => accepted += 1,
                    Reply::Refused(_) => refused += 1,
                },
                Err(_) => break,
            }
        }
        (accepted, refused)
    });
    eprintln!("2000 requests: {} accepted, {} refused", replies.0, replies.1);
    scene.hold_for_legit_runs(1);
    scene.check(1);
}

/// Asks for a UDP download at `rate_bps` and registers its stream from the same address; returns whether
/// the responder acknowledged it, then ends the test and the session.
fn udp_download_at(port: u16, rate_bps: f64) -> bool {
    let request = wire::throughput("udp", json!({"rate_bps": rate_bps, "write_bytes": 1200, "duration_s": 1.0}));
    let (mut peer, token) = attacker_test(port, &request);
    let Some(token) = token else { return false };
    let socket = UdpSocket::bind((ATTACKER, 0)).unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let acknowledged = common::wait_until(Duration::from_secs(5), || {
        let _ = socket.send_to(&wire::register(token, true, 0), ("127.0.0.1", port));
        let mut buffer = [0u8; 2048];
        matches!(socket.recv(&mut buffer), Ok(n) if n >= 12 && buffer[4..12] == wire::ACK.to_be_bytes())
    });
    let _ = peer.send(&wire::test_done(token));
    acknowledged
}

#[test]
fn tiny_udp_rates_leave_no_thread_behind_and_panic_none() {
    let scene = Scene::start(&[], None);
    for rate in [0.001, 1e-20] {
        let acknowledged = udp_download_at(scene.port(), rate);
        eprintln!("rate {rate}: stream acknowledged: {acknowledged}");
    }
    let (_, server, idle) = scene.check(1);
    // Every test and session has ended: the responder must be back to its idle threads.
    let back = common::wait_until(Duration::from_secs(10), || {
        hostile_peer::sample(server.child.id()).is_some_and(|s| s.threads <= idle.threads)
    });
    let now = hostile_peer::sample(server.child.id());
    eprintln!("threads after the sessions ended: {:?}, idle: {}", now.map(|s| s.threads), idle.threads);
    let log = server.log.lock().unwrap().join("\n");
    assert!(!log.contains("panicked"), "a responder thread panicked:\n{log}");
    assert!(back, "threads did not return to the idle {}: {now:?}", idle.threads);
}

/// The bytes waiting on `socket`, read without blocking.
fn udp_bytes(socket: &UdpSocket) -> usize {
    socket.set_nonblocking(true).unwrap();
    let mut buffer = [0u8; 65536];
    let mut total = 0;
    while let Ok(n) = socket.recv(&mut buffer) {
        total += n;
    }
    total
}

#[test]
fn a_udp_download_registered_from_a_third_address_sends_it_nothing() {
    let scene = Scene::start(&[], None);
    let request = wire::throughput("udp", json!({"connections": 2, "rate_bps": 8e6, "duration_s": 1.0}));
    let mut peer = Peer::session(scene.port(), Ipv4Addr::LOCALHOST, None);
    let Reply::Accepted(token) = reply(&peer.request(&request)) else { panic!("an ordinary UDP download was refused") };
    let third = UdpSocket::bind("127.0.0.3:0").unwrap();
    let own = UdpSocket::bind("127.0.0.1:0").unwrap();
    own.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    third.send_to(&wire::register(token, true, 0), ("127.0.0.1", scene.port())).unwrap();
    // The control peer's own stream, registered after the spoofed one, shows the token was good and marks
    // the end of the observation: it ends with END datagrams after its 1 s.
    let (mut own_bytes, mut ended, mut third_bytes) = (0usize, false, 0usize);
    let mut buffer = [0u8; 65536];
    let mut next_register = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ended && Instant::now() < deadline {
        if own_bytes == 0 && Instant::now() >= next_register {
            own.send_to(&wire::register(token, true, 1), ("127.0.0.1", scene.port())).unwrap();
            next_register += Duration::from_millis(100);
        }
        if let Ok(n) = own.recv(&mut buffer) {
            own_bytes += n;
            ended = n >= 12 && buffer[4..12] == wire::END.to_be_bytes();
        }
        third_bytes += udp_bytes(&third);
    }
    let _ = peer.send(&wire::test_done(token));
    eprintln!("control peer received {own_bytes} B (ended: {ended}); third address received {third_bytes} B");
    assert!(ended, "the control peer's own stream never ended: the observation is void");
    assert_eq!(third_bytes, 0, "the responder sent {third_bytes} B to a third address");
    scene.check(1);
}

/// A UDP latency test of a control peer on 127.0.0.1 beside a stranger on 127.0.0.3 that sends the
/// datagrams `stranger_sends(token, round)` before each of the peer's own probes, until one of the peer's
/// probes comes back: the responder serves datagrams in order, so the stranger's have been dealt with by
/// then. Returns the bytes the stranger received; fails if the peer's probes never came back (the
/// observation would be void).
fn udp_bytes_to_a_stranger(scene: &Scene, stranger_sends: impl Fn(u32, u64) -> Vec<Vec<u8>>) -> usize {
    let mut peer = Peer::session(scene.port(), Ipv4Addr::LOCALHOST, None);
    let Reply::Accepted(token) = reply(&peer.request(&wire::latency("udp", json!({})))) else {
        panic!("an ordinary UDP latency test was refused")
    };
    let stranger = UdpSocket::bind("127.0.0.3:0").unwrap();
    let own = UdpSocket::bind("127.0.0.1:0").unwrap();
    own.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let mut sequence = 0;
    let echoed = common::wait_until(Duration::from_secs(5), || {
        sequence += 1;
        stranger_sends(token, sequence).iter().for_each(|d| drop(stranger.send_to(d, ("127.0.0.1", scene.port()))));
        own.send_to(&wire::latency_probe(token, sequence, 64), ("127.0.0.1", scene.port())).unwrap();
        own.recv(&mut [0u8; 2048]).is_ok()
    });
    let received = udp_bytes(&stranger);
    let _ = peer.send(&wire::test_done(token));
    assert!(echoed, "the control peer's own probes were not echoed: the observation is void");
    received
}

#[test]
fn udp_echoes_are_not_reflected_to_a_third_address() {
    let scene = Scene::start(&[], None);
    // The test's own token: a sniffed one, used from a third address.
    let third_bytes = udp_bytes_to_a_stranger(&scene, |token, sequence| vec![wire::latency_probe(token, sequence, 64)]);
    assert_eq!(third_bytes, 0, "the responder echoed {third_bytes} B to a third address");
    scene.check(1);
}

#[test]
fn forged_udp_datagrams_get_no_answer() {
    let scene = Scene::start(&[], None);
    let answered = udp_bytes_to_a_stranger(&scene, |token, _| {
        vec![
            wire::latency_probe(token ^ 1, 0, 64),
            wire::latency_probe(0, 0, 64),
            wire::register(token ^ 1, true, 0),
            wire::stream_probe(token ^ 1, wire::END),
            vec![1, 2, 3],
            Vec::new(),
            vec![0xff; 1400],
        ]
    });
    assert_eq!(answered, 0, "the responder answered {answered} B of forged datagrams");
    scene.check(1);
}

#[test]
fn host_names_reach_the_log_neither_raw_nor_whole() {
    let scene = Scene::start(&[], None);
    let forged = "linkperf serve: session 1 from 203.0.113.9:1 (forged): 0 tests";
    let long = format!("hostile-long-{}", "A".repeat(65_000));
    for name in std::iter::once(format!("hostile-newline\n{forged}")).chain(std::iter::repeat_n(long, 20)) {
        // The responder may refuse such a hello: the session ends either way.
        let mut peer = Peer::control(scene.port(), ATTACKER).unwrap();
        peer.send(&wire::hello(&name, wire::NONCE)).unwrap();
        let _ = peer.recv(Duration::from_secs(5));
    }
    // The sessions ended as their connections dropped; their log lines (whatever they hold) follow.
    let logged = |needle: &str| scene.server.log.lock().unwrap().iter().filter(|l| l.contains(needle)).count();
    common::wait_until(Duration::from_secs(5), || logged("hostile-newline") >= 1 && logged("hostile-long") >= 20);
    let (_, server, _) = scene.check(1);
    let log = server.log.lock().unwrap().clone();
    let bytes: usize = log.iter().map(String::len).sum();
    eprintln!("{} log lines, {bytes} bytes", log.len());
    assert!(!log.iter().any(|l| l.starts_with(forged)), "a host name forged a log line");
    let longest = log.iter().map(String::len).max().unwrap_or(0);
    assert!(longest <= 1024, "a log line of {longest} bytes");
    assert!(bytes <= 256 << 10, "{bytes} bytes of log for 21 sessions");
}

#[test]
fn host_facts_are_not_disclosed_before_authentication() {
    let dir = tempfile::tempdir().unwrap();
    let (key_path, _key) = hostile_peer::key_file(dir.path());
    let server = Server::start(&["--key-file", key_path.to_str().unwrap()]);
    let mut peer = Peer::control(server.port, ATTACKER).unwrap();
    let welcome = peer.handshake("curious", None).unwrap();
    let text = welcome.to_string();
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut strings = Vec::new();
    string_leaves(&welcome, &mut strings);
    assert!(!strings.contains(&hostname.trim()), "the welcome names the host before authentication: {text}");
    assert!(!text.contains(release.trim()), "the welcome names the kernel before authentication: {text}");
    assert!(welcome["challenge"].is_string(), "a keyed responder must challenge: {text}");
}

/// Every string in a JSON document.
fn string_leaves<'a>(value: &'a serde_json::Value, out: &mut Vec<&'a str>) {
    match value {
        serde_json::Value::String(s) => out.push(s),
        serde_json::Value::Array(items) => items.iter().for_each(|v| string_leaves(v, out)),
        serde_json::Value::Object(map) => map.values().for_each(|v| string_leaves(v, out)),
        _ => {}
    }
}

/// Reads what the responder sends until it closes the connection; `None` if it is still open after 5 s.
fn read_until_closed(stream: &mut TcpStream) -> Option<Vec<u8>> {
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut received = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return Some(received),
            Ok(n) => received.extend_from_slice(&buffer[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Some(received),
            Err(_) => return None,
        }
    }
}

#[test]
fn malformed_input_closes_only_the_offending_connection() {
    let scene = Scene::start(&[], None);
    let mut other_version = wire::preamble(wire::CONTROL, 0);
    other_version[4..6].copy_from_slice(&99u16.to_be_bytes());
    let mut unknown_role = wire::preamble(wire::CONTROL, 0);
    unknown_role[6] = 77;
    let control = wire::preamble(wire::CONTROL, 0);
    let hello = wire::frame(&wire::hello("malformed", wire::NONCE));
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("http", b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
        ("other version", other_version),
        ("unknown role", unknown_role),
        ("4 GiB frame", [&control[..], &u32::MAX.to_be_bytes()].concat()),
        ("not json", [&control[..], &3u32.to_be_bytes(), b"{{{"].concat()),
        ("request before hello", [&control[..], &wire::frame(&wire::latency("tcp", json!({})))].concat()),
        ("unknown message", [&control[..], &hello, &wire::frame(&json!({"type": "no_such"}))].concat()),
        ("unknown token", [&wire::preamble(wire::DATA, 0x0bad_0bad)[..], &[0, 0, 0, 64]].concat()),
        ("unknown probe token", wire::preamble(wire::CONNECT_PROBE, 0x0bad_0bad)),
    ];
    for round in 0..20 {
        for (name, bytes) in &cases {
            let mut stream = connect_from(ATTACKER, scene.port()).unwrap();
            stream.write_all(bytes).unwrap();
            let received = read_until_closed(&mut stream);
            assert!(received.is_some(), "round {round}, {name}: the responder kept the connection open");
            let received = received.unwrap();
            if *name == "other version" {
                let text = String::from_utf8_lossy(&received);
                assert!(text.contains("version_mismatch"), "{name}: {text}");
            }
            if *name == "unknown probe token" {
                assert!(received.is_empty(), "{name}: a probe of no test was answered {received:?}");
            }
        }
    }
    scene.hold_for_legit_runs(1);
    scene.check(2);
}

#[test]
fn wrong_and_replayed_proofs_are_refused() {
    let (scene, key) = Scene::keyed();
    let nonce = wire::NONCE;
    // A proof sniffed from an earlier session answers that session's challenge, not a new one.
    let mut sniffed = Peer::control(scene.port(), ATTACKER).unwrap();
    sniffed.send(&wire::hello("sniffed", nonce)).unwrap();
    let challenge = sniffed.recv(Duration::from_secs(5)).unwrap()["challenge"].as_str().unwrap().to_string();
    let replayed = linkperf_proto::auth::proof(&key, linkperf_proto::auth::Side::Client, &challenge, nonce);
    for proof in [replayed, "00".repeat(32), "not hex".into(), String::new()] {
        let mut peer = Peer::control(scene.port(), ATTACKER).unwrap();
        peer.send(&wire::hello("forger", nonce)).unwrap();
        let welcome = peer.recv(Duration::from_secs(5)).unwrap();
        assert_ne!(welcome["challenge"].as_str(), Some(challenge.as_str()), "a challenge was repeated");
        peer.send(&json!({"type": "auth", "proof": proof})).unwrap();
        let answer = peer.recv(Duration::from_secs(5)).unwrap();
        assert_eq!(answer["code"], "auth_failed", "proof {proof:?}: {answer}");
        assert!(read_until_closed(&mut peer.stream).is_some(), "the session stayed open after auth_failed");
        // Nothing is served on the refused session.
        assert!(peer.send(&wire::latency("tcp", json!({}))).is_err() || peer.recv(Duration::from_secs(1)).is_err());
    }
    scene.hold_for_legit_runs(1);
    scene.check(2);
}

#[test]
fn a_hostile_responders_error_text_reaches_the_terminal_escaped() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let responder = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut preamble = [0u8; 12];
        stream.read_exact(&mut preamble).unwrap();
        let mut length = [0u8; 4];
        stream.read_exact(&mut length).unwrap();
        stream.read_exact(&mut vec![0u8; u32::from_be_bytes(length) as usize]).unwrap();
        let message = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{1b}[31mred\r\nerror: forged line";
        let error = wire::frame(&json!({"type": "error", "code": "internal", "message": message}));
        stream.write_all(&error).unwrap();
    });
    let output = common::linkperf()
        .args(["latency", "127.0.0.1", "-p", &port.to_string(), "--count", "1", "--no-store", "--no-progress"])
        .output()
        .unwrap();
    responder.join().unwrap();
    let printed = [output.stdout, output.stderr].concat();
    let text = String::from_utf8_lossy(&printed);
    assert!(!output.status.success(), "a refused run must fail");
    assert!(!printed.contains(&0x1b), "the client printed an escape sequence from the responder: {text:?}");
    assert!(!printed.contains(&b'\r'), "the client printed a carriage return from the responder: {text:?}");
    assert!(!text.lines().any(|l| l.starts_with("error: forged line")), "the responder forged a line: {text:?}");
}

#[test]
fn junk_connections_are_logged_at_a_bounded_rate() {
    let scene = Scene::start(&[], None);
    let before = scene.server.log.lock().unwrap().len();
    let started = Instant::now();
    for _ in 0..1000 {
        let mut stream = connect_from(ATTACKER, scene.port()).unwrap();
        stream.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
        read_until_closed(&mut stream);
    }
    let seconds = started.elapsed().as_secs_f64();
    scene.hold_for_legit_runs(1);
    let (_, server, _) = scene.check(1);
    let lines = server.log.lock().unwrap().len() - before;
    eprintln!("1000 junk connections in {seconds:.1} s wrote {lines} log lines");
    // A summary line a second, or a few lines and then a note of how many were suppressed, stays far below.
    assert!(lines <= 100, "{lines} log lines for 1000 junk connections in {seconds:.1} s");
}
