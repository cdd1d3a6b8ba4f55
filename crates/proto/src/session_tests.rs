//! Every rule of the control session, as bytes and instants fed to the state machine: no sockets, no sleeps.

use std::collections::HashMap;

use super::*;
use crate::frame::read_frame_up_to;
use crate::slots::{Claim, SlotConfig, Slots};
use crate::{ErrorCode, TestRequest, MAX_CLIENT_FRAME_BYTES};
use linkperf_core::{Proto, WaitMode};

const KEY: &[u8] = b"the shared key";
const CHALLENGE: &str = "00112233445566778899aabbccddeeff";
const NONCE: &str = "0123456789abcdef0123456789abcdef";

fn config(key: bool) -> SessionConfig {
    let auth = key.then(|| (KEY.to_vec(), CHALLENGE.to_string()));
    SessionConfig::new(Limits::default(), auth, "linkperf test".into(), vec!["latency".into()])
}

fn frame(message: &Message) -> Vec<u8> {
    encode_frame(message)
}

fn hello() -> Vec<u8> {
    let host = HostFacts { hostname: "client".into(), ..HostFacts::default() };
    frame(&Message::Hello { software: "linkperf test".into(), host, nonce: NONCE.into() })
}

fn latency(connections: u32, planned_s: Option<f64>) -> Vec<u8> {
    frame(&Message::TestRequest(TestRequest::Latency {
        proto: Proto::Tcp,
        max_message_bytes: 64,
        connections,
        wait: WaitMode::Block,
        planned_duration_s: planned_s,
    }))
}

/// A 5 s TCP throughput request reported every `interval_s`.
fn throughput(interval_s: f64, alternating: bool) -> Vec<u8> {
    frame(&Message::TestRequest(TestRequest::Throughput {
        proto: Proto::Tcp,
        connections: 1,
        write_bytes: 1000,
        duration_s: 5.0,
        interval_s,
        buffer_bytes: None,
        congestion: None,
        discard: false,
        rate_bps: None,
        gso: false,
        batch: 1,
        alternating,
        datagrams: None,
    }))
}

fn sent(session: &mut ControlSession) -> Vec<Message> {
    let mut messages = Vec::new();
    while let Some(bytes) = session.poll_transmit() {
        messages.push(read_frame_up_to(&mut bytes.as_slice(), MAX_CLIENT_FRAME_BYTES).expect("a whole frame"));
    }
    messages
}

fn actions(session: &mut ControlSession) -> Vec<Action> {
    std::iter::from_fn(|| session.poll_action()).collect()
}

fn responder_host() -> HostFacts {
    HostFacts { hostname: "responder".into(), cpus: 4, ..HostFacts::default() }
}

/// A session past its handshake, at `t0`.
fn serving(t0: Instant) -> ControlSession {
    let mut session = ControlSession::new(config(false), t0);
    session.handle_input(t0, &hello());
    assert_eq!(actions(&mut session), vec![Action::Admit { client: "client".into() }]);
    session.answer(t0, Answer::Admitted { host: responder_host() });
    sent(&mut session);
    session
}

/// Starts a test, answering its token; returns what the session sent.
fn start(session: &mut ControlSession, now: Instant, request: Vec<u8>, token: u32) -> Vec<Message> {
    session.handle_input(now, &request);
    if actions(session).iter().any(|a| matches!(a, Action::StartTest { .. })) {
        session.answer(now, Answer::TestStarted { token });
    }
    sent(session)
}

fn ending(session: &mut ControlSession) -> Option<Ending> {
    actions(session).into_iter().find_map(|a| match a {
        Action::Close { ending } => Some(ending),
        _ => None,
    })
}

#[test]
fn a_client_is_welcomed_with_host_facts_once_it_has_a_slot() {
    let t0 = Instant::now();
    let mut session = ControlSession::new(config(false), t0);
    session.handle_input(t0, &hello());
    assert!(sent(&mut session).is_empty(), "nothing before the slot is granted");
    assert_eq!(actions(&mut session), vec![Action::Admit { client: "client".into() }]);
    session.answer(t0, Answer::Admitted { host: responder_host() });
    match &sent(&mut session)[..] {
        [Message::Welcome { host, challenge: None, .. }] => assert_eq!(host, &responder_host()),
        other => panic!("{other:?}"),
    }
    assert!(session.is_admitted());
}

#[test]
fn a_full_responder_refuses_the_session_in_place_of_the_welcome() {
    let t0 = Instant::now();
    let mut session = ControlSession::new(config(false), t0);
    session.handle_input(t0, &hello());
    actions(&mut session);
    let busy = Refusal::BudgetSpent { budget: crate::Budget::Sessions, limit: 64 };
    session.answer(t0, Answer::Refused(busy.clone()));
    assert!(matches!(&sent(&mut session)[..], [Message::Error { code: ErrorCode::OverLimit, message }]
        if message.contains("at most 64 sessions")));
    assert_eq!(ending(&mut session), Some(Ending::Refused(busy)));
}

#[test]
fn a_keyed_responder_discloses_nothing_and_asks_no_slot_before_the_proof() {
    let t0 = Instant::now();
    let mut session = ControlSession::new(config(true), t0);
    session.handle_input(t0, &hello());
    match &sent(&mut session)[..] {
        [Message::Welcome { host, challenge: Some(challenge), .. }] => {
            assert_eq!(host, &HostFacts::default(), "no host facts before authentication");
            assert_eq!(challenge, CHALLENGE);
        }
        other => panic!("{other:?}"),
    }
    assert!(actions(&mut session).is_empty(), "no slot before authentication");
    let proof = auth::proof(KEY, Side::Client, CHALLENGE, NONCE);
    session.handle_input(t0, &frame(&Message::Auth { proof }));
    assert_eq!(actions(&mut session), vec![Action::Admit { client: String::new() }]);
    session.answer(t0, Answer::Admitted { host: responder_host() });
    match &sent(&mut session)[..] {
        [Message::AuthOk { proof, host: Some(host) }] => {
            assert!(auth::verify(KEY, Side::Server, CHALLENGE, NONCE, proof));
            assert_eq!(host, &responder_host());
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_wrong_proof_or_no_proof_ends_the_session() {
    let t0 = Instant::now();
    for (message, failure) in [
        (Message::Auth { proof: auth::proof(b"wrong", Side::Client, CHALLENGE, NONCE) }, AuthFailure::WrongKey),
        (Message::TestDone { token: 1 }, AuthFailure::NoProof),
    ] {
        let mut session = ControlSession::new(config(true), t0);
        session.handle_input(t0, &hello());
        sent(&mut session);
        session.handle_input(t0, &frame(&message));
        assert!(matches!(&sent(&mut session)[..], [Message::Error { code: ErrorCode::AuthFailed, .. }]));
        assert_eq!(ending(&mut session), Some(Ending::AuthFailed(failure)));
    }
}

#[test]
fn a_handshake_trickled_a_byte_every_8_s_ends_at_the_deadline() {
    let t0 = Instant::now();
    let mut session = ControlSession::new(config(true), t0);
    let bytes = hello();
    let mut now = t0;
    for byte in &bytes[..3] {
        if session.is_closed() {
            break;
        }
        assert_eq!(session.poll_timeout(), Some(t0 + Duration::from_secs(10)), "bytes do not extend it");
        session.handle_input(now, std::slice::from_ref(byte));
        now += Duration::from_secs(8);
        if now >= t0 + Duration::from_secs(10) {
            session.handle_timeout(now);
        }
    }
    assert_eq!(ending(&mut session), Some(Ending::HandshakeTimeout));
    assert!(session.is_closed());
}

/// A session in its handshake: a keyed one whose hello came 9 s after the accept at `t0`.
fn greeted_late(t0: Instant) -> ControlSession {
    let mut session = ControlSession::new(config(true), t0);
    session.handle_input(t0 + Duration::from_secs(9), &hello());
    sent(&mut session);
    session
}

/// A session waiting for a slot since `t0`, its accept.
fn waiting(t0: Instant) -> ControlSession {
    let mut session = ControlSession::new(config(false), t0);
    session.handle_input(t0, &hello());
    actions(&mut session);
    session.answer(t0, Answer::Wait);
    session
}

/// A session serving a test (token 7) since `t0`.
fn testing(t0: Instant) -> ControlSession {
    let mut session = serving(t0);
    start(&mut session, t0, latency(1, None), 7);
    session
}

#[test]
fn each_deadline_closes_the_session_at_its_instant_and_not_before() {
    let t0 = Instant::now();
    let close = |ending| Action::Close { ending };
    let cases = [
        // The handshake deadline counts from the accept and covers authentication.
        ("handshake", greeted_late(t0), 10, vec![close(Ending::HandshakeTimeout)]),
        ("idle, no test open", serving(t0), 60, vec![close(Ending::Idle)]),
        // An open test is no idleness, but the session's time (max_duration + grace) cuts it.
        (
            "session time, a test open",
            testing(t0),
            3600 + 2,
            vec![Action::Release { token: 7 }, close(Ending::Overran { limit_s: 3600.0 })],
        ),
        (
            "waiting for a slot",
            waiting(t0),
            10,
            vec![close(Ending::Refused(Refusal::NoSlotFreed { limit: 64, waited_s: 10.0 }))],
        ),
    ];
    for (what, mut session, deadline_s, expected) in cases {
        let deadline = t0 + Duration::from_secs(deadline_s);
        assert_eq!(session.poll_timeout(), Some(deadline), "{what}");
        session.handle_timeout(deadline - Duration::from_millis(1));
        assert!(!session.is_closed(), "{what}: closed before its deadline");
        session.handle_timeout(deadline);
        assert_eq!(actions(&mut session), expected, "{what}");
    }
}

#[test]
fn max_duration_bounds_a_sessions_chained_tests() {
    let t0 = Instant::now();
    let mut session = serving(t0);
    let mut now = t0;
    for token in 1..=3 {
        let replies = start(&mut session, now, latency(1, Some(1000.0)), token);
        assert_eq!(replies, vec![Message::TestAccepted { token }]);
        session.handle_input(now, &frame(&Message::TestDone { token }));
        now += Duration::from_secs(1000);
    }
    // 3000 s used of 3600: a fourth test of 1000 s would end past the limit.
    let replies = start(&mut session, now, latency(1, Some(1000.0)), 4);
    assert!(
        matches!(&replies[..], [Message::Error { code: ErrorCode::OverLimit, message }] if message.contains("600 s left"))
    );
    assert!(!session.is_closed(), "a refused request leaves the session open");
}

#[test]
fn per_session_caps_on_tests_and_connections_refuse_with_their_reason() {
    let t0 = Instant::now();
    let limits = Limits { max_open_tests: 2, max_tests_per_session: 3, max_streams_per_test: 10, ..Limits::default() };
    let mut session = ControlSession::new(SessionConfig { limits, ..config(false) }, t0);
    session.handle_input(t0, &hello());
    actions(&mut session);
    session.answer(t0, Answer::Admitted { host: responder_host() });
    sent(&mut session);
    assert_eq!(start(&mut session, t0, latency(6, None), 1), vec![Message::TestAccepted { token: 1 }]);
    let over = start(&mut session, t0, latency(5, None), 2);
    assert!(matches!(&over[..], [Message::Error { message, .. }] if message.contains("this session has 4 left")));
    assert_eq!(start(&mut session, t0, latency(4, None), 2), vec![Message::TestAccepted { token: 2 }]);
    let open = start(&mut session, t0, latency(1, None), 3);
    assert!(matches!(&open[..], [Message::Error { message, .. }] if message.contains("2 tests open")));
    session.handle_input(t0, &frame(&Message::TestDone { token: 1 }));
    assert_eq!(actions(&mut session), vec![Action::Release { token: 1 }]);
    assert_eq!(start(&mut session, t0, latency(1, None), 3), vec![Message::TestAccepted { token: 3 }]);
    session.handle_input(t0, &frame(&Message::TestDone { token: 3 }));
    let many = start(&mut session, t0, latency(1, None), 4);
    assert!(matches!(&many[..], [Message::Error { message, .. }] if message.contains("has run 3 tests")));
}

#[test]
fn bad_values_are_refused_and_the_session_goes_on() {
    let t0 = Instant::now();
    let mut session = serving(t0);
    let request = throughput(1e-9, false);
    session.handle_input(t0, &request);
    assert!(actions(&mut session).is_empty(), "no test starts");
    assert!(
        matches!(&sent(&mut session)[..], [Message::Error { code: ErrorCode::OverLimit, message }] if message.contains("too short"))
    );
    assert_eq!(start(&mut session, t0, latency(1, None), 9), vec![Message::TestAccepted { token: 9 }]);
}

#[test]
fn requests_wait_for_the_drivers_answer_and_replies_keep_their_order() {
    let t0 = Instant::now();
    let mut session = serving(t0);
    let mut both = latency(1, None);
    both.extend(latency(1, None));
    session.handle_input(t0, &both);
    assert_eq!(actions(&mut session).len(), 1, "the second request waits for the first's token");
    session.answer(t0, Answer::TestStarted { token: 1 });
    assert!(matches!(actions(&mut session)[..], [Action::StartTest { .. }]));
    session.answer(t0, Answer::TestStarted { token: 2 });
    let tokens = sent(&mut session);
    assert_eq!(tokens, vec![Message::TestAccepted { token: 1 }, Message::TestAccepted { token: 2 }]);
}

#[test]
fn a_peer_piling_up_input_while_a_reply_is_pending_is_cut_off() {
    let t0 = Instant::now();
    let mut session = serving(t0);
    session.handle_input(t0, &latency(1, None));
    let junk = vec![0u8; MAX_PENDING_INPUT + 1];
    session.handle_input(t0, &junk);
    assert_eq!(ending(&mut session), Some(Ending::Violation(Violation::TooMuchInput)));
    assert_eq!(Ending::Violation(Violation::TooMuchInput).error().map(|(code, _)| code), Some(ErrorCode::OverLimit));
}

#[test]
fn tokens_of_other_sessions_are_not_this_sessions_to_touch() {
    let t0 = Instant::now();
    let mut session = serving(t0);
    session.handle_input(t0, &frame(&Message::TestDone { token: 42 }));
    session.handle_input(t0, &frame(&Message::Turn { token: 42, flow: Flow::Download }));
    assert!(actions(&mut session).is_empty(), "no release or turn of a foreign token");
    session.handle_input(t0, &frame(&Message::ReportRequest { token: 42 }));
    assert_eq!(ending(&mut session), Some(Ending::Violation(Violation::UnknownToken(42))));
}

#[test]
fn reports_are_gathered_by_the_driver_and_sent_in_turn() {
    let t0 = Instant::now();
    let mut session = serving(t0);
    let request = throughput(1.0, true);
    start(&mut session, t0, request, 5);
    session.handle_input(t0, &frame(&Message::Turn { token: 5, flow: Flow::Download }));
    session.handle_input(t0, &frame(&Message::ReportRequest { token: 5 }));
    assert_eq!(
        actions(&mut session),
        vec![Action::Turn { token: 5, flow: Flow::Download }, Action::Report { token: 5 }]
    );
    session.answer(t0, Answer::Report { streams: Vec::new(), counters: None });
    assert_eq!(sent(&mut session), vec![Message::Report { streams: Vec::new(), counters: None }]);
}

#[test]
fn broken_frames_end_the_session_with_an_error_frame() {
    let t0 = Instant::now();
    let cases: Vec<(Vec<u8>, ErrorCode)> = vec![
        ((MAX_FRAME_BYTES + 1).to_be_bytes().to_vec(), ErrorCode::Oversized),
        ([&5u32.to_be_bytes()[..], b"nope!"].concat(), ErrorCode::Malformed),
        (latency(1, None), ErrorCode::Malformed),
    ];
    for (bytes, code) in cases {
        let mut session = ControlSession::new(config(false), t0);
        session.handle_input(t0, &bytes);
        assert!(matches!(&sent(&mut session)[..], [Message::Error { code: c, .. }] if *c == code), "{bytes:?}");
        assert!(matches!(ending(&mut session), Some(Ending::Violation(_))));
    }
}

#[test]
fn a_hello_with_a_bad_nonce_is_refused() {
    let t0 = Instant::now();
    for nonce in ["", "xyz", &"a".repeat(4096)] {
        let mut session = ControlSession::new(config(true), t0);
        let hello = Message::Hello { software: String::new(), host: HostFacts::default(), nonce: nonce.into() };
        session.handle_input(t0, &frame(&hello));
        assert_eq!(ending(&mut session), Some(Ending::Violation(Violation::BadNonce)), "{nonce}");
    }
}

#[test]
fn a_close_is_named_by_where_the_session_was() {
    let t0 = Instant::now();
    let mut early = ControlSession::new(config(false), t0);
    early.handle_input(t0, &hello()[..5]);
    early.handle_close(t0);
    assert_eq!(ending(&mut early), Some(Ending::ClosedDuringHandshake));
    let mut late = serving(t0);
    late.handle_close(t0);
    assert_eq!(ending(&mut late), Some(Ending::ClosedByClient));
}

#[test]
fn a_closed_session_ignores_everything() {
    let t0 = Instant::now();
    let mut session = serving(t0);
    session.close(Ending::ConnectionLost(std::io::ErrorKind::ConnectionReset));
    assert!(sent(&mut session).is_empty(), "no error frame on a lost connection");
    actions(&mut session);
    session.handle_input(t0, &latency(1, None));
    session.handle_timeout(t0 + Duration::from_secs(99_999));
    assert!(actions(&mut session).is_empty());
    assert_eq!(session.poll_timeout(), None);
}

#[test]
fn only_a_session_without_open_tests_is_idle() {
    let t0 = Instant::now();
    let mut session = serving(t0);
    assert_eq!(session.idle_since(), Some(t0));
    let later = t0 + Duration::from_secs(5);
    start(&mut session, later, latency(1, None), 3);
    assert_eq!(session.idle_since(), None, "a test is open");
    session.handle_input(later, &frame(&Message::TestDone { token: 3 }));
    assert_eq!(session.idle_since(), Some(later));
    session.close(Ending::Evicted);
    assert!(matches!(&sent(&mut session)[..], [Message::Error { code: ErrorCode::OverLimit, .. }]));
    assert_eq!(session.idle_since(), None);
}

#[test]
fn a_client_of_a_full_responder_waits_and_is_welcomed_once_a_slot_frees() {
    let t0 = Instant::now();
    let mut session = ControlSession::new(config(false), t0);
    session.handle_input(t0, &hello());
    assert_eq!(actions(&mut session), vec![Action::Admit { client: "client".into() }]);
    session.answer(t0, Answer::Wait);
    assert!(sent(&mut session).is_empty(), "nothing while it waits");
    assert_eq!(session.poll_timeout(), Some(t0 + Duration::from_secs(10)), "its handshake deadline still holds");
    session.handle_timeout(t0 + Duration::from_millis(9_999));
    assert!(!session.is_closed() && !session.is_admitted());
    let freed = t0 + Duration::from_millis(1_500);
    session.answer(freed, Answer::Admitted { host: responder_host() });
    assert!(matches!(&sent(&mut session)[..], [Message::Welcome { .. }]));
    assert!(session.is_admitted());
    assert_eq!(session.idle_since(), Some(freed), "idle from its admission, not from its hello");
    assert_eq!(session.poll_timeout(), Some(freed + Duration::from_secs(60)));
}

#[test]
fn a_client_that_waits_past_its_handshake_deadline_is_refused_with_how_long_it_waited() {
    let t0 = Instant::now();
    let mut session = ControlSession::new(config(false), t0);
    let asked = t0 + Duration::from_secs(2);
    session.handle_input(asked, &hello());
    actions(&mut session);
    session.answer(asked, Answer::Wait);
    session.handle_timeout(t0 + Duration::from_secs(10));
    match &sent(&mut session)[..] {
        [Message::Error { code: ErrorCode::OverLimit, message }] => {
            assert!(message.contains("at most 64 sessions") && message.contains("8.0 s"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(ending(&mut session), Some(Ending::Refused(Refusal::NoSlotFreed { limit: 64, waited_s: 8.0 })));
}

#[test]
fn a_waiting_client_holds_its_requests_until_it_is_admitted() {
    let t0 = Instant::now();
    let mut session = ControlSession::new(config(false), t0);
    let mut pipelined = hello();
    pipelined.extend(latency(1, None));
    session.handle_input(t0, &pipelined);
    actions(&mut session);
    session.answer(t0, Answer::Wait);
    assert!(actions(&mut session).is_empty(), "no test before a slot");
    session.answer(t0, Answer::Admitted { host: responder_host() });
    assert!(matches!(actions(&mut session)[..], [Action::StartTest { .. }]));
}

/// The responder's event loop in miniature: sessions by id, and the slots they claim.
struct Responder {
    sessions: HashMap<u64, ControlSession>,
    slots: Slots,
}

impl Responder {
    fn new(max_sessions: u32) -> Self {
        Self { sessions: HashMap::new(), slots: Slots::new(SlotConfig::new(max_sessions)) }
    }

    /// A client `id` from `last` (of 127.0.0.last) that sends its hello at `now`.
    fn connect(&mut self, id: u64, last: u8, now: Instant) {
        let mut session = ControlSession::new(config(false), now);
        session.handle_input(now, &hello());
        self.sessions.insert(id, session);
        self.drive(id, last, now);
    }

    /// Carries out a session's actions as the loop does: slots for `Admit`, eviction of the session that
    /// makes room, and the slot's return when a session closes.
    fn drive(&mut self, id: u64, last: u8, now: Instant) {
        let Some(session) = self.sessions.get_mut(&id) else { return };
        let mut evicted = None;
        while let Some(action) = session.poll_action() {
            match action {
                Action::Admit { .. } => match self.slots.claim(id, Some([127, 0, 0, last].into()), now) {
                    Claim::Granted { evict } => {
                        evicted = evict;
                        session.answer(now, Answer::Admitted { host: responder_host() });
                    }
                    Claim::Wait => session.answer(now, Answer::Wait),
                    Claim::Refused(refusal) => session.answer(now, Answer::Refused(refusal)),
                },
                Action::Close { .. } => self.slots.release(id),
                _ => {}
            }
        }
        self.slots.set_idle(id, session.idle_since());
        if let Some(victim) = evicted {
            self.evict(victim);
        }
    }

    fn evict(&mut self, victim: u64) {
        if let Some(idle) = self.sessions.get_mut(&victim) {
            idle.close(Ending::Evicted);
            while idle.poll_action().is_some() {}
        }
    }

    /// What the loop does when time passes: timeouts, then grants to waiting clients.
    fn tick(&mut self, now: Instant) {
        let ids: Vec<u64> = self.sessions.keys().copied().collect();
        for id in ids {
            let session = self.sessions.get_mut(&id).expect("listed");
            if session.poll_timeout().is_some_and(|t| t <= now) {
                session.handle_timeout(now);
                self.drive(id, 0, now);
            }
        }
        while let Some(grant) = self.slots.poll_grant(now) {
            if let Some(victim) = grant.evict {
                self.evict(victim);
            }
            let session = self.sessions.get_mut(&grant.id).expect("a waiting session");
            session.answer(now, Answer::Admitted { host: responder_host() });
            self.drive(grant.id, 0, now);
        }
    }

    fn welcomed(&mut self, id: u64) -> bool {
        let session = self.sessions.get_mut(&id).expect("a session");
        sent(session).iter().any(|m| matches!(m, Message::Welcome { .. }))
    }
}

#[test]
fn sixty_four_fresh_idlers_delay_a_client_until_the_first_has_idled_1_s() {
    let t0 = Instant::now();
    let mut responder = Responder::new(64);
    for id in 1..=64 {
        // One every 10 ms, from another address, each silent after its hello.
        responder.connect(id, 2, t0 + Duration::from_millis(10 * id));
        assert!(responder.welcomed(id));
    }
    let arrives = t0 + Duration::from_millis(700);
    responder.connect(100, 1, arrives);
    assert!(!responder.welcomed(100), "every slot held by a session idle for less than 1 s");
    assert_eq!(responder.slots.poll_timeout(), Some(t0 + Duration::from_millis(1_010)), "idler 1 idles 1 s then");
    responder.tick(t0 + Duration::from_millis(1_009));
    assert!(!responder.welcomed(100));
    responder.tick(t0 + Duration::from_millis(1_010));
    assert!(responder.welcomed(100), "admitted as soon as an idler became evictable");
    assert_eq!(ending(responder.sessions.get_mut(&1).expect("idler 1")), None, "its actions were drained");
    assert!(responder.sessions[&1].is_closed(), "the idlest made room");
    assert!(responder.sessions[&2].is_admitted(), "the others keep their slots");
}

#[test]
fn a_client_waiting_behind_busy_sessions_is_refused_at_its_deadline_and_leaves_the_queue() {
    let t0 = Instant::now();
    let mut responder = Responder::new(1);
    responder.connect(1, 2, t0);
    let busy = responder.sessions.get_mut(&1).expect("session 1");
    start(busy, t0, latency(1, None), 7);
    responder.slots.set_idle(1, None);
    responder.connect(2, 1, t0);
    assert_eq!(responder.slots.waiting(), 1);
    responder.tick(t0 + Duration::from_secs(10));
    let refused = responder.sessions.get_mut(&2).expect("session 2");
    assert!(
        matches!(&sent(refused)[..], [Message::Error { message, .. }] if message.contains("10.0 s this client waited"))
    );
    assert_eq!(responder.slots.waiting(), 0, "its place in the queue is free");
    assert!(responder.sessions[&1].is_admitted(), "a session with a test open is never evicted");
}
