//! The responder's side of throughput tests: each data connection is a sink (the client uploads) or a
//! source (the client downloads), measured with a `StreamMeter` on a clock shared by the test's streams.
//!
//! A stream's record is stored before its connection is closed or shut down, so when the client has seen
//! every stream end, the responder's report of them is complete.

use std::io::{ErrorKind, Read, Write};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use linkperf_core::throughput::{End, Flow, StreamMeter, StreamRecord};
use linkperf_core::Proto;
use linkperf_proto::StreamHeader;
use socket2::Socket;

use super::echo::is_timeout;
use super::Shared;
use crate::cpu::CpuClock;
use crate::throughput::Drain;
use crate::udp_stream::{self, Coalescing, UdpStream};
use linkperf_proto::TestRequest;

/// How often a blocked stream checks that its test still runs.
const TICK: Duration = Duration::from_millis(250);
/// How often a paused stream checks whether its turn has come.
pub(crate) const TURN_POLL: Duration = Duration::from_micros(200);
/// How long a source waits for the client to close after the data, before closing itself.
const CLOSE_WAIT: Duration = Duration::from_secs(5);

/// The shared state of one throughput test on the responder.
#[derive(Debug)]
pub(crate) struct BulkState {
    /// The test's clock origin: the first byte moved by any of its streams.
    pub epoch: OnceLock<Instant>,
    /// Records of the streams that have ended.
    pub records: Mutex<Vec<StreamRecord>>,
    /// Bytes per write when sending.
    pub write_bytes: usize,
    /// How long a source sends.
    pub duration: Duration,
    /// Interval length for the meters.
    pub interval_ns: u64,
    /// Socket buffer size to request.
    pub buffer_bytes: Option<u64>,
    /// TCP congestion control for sending sockets.
    pub congestion: Option<String>,
    /// Receive with `MSG_TRUNC` (discard in the kernel).
    pub discard: bool,
    /// UDP: the rate at which each stream sends, in bits per second (`None`: unpaced).
    pub rate_bps: Option<f64>,
    /// UDP: batching and offloads.
    pub coalescing: Coalescing,
    /// UDP: most datagrams a stream sends (a burst), or `None`.
    pub datagrams: Option<u64>,
    /// UDP: the stream numbers already set up (registrations are repeated until acknowledged).
    pub udp_streams: Mutex<std::collections::HashSet<u16>>,
    /// Set when the client asks for the report: UDP receivers stop even if an END was lost.
    pub stop: std::sync::atomic::AtomicBool,
    /// The host's counters from the test's request on.
    pub counters: crate::counters::CounterWatch,
    /// Whether download streams may send now (always, unless the directions alternate).
    pub download_turn: std::sync::atomic::AtomicBool,
    /// Payload bytes read so far by the test's receiving streams, for the per-interval reports.
    pub received: std::sync::atomic::AtomicU64,
    /// Set when the test is released.
    pub finished: std::sync::atomic::AtomicBool,
}

impl BulkState {
    /// The state of a throughput test asked for by `request`; `None` for other tests. `local` is the local
    /// address of the control connection, which names the interface whose counters are watched.
    pub fn for_request(request: &TestRequest, local: Option<SocketAddr>) -> Option<Self> {
        let TestRequest::Throughput {
            write_bytes,
            duration_s,
            interval_s,
            buffer_bytes,
            congestion,
            discard,
            rate_bps,
            gso,
            batch,
            alternating,
            datagrams,
            ..
        } = request.clone()
        else {
            return None;
        };
        Some(Self {
            epoch: OnceLock::new(),
            records: Mutex::new(Vec::new()),
            write_bytes: write_bytes as usize,
            duration: Duration::from_secs_f64(duration_s),
            interval_ns: (interval_s * 1e9) as u64,
            buffer_bytes,
            congestion,
            discard,
            rate_bps,
            coalescing: Coalescing { gso, batch: batch.max(1) as usize },
            datagrams,
            udp_streams: Mutex::new(std::collections::HashSet::new()),
            stop: std::sync::atomic::AtomicBool::new(false),
            counters: crate::counters::CounterWatch::start(local),
            download_turn: std::sync::atomic::AtomicBool::new(!alternating),
            received: std::sync::atomic::AtomicU64::new(0),
            finished: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// The records so far.
    pub fn records(&self) -> Vec<StreamRecord> {
        self.records.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn resolution_ns(&self) -> u64 {
        linkperf_core::throughput::resolution_ns(self.interval_ns, self.duration.as_nanos() as u64)
    }

    fn since_epoch(&self, now: Instant) -> u64 {
        now.saturating_duration_since(*self.epoch.get_or_init(|| now)).as_nanos() as u64
    }

    fn store(&self, record: StreamRecord) {
        self.records.lock().unwrap_or_else(|p| p.into_inner()).push(record);
    }
}

/// Serves one throughput connection until it ends, then stores its record.
pub(crate) fn serve_stream(socket: &Socket, header: StreamHeader, state: &BulkState, live: impl Fn() -> bool) {
    crate::throughput::configure(socket, state.buffer_bytes, state.congestion.as_deref());
    match header.flow {
        Flow::Upload => sink(socket, header.index, state, live),
        Flow::Download => source(socket, header.index, state, live),
    }
}

fn sink(socket: &Socket, index: u16, state: &BulkState, live: impl Fn() -> bool) {
    let cpu = CpuClock::start();
    let mut meter = StreamMeter::new(index, Flow::Upload, End::Receiver, state.interval_ns, state.resolution_ns());
    let mut drain = Drain::new(state.discard);
    let _ = socket.set_read_timeout(Some(TICK));
    loop {
        match drain.receive(socket) {
            Ok(0) => break,
            Ok(n) => {
                meter.record(n as u64, state.since_epoch(Instant::now()));
                state.received.fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) && live() => {}
            Err(_) => break,
        }
    }
    state.store(StreamRecord { cpu: Some(cpu.stop()), ..meter.finish(None) });
}

fn source(mut socket: &Socket, index: u16, state: &BulkState, live: impl Fn() -> bool) {
    let cpu = CpuClock::start();
    let mut meter = StreamMeter::new(index, Flow::Download, End::Sender, state.interval_ns, state.resolution_ns());
    let buffer: Vec<u8> = (0..state.write_bytes).map(|i| (i % 251) as u8).collect();
    let _ = socket.set_write_timeout(Some(TICK));
    let start = Instant::now();
    let _ = state.since_epoch(start);
    while start.elapsed() < state.duration {
        if !state.download_turn.load(Ordering::Relaxed) {
            std::thread::sleep(TURN_POLL);
            continue;
        }
        match socket.write(&buffer) {
            Ok(n) => meter.record(n as u64, state.since_epoch(Instant::now())),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if is_timeout(&e) && live() => {}
            Err(_) => break,
        }
    }
    state.store(StreamRecord { cpu: Some(cpu.stop()), ..meter.finish(crate::tcp_info::tcp_stats(socket)) });
    // Tell the client the data is complete, then let it close first (its close is its "all received").
    let _ = socket.shutdown(std::net::Shutdown::Write);
    let _ = socket.set_read_timeout(Some(CLOSE_WAIT));
    let _ = socket.read(&mut [0u8; 64]);
}

/// Sets up a UDP stream asked for by a REGISTER datagram that reached the shared socket: a socket of its
/// own on the responder's address, connected to the client, served on a thread of its own. Repeated
/// registrations of a stream already set up are answered by that stream's socket.
pub(crate) fn register_udp(
    local: SocketAddr,
    client: SocketAddr,
    token: u32,
    header: StreamHeader,
    shared: &Arc<Shared>,
) {
    let Some(state) = shared.registry.bulk_of(token, Proto::Udp, Instant::now()) else { return };
    let first_time = state.udp_streams.lock().unwrap_or_else(|p| p.into_inner()).insert(header.index);
    if !first_time || shared.registry.attach_stream(token, Proto::Udp, Instant::now(), None).is_err() {
        return;
    }
    let socket = match udp_stream::accept(local, client) {
        Ok(socket) => socket,
        Err(e) => return super::echo::log(shared, &format!("udp stream for {client}: {e}")),
    };
    let shared = shared.clone();
    let _ = super::spawn_named("udp-stream", move || {
        udp_stream::acknowledge(&socket, token);
        let live = || shared.registry.is_live(token, Proto::Udp, Instant::now());
        let bins = (state.interval_ns, state.resolution_ns());
        let stream = UdpStream {
            socket: &socket,
            token,
            header,
            bins,
            coalescing: state.coalescing,
            moved: Some(&state.received),
            turn: Some(&state.download_turn),
            quiet_end: udp_stream::quiet_end(Duration::from_nanos(state.interval_ns)),
            limit: state.datagrams,
        };
        let cpu = CpuClock::start();
        let record = match header.flow {
            Flow::Upload => stream.receive(&state.epoch, &mut || state.stop.load(Ordering::Relaxed) || !live()),
            Flow::Download => {
                let epoch = *state.epoch.get_or_init(Instant::now);
                stream.send(state.write_bytes, state.rate_bps, state.duration, epoch, &mut || !live())
            }
        };
        if let Ok(record) = record {
            state.store(StreamRecord { cpu: Some(cpu.stop()), ..record });
        }
    });
}
