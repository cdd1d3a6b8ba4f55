//! `ControlClient`: the client side of a control session (hello, authentication, test requests).

use std::time::Duration;

use linkperf_core::HostFacts;
use linkperf_proto::auth::{self, Side};
use linkperf_proto::ProtoError;
use linkperf_proto::{write_frame, FrameReader, Message, Preamble, Role, TestRequest, MAX_CLIENT_FRAME_BYTES};
use socket2::Socket;

use crate::host::local_host_facts;
use crate::{NetError, Target};

/// How long the client waits for any control reply.
pub const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// The responder's measurements of a throughput test.
pub struct Report {
    /// Its record of every stream.
    pub streams: Vec<linkperf_core::throughput::StreamRecord>,
    /// Its host's counter deltas.
    pub counters: Option<linkperf_core::counters::HostCounters>,
}

/// An open, greeted (and if required, authenticated) control session.
pub struct ControlClient {
    socket: Socket,
    /// Keeps a partly received frame across read timeouts.
    frames: FrameReader,
    /// A message read ahead (by an interval watch) and not yet consumed.
    held: Option<Message>,
    target: Target,
    responder: HostFacts,
    /// This host's facts, with the interface of the control connection.
    client: HostFacts,
    responder_software: String,
    capabilities: Vec<String>,
}

impl ControlClient {
    /// Connects, exchanges hellos and, when the responder asks, proves knowledge of `key`.
    pub fn connect(target: &Target, key: Option<&[u8]>, timeout: Duration) -> Result<Self, NetError> {
        let socket = target.connect_stream(timeout)?;
        socket.set_read_timeout(Some(CONTROL_TIMEOUT)).map_err(|e| NetError::io("setting a read timeout", e))?;
        let mut client = Self {
            socket,
            frames: FrameReader::new(),
            held: None,
            target: target.clone(),
            responder: HostFacts::default(),
            client: HostFacts::default(),
            responder_software: String::new(),
            capabilities: Vec::new(),
        };
        client.client = crate::host::host_facts_for(client.local_address());
        client.greet(key)?;
        Ok(client)
    }

    /// The responder's host facts, from its welcome.
    pub fn responder(&self) -> &HostFacts {
        &self.responder
    }

    /// This host's facts, with the interface that carries the control connection.
    pub fn client(&self) -> &HostFacts {
        &self.client
    }

    /// The local address of the control connection (`None` over a Unix socket).
    pub fn local_address(&self) -> Option<std::net::SocketAddr> {
        self.socket.local_addr().ok()?.as_socket()
    }

    /// The target this session talks to.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Whether the responder announced `capability` in its welcome (a test's name, or a feature such as
    /// `udp-bursts`).
    pub fn supports(&self, capability: &str) -> bool {
        self.capabilities.iter().any(|c| c == capability)
    }

    /// Asks for a test; returns its token.
    pub fn request(&mut self, request: TestRequest) -> Result<u32, NetError> {
        if !self.capabilities.iter().any(|c| c == request.name()) {
            return Err(NetError::Refused {
                code: linkperf_proto::ErrorCode::Unsupported,
                message: format!(
                    "the responder ({}) does not serve the {} test (it serves: {}); run the same linkperf version on both ends",
                    self.responder_software,
                    request.name(),
                    self.capabilities.join(", ")
                ),
            });
        }
        self.send(&Message::TestRequest(request))?;
        match self.receive()? {
            Message::TestAccepted { token } => Ok(token),
            other => Err(unexpected("test_accepted", &other)),
        }
    }

    /// The responder's records of a throughput test's streams.
    pub fn report(&mut self, token: u32) -> Result<Report, NetError> {
        self.send(&Message::ReportRequest { token })?;
        match self.receive()? {
            Message::Report { streams, counters } => Ok(Report { streams, counters }),
            other => Err(unexpected("report", &other)),
        }
    }

    /// Like [`ControlClient::report`], waiting at most `timeout` for the answer (after a stream failed, the
    /// path to the responder may be gone).
    pub fn report_within(&mut self, token: u32, timeout: Duration) -> Result<Report, NetError> {
        self.socket.set_read_timeout(Some(timeout)).map_err(|e| NetError::io("setting a read timeout", e))?;
        let report = self.report(token);
        let _ = self.socket.set_read_timeout(Some(CONTROL_TIMEOUT));
        report
    }

    /// Gives the turn to `flow` in an alternating throughput test.
    pub fn turn(&mut self, token: u32, flow: linkperf_core::throughput::Flow) -> Result<(), NetError> {
        self.send(&Message::Turn { token, flow })
    }

    /// Tells the responder a test is finished, so it releases the token.
    pub fn done(&mut self, token: u32) -> Result<(), NetError> {
        self.send(&Message::TestDone { token })
    }

    /// After a data connection failed: the responder's explanation, if it sent one within a moment.
    pub fn pending_error(&mut self) -> Option<NetError> {
        self.socket.set_read_timeout(Some(Duration::from_millis(300))).ok()?;
        match self.receive() {
            Err(error @ NetError::Refused { .. }) => Some(error),
            _ => None,
        }
    }

    /// Starts reading the responder's interval reports on another thread while a throughput test runs;
    /// `watch.finish()` must be given back with [`ControlClient::resume`] before the next reply is read.
    pub fn watch_intervals(&mut self) -> Result<IntervalWatch, NetError> {
        let socket = self.socket.try_clone().map_err(|e| NetError::io("reading interval reports", e))?;
        socket.set_read_timeout(Some(WATCH_TICK)).map_err(|e| NetError::io("reading interval reports", e))?;
        Ok(IntervalWatch { socket, frames: std::mem::take(&mut self.frames), held: self.held.take() })
    }

    /// Takes back the reading state of a finished watch.
    pub fn resume(&mut self, watch: IntervalWatch) {
        self.frames = watch.frames;
        self.held = watch.held;
        let _ = self.socket.set_read_timeout(Some(CONTROL_TIMEOUT));
    }

    fn greet(&mut self, key: Option<&[u8]>) -> Result<(), NetError> {
        (&self.socket)
            .write_all_preamble(&Preamble::new(Role::Control, 0))
            .map_err(|e| NetError::io(format!("sending hello to {}", self.target.describe()), e))?;
        let nonce = auth::nonce_from(&crate::random_bytes());
        let hello = Message::Hello { software: crate::software(), host: local_host_facts(), nonce: nonce.clone() };
        self.send(&hello)?;
        let welcome = self.receive().map_err(|e| match e {
            // A length of 2^24 bytes or more in the first reply is text, not a linkperf frame.
            NetError::Protocol(ProtoError::Oversized(length)) => {
                let text: String =
                    length.to_be_bytes().iter().map(|&b| if b.is_ascii_graphic() { b as char } else { '.' }).collect();
                NetError::NotResponder { address: self.target.describe(), what: format!("it sent \"{text}...\"") }
            }
            NetError::Protocol(ProtoError::Malformed(_)) => {
                NetError::NotResponder { address: self.target.describe(), what: "its reply is not a welcome".into() }
            }
            other => other,
        })?;
        let challenge = match welcome {
            Message::Welcome { host, challenge, software, capabilities } => {
                self.responder = host;
                self.responder_software = software;
                self.capabilities = capabilities;
                challenge
            }
            other => return Err(unexpected("welcome", &other)),
        };
        match (challenge, key) {
            (None, _) => Ok(()),
            (Some(_), None) => Err(NetError::Auth(
                "the responder requires a shared key: pass the same --key-file as the responder".into(),
            )),
            (Some(challenge), Some(key)) => self.authenticate(key, &challenge, &nonce),
        }
    }

    fn authenticate(&mut self, key: &[u8], challenge: &str, nonce: &str) -> Result<(), NetError> {
        self.send(&Message::Auth { proof: auth::proof(key, Side::Client, challenge, nonce) })?;
        match self.receive()? {
            Message::AuthOk { proof, host } if auth::verify(key, Side::Server, challenge, nonce, &proof) => {
                // A keyed responder tells its host facts only now; an older one told them in its welcome.
                if let Some(host) = host {
                    self.responder = host;
                }
                Ok(())
            }
            Message::AuthOk { .. } => {
                Err(NetError::Auth("the responder could not prove it holds the shared key: wrong responder?".into()))
            }
            other => Err(unexpected("auth_ok", &other)),
        }
    }

    fn send(&mut self, message: &Message) -> Result<(), NetError> {
        write_frame(&mut &self.socket, message).map_err(NetError::from)
    }

    /// The next reply, skipping interval reports (which only a watch displays).
    fn receive(&mut self) -> Result<Message, NetError> {
        loop {
            let next = match self.held.take() {
                Some(message) => Ok(Some(message)),
                None => self.frames.next(&mut &self.socket, MAX_CLIENT_FRAME_BYTES),
            };
            match next {
                Ok(Some(Message::Interval { .. })) => continue,
                Ok(Some(message)) => return reply(message),
                Ok(None) => {
                    let timeout_s = self.socket.read_timeout().ok().flatten().unwrap_or(CONTROL_TIMEOUT).as_secs_f64();
                    return Err(NetError::Timeout { what: "control reply".into(), timeout_s });
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

/// Turns an error message from the responder into an error. Its text is escaped here, once, so that a
/// hostile responder cannot print terminal escapes or forge lines on the client.
fn reply(message: Message) -> Result<Message, NetError> {
    let Message::Error { code, message } = message else { return Ok(message) };
    let message = linkperf_proto::printable(&message, MAX_ERROR_CHARS);
    match code {
        linkperf_proto::ErrorCode::AuthFailed => Err(NetError::Auth(format!("authentication failed: {message}"))),
        _ => Err(NetError::Refused { code, message }),
    }
}

/// The most characters of a responder's error text shown to the user.
const MAX_ERROR_CHARS: usize = 500;

/// How often an interval watch checks whether to stop.
const WATCH_TICK: Duration = Duration::from_millis(100);

/// The responder's interval reports being read on another thread during a throughput test.
pub struct IntervalWatch {
    socket: Socket,
    frames: FrameReader,
    held: Option<Message>,
}

impl IntervalWatch {
    /// Reads until `stop` is set, handing each interval (start s, end s, bytes) to `report`, and each turn
    /// confirmation (an alternating test's `Turn` from the responder) to `turned`. Any other message is kept
    /// for the control client.
    pub fn run(
        mut self,
        stop: &std::sync::atomic::AtomicBool,
        report: &dyn Fn(f64, f64, u64),
        turned: &dyn Fn(linkperf_core::throughput::Flow),
    ) -> Self {
        while self.held.is_none() && !stop.load(std::sync::atomic::Ordering::Relaxed) {
            match self.frames.next(&mut &self.socket, MAX_CLIENT_FRAME_BYTES) {
                Ok(Some(Message::Interval { start_s, end_s, bytes, .. })) => report(start_s, end_s, bytes),
                Ok(Some(Message::Turn { flow, .. })) => turned(flow),
                Ok(Some(other)) => self.held = Some(other),
                Ok(None) => {}
                Err(_) => break,
            }
        }
        self
    }
}

/// Writing a preamble on any writer.
pub(crate) trait WritePreamble {
    /// Writes the 12 preamble bytes.
    fn write_all_preamble(self, preamble: &Preamble) -> std::io::Result<()>;
}

impl<W: std::io::Write> WritePreamble for W {
    fn write_all_preamble(mut self, preamble: &Preamble) -> std::io::Result<()> {
        self.write_all(&preamble.encode())
    }
}

fn unexpected(expected: &str, got: &Message) -> NetError {
    NetError::Protocol(linkperf_proto::ProtoError::Malformed(format!("expected {expected}, got {}", got.kind())))
}
