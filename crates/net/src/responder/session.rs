//! `ControlConn`: one control connection in the event loop, the I/O around a `proto` session.
//!
//! The rules of the session (deadlines, caps, bounds, the order of messages) live in
//! `linkperf_proto::session`; this file only moves bytes between the socket and the session, carries out
//! the session's actions on the registry (start, turn, report, release), and writes the interval reports
//! of its throughput tests as they fall due and the confirmations of their turns once drained. It never blocks: reads and writes are non-blocking, and what
//! the socket does not take yet waits in an output buffer of bounded size.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use linkperf_core::throughput::Flow;
use linkperf_core::HostFacts;
use linkperf_proto::session::{Action, Answer, ControlSession, Session};
use linkperf_proto::slots::Claim;
use linkperf_proto::{Ending, Message, PlannedTest, TestPlan};
use socket2::Socket;

use super::bulk::BulkState;
use super::registry::{canonical, TestEntry, TestKind};
use super::Shared;
use crate::stream;

/// How long a report waits for streams whose connections are still closing.
const REPORT_WAIT: Duration = Duration::from_secs(3);
/// How often a waiting report checks for its streams' records.
const REPORT_POLL: Duration = Duration::from_millis(5);
/// How often an interval report checks whether its test's first byte has come.
const EPOCH_POLL: Duration = Duration::from_millis(10);
/// The shortest span of one live interval report: finer intervals are reported a few at a time.
const LIVE_INTERVAL_MIN: Duration = Duration::from_millis(50);
/// The most bytes waiting to be sent to a client that does not read (a report may be 16 MiB).
const MAX_OUTPUT_BYTES: usize = 40 << 20;
/// The most bytes read from one connection per readiness event, so that one busy peer cannot starve others.
const READ_PER_EVENT: usize = 256 << 10;

/// What a connection's peer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Peer {
    /// A TCP peer.
    Inet(std::net::SocketAddr),
    /// A Unix-domain peer.
    Unix,
}

impl Peer {
    /// The peer's IP address, as the registry binds tokens to it (`None` over Unix sockets).
    pub fn ip(self) -> Option<IpAddr> {
        match self {
            Peer::Inet(address) => Some(canonical(address.ip())),
            Peer::Unix => None,
        }
    }
}

impl std::fmt::Display for Peer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Peer::Inet(address) => write!(f, "{address}"),
            Peer::Unix => write!(f, "unix"),
        }
    }
}

/// A throughput test's interval reports and turn confirmations, written by its session (the only writer of
/// the control socket, so frames never interleave). The k-th report is due k report intervals after the
/// test's first byte here; a turn given to the upload is confirmed once the stream state says its sources
/// drained ([`BulkState::handover_drained`], which never blocks).
struct IntervalClock {
    state: Arc<BulkState>,
    /// The test's interval, or a whole multiple of it of at least [`LIVE_INTERVAL_MIN`].
    interval: Duration,
    next: u32,
    reported: u64,
}

impl IntervalClock {
    fn new(state: Arc<BulkState>) -> Self {
        let requested = state.bins.interval.max(Duration::from_nanos(1));
        let times = LIVE_INTERVAL_MIN.as_nanos().div_ceil(requested.as_nanos());
        let interval = requested.saturating_mul(u32::try_from(times).unwrap_or(u32::MAX));
        Self { state, interval, next: 1, reported: 0 }
    }

    /// The frames due by `now` (interval reports, a turn confirmation), and when to look again (`None`: the
    /// test is over, or its report was asked for).
    fn poll(&mut self, token: u32, now: Instant, due: &mut Vec<Message>) -> Option<Instant> {
        let state = &self.state;
        if state.finished.load(Ordering::Relaxed) || state.stop.load(Ordering::Relaxed) {
            return None;
        }
        if state.handover_drained(now) {
            due.push(Message::Turn { token, flow: Flow::Upload });
        }
        let next = match state.epoch.get() {
            None => now + EPOCH_POLL,
            Some(epoch) => loop {
                let at = stream::later(epoch, self.interval.saturating_mul(self.next));
                if at > now {
                    break at;
                }
                let total = state.received.load(Ordering::Relaxed);
                due.push(Message::Interval {
                    token,
                    start_s: self.interval.saturating_mul(self.next - 1).as_secs_f64(),
                    end_s: self.interval.saturating_mul(self.next).as_secs_f64(),
                    bytes: total.saturating_sub(self.reported),
                });
                self.reported = total;
                match self.next.checked_add(1) {
                    Some(next) => self.next = next,
                    None => break now + EPOCH_POLL.max(self.interval),
                }
            },
        };
        // While a handover waits for its drain, look often: the confirmation ends the client's turnaround.
        Some(if state.handover_pending() { next.min(now + stream::TURN_POLL) } else { next })
    }
}

/// A control connection being served.
pub(super) struct ControlConn {
    pub id: u64,
    pub socket: Socket,
    pub peer: Peer,
    pub session: ControlSession,
    pub opened: Instant,
    /// Bytes the socket has not taken yet.
    output: Vec<u8>,
    /// The client's name, for the log.
    client: String,
    /// Whether the session holds one of the responder's session slots.
    pub admitted: bool,
    /// Interval reports of open throughput tests, by token.
    clocks: HashMap<u32, IntervalClock>,
    /// A report being gathered: its token and the latest time to send it.
    report: Option<(u32, Instant)>,
    /// The next wake-up of the intervals and the report.
    wake: Option<Instant>,
}

impl ControlConn {
    /// A connection whose control preamble has been read.
    pub fn new(id: u64, socket: Socket, peer: Peer, session: ControlSession, opened: Instant) -> Self {
        Self {
            id,
            socket,
            peer,
            session,
            opened,
            output: Vec::new(),
            client: String::from("?"),
            admitted: false,
            clocks: HashMap::new(),
            report: None,
            wake: None,
        }
    }

    /// Reads what the socket holds into the session.
    pub fn on_readable(&mut self, now: Instant) {
        let mut chunk = [0u8; 16 * 1024];
        let mut read = 0;
        while read < READ_PER_EVENT && !self.session.is_closed() {
            match (&self.socket).read(&mut chunk) {
                Ok(0) => return self.session.handle_close(now),
                Ok(n) => {
                    read += n;
                    self.session.handle_input(now, &chunk[..n]);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) => return self.session.close(Ending::ConnectionLost(e.kind())),
            }
        }
    }

    /// A deadline of the session, an interval report or a waiting report may have come.
    pub fn on_timer(&mut self, now: Instant, shared: &Shared) {
        if self.session.poll_timeout().is_some_and(|t| t <= now) {
            self.session.handle_timeout(now);
        }
        self.poll_reports(now, shared);
    }

    /// Carries out the session's actions and sends what it has to send. The slots are the loop's: `claim`
    /// answers an `Admit`. Returns the ending once the session has ended.
    pub fn drive(&mut self, now: Instant, shared: &Shared, claim: &mut dyn FnMut() -> Claim) -> Option<Ending> {
        let mut ending = None;
        loop {
            while let Some(action) = self.session.poll_action() {
                if let Some(why) = self.act(action, now, shared, claim) {
                    ending = Some(why);
                }
            }
            let waiting = self.report.is_some();
            self.poll_reports(now, shared);
            // A report sent lets the session go on with input it held: its actions follow.
            if !(waiting && self.report.is_none()) {
                break;
            }
        }
        self.flush();
        if ending.is_none() && self.output.len() > MAX_OUTPUT_BYTES {
            self.session.close(Ending::ConnectionLost(ErrorKind::WouldBlock));
            return self.drive(now, shared, claim);
        }
        if ending.is_none() && self.session.is_closed() {
            // Closed by a write failure inside `flush`: its actions are pending.
            return self.drive(now, shared, claim);
        }
        ending
    }

    fn act(
        &mut self,
        action: Action,
        now: Instant,
        shared: &Shared,
        claim: &mut dyn FnMut() -> Claim,
    ) -> Option<Ending> {
        match action {
            Action::Admit { client } => {
                self.client = linkperf_proto::printable(&client, 64);
                match claim() {
                    Claim::Granted { .. } => self.admit(now),
                    Claim::Wait => self.session.answer(now, Answer::Wait),
                    Claim::Refused(refusal) => self.session.answer(now, Answer::Refused(refusal)),
                }
            }
            Action::StartTest { plan, deadline } => {
                let token = self.start(&plan, deadline, shared);
                self.session.answer(now, Answer::TestStarted { token });
            }
            Action::Report { token } => self.begin_report(token, now, shared),
            Action::Turn { token, flow } => {
                // A turn given to the upload is confirmed by `poll_reports` once the sources drained.
                if let Some((state, _)) = shared.registry.bulk(self.id, token) {
                    state.give_turn(flow);
                }
            }
            Action::Release { token } => {
                self.clocks.remove(&token);
                shared.registry.release(self.id, token);
            }
            Action::Close { ending } => {
                shared.registry.release_session(self.id);
                return Some(ending);
            }
        }
        None
    }

    /// The session has a slot (at once, or after waiting for one): its welcome goes out with the host facts.
    pub fn admit(&mut self, now: Instant) {
        self.admitted = true;
        let local = self.socket.local_addr().ok().and_then(|a| a.as_socket());
        self.session.answer(now, Answer::Admitted { host: host_facts(local) });
    }

    /// When the loop must call `on_timer` next.
    pub fn next_wake(&self) -> Option<Instant> {
        match (self.session.poll_timeout(), self.wake) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether output waits for the socket to take it.
    pub fn wants_write(&self) -> bool {
        !self.output.is_empty()
    }

    /// Writes what the socket takes now.
    pub fn flush(&mut self) {
        while let Some(frame) = self.session.poll_transmit() {
            self.output.extend_from_slice(&frame);
        }
        let mut written = 0;
        while written < self.output.len() {
            match (&self.socket).write(&self.output[written..]) {
                Ok(0) => break,
                Ok(n) => written += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => {
                    self.output.clear();
                    return self.session.close(Ending::ConnectionLost(e.kind()));
                }
            }
        }
        self.output.drain(..written);
    }

    /// The session's log line, once it has ended.
    pub fn log_line(&self, ending: &Ending) -> String {
        format!(
            "session {} from {} ({}): {} tests, {:.1} s, {ending}",
            self.id,
            self.peer,
            self.client,
            self.session.tests(),
            self.opened.elapsed().as_secs_f64()
        )
    }

    fn start(&mut self, plan: &TestPlan, deadline: Instant, shared: &Shared) -> u32 {
        let kind = match plan.test {
            PlannedTest::Latency { .. } => TestKind::Echo,
            PlannedTest::Connect => TestKind::ConnectProbe,
            PlannedTest::Throughput(_) => TestKind::Throughput,
        };
        let local = self.socket.local_addr().ok().and_then(|a| a.as_socket());
        let bulk = BulkState::for_request(&plan.to_request(), local).map(Arc::new);
        let entry = TestEntry {
            session: self.id,
            proto: plan.proto,
            kind,
            wait: plan.wait(),
            deadline,
            max_streams: if kind == TestKind::ConnectProbe { u32::MAX } else { plan.connections },
            streams: 0,
            max_message_bytes: plan.message_bytes(),
            bulk: bulk.clone(),
            peer: self.peer.ip(),
        };
        let token = shared.registry.register(entry);
        if let Some(state) = bulk {
            self.clocks.insert(token, IntervalClock::new(state));
        }
        token
    }

    fn begin_report(&mut self, token: u32, now: Instant, shared: &Shared) {
        if let Some((state, _)) = shared.registry.bulk(self.id, token) {
            state.stop.store(true, Ordering::Relaxed);
        }
        self.report = Some((token, now + REPORT_WAIT));
    }

    /// Sends interval reports and turn confirmations that are due, and the waiting report once its streams are in (or its wait is
    /// over); sets the next wake-up for both.
    fn poll_reports(&mut self, now: Instant, shared: &Shared) {
        let mut wake: Option<Instant> = None;
        let mut due = Vec::new();
        self.clocks.retain(|token, clock| match clock.poll(*token, now, &mut due) {
            Some(next) => {
                wake = Some(wake.map_or(next, |w| w.min(next)));
                true
            }
            None => false,
        });
        for message in &due {
            self.session.notify(message);
        }
        if let Some((token, until)) = self.report {
            let ready = shared.registry.bulk(self.id, token);
            let complete = ready.as_ref().is_none_or(|(state, admitted)| state.records().len() >= *admitted as usize);
            if complete || now >= until {
                self.report = None;
                let (streams, counters) = match ready {
                    Some((state, _)) => (state.records(), Some(state.counters.delta())),
                    None => (Vec::new(), None),
                };
                self.session.answer(now, Answer::Report { streams, counters });
            } else {
                let next = now + REPORT_POLL;
                wake = Some(wake.map_or(next, |w| w.min(next)));
            }
        }
        self.wake = wake;
    }
}

/// The responder's host facts for a session reaching it at `local`, read once per local address.
fn host_facts(local: Option<std::net::SocketAddr>) -> HostFacts {
    use std::sync::{Mutex, OnceLock};
    static CACHE: OnceLock<Mutex<HashMap<Option<IpAddr>, HostFacts>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut cache = cache.lock().unwrap_or_else(|p| p.into_inner());
    cache.entry(local.map(|a| a.ip())).or_insert_with(|| crate::host::host_facts_for(local)).clone()
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_core::Proto;
    use linkperf_proto::TestRequest;

    fn state(interval_s: f64, alternating: bool) -> Arc<BulkState> {
        let request = TestRequest::Throughput {
            proto: Proto::Tcp,
            connections: 1,
            write_bytes: 4096,
            duration_s: 10.0,
            interval_s,
            buffer_bytes: None,
            congestion: None,
            discard: false,
            rate_bps: None,
            gso: false,
            batch: 1,
            alternating,
            datagrams: None,
        };
        Arc::new(BulkState::for_request(&request, None).expect("a throughput request"))
    }

    fn pair() -> (Socket, Socket) {
        let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
        (Socket::from(a), Socket::from(b))
    }

    #[test]
    fn interval_reports_fall_due_from_the_first_byte() {
        let state = state(0.1, false);
        let mut clock = IntervalClock::new(state.clone());
        let (t0, mut due) = (Instant::now(), Vec::new());
        assert_eq!(clock.poll(7, t0, &mut due), Some(t0 + EPOCH_POLL), "no first byte yet");
        assert!(due.is_empty());
        state.epoch.since(t0);
        state.received.fetch_add(1000, Ordering::Relaxed);
        let next = clock.poll(7, t0 + Duration::from_millis(250), &mut due);
        assert_eq!(next, Some(t0 + Duration::from_millis(300)));
        assert_eq!(
            due,
            [
                Message::Interval { token: 7, start_s: 0.0, end_s: 0.1, bytes: 1000 },
                Message::Interval { token: 7, start_s: 0.1, end_s: 0.2, bytes: 0 },
            ]
        );
        state.stop.store(true, Ordering::Relaxed);
        assert_eq!(clock.poll(7, t0 + Duration::from_secs(1), &mut due), None, "asked for the report");
    }

    #[test]
    fn intervals_finer_than_the_live_minimum_are_reported_a_few_at_a_time() {
        let state = state(0.001, false);
        let mut clock = IntervalClock::new(state.clone());
        let t0 = Instant::now();
        state.epoch.since(t0);
        let mut due = Vec::new();
        let next = clock.poll(7, t0 + Duration::from_millis(120), &mut due);
        assert_eq!(due.len(), 2, "{due:?}");
        assert_eq!(next, Some(t0 + 3 * LIVE_INTERVAL_MIN));
    }

    #[test]
    fn a_turn_given_to_the_upload_is_confirmed_once_only_after_its_sources_drained() {
        let state = state(0.1, true);
        let mut clock = IntervalClock::new(state.clone());
        state.give_turn(Flow::Download);
        let (source, reader) = pair();
        std::io::Write::write_all(&mut &source, &[0u8; 1000]).unwrap();
        state.sources.lock().unwrap().push(source);
        state.give_turn(Flow::Upload);
        let (now, mut due) = (Instant::now(), Vec::new());
        let next = clock.poll(7, now, &mut due);
        assert!(due.is_empty(), "confirmed before the data arrived: {due:?}");
        assert_eq!(next, Some(now + stream::TURN_POLL), "a pending handover is looked at often");
        std::io::Read::read_exact(&mut &reader, &mut [0u8; 1000]).unwrap();
        let next = clock.poll(7, now, &mut due);
        assert_eq!(due, [Message::Turn { token: 7, flow: Flow::Upload }]);
        assert_eq!(next, Some(now + EPOCH_POLL), "nothing pending: back to the slow poll");
        clock.poll(7, now, &mut due);
        assert_eq!(due.len(), 1, "a second confirmation: {due:?}");
    }
}
