//! One control session on the responder: greeting, authentication, test requests, and clean-up however
//! the session ends. Logs one line when it ends.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use linkperf_proto::auth::{self, Side};
use linkperf_proto::{read_frame, write_frame, ErrorCode, Message, PlannedTest, ProtoError, TestRequest};
use socket2::Socket;

use super::bulk::BulkState;
use super::echo::log;
use super::registry::{TestEntry, TestKind};
use super::Shared;
use crate::host::host_facts_for;

/// How long a client may take to greet and authenticate.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the session wakes to check its tests' deadlines.
const TICK: Duration = Duration::from_secs(1);
/// A session with no running test and no message for this long is closed.
const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a report waits for streams whose connections are still closing.
const REPORT_WAIT: Duration = Duration::from_secs(3);
/// Grace beyond the responder's maximum duration before a test's traffic is cut.
const DEADLINE_GRACE: Duration = Duration::from_secs(2);

/// Why a session ended, for its log line.
type Ending = String;

/// Serves one control connection until it closes, then releases everything it held.
pub(super) fn run(socket: Socket, peer: String, shared: &Shared) {
    let id = shared.next_session.fetch_add(1, Ordering::Relaxed);
    let started = Instant::now();
    let active = shared.active_sessions.fetch_add(1, Ordering::SeqCst) + 1;
    let _release = Release { shared, id };
    let mut session =
        Session { id, socket, shared, tests: 0, client: String::from("?"), writer: Arc::new(Mutex::new(())) };
    let ending = if active > shared.config.limits.max_sessions {
        session.refuse(
            ErrorCode::OverLimit,
            &format!(
                "the responder serves at most {} sessions at once; try again later",
                shared.config.limits.max_sessions
            ),
        )
    } else {
        session.serve()
    };
    log(
        shared,
        &format!(
            "session {id} from {peer} ({}): {} tests, {:.1} s, {ending}",
            session.client,
            session.tests,
            started.elapsed().as_secs_f64()
        ),
    );
}

/// Releases a session's tests and its place in the session count when the session ends, even by a panic.
struct Release<'a> {
    shared: &'a Shared,
    id: u64,
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.shared.registry.release_session(self.id);
        self.shared.active_sessions.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Session<'a> {
    id: u64,
    socket: Socket,
    shared: &'a Shared,
    tests: u32,
    client: String,
    /// Held while writing a frame: interval reports are written from threads of their own.
    writer: Arc<Mutex<()>>,
}

impl Session<'_> {
    fn serve(&mut self) -> Ending {
        if let Err(ending) = self.handshake() {
            return ending;
        }
        self.serve_requests()
    }

    fn handshake(&mut self) -> Result<(), Ending> {
        let _ = self.socket.set_read_timeout(Some(HANDSHAKE_TIMEOUT));
        let client_nonce = match self.receive()? {
            Message::Hello { host, nonce, .. } => {
                self.client = host.hostname;
                nonce
            }
            _ => return Err(self.refuse(ErrorCode::Malformed, "expected hello")),
        };
        let challenge = self.shared.config.key.as_ref().map(|_| auth::nonce_from(&crate::random_bytes()));
        let welcome = Message::Welcome {
            software: crate::software(),
            host: host_facts_for(self.socket.local_addr().ok().and_then(|a| a.as_socket())),
            challenge: challenge.clone(),
            capabilities: linkperf_proto::CAPABILITIES.iter().map(|c| c.to_string()).collect(),
        };
        self.send(&welcome)?;
        match (&self.shared.config.key, challenge) {
            (Some(key), Some(challenge)) => self.authenticate(key, &challenge, &client_nonce),
            _ => Ok(()),
        }
    }

    fn authenticate(&mut self, key: &[u8], challenge: &str, client_nonce: &str) -> Result<(), Ending> {
        match self.receive()? {
            Message::Auth { proof } if auth::verify(key, Side::Client, challenge, client_nonce, &proof) => {
                self.send(&Message::AuthOk { proof: auth::proof(key, Side::Server, challenge, client_nonce) })
            }
            Message::Auth { .. } => {
                Err(self.refuse(ErrorCode::AuthFailed, "wrong key: use the same --key-file as the responder"))
            }
            _ => Err(self.refuse(ErrorCode::AuthFailed, "this responder requires a shared key (--key-file)")),
        }
    }

    fn serve_requests(&mut self) -> Ending {
        let _ = self.socket.set_read_timeout(Some(TICK));
        let mut last_message = Instant::now();
        loop {
            match read_frame(&mut &self.socket) {
                Ok(message) => {
                    last_message = Instant::now();
                    if let Err(ending) = self.handle(message) {
                        return ending;
                    }
                }
                Err(e) if e.is_timeout() => {
                    if let Some(ending) = self.check_time(last_message) {
                        return ending;
                    }
                }
                Err(ProtoError::Closed) => return "closed by client".into(),
                Err(e) => return self.refuse_bad_frame(&e),
            }
        }
    }

    fn handle(&mut self, message: Message) -> Result<(), Ending> {
        match message {
            Message::TestRequest(request) => self.start_test(request),
            Message::ReportRequest { token } => self.report(token),
            Message::Turn { token, flow } => {
                if let Some((state, _)) = self.shared.registry.bulk(self.id, token) {
                    let download = flow == linkperf_core::throughput::Flow::Download;
                    state.download_turn.store(download, std::sync::atomic::Ordering::Relaxed);
                }
                Ok(())
            }
            Message::TestDone { token } => {
                self.shared.registry.release(self.id, token);
                Ok(())
            }
            other => Err(self.refuse(ErrorCode::Malformed, &format!("unexpected message {other:?}"))),
        }
    }

    fn start_test(&mut self, request: TestRequest) -> Result<(), Ending> {
        let plan = match self.shared.config.limits.admit(&request) {
            Ok(plan) => plan,
            Err(refusal) => {
                return self.send(&Message::Error { code: refusal.code(), message: refusal.to_string() });
            }
        };
        let deadline = Instant::now() + self.shared.config.limits.max_duration + DEADLINE_GRACE;
        let kind = match plan.test {
            PlannedTest::Latency { .. } => TestKind::Echo,
            PlannedTest::Connect => TestKind::ConnectProbe,
            PlannedTest::Throughput(_) => TestKind::Throughput,
        };
        let local = self.socket.local_addr().ok().and_then(|a| a.as_socket());
        let entry = TestEntry {
            session: self.id,
            proto: plan.proto,
            kind,
            wait: plan.wait(),
            deadline,
            max_streams: if kind == TestKind::ConnectProbe { u32::MAX } else { plan.connections },
            streams: 0,
            max_message_bytes: plan.message_bytes(),
            bulk: BulkState::for_request(&plan.to_request(), local).map(std::sync::Arc::new),
        };
        let bulk = entry.bulk.clone();
        let token = self.shared.registry.register(entry);
        self.tests += 1;
        self.send(&Message::TestAccepted { token })?;
        if let (Some(state), Ok(socket)) = (bulk, self.socket.try_clone()) {
            let writer = self.writer.clone();
            let _ =
                super::spawn_named("intervals", move || super::bulk::report_intervals(token, state, socket, writer));
        }
        Ok(())
    }

    /// Sends the records of a throughput test's streams, waiting briefly for streams still finishing.
    fn report(&mut self, token: u32) -> Result<(), Ending> {
        let Some((state, admitted)) = self.shared.registry.bulk(self.id, token) else {
            return Err(self.refuse(ErrorCode::Malformed, &format!("no throughput test with token {token:08x}")));
        };
        state.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let deadline = Instant::now() + REPORT_WAIT;
        let mut streams = state.records();
        while streams.len() < admitted as usize && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
            streams = state.records();
        }
        self.send(&Message::Report { streams, counters: Some(state.counters.delta()) })
    }

    fn check_time(&mut self, last_message: Instant) -> Option<Ending> {
        let now = Instant::now();
        if self.shared.registry.session_overran(self.id, now) {
            let limit = self.shared.config.limits.max_duration.as_secs_f64();
            return Some(self.refuse(
                ErrorCode::OverLimit,
                &format!("the test ran past this responder's limit of {limit:.0} s (serve --max-duration)"),
            ));
        }
        let idle = now.duration_since(last_message);
        (idle > IDLE_TIMEOUT && idle > self.shared.config.limits.max_duration)
            .then(|| self.refuse(ErrorCode::OverLimit, "the session was idle too long"))
    }

    fn receive(&mut self) -> Result<Message, Ending> {
        match read_frame(&mut &self.socket) {
            Ok(message) => Ok(message),
            Err(ProtoError::Closed) => Err("closed by client during the handshake".into()),
            Err(e) if e.is_timeout() => Err("no handshake in time".into()),
            Err(e) => Err(self.refuse_bad_frame(&e)),
        }
    }

    fn send(&mut self, message: &Message) -> Result<(), Ending> {
        let _guard = self.writer.lock().unwrap_or_else(|p| p.into_inner());
        write_frame(&mut &self.socket, message).map_err(|e| format!("could not reply: {e}"))
    }

    fn refuse_bad_frame(&mut self, error: &ProtoError) -> Ending {
        let code = match error {
            ProtoError::Oversized(_) => ErrorCode::Oversized,
            _ => ErrorCode::Malformed,
        };
        self.refuse(code, &error.to_string())
    }

    /// Sends an error the client will print, and ends the session with it.
    fn refuse(&mut self, code: ErrorCode, message: &str) -> Ending {
        let _ = self.send(&Message::Error { code, message: message.to_string() });
        format!("refused: {message}")
    }
}
