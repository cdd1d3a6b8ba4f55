//! The client's stream ends of one test: opening them, and running them together on one clock with the
//! threads beside them (live intervals, turns). The loops themselves are the stream engine's
//! (`crate::stream`) for TCP and Unix, and `crate::udp_stream`'s for UDP.

use std::io::Write;
use std::net::UdpSocket;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use linkperf_core::throughput::{Bins, Flow, StreamRecord, TurnSample};
use linkperf_core::{Direction, Proto, ThroughputSpec};
use linkperf_proto::{Preamble, Role, StreamHeader};
use socket2::Socket;

use super::turns::{give_turns, Turns};
use super::STALL_TIMEOUT;
use crate::control::IntervalWatch;
use crate::cpu::CpuClock;
use crate::observer::Observer;
use crate::stream::{
    self, end::DRAIN_CAP, Ending, Origin, Outcome, ReceivePlan, SendPlan, Shared, StreamOptions, Turn,
};
use crate::{ControlClient, NetError, Target};

/// How often the progress bar moves.
const PROGRESS_EVERY: Duration = Duration::from_millis(100);
/// The shortest live interval shown: finer intervals are still measured, but shown summed to this.
const LIVE_INTERVAL_MIN: Duration = Duration::from_millis(50);

/// One phase at one write size, as the responder accepted it.
pub(super) struct Trial<'a> {
    /// The test's token.
    pub token: u32,
    /// What was asked for.
    pub spec: &'a ThroughputSpec,
    /// Bytes per write (or datagram).
    pub size: u64,
    /// The phase (direction) of the test.
    pub phase: Direction,
}

impl Trial<'_> {
    fn duration(&self) -> Duration {
        Duration::try_from_secs_f64(self.spec.duration_s).unwrap_or(Duration::ZERO)
    }

    fn interval(&self) -> Duration {
        Duration::try_from_secs_f64(self.spec.interval_s).unwrap_or(Duration::MAX).max(Duration::from_nanos(1))
    }

    fn bins(&self) -> Bins {
        Bins::for_run(self.interval(), self.duration())
    }

    fn alternating(&self) -> bool {
        self.phase == Direction::Alternating
    }
}

/// A stream's socket on the client.
pub(super) enum StreamSocket {
    /// TCP or Unix.
    Stream(Socket),
    /// UDP, registered with the responder.
    Datagram(UdpSocket),
}

/// An opened stream: its header and socket.
pub(super) struct Opened {
    header: StreamHeader,
    socket: StreamSocket,
}

/// Opens a stream of `trial` and sends its preamble and header.
pub(super) fn open(target: &Target, trial: &Trial, header: StreamHeader) -> Result<Opened, NetError> {
    let spec = trial.spec;
    if let (Proto::Udp, Some(address)) = (spec.proto, target.inet_address()) {
        let socket = crate::udp_stream::connect(target, address, trial.token, header).map(StreamSocket::Datagram)?;
        return Ok(Opened { header, socket });
    }
    let socket = target.connect_stream(STALL_TIMEOUT)?;
    let options = StreamOptions {
        buffer_bytes: spec.buffer_bytes,
        congestion: spec.congestion.as_deref(),
        alternating: trial.alternating(),
    };
    stream::configure(&socket, &options);
    let mut opening = Preamble::new(Role::Data, trial.token).encode().to_vec();
    opening.extend_from_slice(&header.encode());
    (&socket).write_all(&opening).map_err(|e| NetError::io("opening a throughput stream", e))?;
    Ok(Opened { header, socket: StreamSocket::Stream(socket) })
}

/// The control session, when this end gives the turns of an alternating test.
pub(super) struct TurnControl<'a> {
    /// The session.
    pub control: &'a mut ControlClient,
    /// Whether the responder confirms that its data of a turn has arrived.
    pub confirms_turns: bool,
}

/// What runs beside the streams.
pub(super) struct Sidecars<'a> {
    /// Turn-giving, for alternating tests.
    pub turns: Option<TurnControl<'a>>,
    /// The responder's live intervals.
    pub watch: Option<IntervalWatch>,
}

/// What the streams of a test measured here.
pub(super) struct Ran {
    /// The records of this host's stream ends.
    pub records: Vec<StreamRecord>,
    /// What stopped the test early, if anything.
    pub error: Option<NetError>,
    /// The interval watch, to be given back to the control client.
    pub watch: Option<IntervalWatch>,
    /// The turns given, by direction.
    pub turns: Vec<(Flow, TurnSample)>,
}

/// Runs every local stream end on its own thread, started together on one clock. With turns, the
/// directions alternate, upload first: a thread gives the turns, pausing the local senders and telling the
/// responder when its senders may go, each turn ending only once its data has arrived.
pub(super) fn run(trial: &Trial, opened: &[Opened], sidecars: Sidecars, observer: &dyn Observer) -> Ran {
    let epoch = Instant::now();
    let sending = Origin::at(epoch);
    let receiving = Origin::unset();
    let upload_turn = Turn::new(!trial.alternating());
    let streams_done = AtomicBool::new(false);
    // Payload bytes read here by the download streams, for live intervals and turns.
    let downloaded = AtomicU64::new(0);
    // Turn confirmations the responder has sent.
    let confirmed = AtomicU64::new(0);
    let context =
        Context { trial, sending: &sending, receiving: &receiving, upload_turn: &upload_turn, downloaded: &downloaded };
    std::thread::scope(|scope| {
        let (done, confirmed) = (&streams_done, &confirmed);
        let watcher = sidecars.watch.map(|watch| {
            scope.spawn(move || {
                let show = |start_s: f64, end_s: f64, bytes: u64| {
                    let bps = bytes as f64 * 8.0 / (end_s - start_s).max(1e-9);
                    observer.interval("upload, read by the responder", start_s, end_s, bps);
                };
                let turned = |_: Flow| {
                    confirmed.fetch_add(1, Ordering::SeqCst);
                };
                watch.run(done, &show, &turned)
            })
        });
        if opened.iter().any(|o| o.header.flow == Flow::Download) {
            scope.spawn(move || watch_downloads(context, done, observer));
        }
        let turner = sidecars.turns.map(|turns| {
            let sockets = |flow: Flow| -> Vec<&Socket> {
                opened
                    .iter()
                    .filter(|o| o.header.flow == flow)
                    .filter_map(|o| match &o.socket {
                        StreamSocket::Stream(s) => Some(s),
                        StreamSocket::Datagram(_) => None,
                    })
                    .collect()
            };
            let turns = Turns {
                control: turns.control,
                token: trial.token,
                confirms: turns.confirms_turns.then_some(confirmed),
                upload: &upload_turn,
                uploads: sockets(Flow::Upload),
                downloads: sockets(Flow::Download),
                downloaded: &downloaded,
                epoch,
                interval: trial.interval(),
                duration: trial.duration(),
            };
            scope.spawn(move || give_turns(turns))
        });
        let handles: Vec<_> = opened
            .iter()
            .enumerate()
            .map(|(i, stream)| {
                let reporter = (i == 0).then_some(observer);
                scope.spawn(move || run_one(context, stream, reporter, observer))
            })
            .collect();
        let outcomes: Vec<(Option<StreamRecord>, Option<NetError>)> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| (None, Some(NetError::Invalid("a stream thread failed unexpectedly".into()))))
            })
            .collect();
        // The turns end after the streams (the last turn waits for the responder's confirmation that its
        // data arrived), and the watcher reads that confirmation: it stops only once the turns are done,
        // or the confirmation would be left on the control connection where the report is expected.
        let turns = turner.and_then(|t| t.join().ok()).unwrap_or_default();
        streams_done.store(true, Ordering::Relaxed);
        let watch = watcher.and_then(|w| w.join().ok());
        let mut ran = Ran { records: Vec::new(), error: None, watch, turns };
        for (record, failure) in outcomes {
            ran.records.extend(record);
            ran.error = ran.error.take().or(failure);
        }
        ran
    })
}

/// What every stream thread of a test shares.
#[derive(Clone, Copy)]
struct Context<'a> {
    trial: &'a Trial<'a>,
    /// The clock of this host's senders, set at the test's start.
    sending: &'a Origin,
    /// The clock of this host's receivers: the first byte any of them receives, as on the responder.
    receiving: &'a Origin,
    upload_turn: &'a Turn,
    downloaded: &'a AtomicU64,
}

/// Runs one stream end to its end; its record carries the thread's CPU time.
fn run_one(
    context: Context,
    stream: &Opened,
    reporter: Option<&dyn Observer>,
    observer: &dyn Observer,
) -> (Option<StreamRecord>, Option<NetError>) {
    let cpu = CpuClock::start();
    let (record, error) = match &stream.socket {
        StreamSocket::Stream(socket) => {
            let (outcome, by_user) = run_tcp(context, stream.header, socket, reporter);
            let error = stream_error(&outcome, stream.header.flow, by_user);
            (Some(outcome.record), error)
        }
        StreamSocket::Datagram(socket) => run_udp(context, stream.header, socket, (reporter, observer)),
    };
    (record.map(|r| StreamRecord { cpu: Some(cpu.stop()), ..r }), error)
}

/// Runs a TCP or Unix stream end; also says whether the user stopped it.
fn run_tcp(
    context: Context,
    header: StreamHeader,
    socket: &Socket,
    reporter: Option<&dyn Observer>,
) -> (Outcome, bool) {
    let trial = context.trial;
    let mut ticker = Ticker::new(reporter, context.sending.get().unwrap_or_else(Instant::now));
    let mut by_user = false;
    let outcome = match header.flow {
        Flow::Upload => {
            let plan = SendPlan {
                index: header.index,
                flow: Flow::Upload,
                bins: trial.bins(),
                write_bytes: usize::try_from(trial.size).unwrap_or(usize::MAX),
                duration: trial.duration(),
                stall: STALL_TIMEOUT,
            };
            let turn = trial.alternating().then_some(context.upload_turn);
            let shared = Shared { origin: context.sending, moved: None, turn };
            let outcome = stream::send(socket, &plan, shared, |now| {
                by_user = ticker.tick(now);
                by_user
            });
            if let Ending::Completed = outcome.ending {
                // The responder stores its record before it closes: once it has, its report is complete.
                stream::end::finish_sending(socket, &outcome.record, STALL_TIMEOUT);
            }
            outcome
        }
        Flow::Download => {
            let plan = ReceivePlan {
                index: header.index,
                flow: Flow::Download,
                bins: trial.bins(),
                discard: trial.spec.discard,
                stall: Some(STALL_TIMEOUT),
            };
            // The responder's sender drains for at most DRAIN_CAP after its duration; nothing is awaited
            // beyond that, so a trickle cannot hold the run.
            let deadline = stream::later(
                context.sending.get().unwrap_or_else(Instant::now),
                trial.duration().saturating_add(DRAIN_CAP + STALL_TIMEOUT),
            );
            let shared = Shared { origin: context.receiving, moved: Some(context.downloaded), turn: None };
            stream::receive(socket, &plan, shared, |now| {
                by_user = ticker.tick(now);
                by_user || now >= deadline
            })
        }
    };
    (outcome, by_user)
}

fn run_udp(
    context: Context,
    header: StreamHeader,
    socket: &UdpSocket,
    (reporter, observer): (Option<&dyn Observer>, &dyn Observer),
) -> (Option<StreamRecord>, Option<NetError>) {
    let (trial, spec) = (context.trial, context.trial.spec);
    let bins = trial.bins();
    let stream = crate::udp_stream::UdpStream {
        socket,
        token: trial.token,
        header,
        bins: (bins.interval_ns(), bins.resolution_ns()),
        coalescing: crate::udp_stream::Coalescing { gso: spec.gso, batch: spec.batch.max(1) as usize },
        moved: Some(context.downloaded),
        turn: Some(context.upload_turn.flag()),
        quiet_end: crate::udp_stream::quiet_end(trial.interval()),
        limit: spec.datagrams,
    };
    let epoch = context.sending.get().unwrap_or_else(Instant::now);
    let mut ticker = Ticker::new(reporter, epoch);
    // Every stream stops on Ctrl-C (one reports progress), and a receiver that stopped for it says so
    // rather than end as if complete.
    let mut stopped = false;
    let mut cancelled = || {
        stopped |= ticker.tick(Instant::now()) || observer.cancelled();
        stopped
    };
    let result = match header.flow {
        Flow::Upload => stream.send(
            usize::try_from(trial.size).unwrap_or(usize::MAX),
            spec.stream_rate_bps(trial.size),
            trial.duration(),
            epoch,
            &mut cancelled,
        ),
        Flow::Download => stream.receive(context.receiving.cell(), &mut cancelled),
    };
    match result {
        Ok(record) if stopped => (Some(record), Some(NetError::Interrupted)),
        Ok(record) => (Some(record), None),
        Err(e) => (None, Some(e)),
    }
}

/// The client's error for how a stream end stopped (`by_user`: the user asked it to stop; a receiver
/// stopped otherwise reached its deadline, which ends it normally).
fn stream_error(outcome: &Outcome, flow: Flow, by_user: bool) -> Option<NetError> {
    let what = match flow {
        Flow::Upload => "sending",
        Flow::Download => "receiving",
    };
    match &outcome.ending {
        Ending::Completed => None,
        Ending::Stopped if !by_user => None,
        Ending::Stopped => Some(NetError::Interrupted),
        Ending::Stalled(after) => {
            Some(NetError::Timeout { what: format!("{what} stream data"), timeout_s: after.as_secs_f64() })
        }
        Ending::Failed(e) => Some(match e.kind() {
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe => {
                NetError::PeerClosed(format!(" ({e})"))
            }
            _ => NetError::Io {
                context: format!("{what} stream data"),
                source: std::io::Error::new(e.kind(), e.to_string()),
            },
        }),
    }
}

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
    #[inline]
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
/// upload's intervals): from the first byte any of them received, until the streams are done. Intervals
/// shorter than [`LIVE_INTERVAL_MIN`] are shown a few at a time.
fn watch_downloads(context: Context, done: &AtomicBool, observer: &dyn Observer) {
    const POLL: Duration = Duration::from_millis(50);
    let epoch = loop {
        if done.load(Ordering::Relaxed) {
            return;
        }
        if let Some(epoch) = context.receiving.get() {
            break epoch;
        }
        std::thread::sleep(POLL);
    };
    let requested = context.trial.interval();
    let interval = requested.saturating_mul(LIVE_INTERVAL_MIN.as_nanos().div_ceil(requested.as_nanos().max(1)) as u32);
    let (mut reported, mut k) = (0u64, 1u32);
    loop {
        let Some(due) = epoch.checked_add(interval.saturating_mul(k)) else { return };
        while Instant::now() < due {
            if done.load(Ordering::Relaxed) {
                return;
            }
            std::thread::sleep((due - Instant::now()).min(POLL));
        }
        let total = context.downloaded.load(Ordering::Relaxed);
        let (start_s, end_s) = (interval.saturating_mul(k - 1).as_secs_f64(), interval.saturating_mul(k).as_secs_f64());
        let bps = (total - reported) as f64 * 8.0 / interval.as_secs_f64();
        observer.interval("download, read here", start_s, end_s, bps);
        (reported, k) = (total, k.saturating_add(1));
    }
}
