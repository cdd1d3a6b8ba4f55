//! The throughput driver: for each phase (direction) and write size, opens the streams, moves data for the
//! duration, collects both ends' records and turns them into series.
//!
//! Upload streams are written here and read by the responder; download streams the other way round. The
//! receiver's figure is the goodput; the sender's is reported beside it. Definitions: docs/metrics.md.

use std::io::{ErrorKind, Read, Write};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use linkperf_core::link_model::{Framing, ETHERNET_OVERHEAD_BYTES};
use linkperf_core::run_result::ThroughputSeries;
use linkperf_core::spec::LinkSpec;
use linkperf_core::throughput::{End, Flow, StreamMeter, StreamRecord};
use linkperf_core::throughput_series::{combine, cpu_warning, link_efficiency, TestCounters};
use linkperf_core::{Direction, Proto, ThroughputSpec};
use linkperf_proto::{Preamble, Role, StreamHeader, TestRequest};
use socket2::Socket;
use std::net::UdpSocket;

use crate::control::{IntervalWatch, Report};
use crate::cpu::CpuClock;
use crate::observer::{Measurement, Observer, ProgressUnit};
use crate::run::MeasuredRun;
use crate::{ControlClient, NetError, Target};

/// How often the progress bar moves.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);
/// Bytes a receiving stream copies out per read. Small on purpose: the kernel holds the socket's lock while
/// it copies, and meanwhile cannot queue arriving segments or send ACKs; 32 KiB reads moved 1.4x more TCP
/// over loopback here than 1 MiB reads (42 vs 30 Gbit/s, bench/throughput.sh).
const COPY_CHUNK_BYTES: usize = 32 * 1024;
/// Bytes a discarding receive (`MSG_TRUNC`) drops per call: nothing is copied, so larger is cheaper.
const DISCARD_CHUNK_BYTES: usize = 1024 * 1024;
/// How long to wait for the responder's report once a stream has failed.
const REPORT_AFTER_FAILURE: Duration = Duration::from_secs(2);
/// How long a stream may make no progress before the run fails.
const STALL_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a sending stream's write blocks before its loop looks at the clock again.
const WRITE_TICK: Duration = Duration::from_millis(250);

/// Runs a throughput test.
pub fn run_throughput(
    target: &Target,
    key: Option<&[u8]>,
    spec: &ThroughputSpec,
    observer: &dyn Observer,
) -> Result<MeasuredRun<ThroughputSeries>, NetError> {
    if let (Proto::Udp, Target::Unix(_)) = (spec.proto, target) {
        return Err(NetError::Invalid("--proto udp needs a host, not a Unix socket path".into()));
    }
    check_udp_sizes(target, spec)?;
    let mut control = ControlClient::connect(target, key, STALL_TIMEOUT)?;
    let mut run = MeasuredRun::of(&control);
    for &phase in &spec.phases {
        for &size in &spec.sizes_bytes {
            observer.phase(
                &format!("{} {}", phase.name(), linkperf_core::units::format_size(size)),
                (spec.duration_s * 1000.0) as u64,
                ProgressUnit::Milliseconds,
            );
            if run_trial(&mut run, &mut control, (target, spec), (phase, size), observer)?.is_none() {
                return Ok(run);
            }
        }
    }
    Ok(run)
}

/// Runs one phase at one write size on `control`'s session and adds its series (and CPU warnings) to
/// `run`. Returns where its series start in `run.series`, or `None` when the run must stop: the reason is
/// then in `run.error`, beside what was measured. Fails outright only when the run has measured nothing.
pub(crate) fn run_trial(
    run: &mut MeasuredRun<ThroughputSeries>,
    control: &mut ControlClient,
    (target, spec): (&Target, &ThroughputSpec),
    (phase, size): (Direction, u64),
    observer: &dyn Observer,
) -> Result<Option<usize>, NetError> {
    let start = run.series.len();
    match measure(control, target, spec, phase, size, observer) {
        Ok(series) => {
            for warning in series.iter().filter_map(cpu_warning) {
                if !run.warnings.contains(&warning) {
                    run.warnings.push(warning);
                }
            }
            series.iter().for_each(|s| observer.measured(Measurement::Throughput(s)));
            run.series.extend(series);
            Ok(Some(start))
        }
        Err((series, error))
            if run.series.is_empty() && series.is_empty() && !matches!(error, NetError::Interrupted) =>
        {
            Err(error)
        }
        Err((series, error)) => {
            run.series.extend(series);
            run.error = Some(error);
            Ok(None)
        }
    }
}

/// Refuses UDP datagram sizes that do not fit one datagram over the target's IP version (65507 bytes of
/// payload over IPv4, 65527 over IPv6).
fn check_udp_sizes(target: &Target, spec: &ThroughputSpec) -> Result<(), NetError> {
    use linkperf_proto::limits::{MAX_UDP_PAYLOAD_IPV4, MAX_UDP_PAYLOAD_IPV6};
    if spec.proto != Proto::Udp {
        return Ok(());
    }
    let (largest, family) =
        if target.is_ipv6() { (MAX_UDP_PAYLOAD_IPV6, "IPv6") } else { (MAX_UDP_PAYLOAD_IPV4, "IPv4") };
    match spec.sizes_bytes.iter().find(|&&s| s > largest) {
        Some(big) => {
            Err(NetError::Invalid(format!("a UDP datagram carries at most {largest} bytes over {family}, not {big}")))
        }
        None => Ok(()),
    }
}

/// Opens the control session of a run of UDP trials (sweeps, searches) of `trial`, after checking the
/// target and the sizes.
pub(crate) fn open_udp_trials(
    target: &Target,
    key: Option<&[u8]>,
    trial: &ThroughputSpec,
) -> Result<(ControlClient, MeasuredRun<ThroughputSeries>), NetError> {
    if let Target::Unix(_) = target {
        return Err(NetError::Invalid("UDP trials need a host, not a Unix socket path".into()));
    }
    check_udp_sizes(target, trial)?;
    let control = ControlClient::connect(target, key, STALL_TIMEOUT)?;
    let run = MeasuredRun::of(&control);
    Ok((control, run))
}

type Failure = (Vec<ThroughputSeries>, NetError);

/// One phase at one write size: a test of its own on the responder.
fn measure(
    control: &mut ControlClient,
    target: &Target,
    spec: &ThroughputSpec,
    phase: Direction,
    size: u64,
    observer: &dyn Observer,
) -> Result<Vec<ThroughputSeries>, Failure> {
    let flows = phase.flows();
    let token = control
        .request(TestRequest::Throughput {
            proto: spec.proto,
            connections: u32::from(spec.streams) * flows.len() as u32,
            write_bytes: size,
            duration_s: spec.duration_s,
            interval_s: spec.interval_s,
            buffer_bytes: spec.buffer_bytes,
            congestion: spec.congestion.clone(),
            discard: spec.discard,
            rate_bps: spec.stream_rate_bps(size),
            gso: spec.gso,
            batch: spec.batch,
            alternating: phase == Direction::Alternating,
            datagrams: spec.datagrams,
        })
        .map_err(|e| (Vec::new(), e))?;
    let headers: Vec<StreamHeader> = flows
        .iter()
        .flat_map(|&flow| {
            (0..spec.streams).map(move |i| StreamHeader { flow, index: i + flow_offset(flow, spec.streams) })
        })
        .collect();
    let sockets = headers
        .iter()
        .map(|header| open_stream(target, token, *header, spec))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| (Vec::new(), e))?;
    let token_and_sockets = (token, sockets.as_slice());
    let counter_watch = crate::counters::CounterWatch::start(control.local_address());
    // The responder reports what its receiving (upload) streams read in each interval as it goes.
    let interval_watch = match phase.flows().contains(&Flow::Upload) {
        true => Some(control.watch_intervals().map_err(|e| (Vec::new(), e))?),
        false => None,
    };
    let turns = (phase == Direction::Alternating).then_some(&mut *control);
    let (local, error, interval_watch) =
        run_streams(token_and_sockets, &headers, (spec, size), (turns, interval_watch), observer);
    if let Some(interval_watch) = interval_watch {
        control.resume(interval_watch);
    }
    let client_counters = counter_watch.delta();
    let wait = if error.is_some() { REPORT_AFTER_FAILURE } else { crate::control::CONTROL_TIMEOUT };
    let mut error = error;
    let remote = control.report_within(token, wait).unwrap_or_else(|e| {
        // Keep this end's measurements: the responder's are lost with the path to it.
        error = error.take().or(Some(e));
        Report { streams: Vec::new(), counters: None }
    });
    let _ = control.done(token);
    let counters = TestCounters { client: client_counters, responder: remote.counters };
    let mut series = combine(spec, phase, size, (&local, &remote.streams), &counters, error.is_none());
    if let Some(framing) = framing(spec, target, counter_watch.interface()) {
        let mss = series.iter().find_map(|s| s.tcp.as_ref()).map(|t| t.mss_bytes);
        for sum in series.iter_mut().filter(|s| s.stream.is_none()) {
            sum.link = link_efficiency(spec, &framing, sum, mss);
        }
    }
    match error {
        None => Ok(series),
        Some(error) => Err((series, error)),
    }
}

/// Download streams are numbered after the upload ones, so every stream of a test has its own number.
fn flow_offset(flow: Flow, streams: u16) -> u16 {
    match flow {
        Flow::Upload => 0,
        Flow::Download => streams,
    }
}

/// A stream's socket on the client.
enum StreamSocket {
    /// TCP or Unix.
    Stream(Socket),
    /// UDP, registered with the responder.
    Datagram(UdpSocket),
}

fn open_stream(
    target: &Target,
    token: u32,
    header: StreamHeader,
    spec: &ThroughputSpec,
) -> Result<StreamSocket, NetError> {
    if let (Proto::Udp, Target::Inet(address)) = (spec.proto, target) {
        return crate::udp_stream::connect(*address, token, header).map(StreamSocket::Datagram);
    }
    let socket = target.connect_stream(STALL_TIMEOUT)?;
    configure(&socket, spec.buffer_bytes, spec.congestion.as_deref());
    let mut opening = Preamble::new(Role::Data, token).encode().to_vec();
    opening.extend_from_slice(&header.encode());
    (&socket).write_all(&opening).map_err(|e| NetError::io("opening a throughput stream", e))?;
    Ok(StreamSocket::Stream(socket))
}

/// Where a receiving stream puts what it reads: a buffer it copies into, or with `discard` nowhere, by
/// receiving with `MSG_TRUNC`, which on TCP drops up to the buffer's length in the kernel without copying
/// and returns how many bytes it dropped. (Unix stream sockets ignore the flag and copy as usual.)
pub struct Drain {
    copy: Vec<u8>,
    scratch: Vec<MaybeUninit<u8>>,
    discard: bool,
}

impl Drain {
    /// A drain that copies (or with `discard`, drops) what arrives, a chunk per call.
    pub fn new(discard: bool) -> Self {
        let (copy, scratch) = if discard {
            (Vec::new(), vec![MaybeUninit::uninit(); DISCARD_CHUNK_BYTES])
        } else {
            (vec![0; COPY_CHUNK_BYTES], Vec::new())
        };
        Self { copy, scratch, discard }
    }

    /// One receive call; `Ok(0)` is the end of the stream.
    pub fn receive(&mut self, mut socket: &Socket) -> std::io::Result<usize> {
        if self.discard {
            socket.recv_with_flags(&mut self.scratch, libc::MSG_TRUNC)
        } else {
            socket.read(&mut self.copy)
        }
    }
}

/// Applies the requested socket buffer size and congestion control to a stream socket, on either end.
/// Both are requests: the kernel may cap a buffer (at `net.core.wmem_max`/`rmem_max`), and a Unix socket
/// has no congestion control; a refused congestion control shows in the report's `congestion`.
pub fn configure(socket: &Socket, buffer_bytes: Option<u64>, congestion: Option<&str>) {
    // Bulk data wants Nagle's algorithm: without it, the tail of every write that is not a whole number of
    // segments leaves as a small segment of its own. (Connections start with it off, for latency tests.)
    let _ = socket.set_nodelay(false);
    if let Some(bytes) = buffer_bytes {
        let _ = socket.set_send_buffer_size(bytes as usize);
        let _ = socket.set_recv_buffer_size(bytes as usize);
    }
    if let Some(name) = congestion {
        let _ = socket.set_tcp_congestion(name.as_bytes());
    }
}

/// Runs every local stream end on its own thread, started together on one clock. With `turns`, the
/// directions alternate every interval, upload first: this thread gives the turns, pausing the local
/// senders and telling the responder over `turns` when its senders may go.
fn run_streams(
    (token, sockets): (u32, &[StreamSocket]),
    headers: &[StreamHeader],
    (spec, size): (&ThroughputSpec, u64),
    (turns, watch): (Option<&mut ControlClient>, Option<IntervalWatch>),
    observer: &dyn Observer,
) -> (Vec<StreamRecord>, Option<NetError>, Option<IntervalWatch>) {
    let epoch = Instant::now();
    let interval_ns = (spec.interval_s * 1e9) as u64;
    let duration = Duration::from_secs_f64(spec.duration_s);
    let resolution_ns = linkperf_core::throughput::resolution_ns(interval_ns, duration.as_nanos() as u64);
    let bins = (interval_ns, resolution_ns);
    let first_byte = OnceLock::new();
    let first_byte = &first_byte;
    let upload_turn = AtomicBool::new(true);
    let upload_turn = &upload_turn;
    let streams_done = AtomicBool::new(false);
    let streams_done = &streams_done;
    // Payload bytes read here by the download streams, for live intervals.
    let downloaded = AtomicU64::new(0);
    let downloaded = &downloaded;
    let (results, watch): (Vec<StreamOutcome>, Option<IntervalWatch>) = std::thread::scope(|scope| {
        let watcher = watch.map(|watch| {
            scope.spawn(move || {
                let show = |start_s: f64, end_s: f64, bytes: u64| {
                    let bps = bytes as f64 * 8.0 / (end_s - start_s).max(1e-9);
                    observer.interval("upload, read by the responder", start_s, end_s, bps);
                };
                watch.run(streams_done, &show)
            })
        });
        if headers.iter().any(|h| h.flow == Flow::Download) {
            let interval = Duration::from_nanos(interval_ns);
            scope.spawn(move || watch_downloads((first_byte, downloaded), interval, streams_done, observer));
        }
        if let Some(control) = turns {
            scope.spawn(move || {
                give_turns(control, token, upload_turn, epoch, (Duration::from_nanos(interval_ns), duration))
            });
        }
        let handles: Vec<_> = sockets
            .iter()
            .zip(headers)
            .enumerate()
            .map(|(i, (socket, header))| {
                let reporter = (i == 0).then_some(observer);
                scope.spawn(move || {
                    let cpu = CpuClock::start();
                    let (record, error) = match (socket, header.flow) {
                        (StreamSocket::Stream(s), Flow::Upload) => {
                            send(s, header.index, (epoch, upload_turn), bins, size as usize, duration, reporter)
                        }
                        (StreamSocket::Stream(s), Flow::Download) => {
                            receive(s, header.index, (first_byte, downloaded), bins, spec.discard, reporter)
                        }
                        (StreamSocket::Datagram(s), flow) => {
                            let coalescing =
                                crate::udp_stream::Coalescing { gso: spec.gso, batch: spec.batch.max(1) as usize };
                            let stream = crate::udp_stream::UdpStream {
                                socket: s,
                                token,
                                header: *header,
                                bins,
                                coalescing,
                                moved: Some(downloaded),
                                turn: Some(upload_turn),
                                quiet_end: crate::udp_stream::quiet_end(Duration::from_nanos(interval_ns)),
                                limit: spec.datagrams,
                            };
                            let mut ticker = Ticker::new(reporter, epoch);
                            // Every stream stops on Ctrl-C (one reports progress), and a receiver that
                            // stopped for it says so rather than end as if complete.
                            let mut stopped = false;
                            let mut cancelled = || {
                                stopped |= ticker.tick(Instant::now()) || observer.cancelled();
                                stopped
                            };
                            let result = match flow {
                                Flow::Upload => stream.send(
                                    size as usize,
                                    spec.stream_rate_bps(size),
                                    duration,
                                    epoch,
                                    &mut cancelled,
                                ),
                                Flow::Download => stream.receive(first_byte, &mut cancelled),
                            };
                            match result {
                                Ok(record) if stopped => (Some(record), Some(NetError::Interrupted)),
                                Ok(record) => (Some(record), None),
                                Err(e) => (None, Some(e)),
                            }
                        }
                    };
                    (record.map(|r| StreamRecord { cpu: Some(cpu.stop()), ..r }), error)
                })
            })
            .collect();
        let results = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| (None, Some(NetError::Invalid("a stream thread failed unexpectedly".into()))))
            })
            .collect();
        streams_done.store(true, Ordering::Relaxed);
        (results, watcher.and_then(|w| w.join().ok()))
    });
    let mut records = Vec::new();
    let mut error = None;
    for (record, failure) in results {
        records.extend(record);
        error = error.or(failure);
    }
    (records, error, watch)
}

/// What one stream end measured, and what stopped it early if anything did.
type StreamOutcome = (Option<StreamRecord>, Option<NetError>);

/// Progress and cancellation, reported by one stream per test.
struct Ticker<'a> {
    observer: Option<&'a dyn Observer>,
    epoch: Instant,
    next: Instant,
    reported_ms: u64,
}

impl<'a> Ticker<'a> {
    fn new(observer: Option<&'a dyn Observer>, epoch: Instant) -> Self {
        Self { observer, epoch, next: epoch + PROGRESS_EVERY, reported_ms: 0 }
    }

    /// Reports progress when due; `true` if the user asked to stop.
    fn tick(&mut self, now: Instant) -> bool {
        let Some(observer) = self.observer else { return false };
        if now < self.next {
            return false;
        }
        self.next = now + PROGRESS_EVERY;
        let ms = now.duration_since(self.epoch).as_millis() as u64;
        observer.advance(ms.saturating_sub(self.reported_ms));
        self.reported_ms = ms;
        observer.cancelled()
    }
}

/// Shows, as each interval ends, what this host's download streams read in it (the responder reports the
/// upload's intervals): from the first byte any of them received, until the streams are done.
fn watch_downloads(
    (first_byte, moved): (&OnceLock<Instant>, &AtomicU64),
    interval: Duration,
    done: &AtomicBool,
    observer: &dyn Observer,
) {
    const POLL: Duration = Duration::from_millis(50);
    let epoch = loop {
        if done.load(Ordering::Relaxed) {
            return;
        }
        if let Some(epoch) = first_byte.get() {
            break *epoch;
        }
        std::thread::sleep(POLL);
    };
    let (mut reported, mut k) = (0u64, 1u32);
    loop {
        let due = epoch + interval * k;
        while Instant::now() < due {
            if done.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep((due - Instant::now()).min(POLL));
        }
        let total = moved.load(Ordering::Relaxed);
        let (start_s, end_s) = ((interval * (k - 1)).as_secs_f64(), (interval * k).as_secs_f64());
        observer.interval(
            "download, read here",
            start_s,
            end_s,
            (total - reported) as f64 * 8.0 / interval.as_secs_f64(),
        );
        (reported, k) = (total, k + 1);
    }
}

/// Alternates the turn between the directions every `interval` until `duration` has passed, then leaves it
/// with the upload (whose senders stop by themselves at the end).
fn give_turns(
    control: &mut ControlClient,
    token: u32,
    upload_turn: &AtomicBool,
    epoch: Instant,
    (interval, duration): (Duration, Duration),
) {
    let mut turn = 0u32;
    while epoch.elapsed() < duration {
        let flow = if turn % 2 == 0 { Flow::Upload } else { Flow::Download };
        upload_turn.store(flow == Flow::Upload, Ordering::Relaxed);
        let _ = control.turn(token, flow);
        turn += 1;
        crate::clock::wait_until((epoch + interval * turn).min(epoch + duration));
    }
    let _ = control.turn(token, Flow::Upload);
}

fn send(
    mut socket: &Socket,
    index: u16,
    (epoch, turn): (Instant, &AtomicBool),
    (interval_ns, resolution_ns): (u64, u64),
    size: usize,
    duration: Duration,
    observer: Option<&dyn Observer>,
) -> StreamOutcome {
    let mut meter = StreamMeter::new(index, Flow::Upload, End::Sender, interval_ns, resolution_ns);
    let buffer: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
    // Writes return at least every tick, with what they wrote so far: on a slow link one write may take
    // longer than the whole test, and the duration must still end it.
    if let Err(e) = socket.set_write_timeout(Some(WRITE_TICK)) {
        return (None, Some(NetError::io("configuring a stream", e)));
    }
    let mut ticker = Ticker::new(observer, epoch);
    let mut interrupted = false;
    let mut last_progress = Instant::now();
    loop {
        let now = Instant::now();
        if now.duration_since(epoch) >= duration || interrupted {
            break;
        }
        if !turn.load(Ordering::Relaxed) {
            std::thread::sleep(crate::responder::TURN_POLL);
            interrupted = ticker.tick(Instant::now());
            continue;
        }
        match socket.write(&buffer) {
            Ok(n) => {
                let done = Instant::now();
                meter.record(n as u64, done.duration_since(epoch).as_nanos() as u64);
                last_progress = done;
                interrupted = ticker.tick(done);
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                // A tick without a byte accepted: the path is stuck once that lasts STALL_TIMEOUT.
                let now = Instant::now();
                if now.duration_since(last_progress) >= STALL_TIMEOUT {
                    let stalled = NetError::Timeout {
                        what: "sending stream data".into(),
                        timeout_s: STALL_TIMEOUT.as_secs_f64(),
                    };
                    return (Some(meter.finish(crate::tcp_info::tcp_stats(socket))), Some(stalled));
                }
                interrupted = ticker.tick(now);
            }
            Err(e) => {
                let tcp = crate::tcp_info::tcp_stats(socket);
                return (Some(meter.finish(tcp)), Some(stream_error("sending", e)));
            }
        }
    }
    let tcp = crate::tcp_info::tcp_stats(socket);
    // Half-close: the responder reads to the end, stores its record, and closes; waiting for that close
    // means its report is complete.
    let _ = socket.shutdown(std::net::Shutdown::Write);
    wait_for_close(socket, duration);
    (Some(meter.finish(tcp)), interrupted.then_some(NetError::Interrupted))
}

/// Waits for the peer to close a stream this end has half-closed: while data still drains (the peer
/// acknowledges more of it, as on a slow link with a full send buffer), up to `duration` more; once
/// nothing moves, for [`STALL_TIMEOUT`].
fn wait_for_close(mut socket: &Socket, duration: Duration) {
    let start = Instant::now();
    let _ = socket.set_read_timeout(Some(WRITE_TICK));
    let (mut acked, mut moved) = (crate::tcp_info::bytes_acked(socket), start);
    loop {
        match socket.read(&mut [0u8; 64]) {
            Ok(_) => return,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(_) => return,
        }
        let now = Instant::now();
        let now_acked = crate::tcp_info::bytes_acked(socket);
        if now_acked > acked {
            (acked, moved) = (now_acked, now);
        }
        if now.duration_since(moved) >= STALL_TIMEOUT || now.duration_since(start) >= duration.max(STALL_TIMEOUT) {
            return;
        }
    }
}

/// Reads a download stream to its end. `first_byte` is shared by the test's download streams: their clock
/// starts at the first byte any of them receives, as the responder's does for uploads.
fn receive(
    socket: &Socket,
    index: u16,
    (first_byte, moved): (&OnceLock<Instant>, &AtomicU64),
    (interval_ns, resolution_ns): (u64, u64),
    discard: bool,
    observer: Option<&dyn Observer>,
) -> StreamOutcome {
    let mut meter = StreamMeter::new(index, Flow::Download, End::Receiver, interval_ns, resolution_ns);
    let mut drain = Drain::new(discard);
    if let Err(e) = socket.set_read_timeout(Some(STALL_TIMEOUT)) {
        return (None, Some(NetError::io("configuring a stream", e)));
    }
    let mut ticker = Ticker::new(observer, Instant::now());
    loop {
        match drain.receive(socket) {
            Ok(0) => break,
            Ok(n) => {
                let now = Instant::now();
                let origin = *first_byte.get_or_init(|| now);
                meter.record(n as u64, now.saturating_duration_since(origin).as_nanos() as u64);
                moved.fetch_add(n as u64, Ordering::Relaxed);
                if ticker.tick(now) {
                    return (Some(meter.finish(None)), Some(NetError::Interrupted));
                }
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return (Some(meter.finish(None)), Some(stream_error("receiving", e))),
        }
    }
    (Some(meter.finish(None)), None)
}

fn stream_error(what: &str, e: std::io::Error) -> NetError {
    match e.kind() {
        ErrorKind::WouldBlock | ErrorKind::TimedOut => {
            NetError::Timeout { what: format!("{what} stream data"), timeout_s: STALL_TIMEOUT.as_secs_f64() }
        }
        ErrorKind::ConnectionReset | ErrorKind::BrokenPipe => NetError::PeerClosed(format!(" ({e})")),
        _ => NetError::io(format!("{what} stream data"), e),
    }
}

/// The link model of a run: the rate given, or the client interface's speed; the MTU given, or the
/// interface's, or 1500. `None` without a rate, or over a Unix socket.
pub(crate) fn framing(spec: &ThroughputSpec, target: &Target, interface: Option<&str>) -> Option<Framing> {
    let Target::Inet(_) = target else { return None };
    let (speed, mtu) = interface.map(crate::counters::interface_link).unwrap_or((None, None));
    let link =
        spec.link.unwrap_or(LinkSpec { rate_bps: None, overhead_bytes: ETHERNET_OVERHEAD_BYTES, mtu_bytes: None });
    Some(Framing {
        link_bps: link.rate_bps.or(speed)?,
        mtu_bytes: link.mtu_bytes.or(mtu).unwrap_or(1500),
        overhead_bytes: link.overhead_bytes,
        ipv6: target.is_ipv6(),
    })
}
