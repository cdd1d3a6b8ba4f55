//! The responder's side of throughput tests: each data connection is a sink (the client uploads) or a
//! source (the client downloads), run by the stream engine (`crate::stream`) on a clock shared by the
//! test's streams on this host.
//!
//! A stream's record is stored before its connection is closed or shut down, so when the client has seen
//! every stream end, the responder's report of them is complete. A sink also stops, and stores what it
//! has, when the client asks for the report: the receiver's figure is never lost to a drain that has not
//! finished; so does a source still sending (a client that stopped early asks for the report before the
//! duration is up), so that its count is in the report. In an alternating test, a turn given to the upload pauses the sources, and once their data has
//! arrived the control session confirms it to the client (the `drained-turns` capability): its event loop
//! asks [`BulkState::handover_drained`], which never blocks, at each wake-up while a handover is pending.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use std::net::SocketAddr;
use std::sync::Arc;

use linkperf_core::throughput::{Bins, Flow, StreamRecord};
use linkperf_core::Proto;
use linkperf_proto::StreamHeader;
use socket2::Socket;

use super::Shared;
use crate::cpu::CpuClock;
use crate::stream::{self, end::DRAIN_CAP, Ending, Origin, ReceivePlan, SendPlan, StreamOptions, Turn};
use crate::udp_stream::{self, Coalescing, UdpStream};
use linkperf_proto::TestRequest;

/// How often a stream asks the registry whether its test still runs.
const LIVENESS_EVERY: Duration = Duration::from_millis(250);
/// How long a source may have nothing accepted before it gives up.
const STALL: Duration = Duration::from_secs(10);

/// The shared state of one throughput test on the responder.
#[derive(Debug)]
pub(crate) struct BulkState {
    /// The test's clock origin: the first byte moved by any of its streams.
    pub epoch: Origin,
    /// Records of the streams that have ended.
    pub records: Mutex<Vec<StreamRecord>>,
    /// Bytes per write when sending.
    pub write_bytes: usize,
    /// How long a source sends.
    pub duration: Duration,
    /// The meters' grid (interval and fine bins).
    pub bins: Bins,
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
    /// Set when the client asks for the report: receivers stop and store what they have.
    pub stop: AtomicBool,
    /// The host's counters from the test's request on.
    pub counters: crate::counters::CounterWatch,
    /// Whether download streams may send now (always, unless the directions alternate).
    pub download_turn: Turn,
    /// Whether the directions alternate.
    pub alternating: bool,
    /// When the turn passed to the upload, until that handover is confirmed (the sources drained).
    pub handover: Mutex<Option<Instant>>,
    /// The sources' sockets (duplicates), whose queues a handover drains.
    pub sources: Mutex<Vec<Socket>>,
    /// Payload bytes read so far by the test's receiving streams, for the per-interval reports.
    pub received: AtomicU64,
    /// Set when the test is released.
    pub finished: AtomicBool,
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
        // Values out of range here would have been refused by the session's limits; even so, none can make
        // a duration panic or a meter grow without bound (its bins are capped).
        let duration = Duration::try_from_secs_f64(duration_s).unwrap_or(Duration::ZERO);
        let interval = Duration::try_from_secs_f64(interval_s).unwrap_or(Duration::MAX);
        Some(Self {
            epoch: Origin::unset(),
            records: Mutex::new(Vec::new()),
            write_bytes: usize::try_from(write_bytes).unwrap_or(usize::MAX),
            duration,
            bins: Bins::for_run(interval, duration),
            buffer_bytes,
            congestion,
            discard,
            rate_bps,
            coalescing: Coalescing { gso, batch: batch.max(1) as usize },
            datagrams,
            udp_streams: Mutex::new(std::collections::HashSet::new()),
            stop: AtomicBool::new(false),
            counters: crate::counters::CounterWatch::start(local),
            download_turn: Turn::new(!alternating),
            alternating,
            handover: Mutex::new(None),
            sources: Mutex::new(Vec::new()),
            received: AtomicU64::new(0),
            finished: AtomicBool::new(false),
        })
    }

    /// The records so far.
    pub fn records(&self) -> Vec<StreamRecord> {
        self.records.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Gives the turn of an alternating test to `flow`. A turn given to the upload is confirmed to the
    /// client once the download's data has arrived (by the control session, which owns the writes).
    pub fn give_turn(&self, flow: Flow) {
        match flow {
            Flow::Download => self.download_turn.give(),
            Flow::Upload => {
                self.download_turn.take();
                *self.handover.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            }
        }
    }

    /// Without blocking: whether a turn given to the upload can now be confirmed to the client, because
    /// every source's data has arrived (or the drain's bound, [`DRAIN_CAP`], has passed). `true` once per
    /// handover; the caller then sends `Message::Turn { token, flow: Flow::Upload }`. An event loop calls
    /// it at each poll, a few times a millisecond while a handover is pending.
    pub fn handover_drained(&self, now: Instant) -> bool {
        let mut handover = self.handover.lock().unwrap_or_else(|p| p.into_inner());
        let Some(since) = *handover else { return false };
        let sources = self.sources.lock().unwrap_or_else(|p| p.into_inner());
        let sockets: Vec<&Socket> = sources.iter().collect();
        if self.download_turn.is_drained(&sockets) || now.saturating_duration_since(since) >= DRAIN_CAP {
            *handover = None;
            return true;
        }
        false
    }

    /// Whether a turn given to the upload waits for its confirmation.
    pub fn handover_pending(&self) -> bool {
        self.handover.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    }

    fn store(&self, record: StreamRecord) {
        self.records.lock().unwrap_or_else(|p| p.into_inner()).push(record);
    }
}

/// Serves one throughput connection until it ends, then stores its record.
pub(crate) fn serve_stream(socket: &Socket, header: StreamHeader, state: &BulkState, live: impl Fn() -> bool) {
    let options = StreamOptions {
        buffer_bytes: state.buffer_bytes,
        congestion: state.congestion.as_deref(),
        alternating: state.alternating,
    };
    stream::configure(socket, &options);
    let mut liveness = Liveness { live, next: Instant::now() + LIVENESS_EVERY };
    match header.flow {
        Flow::Upload => sink(socket, header.index, state, &mut liveness),
        Flow::Download => source(socket, header.index, state, &mut liveness),
    }
}

/// Whether a test still runs, asking the registry (a lock) at most every [`LIVENESS_EVERY`], and the
/// test's flags (atomics) at every call.
struct Liveness<F: Fn() -> bool> {
    live: F,
    next: Instant,
}

impl<F: Fn() -> bool> Liveness<F> {
    #[inline]
    fn over(&mut self, state: &BulkState, now: Instant) -> bool {
        if state.finished.load(Ordering::Relaxed) {
            return true;
        }
        if now < self.next {
            return false;
        }
        self.next = now + LIVENESS_EVERY;
        !(self.live)()
    }
}

fn sink(socket: &Socket, index: u16, state: &BulkState, liveness: &mut Liveness<impl Fn() -> bool>) {
    let cpu = CpuClock::start();
    let plan = ReceivePlan { index, flow: Flow::Upload, bins: state.bins, discard: state.discard, stall: None };
    let shared = stream::Shared { origin: &state.epoch, moved: Some(&state.received), turn: None };
    let outcome =
        stream::receive(socket, &plan, shared, |now| state.stop.load(Ordering::Relaxed) || liveness.over(state, now));
    state.store(StreamRecord { cpu: Some(cpu.stop()), ..outcome.record });
}

fn source(socket: &Socket, index: u16, state: &BulkState, liveness: &mut Liveness<impl Fn() -> bool>) {
    let cpu = CpuClock::start();
    if let Ok(copy) = socket.try_clone() {
        state.sources.lock().unwrap_or_else(|p| p.into_inner()).push(copy);
    }
    let plan = SendPlan {
        index,
        flow: Flow::Download,
        bins: state.bins,
        write_bytes: state.write_bytes,
        duration: state.duration,
        stall: STALL,
    };
    let turn = state.alternating.then_some(&state.download_turn);
    let shared = stream::Shared { origin: &state.epoch, moved: None, turn };
    // A report asked for while it still sends (the client stopped early: Ctrl-C, a failed stream) stops it
    // too, so that what it sent is in the report rather than lost to a report that cannot wait for it.
    let outcome =
        stream::send(socket, &plan, shared, |now| state.stop.load(Ordering::Relaxed) || liveness.over(state, now));
    let completed = matches!(outcome.ending, Ending::Completed);
    let record = StreamRecord { cpu: Some(cpu.stop()), ..outcome.record };
    state.store(record.clone());
    // Tell the client the data is complete, and let it close first (its close is its "all received").
    if completed {
        stream::end::finish_sending(socket, &record, STALL);
    }
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
        let bins = (state.bins.interval_ns(), state.bins.resolution_ns());
        let stream = UdpStream {
            socket: &socket,
            token,
            header,
            bins,
            coalescing: state.coalescing,
            moved: Some(&state.received),
            turn: Some(state.download_turn.flag()),
            quiet_end: udp_stream::quiet_end(state.bins.interval),
            limit: state.datagrams,
        };
        let cpu = CpuClock::start();
        let record = match header.flow {
            Flow::Upload => stream.receive(state.epoch.cell(), &mut || state.stop.load(Ordering::Relaxed) || !live()),
            Flow::Download => {
                let epoch = *state.epoch.cell().get_or_init(Instant::now);
                let stop = &mut || state.stop.load(Ordering::Relaxed) || !live();
                stream.send(state.write_bytes, state.rate_bps, state.duration, epoch, stop)
            }
        };
        if let Ok(record) = record {
            state.store(StreamRecord { cpu: Some(cpu.stop()), ..record });
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> TestRequest {
        TestRequest::Throughput {
            proto: Proto::Tcp,
            connections: 2,
            write_bytes: 4096,
            duration_s: 1.0,
            interval_s: 0.1,
            buffer_bytes: None,
            congestion: None,
            discard: false,
            rate_bps: None,
            gso: false,
            batch: 1,
            alternating: true,
            datagrams: None,
        }
    }

    fn alternating_state() -> BulkState {
        BulkState::for_request(&request(), None).expect("a throughput request")
    }

    fn pair() -> (Socket, Socket) {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        (Socket::from(a), Socket::from(b))
    }

    #[test]
    fn a_turn_given_to_the_upload_is_confirmed_once_the_sources_drained() {
        let state = alternating_state();
        assert!(!state.download_turn.is_mine(), "an alternating test starts with the upload");
        state.give_turn(Flow::Download);
        assert!(state.download_turn.is_mine());
        assert!(!state.handover_pending(), "a turn given to the download needs no confirmation");
        // A source's socket holds data its peer has not read: the turn has not drained yet.
        let (source, reader) = pair();
        std::io::Write::write_all(&mut &source, &[0u8; 1000]).unwrap();
        state.sources.lock().unwrap().push(source.try_clone().unwrap());
        state.give_turn(Flow::Upload);
        assert!(!state.download_turn.is_mine());
        assert!(state.handover_pending());
        assert!(!state.handover_drained(Instant::now()), "confirmed before the data arrived");
        assert!(state.handover_pending());
        std::io::Read::read_exact(&mut &reader, &mut [0u8; 1000]).unwrap();
        assert!(state.handover_drained(Instant::now()), "not confirmed once the data arrived");
        // Once per handover: nothing more to confirm until the next one.
        assert!(!state.handover_pending());
        assert!(!state.handover_drained(Instant::now()), "a second confirmation");
    }

    #[test]
    fn a_handover_that_cannot_drain_is_confirmed_after_the_drain_bound() {
        let state = alternating_state();
        let (source, _never_read) = pair();
        std::io::Write::write_all(&mut &source, &[0u8; 1000]).unwrap();
        state.sources.lock().unwrap().push(source);
        state.give_turn(Flow::Upload);
        assert!(!state.handover_drained(Instant::now()));
        assert!(state.handover_drained(Instant::now() + DRAIN_CAP), "the client is not kept waiting forever");
    }

    #[test]
    fn hostile_intervals_and_durations_make_a_consistent_state() {
        for (interval_s, duration_s) in [(1e-9, 5.0), (f64::MAX, 1.0), (f64::NAN, f64::INFINITY), (-1.0, -1.0)] {
            let mut request = request();
            if let TestRequest::Throughput { interval_s: i, duration_s: d, .. } = &mut request {
                (*i, *d) = (interval_s, duration_s);
            }
            let state = BulkState::for_request(&request, None).expect("a state");
            assert_eq!(state.bins.interval_ns() % state.bins.resolution_ns(), 0, "{interval_s} {duration_s}");
        }
    }
}
