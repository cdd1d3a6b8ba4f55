//! The responder's side of a control session as a state machine without I/O (as quinn-proto does it):
//! the driver feeds it the bytes that arrived and the time, and asks it what to send, what to do and
//! when to wake it next. It owns no socket, reads no clock and draws no random numbers (the driver passes
//! the challenge in), so every rule below is a unit test that feeds bytes and instants.
//!
//! The rules, in the order a session meets them:
//! - greeting and authentication complete within one handshake deadline counted from the connection's
//!   accept, however slowly the bytes trickle in;
//! - a session slot is asked for (`Action::Admit`) only once the client is authenticated, and the host
//!   facts of the responder are sent only then; when every slot is held the driver may have the client
//!   wait (`Answer::Wait`, see `crate::slots`) until the same handshake deadline, past which the
//!   client is refused with how long it waited;
//! - every test request is parsed by `Limits::admit` and checked against the session's caps: tests over
//!   its life, tests open at once, connections open at once, and the time left of `max_duration`, which
//!   bounds the session's chained tests, not only each test;
//! - a session with no open test and no message for the idle timeout is closed;
//! - a request needing the driver's answer (a slot, a token, a report) holds further input until answered,
//!   so replies keep the order of requests; a peer that piles up input meanwhile is cut off.
//!
//! [`Session`] is the interface the driver loops over, so that another protocol's front-end (iperf3's) can
//! be driven by the same loop under the same budgets.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use linkperf_core::counters::HostCounters;
use linkperf_core::throughput::{Flow, StreamRecord};
use linkperf_core::HostFacts;

use crate::auth::{self, Side};
use crate::ending::{AuthFailure, Ending, Violation};
use crate::frame::{encode_frame, take_frame};
use crate::{Limits, Message, PlannedTest, ProtoError, Refusal, TestPlan, MAX_FRAME_BYTES};

/// A control session as the driver's event loop sees it: bytes and time in, bytes and actions out.
pub trait Session {
    /// What the peer sent.
    fn handle_input(&mut self, now: Instant, bytes: &[u8]);
    /// The peer closed its side of the connection.
    fn handle_close(&mut self, now: Instant);
    /// The time given by [`Session::poll_timeout`] has come.
    fn handle_timeout(&mut self, now: Instant);
    /// The driver's answer to the last action that asked for one.
    fn answer(&mut self, now: Instant, answer: Answer);
    /// Bytes to send, in order.
    fn poll_transmit(&mut self) -> Option<Vec<u8>>;
    /// Something for the driver to do.
    fn poll_action(&mut self) -> Option<Action>;
    /// When to call [`Session::handle_timeout`] next.
    fn poll_timeout(&self) -> Option<Instant>;
    /// Whether the session ended (its last action was `Close`).
    fn is_closed(&self) -> bool;
}

/// What the session asks of the driver.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// The client is authenticated: grant it a session slot. Answer `Admitted`, `Refused`, or `Wait` and
    /// later `Admitted`.
    Admit {
        /// The client's host name, as it gave it (escape it before printing).
        client: String,
    },
    /// Start a test. Answer `TestStarted` or `Refused`.
    StartTest {
        /// What to serve.
        plan: TestPlan,
        /// When the test's traffic must be cut: the end of the session's time.
        deadline: Instant,
    },
    /// Gather a throughput test's records. Answer `Report`.
    Report {
        /// The test.
        token: u32,
    },
    /// Give the turn to `flow` in an alternating test.
    Turn {
        /// The test.
        token: u32,
        /// Whose turn it is.
        flow: Flow,
    },
    /// Release a test: its token admits no more traffic and its connections are cut.
    Release {
        /// The test.
        token: u32,
    },
    /// End the session: send what `poll_transmit` still holds, release everything, close.
    Close {
        /// Why.
        ending: Ending,
    },
}

/// The driver's answer to an action.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A slot was granted; the responder's host facts go to the client now.
    Admitted {
        /// The responder's host facts.
        host: HostFacts,
    },
    /// The slot or test is refused.
    Refused(Refusal),
    /// Every slot is held: the client waits for one, until its handshake deadline.
    Wait,
    /// The test runs under this token.
    TestStarted {
        /// The token.
        token: u32,
    },
    /// A throughput test's records.
    Report {
        /// Every stream's record.
        streams: Vec<StreamRecord>,
        /// The host's counter deltas.
        counters: Option<HostCounters>,
    },
}

/// The settings of a session.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// The responder's limits.
    pub limits: Limits,
    /// The shared key and this session's fresh challenge (hex of 16 random bytes), when a key is required.
    pub auth: Option<(Vec<u8>, String)>,
    /// Name and version sent in the welcome.
    pub software: String,
    /// The tests and features served.
    pub capabilities: Vec<String>,
    /// Greeting and authentication, from accept to the last handshake byte.
    pub handshake_timeout: Duration,
    /// Longest silence with no test open.
    pub idle_timeout: Duration,
    /// Grace beyond `max_duration` before a session's traffic is cut.
    pub grace: Duration,
}

impl SessionConfig {
    /// The defaults: 10 s handshake, 60 s idle, 2 s grace.
    pub fn new(limits: Limits, auth: Option<(Vec<u8>, String)>, software: String, capabilities: Vec<String>) -> Self {
        Self {
            limits,
            auth,
            software,
            capabilities,
            handshake_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            grace: Duration::from_secs(2),
        }
    }
}

/// Where a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for `hello`.
    Greeting,
    /// Waiting for `auth` (a key is required).
    Authenticating,
    /// Waiting for the driver's answer to `Admit`.
    Admitting,
    /// Waiting for a slot, since this instant (the driver answered `Wait`).
    Waiting(Instant),
    /// Serving requests.
    Serving,
    /// Waiting for the driver's answer to `StartTest` or `Report`.
    Answering,
    /// Ended.
    Closed,
}

/// One open test.
#[derive(Debug, Clone, Copy)]
struct OpenTest {
    token: u32,
    connections: u32,
    throughput: bool,
}

/// A hello's nonce: enough randomness to be fresh, short enough to be cheap.
const NONCE_HEX_DIGITS: std::ops::RangeInclusive<usize> = 8..=128;
/// The most input held while a reply is pending: a few frames.
const MAX_PENDING_INPUT: usize = 2 * (MAX_FRAME_BYTES as usize + 4);

/// linkperf's own control protocol, responder side.
#[derive(Debug)]
pub struct ControlSession {
    config: SessionConfig,
    state: State,
    input: Vec<u8>,
    transmit: VecDeque<Vec<u8>>,
    actions: VecDeque<Action>,
    client_nonce: String,
    handshake_deadline: Instant,
    /// The end of the session's time (set at admission).
    session_deadline: Option<Instant>,
    last_message: Instant,
    open: Vec<OpenTest>,
    tests: u32,
    /// The plan awaiting the driver's token.
    starting: Option<TestPlan>,
}

impl ControlSession {
    /// A session for a connection accepted at `accepted`: the handshake deadline counts from then.
    pub fn new(config: SessionConfig, accepted: Instant) -> Self {
        let handshake_deadline = accepted + config.handshake_timeout;
        Self {
            config,
            state: State::Greeting,
            input: Vec::new(),
            transmit: VecDeque::new(),
            actions: VecDeque::new(),
            client_nonce: String::new(),
            handshake_deadline,
            session_deadline: None,
            last_message: accepted,
            open: Vec::new(),
            tests: 0,
            starting: None,
        }
    }

    /// Tests started so far.
    pub fn tests(&self) -> u32 {
        self.tests
    }

    /// Since when the session has been idle (admitted, no test open, nothing received), if it is: the
    /// driver may close the session idle the longest to make room for a new client.
    pub fn idle_since(&self) -> Option<Instant> {
        (self.state == State::Serving && self.open.is_empty()).then_some(self.last_message)
    }

    /// Whether the client is authenticated and waits for a slot (the driver answered `Wait`).
    pub fn is_waiting(&self) -> bool {
        matches!(self.state, State::Waiting(_))
    }

    /// Whether the client is authenticated and holds a slot.
    pub fn is_admitted(&self) -> bool {
        self.session_deadline.is_some() && self.state != State::Closed
    }

    /// A frame the driver originates (an interval report), sent only while the session serves.
    pub fn notify(&mut self, message: &Message) {
        if matches!(self.state, State::Serving | State::Answering) {
            self.transmit.push_back(encode_frame(message));
        }
    }

    /// Ends the session for a reason found by the driver (a lost connection, a spent budget).
    pub fn close(&mut self, ending: Ending) {
        if self.state == State::Closed {
            return;
        }
        if let Some((code, message)) = ending.error() {
            self.send(&Message::Error { code, message });
        }
        for test in std::mem::take(&mut self.open) {
            self.actions.push_back(Action::Release { token: test.token });
        }
        self.state = State::Closed;
        self.actions.push_back(Action::Close { ending });
    }

    /// Decodes and handles whole frames, until input runs out or a reply is pending.
    fn process(&mut self, now: Instant) {
        while matches!(self.state, State::Greeting | State::Authenticating | State::Serving) {
            match self.next_frame() {
                Ok(Some(message)) => {
                    self.last_message = now;
                    self.handle(now, message);
                }
                Ok(None) => break,
                Err(violation) => return self.close(Ending::Violation(violation)),
            }
        }
        if self.input.len() > MAX_PENDING_INPUT {
            self.close(Ending::Violation(Violation::TooMuchInput));
        }
    }

    fn next_frame(&mut self) -> Result<Option<Message>, Violation> {
        take_frame(&mut self.input, MAX_FRAME_BYTES).map_err(|e| match e {
            ProtoError::Oversized(length) => Violation::Oversized(length),
            other => Violation::Malformed(other.to_string()),
        })
    }

    fn handle(&mut self, now: Instant, message: Message) {
        match (self.state, message) {
            (State::Greeting, Message::Hello { host, nonce, .. }) => self.greet(host.hostname, nonce),
            (State::Authenticating, Message::Auth { proof }) => self.authenticate(&proof),
            (State::Authenticating, _) => self.close(Ending::AuthFailed(AuthFailure::NoProof)),
            (State::Serving, Message::TestRequest(request)) => {
                match self.config.limits.admit(&request).and_then(|plan| self.fits(now, plan)) {
                    Ok(plan) => self.start(now, plan),
                    Err(refusal) => self.refuse(&refusal),
                }
            }
            (State::Serving, Message::ReportRequest { token }) => match self.find(token) {
                Some(test) if test.throughput => {
                    self.state = State::Answering;
                    self.actions.push_back(Action::Report { token });
                }
                _ => self.close(Ending::Violation(Violation::UnknownToken(token))),
            },
            (State::Serving, Message::Turn { token, flow }) => {
                if self.find(token).is_some() {
                    self.actions.push_back(Action::Turn { token, flow });
                }
            }
            (State::Serving, Message::TestDone { token }) => {
                if self.find(token).is_some() {
                    self.open.retain(|t| t.token != token);
                    self.actions.push_back(Action::Release { token });
                }
            }
            (state, other) => {
                let expected = match state {
                    State::Greeting => "hello",
                    _ => "a request",
                };
                self.close(Ending::Violation(Violation::Unexpected { expected, got: other.kind() }));
            }
        }
    }

    fn greet(&mut self, client: String, nonce: String) {
        if !NONCE_HEX_DIGITS.contains(&nonce.len()) || !nonce.bytes().all(|b| b.is_ascii_hexdigit()) {
            return self.close(Ending::Violation(Violation::BadNonce));
        }
        self.client_nonce = nonce;
        match &self.config.auth {
            Some((_, challenge)) => {
                let welcome = self.welcome(HostFacts::default(), Some(challenge.clone()));
                self.send(&welcome);
                self.state = State::Authenticating;
            }
            None => self.ask_for_slot(client),
        }
    }

    fn authenticate(&mut self, proof: &str) {
        let Some((key, challenge)) = &self.config.auth else { return };
        if auth::verify(key, Side::Client, challenge, &self.client_nonce, proof) {
            self.ask_for_slot(String::new());
        } else {
            self.close(Ending::AuthFailed(AuthFailure::WrongKey));
        }
    }

    fn ask_for_slot(&mut self, client: String) {
        self.state = State::Admitting;
        self.actions.push_back(Action::Admit { client });
    }

    fn admitted(&mut self, now: Instant, host: HostFacts) {
        let reply = match &self.config.auth {
            Some((key, challenge)) => Message::AuthOk {
                proof: auth::proof(key, Side::Server, challenge, &self.client_nonce),
                host: Some(host),
            },
            None => self.welcome(host, None),
        };
        self.send(&reply);
        self.session_deadline = Some(now + self.config.limits.max_duration + self.config.grace);
        self.last_message = now;
        self.state = State::Serving;
    }

    fn welcome(&self, host: HostFacts, challenge: Option<String>) -> Message {
        Message::Welcome {
            software: self.config.software.clone(),
            host,
            challenge,
            capabilities: self.config.capabilities.clone(),
        }
    }

    /// Checks a plan against the session's caps and the time it has left.
    fn fits(&self, now: Instant, plan: TestPlan) -> Result<TestPlan, Refusal> {
        let limits = &self.config.limits;
        if self.tests >= limits.max_tests_per_session {
            return Err(Refusal::TooManyTests { limit: limits.max_tests_per_session });
        }
        if self.open.len() as u32 >= limits.max_open_tests {
            return Err(Refusal::TooManyOpenTests { limit: limits.max_open_tests });
        }
        let held: u32 = self.open.iter().map(|t| t.connections).sum();
        let left = limits.max_streams_per_test.saturating_sub(held);
        if plan.connections > left {
            return Err(Refusal::SessionConnections { requested: plan.connections, left });
        }
        let time_left = self.session_deadline.map_or(Duration::ZERO, |d| d.saturating_duration_since(now));
        let time_left = time_left.saturating_sub(self.config.grace);
        match plan.planned {
            Some(planned) if planned > time_left => {
                Err(Refusal::SessionTimeLeft { planned_s: planned.as_secs_f64(), left_s: time_left.as_secs_f64() })
            }
            _ => Ok(plan),
        }
    }

    fn start(&mut self, now: Instant, plan: TestPlan) {
        let deadline = self.session_deadline.unwrap_or(now);
        self.state = State::Answering;
        self.starting = Some(plan.clone());
        self.actions.push_back(Action::StartTest { plan, deadline });
    }

    fn find(&self, token: u32) -> Option<OpenTest> {
        self.open.iter().copied().find(|t| t.token == token)
    }

    /// Refuses a request: the client gets the reason and the session goes on.
    fn refuse(&mut self, refusal: &Refusal) {
        self.send(&Message::Error { code: refusal.code(), message: refusal.to_string() });
    }

    fn send(&mut self, message: &Message) {
        self.transmit.push_back(encode_frame(message));
    }
}

impl Session for ControlSession {
    fn handle_input(&mut self, now: Instant, bytes: &[u8]) {
        if self.state == State::Closed {
            return;
        }
        self.input.extend_from_slice(bytes);
        self.process(now);
    }

    fn handle_close(&mut self, _now: Instant) {
        match self.state {
            State::Closed => {}
            State::Greeting | State::Authenticating | State::Admitting | State::Waiting(_) => {
                self.close(Ending::ClosedDuringHandshake)
            }
            _ if !self.input.is_empty() => {
                self.close(Ending::Violation(Violation::Malformed("truncated frame".into())))
            }
            _ => self.close(Ending::ClosedByClient),
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        match self.state {
            State::Closed => {}
            State::Greeting | State::Authenticating if now >= self.handshake_deadline => {
                self.close(Ending::HandshakeTimeout)
            }
            State::Waiting(since) if now >= self.handshake_deadline => {
                let (limit, waited_s) = (self.config.limits.max_sessions, (now - since).as_secs_f64());
                self.close(Ending::Refused(Refusal::NoSlotFreed { limit, waited_s }))
            }
            _ if self.session_deadline.is_some_and(|d| now >= d) => {
                self.close(Ending::Overran { limit_s: self.config.limits.max_duration.as_secs_f64() })
            }
            State::Serving if self.open.is_empty() && now >= self.last_message + self.config.idle_timeout => {
                self.close(Ending::Idle)
            }
            _ => {}
        }
    }

    fn answer(&mut self, now: Instant, answer: Answer) {
        match (self.state, answer) {
            (State::Admitting | State::Waiting(_), Answer::Admitted { host }) => self.admitted(now, host),
            (State::Admitting | State::Waiting(_), Answer::Refused(refusal)) => self.close(Ending::Refused(refusal)),
            (State::Admitting, Answer::Wait) => self.state = State::Waiting(now),
            (State::Answering, Answer::TestStarted { token }) => {
                if let Some(plan) = self.starting.take() {
                    let throughput = matches!(plan.test, PlannedTest::Throughput(_));
                    let connections = if plan.test == PlannedTest::Connect { 0 } else { plan.connections };
                    self.open.push(OpenTest { token, connections, throughput });
                    self.tests += 1;
                }
                self.send(&Message::TestAccepted { token });
                self.state = State::Serving;
            }
            (State::Answering, Answer::Refused(refusal)) => {
                self.starting = None;
                self.refuse(&refusal);
                self.state = State::Serving;
            }
            (State::Answering, Answer::Report { streams, counters }) => {
                self.send(&Message::Report { streams, counters });
                self.state = State::Serving;
            }
            _ => return,
        }
        self.process(now);
    }

    fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.transmit.pop_front()
    }

    fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    fn poll_timeout(&self) -> Option<Instant> {
        match self.state {
            State::Closed => None,
            State::Greeting | State::Authenticating | State::Waiting(_) => Some(self.handshake_deadline),
            State::Serving if self.open.is_empty() => {
                let idle = self.last_message + self.config.idle_timeout;
                Some(self.session_deadline.map_or(idle, |d| d.min(idle)))
            }
            _ => self.session_deadline,
        }
    }

    fn is_closed(&self) -> bool {
        self.state == State::Closed
    }
}

/// An `error` frame's code and text, for a refusal of a whole connection before any session exists.
pub fn refusal_frame(refusal: &Refusal) -> Vec<u8> {
    encode_frame(&Message::Error { code: refusal.code(), message: refusal.to_string() })
}

#[cfg(test)]
#[path = "session_tests.rs"]
mod tests;
